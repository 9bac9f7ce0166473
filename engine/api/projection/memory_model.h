// The memory part of the projection: what one GPU holds, by the engine's categories (params,
// grads, optimizer, activations, workspace). Model states follow ZeRO (Rajbhandari et al. 2020)
// through the engine's own formula (memory_estimate.h, modelStatesPerRank); activations follow
// the engine's estimate for its own models and Korthikanti et al. 2022 ("Reducing Activation
// Recomputation in Large Transformer Models", §4) for Megatron-LM's GPT, with tensor and
// sequence parallelism, context parallelism and recomputation. See
// tests/engine/tst_projection.cpp (zeroPaperMemory, memoryMatchesTheEngineEstimate).
#pragma once
#include <string>

#include "memory_estimate.h"  // ModelStateBytes, modelStatesPerRank
#include "model/recompute.h"
#include "projection/compute_model.h"

namespace paralab::projection {

// Bytes of one GPU, by category.
struct MemoryPerGpu {
  double params = 0, grads = 0, optimizer = 0, activations = 0, workspace = 0;
  double total() const { return params + grads + optimizer + activations + workspace; }
};

// Whose buffers the activations are: the engine's models (what memory_estimate.cpp counts:
// no dropout) or Megatron-LM's GPT (with dropout and its masks, Korthikanti et al. 2022).
enum class ActivationRecipe { Engine, Megatron };

// K, bytes of optimizer state per parameter. Mixed precision keeps an fp32 master copy beside
// the optimizer's fp32 states: Adam 4 + 4 + 4 = 12 (ZeRO's K = 12), momentum 8, SGD 4. Training
// in fp32 (the engine) keeps the states only: Adam 8, momentum 4, SGD 0 (parallel/holdings.h).
int optimizerBytesPerParameter(Precision p, const std::string& optimizer);
// Bytes a GPU holds per parameter for the weights themselves: the precision's width (bf16 2,
// fp32 and tf32 4), and in fp8 the bf16 weight plus its cached FP8 cast and that cast's
// transpose, 2 + 1 + 1 = 4. With 2-byte gradients and Adam's K = 12, fp8 holds 18 bytes a
// parameter where bf16 holds ZeRO's 16.
int parameterBytes(Precision p);

// The model states of one GPU holding P parameters of its shard, sharded over `dpRanks` at ZeRO
// `stage`: modelStatesPerRank (fp32 parameters and gradients), with the parameters
// (parameterBytes) and gradients stored at the precision's width (bf16 mixed precision: ZeRO's
// 2P + 2P + KP; fp8 4P + 2P + KP); gradients of `gradBytes` each where given (fp32 main
// gradients: 4).
ModelStateBytes modelStates(double P, int stage, Precision p, const std::string& optimizer,
                            int dpRanks, int gradBytes = 0);

// Activation bytes one block keeps for its backward, per token this GPU computes (the block's
// micro-batch tokens / cp). Megatron recipe, in elements of e bytes and 1-byte dropout masks,
// per token: LayerNorm inputs, QKV input and FFN input 4h (shared by the tp ranks unless
// sequence parallel), Q, K, V, attention output, GELU input and output 12h / tp, softmax output
// (and dropout output) (heads / tp) s, masks 2h + (heads / tp) s bytes with dropout. At e = 2
// with dropout: h (10 + 24 / t) + 5 heads s / t, Korthikanti's sbh (10 + 24/t + 5as/(ht)).
// Selective recomputation drops the (heads / tp) s terms; full keeps the block's input, e h
// (/ tp with sequence parallelism). The engine recipe takes memory_estimate.cpp's count at tp 1
// (estimateMemory, per block per token) and scales it by the recipe's ratio of tp to tp 1.
double blockActivationBytesPerToken(const BlockWork& w, Recompute recompute,
                                    ActivationRecipe recipe, Precision p);
// Parameters of one block (the engine's GPT or MLP: model/gpt.h, model/mlp.h), whole (not split).
double blockParameters(const BlockWork& w);

}  // namespace paralab::projection
