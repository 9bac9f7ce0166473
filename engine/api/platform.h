// Process-level set-up shared by every ParaLab executable, and the one place for what differs
// between operating systems (the POSIX and Linux calls). See tests/engine/tst_platform.cpp and
// `paralab-run --version`.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace paralab {

// OpenBLAS chooses its kernel family once, when it loads: from OPENBLAS_CORETYPE if that is
// set, else by detecting the CPU. Where the family it ended up with is an AVX2 one (Haswell,
// Zen) on a CPU with AVX-512 — an inherited OPENBLAS_CORETYPE=Haswell, or a CPU the library
// is too old to know — its GEMM runs at about half the rate of the AVX-512 "SkylakeX"
// kernels (measured: README, `paralab-bench gemm`). Then we set OPENBLAS_CORETYPE=SkylakeX
// and re-execute the program once. PARALAB_KEEP_BLAS_CORETYPE=1 keeps what was chosen.
void useFastBlasKernels(int argc, char** argv);

// ParaLab's version, from the build's project(VERSION): what every program's --version prints.
const char* version();

// This process's executable (Linux: /proc/self/exe), or "" where it cannot be read.
std::string executablePath();

// The folder of ParaLab's data PART ("lessons" or "resources"), the first of:
//   $PARALAB_LESSONS_DIR / $PARALAB_RESOURCES_DIR, when set;
//   <executable>/../share/paralab/PART, when it exists (an installed program:
//     /usr/bin/paralab reads /usr/share/paralab/lessons);
//   the source tree's PART (a program run from its build tree).
// Every read of lessons/ or resources/ goes through here.
std::string dataDir(std::string_view part, const std::string& executable = executablePath());

// The environment variable that overrides dataDir(PART): "PARALAB_LESSONS_DIR".
std::string dataDirVariable(std::string_view part);

// [SECTION] The system's own answers, each a no-op or a neutral answer where it has none.
// The machine's physical memory in bytes (0 when it cannot be read).
int64_t machineMemoryBytes();
// Milliseconds since the kernel started this process (Linux: /proc/self/stat, in clock ticks,
// so ±10 ms), or -1 where that cannot be read.
double msSinceProcessStart();
// Whether STREAM is a terminal (progress lines are for a person, not for a pipe).
bool isTerminal(std::FILE* stream);
// Lowers the calling thread's priority by NICE (Linux keeps a nice value per thread, and the
// threads it starts inherit it).
void lowerThreadPriority(int nice);
// Hands memory the allocator keeps after free() back to the system (glibc: malloc_trim).
void returnFreedMemory();
// This process's resident memory in bytes (Linux: /proc/self/statm), 0 where it cannot be read.
int64_t residentBytes();
// Bytes the allocator has handed out and not had back (glibc: mallinfo2): what the program
// holds, without the freed pages the allocator keeps, which RSS counts too. 0 where unknown.
int64_t heapInUseBytes();
// The calling thread's context switches so far: {voluntary (it waited), involuntary (it was
// preempted)}; zeros where the system does not count them per thread.
struct ThreadSwitches {
  int64_t waits = 0, preemptions = 0;
};
ThreadSwitches threadSwitches();
// The calling thread's CPU time in ms (its own work, not the time other threads had the cores).
double threadCpuMs();

}  // namespace paralab
