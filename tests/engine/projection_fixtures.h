// What the projection's tests share: Narayanan et al. 2021's Table 1 and the layout its rows
// are projected with, A100 clusters, a relative comparison. Used by tst_projection.cpp and
// tst_projection_layouts.cpp.
#pragma once
#include <algorithm>
#include <cmath>

#include "projection/projection.h"

namespace paralab::projection::fixtures {

inline bool near(double a, double b, double relative) {
  return std::abs(a - b) <= relative * std::max(std::abs(a), std::abs(b));
}

// Narayanan et al. 2021 (SC'21), Table 1: GPT models of vocabulary 51,200 and sequence 2,048 on
// A100 80GB nodes of 8 GPUs with 8 InfiniBand HDR adapters each (§5).
struct Table1Row {
  const char* params;  // billions, as printed
  int heads, hidden, layers, tp, pp, gpus, batch;
  double tflops;  // achieved TFLOP/s per GPU
};
inline const Table1Row kTable1[] = {
    {"1.7", 24, 2304, 24, 1, 1, 32, 512, 137},
    {"3.6", 32, 3072, 30, 2, 1, 64, 512, 138},
    {"7.5", 32, 4096, 36, 4, 1, 128, 512, 142},
    {"18.4", 48, 6144, 40, 8, 1, 256, 1024, 135},
    {"39.1", 64, 8192, 48, 8, 2, 512, 1536, 138},
    {"76.1", 80, 10240, 60, 8, 4, 1024, 1792, 140},
    {"145.6", 96, 12288, 80, 8, 8, 1536, 2304, 148},
    {"310.1", 128, 16384, 96, 8, 16, 1920, 2160, 155},
    {"529.6", 128, 20480, 105, 8, 35, 2520, 2520, 163},
    {"1008.0", 160, 25600, 128, 8, 64, 3072, 3072, 163},
};

// The layout every row is projected with, the same for all: micro-batches of one sequence
// (Megatron-LM's default --micro-batch-size), 1F1B without interleaving, full recomputation
// (the paper's FLOP count assumes it), fp16/bf16 mixed precision with Adam, no ZeRO, and the
// gradients all-reduced after the pipeline flush, not overlapped (Megatron-LM 2021).
inline Layout table1Layout(const Table1Row& row) {
  Layout l;
  l.tp = row.tp;
  l.pp = row.pp;
  l.globalBatch = row.batch;
  l.microBatchSize = 1;
  l.schedule = Schedule::OneFOneB;
  l.recompute = Recompute::Full;
  l.precision = Precision::Bf16Mixed;
  l.optimizer = "adam";
  l.zero = 0;
  l.overlapDpComm = false;
  return l;
}

inline Cluster a100s(int gpus) {
  Cluster c;
  c.gpu = loadGpu("a100-80gb");
  c.gpus = gpus;
  c.gpusPerNode = 8;
  c.nodeLink = NodeLink::InfiniBand;
  return c;
}

}  // namespace paralab::projection::fixtures
