// The GPU tests' skip, in one place: a row that needs a GPU skips, naming why there is none
// (no driver, no device), so the same suite runs on a machine without one.
#pragma once
#include <QtTest>

#include "cuda/device.h"

#define SKIP_WITHOUT_GPU()                                                                         \
  do {                                                                                             \
    const paralab::kernels::GpuInfo gpus = paralab::kernels::cuda_query_devices();                 \
    if (gpus.count == 0) QSKIP(qPrintable("no GPU here: " + QString::fromStdString(gpus.reason))); \
  } while (0)

// NCCL moves real device memory only: its rows skip on the emulated GPU (cuda/emulated.h).
#define SKIP_ON_EMULATED_GPU()                                                              \
  do {                                                                                      \
    if (paralab::kernels::cuda_query_devices().emulated) QSKIP("the GPU here is emulated"); \
  } while (0)
