// The GPU tests' skip, in one place: a row that needs a GPU skips, naming why there is none
// (no driver, no device), so the same suite runs on a machine without one.
#pragma once
#include <QtTest>

#include <string>

#include "comm/communicator.h"  // ncclAvailable
#include "config.h"
#include "cuda/device.h"

#define SKIP_WITHOUT_GPU()                                                                         \
  do {                                                                                             \
    const paralab::kernels::GpuInfo gpus = paralab::kernels::cuda_query_devices();                 \
    if (gpus.count == 0) QSKIP(qPrintable("no GPU here: " + QString::fromStdString(gpus.reason))); \
  } while (0)

namespace paralab::test {

// The GEMM of these suites' GPU runs: cuBLAS on a real GPU. The emulated GPU has none (its
// vendor rungs refuse), so there the runs use the coalesced rung, the quickest of the ladder's
// kernels when they execute on the host.
inline std::string gpuGemm() {
  return paralab::kernels::cuda_query_devices().emulated ? "coalesced" : "vendor";
}
inline void useGpu(RunConfig& c) {
  c.device = Device::Cuda;
  c.kernel = gpuGemm();
}

// Why `ranks` NCCL ranks (one per GPU) cannot run here, or "" when they can.
inline QString ncclSkipReason(int ranks) {
  if (!paralab::ncclAvailable()) return "built without NCCL";
  const paralab::kernels::GpuInfo gpus = paralab::kernels::cuda_query_devices();
  if (gpus.emulated) return "NCCL needs real GPUs; the GPU here is emulated";
  if (gpus.count < ranks)
    return QString("--backend nccl runs one rank per GPU: %1 ranks need %1 GPUs, found %2")
        .arg(ranks)
        .arg(gpus.count);
  return {};
}

}  // namespace paralab::test

#define SKIP_WITHOUT_NCCL_GPUS(ranks)                                             \
  do {                                                                            \
    if (const QString why = paralab::test::ncclSkipReason(ranks); !why.isEmpty()) \
      QSKIP(qPrintable(why));                                                     \
  } while (0)
