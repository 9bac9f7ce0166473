// Gradient accumulation (--accumulate K): the global batch B of one optimizer step is cut into
// K micro-batches of B / K samples, run one after another; their gradients add up in the
// gradient buffer before one update. See tests/engine/tst_accumulate.cpp.
//   Loss: each sample's loss is divided by B (not B / K), so the K micro-batches' gradients sum
//     to the gradient of the whole batch: the same step as --accumulate 1, to fp32 rounding.
//   Data parallelism: micro-batch k is split over the replicas as a whole batch would be, and
//     the replicas sum their gradients once per optimizer step (GradSync::beginStep(step, K):
//     the buckets start after the last micro-batch's backward; per-tensor and ZeRO-1 reduce
//     after it): the same collectives and bytes as --accumulate 1. ZeRO-2 and -3 reduce-scatter
//     each micro-batch's gradients into the owned shard, as DeepSpeed does (its stage 1-2
//     optimizer reduces on every micro-step when it partitions gradients and only at the
//     accumulation boundary otherwise; stage 3 adds each micro-step's reduced partition into
//     its gradient partition): K x their reduce-scatter bytes, the price of holding 1/N of the
//     gradients between micro-batches; ZeRO-3 also gathers each unit for every micro-batch's
//     forward and backward (2K gathers a step).
//   Mixed precision (--precision bf16|fp16, train/precision.h): each micro-batch's weight
//     gradients are rounded to 16 bits on their own and added into the fp32 buffer (Megatron's
//     main_grad); the one sync, the loss scale's overflow check and the update read the fp32
//     sum. fp16's loss scale multiplies every micro-batch's loss. See
//     tests/engine/tst_precision_accumulate.cpp.
//   Pipelines: each of the K micro-batches runs the whole schedule over its own --microbatches
//     M pieces (K pipeline flushes per step); the gradients of all K x M add up before the one
//     sync. One schedule of K x M micro-batches computes the same sum with one bubble instead
//     of K, which is how Megatron-LM counts its micro-batches; here the two are kept apart so
//     each can be seen.
#pragma once
#include <vector>

namespace paralab {

// The sample indices of micro-batch k of K of `globalBatch` (K divides its size: validate()).
inline std::vector<int> microBatchOf(const std::vector<int>& globalBatch, int k, int K) {
  const size_t each = globalBatch.size() / size_t(K);
  return {globalBatch.begin() + long(each * size_t(k)),
          globalBatch.begin() + long(each * size_t(k + 1))};
}

}  // namespace paralab
