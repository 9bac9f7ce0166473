// The memory a run needs, estimated before it starts (memory_estimate.h). A lower estimate,
// not a bound: staging buffers, workspaces and the allocator's slack come on top, so a run
// refused here could not have run, and one allowed may still be tight.
#include "memory_estimate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "config.h"
#include "model/gpt.h"
#include "model/mlp.h"
#include "model/moe.h"
#include "parallel/data/zero_policy.h"
#include "parallel/holdings.h"  // optimizerStateSlots

namespace paralab {

StateWidths stateWidths(Dtype precision) {
  if (precision == Dtype::Bf16 || precision == Dtype::Fp16) return {2, 4, 4};
  return {};
}

ModelStateBytes modelStatesPerRank(int64_t P, int stage, int K, int N, StateWidths w) {
  // RunConfig::validate refuses other stages; an estimate asked for before it stays defined.
  const ZeroStage z = *zeroStageOf(std::clamp(stage, 0, 3));
  const ZeroPolicy& policy = zeroPolicy(z);
  // The policy's formula counts 4-byte parameters and gradients; sharding is linear in width.
  const ZeroStateBytes b = policy.bytesPerRank(double(P), N, K);
  const double master = double(w.master) * double(P) / (policy.shardsOptimizer ? N : 1);
  return {b.params * w.params / 4, b.grads * w.grads / 4, b.optimizer, master};
}

MemoryEstimate estimateMemory(const RunConfig& c) {
  const int64_t H = c.hidden;
  // P of one replica: the MoE's experts are spread over ep ranks, so a replica of ep ranks holds
  // each expert once.
  int64_t P = MlpShape{784, c.hidden, c.layers, 10}.parameterCount();
  // The GPT's vocabulary is known once the text is read: taken as 96 (printable ASCII; fortunes
  // has 114), which keeps the estimate a lower one.
  constexpr int64_t kGptVocab = 96;
  GptShape gpt{int(kGptVocab), c.seq, c.hidden, c.layers, c.heads};
  const MoeFfnShape ffn{c.hidden, c.experts, c.topk};
  if (c.hasExperts()) gpt.moe = ffn;
  if (c.model == ModelKind::Gpt) P = gpt.parameterCount();
  if (c.model == ModelKind::Moe)
    P = MoeShape{784, c.hidden, c.layers, 10, c.experts, c.topk}.parameterCount();
  if (c.hasExperts())  // less the experts held elsewhere
    P -= int64_t(c.layers) * ffn.expertParameterCount() * c.experts * (std::max(1, c.ep) - 1) /
         std::max(1, c.ep);
  // Replicas: the data-parallel degree (ranks / (tp x pp)), each rank of them holding its
  // share; ZeRO shards over them (sync only), ps-sync's servers share one optimizer state, every
  // other strategy holds whole replicas. The cp
  // ranks of a replica hold the same weights (ZeRO shards over dp x cp).
  const int dp = std::max(1, c.ranks / std::max(1, c.tp * c.pp));
  // HSDP (--zero-shard node) shards over a node's ranks only, each node a replica.
  const int stage = c.strategy == "sync" ? c.zero : 0;
  const int shardOver = std::min(dp, c.zeroShardDegree());
  MemoryEstimate e;
  const int K = 4 * optimizerStateSlots(c.optimizer);
  if (c.strategy == "ps-sync") {
    // The parameter server: every rank a whole model and its gradients, the servers between
    // them one replica's optimizer state and master (parallel/async/param_server.cpp: the shards).
    const ModelStateBytes one = modelStatesPerRank(P, 0, K, 1, stateWidths(c.precision));
    e.modelStates = std::llround(dp * (one.params + one.grads) + one.optimizer + one.master);
  } else {
    e.modelStates = std::llround(
        dp * modelStatesPerRank(P, stage, K, shardOver, stateWidths(c.precision)).total());
  }
  // Mixed precision keeps activations in 16 bits (train/precision.h), but LayerNorm's
  // statistics, the logits and the token ids (fp32): e16 bytes a 16-bit value.
  const int64_t e16 = stateWidths(c.precision).params;
  // Per sample, forward keeps the input, and per block the LayerNorm's input and output, fc1's
  // and GELU's outputs (4H each) and fc2's output: 11H floats; then the logits.
  // With --accumulate K one micro-batch's (global batch / K) are alive at a time.
  const int64_t alive = c.globalBatch() / std::max(1, c.accumulate);
  e.activations = alive * (e16 * (784 + int64_t(c.layers) * 11 * H) + 4 * 10);
  e.data = int64_t(70000) * (784 * 4 + 4);  // Fashion-MNIST's 60,000 + 10,000 images as floats
  if (c.model == ModelKind::Gpt) {
    // Per token, per block: LN1's output and stats, qkv (3H), the attention output, the stream
    // after attention, LN2's output and stats, fc1's and GELU's outputs (4H each), the block's
    // output: 16H + 4 floats, and the attention probabilities, NH x T per token. Then the
    // embeddings, the final LayerNorm, the logits and the token ids: H + H + 2 + V + 2.
    // Selective recomputation keeps all but the probabilities; full keeps each block's input
    // only (H) and refills one block's buffers (workspace, not counted here).
    // With --ffn moe, fc1's and GELU's 8H become each of the top-k rows' expert input, fc1 and
    // GELU outputs and combined output (10H each), plus the router's E probabilities; those
    // stay under full recomputation too. Context parallelism's ring keeps no probabilities,
    // only each token's log-sum-exp per head (NH floats).
    const int64_t T = c.seq, tokens = alive * T;
    const int64_t moe = c.hasExperts() ? int64_t(c.topk) * 10 * H + c.experts - 8 * H : 0;
    // The 4 statistics and the final 4 (2 statistics, 2 token ids) and the logits stay fp32.
    const int64_t block = c.recompute == Recompute::Full        ? e16 * (H + (c.hasExperts() ? moe + 8 * H : 0))
                          : c.cp > 1                   ? e16 * (16 * H + int64_t(c.heads)) + 4 * 4
                          : c.recompute == Recompute::Selective ? e16 * (16 * H + moe) + 4 * 4
                                                       : e16 * (16 * H + moe + int64_t(c.heads) * T) + 4 * 4;
    e.activations = tokens * (int64_t(c.layers) * block + e16 * 2 * H + 4 * (4 + kGptVocab));
    e.data = int64_t(2600000) * 4 * (T + 1) / std::max<int64_t>(1, T);  // fortunes as windows
  }
  return e;
}

std::optional<std::string> memoryRefusal(const RunConfig& c, int64_t machineBytes, GpuMemory gpus) {
  // Thread ranks share this process: its host memory, or on cuda its GPUs. MPI ranks may be on
  // other machines, each process placed on its machine's GPUs: those are not estimated here.
  if (c.backend != Backend::Thread) return std::nullopt;
  const MemoryEstimate e = estimateMemory(c);
  const double GiB = 1024.0 * 1024 * 1024;
  char line[400];
  if (c.device == Device::Cuda) {
    // The model states and activations are the ranks' (an equal share each); the busiest GPU
    // holds ceil(ranks / GPUs) of them. The data stays on the host, a batch at a time moved.
    if (gpus.count <= 0 || gpus.bytesEach <= 0) return std::nullopt;
    const int onBusiest = (c.ranks + gpus.count - 1) / gpus.count;
    const double need = double(e.modelStates + e.activations) / c.ranks * onBusiest;
    if (need <= double(gpus.bytesEach)) return std::nullopt;
    std::snprintf(line, sizeof line,
                  "ranks: this run needs about %.1f GiB on one GPU (%d of its %d ranks' model "
                  "states and activations), the GPU has %.1f GiB; fewer ranks per GPU, a smaller "
                  "hidden size or a ZeRO stage needs less",
                  need / GiB, onBusiest, c.ranks, gpus.bytesEach / GiB);
    return std::string(line);
  }
  if (machineBytes <= 0 || e.total() <= machineBytes) return std::nullopt;
  std::snprintf(line, sizeof line,
                "ranks: this run needs about %.0f GiB of memory (model states %.0f GiB over %d "
                "ranks, activations %.1f GiB), this machine has %.0f GiB; fewer ranks, a smaller "
                "hidden size or a ZeRO stage needs less",
                e.total() / GiB, e.modelStates / GiB, c.ranks, e.activations / GiB,
                machineBytes / GiB);
  return std::string(line);
}

}  // namespace paralab
