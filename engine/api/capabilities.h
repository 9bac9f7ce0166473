// What this build and machine offer a run: the devices and, per device, the GEMM kernels that
// --device and --kernel accept. Front ends (the window's Device and GEMM controls) list these
// instead of reaching into kernels/. See tests/app/tst_window.cpp (deviceAndKernelControls).
#pragma once
#include <string>
#include <vector>

#include "run_choices.h"

namespace paralab {

struct GemmChoice {
  std::string name;     // the --kernel value
  std::string summary;  // one line: what the kernel does
};

// The GEMM ladder of `device` ("cpu" or "cuda"), slowest rung first; empty for another device.
std::vector<GemmChoice> gemmChoices(Device device);

struct GpuAvailability {
  int count = 0;       // usable GPUs
  std::string name;    // the first one's name ("" when none)
  std::string reason;  // why there is none ("" when count > 0)
};
// Asks the CUDA runtime (may take a moment the first time: call it off a GUI thread).
GpuAvailability gpuAvailability();

// Whether this build can run ranks as processes under mpirun (--backend mpi), and one process
// per GPU through NCCL (--backend nccl): compiled in, not whether a launcher or GPU is here.
bool mpiBuilt();
bool ncclBuilt();

// Every training method this build runs, by its row name in the strategy table: the --strategy
// values, the ZeRO variants of sync ("zero-1".."zero-3") and the layouts ("model-parallel",
// "moe"). A lesson's "needs: strategy:NAME" is checked against these.
std::vector<std::string> strategyNames();

// The vector level ParaLab's own CPU kernels (attention, LayerNorm, bias, GELU, the loss, the
// optimizers, the thread all-reduce's sum, the SIMD GEMM rung) run at: "baseline", "avx2" or
// "avx512", the CPU's best or the lower one PARALAB_SIMD forces, chosen once at start.
std::string simdLevelName();
// Floats per vector instruction at that level: 4 (baseline: SSE2), 8 or 16.
int simdLevelFloats();
// One line for an About box or a benchmark's head: that level, its width, the CPU's best, the
// kernels it covers and how to force another.
std::string simdLevelSummary();

}  // namespace paralab
