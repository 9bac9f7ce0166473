// The devices and GEMM kernels a run may choose (see capabilities.h), read from the kernel
// registries that RunConfig::validateDevice() checks against, and the strategy table's rows.
// See tests/app/tst_window.cpp.
#include "capabilities.h"

#include <cctype>

#include "comm/communicator.h"
#include "cpu/dispatch.h"
#include "cpu/gemm.h"
#include "cuda/device.h"
#include "cuda/gemm.h"
#include "parallel/strategy.h"

namespace paralab {

std::vector<GemmChoice> gemmChoices(Device device) {
  std::vector<GemmChoice> out;
  if (device == Device::Cpu)
    for (const kernels::GemmKernel& k : kernels::gemm_kernels()) {
      std::string summary = k.summary;
      // The simd rung's row (which the threaded rung runs too) is a dispatched kernel: its
      // width is the level chosen at start (cpu/dispatch.h), said here.
      const std::string name = k.name;
      if (name == "simd" || name == "threaded")
        summary += ", " + simdLevelName() + " (" +
                   std::to_string(kernels::simdWidthFloats(kernels::simdLevel())) + " floats)";
      out.push_back({k.name, summary});
    }
  else if (device == Device::Cuda)
    for (const kernels::GemmCudaKernel& k : kernels::kGemmCudaKernels) {
      // Say the precision where the summary does not (the tensor-core rungs round to TF32).
      std::string summary = k.summary, lower = summary;
      for (char& ch : lower) ch = char(std::tolower(static_cast<unsigned char>(ch)));
      if (lower.find(k.precision) == std::string::npos) summary += std::string(", ") + k.precision;
      out.push_back({k.name, summary});
    }
  return out;
}

GpuAvailability gpuAvailability() {
  const kernels::GpuInfo info = kernels::cuda_query_devices();
  return {info.count, info.count > 0 ? info.firstName : "", info.count > 0 ? "" : info.reason};
}

bool mpiBuilt() { return mpiAvailable(); }
bool ncclBuilt() { return ncclAvailable(); }

std::vector<std::string> strategyNames() {
  std::vector<std::string> out;
  for (const StrategyInfo& s : strategyTable()) out.push_back(s.name);
  return out;
}

std::string simdLevelName() { return kernels::simdLevelName(kernels::simdLevel()); }

int simdLevelFloats() { return kernels::simdWidthFloats(kernels::simdLevel()); }

std::string simdLevelSummary() {
  const kernels::SimdLevel level = kernels::simdLevel(), cpu = kernels::simdLevelCpu();
  return "Vector level " + simdLevelName() + " (" +
         std::to_string(kernels::simdWidthFloats(level)) +
         " floats; this CPU's best: " + kernels::simdLevelName(cpu) +
         ") for attention (whole and blockwise), LayerNorm, bias, GELU, the loss, the optimizers, "
         "the all-reduce sum and the simd GEMM rung; OpenBLAS picks its own. "
         "PARALAB_SIMD=baseline|avx2|avx512 forces a lower level.";
}

}  // namespace paralab
