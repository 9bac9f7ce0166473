// See platform.h. Every POSIX or Linux call of the engine's programs that is not the MPI
// launcher's belongs here, so a port replaces this file. See tests/engine/tst_platform.cpp.
#include "platform.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <cctype>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cpu/gemm.h"

namespace paralab {

namespace fs = std::filesystem;

static bool cpuHasAvx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512cd");
}

void useFastBlasKernels(int /*argc*/, char** argv) {
  if (std::getenv("PARALAB_KEEP_BLAS_CORETYPE") || std::getenv("PARALAB_BLAS_REEXECUTED")) return;
  if (!cpuHasAvx512() || kernels::vendor_blas_uses_avx512()) return;
  // What the environment asked for, so benchmarks can also run references as it was.
  const char* inherited = std::getenv("OPENBLAS_CORETYPE");
  setenv("PARALAB_INHERITED_OPENBLAS_CORETYPE", inherited ? inherited : "", 1);
  setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
  setenv("PARALAB_BLAS_REEXECUTED", "1", 1);  // at most once, whatever happens
  execv("/proc/self/exe", argv);  // returns only on failure: then carry on as we are
}

const char* version() { return PARALAB_VERSION; }

std::string executablePath() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.string();
}

std::string dataDirVariable(std::string_view part) {
  std::string name = "PARALAB_";
  for (char c : part) name += char(std::toupper((unsigned char)c));
  return name + "_DIR";
}

std::string dataDir(std::string_view part, const std::string& executable) {
  if (const char* env = std::getenv(dataDirVariable(part).c_str()); env && *env) return env;
  // PARALAB_INSTALLED_DATA: the data folder relative to the installed programs' folder
  // ("../share/paralab" for /usr/bin and /usr/share/paralab; top CMakeLists.txt).
  if (!executable.empty()) {
    std::error_code ec;
    const fs::path installed = fs::path(executable).parent_path() / PARALAB_INSTALLED_DATA / part;
    if (fs::is_directory(installed, ec)) return installed.lexically_normal().string();
  }
  return (fs::path(PARALAB_SOURCE_ROOT) / part).string();
}

int64_t machineMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? int64_t(pages) * size : 0;
}

double msSinceProcessStart() {
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return -1;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {  // field 22: start time
  }
  timespec now{};
  if (clock_gettime(CLOCK_BOOTTIME, &now) != 0) return -1;
  const double startS = std::stod(field) / double(sysconf(_SC_CLK_TCK));
  return (double(now.tv_sec) + now.tv_nsec / 1e9 - startS) * 1000.0;
}

bool isTerminal(std::FILE* stream) { return isatty(fileno(stream)); }

void lowerThreadPriority(int nice) {
#ifdef __linux__
  setpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)), nice);
#else
  (void)nice;
#endif
}

void returnFreedMemory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

int64_t residentBytes() {
  long pages = 0, resident = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return int64_t(resident) * int64_t(sysconf(_SC_PAGESIZE));
}

int64_t heapInUseBytes() {
#ifdef __GLIBC__
  const struct mallinfo2 m = mallinfo2();
  return int64_t(m.uordblks + m.hblkhd);
#else
  return 0;
#endif
}

double threadCpuMs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

ThreadSwitches threadSwitches() {
  rusage u{};
#ifdef RUSAGE_THREAD
  getrusage(RUSAGE_THREAD, &u);
#endif
  return {int64_t(u.ru_nvcsw), int64_t(u.ru_nivcsw)};
}

}  // namespace paralab
