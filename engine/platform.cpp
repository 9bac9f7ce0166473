// See platform.h.
#include "platform.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace paralab {

void useFastBlasKernels(int /*argc*/, char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("PARALAB_NO_REEXEC")) return;
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512cd");
  if (!avx512) return;
  setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: then carry on as we are
}

}  // namespace paralab
