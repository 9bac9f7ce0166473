// The memory part of the projection (memory_model.h). See tests/engine/tst_projection.cpp.
#include "projection/memory_model.h"

#include <cmath>

#include "config.h"
#include "model/gpt.h"  // GptShape, MoeFfnShape
#include "model/mlp.h"
#include "parallel/holdings.h"  // optimizerStateSlots

namespace paralab::projection {

int optimizerBytesPerParameter(Precision p, const std::string& optimizer) {
  const int states = 4 * optimizerStateSlots(optimizer);
  return keepsMaster(p) ? 4 + states : states;
}

int parameterBytes(Precision p) {
  // fp8: the bf16 weight, and its FP8 cast kept from a step's first micro-batch to its last in
  // both layouts Hopper's FP8 GEMMs read (rowwise for the forward, columnwise, the transpose,
  // for the input gradient): Transformer Engine's "FP8 weight caching" and "Handling
  // transposes" (its user guide's performance considerations).
  return p == Precision::Fp8Mixed ? elementBytes(p) + 2 : elementBytes(p);
}

ModelStateBytes modelStates(double P, int stage, Precision p, const std::string& optimizer,
                            int dpRanks, int gradBytes) {
  // ZeRO's accounting: parameters and gradients at the precision's width, the master in K.
  return modelStatesPerRank(std::llround(P), stage, optimizerBytesPerParameter(p, optimizer),
                            dpRanks,
                            StateWidths{.params = parameterBytes(p),
                                        .grads = gradBytes > 0 ? gradBytes : elementBytes(p),
                                        .master = 0});
}

namespace {

// The recipe's bytes per token of one block (see the header), at element width e.
double recipeBytes(const BlockWork& w, Recompute rc, double e, bool dropout) {
  const double h = w.hidden, t = w.tp, shared = w.sequenceParallel ? t : 1;
  if (rc == Recompute::Full) return e * h / shared;
  if (!w.attention) {
    // The MLP's block: LayerNorm input and fc1 input shared, fc1 and GELU outputs split.
    return e * (3 * h / shared + 2 * w.ffnMultiple * h / t);
  }
  const double k = w.experts > 0 ? w.topk : 1;
  double elements = 4 * h / shared + (4 * h + 2 * w.ffnMultiple * h * k) / t;
  if (w.experts > 0) elements += (k - 1) * h / shared + w.experts;  // expert inputs, router
  double masks = dropout ? 2 * h / shared : 0;
  if (rc == Recompute::None) {
    const double scores = double(w.heads) / t * w.seq;
    elements += scores * (dropout ? 2 : 1);
    masks += dropout ? scores : 0;
  }
  return e * elements + masks;
}

// memory_estimate.cpp's count for the engine's model of this block at tp 1: the activations
// of one more block, per token (fp32 bytes).
double engineBytesPerToken(const BlockWork& w, Recompute rc) {
  RunConfig c;
  c.model = w.attention ? ModelKind::Gpt : ModelKind::Mlp;
  c.hidden = w.hidden;
  c.heads = w.heads;
  c.seq = w.attention ? w.seq : 1;
  c.recompute = rc;
  if (w.experts > 0) {
    c.ffn = Ffn::Moe;
    c.experts = w.experts;
    c.topk = w.topk;
  }
  c.batch = 1;
  c.ranks = 1;
  c.layers = 1;
  const double one = double(estimateMemory(c).activations);
  c.layers = 0;
  const double none = double(estimateMemory(c).activations);
  return (one - none) / (w.attention ? w.seq : 1);
}

}  // namespace

double blockActivationBytesPerToken(const BlockWork& w, Recompute recompute,
                                    ActivationRecipe recipe, Precision p) {
  const double e = elementBytes(p);
  if (recipe == ActivationRecipe::Megatron) return recipeBytes(w, recompute, e, w.dropout);
  BlockWork whole = w;
  whole.tp = 1;
  whole.sequenceParallel = false;
  const double split =
      recipeBytes(w, recompute, 4, false) / recipeBytes(whole, recompute, 4, false);
  return engineBytesPerToken(w, recompute) * (e / 4.0) * split;
}

double blockParameters(const BlockWork& w) {
  // The engine's FFN is 4h wide; another multiple f changes fc1 and fc2 by (f - 4)(2h^2 + h).
  const double h = w.hidden, wider = w.experts > 0 ? 0 : (w.ffnMultiple - 4) * (2 * h * h + h);
  if (!w.attention) {
    const MlpShape one{784, w.hidden, 1, 10}, none{784, w.hidden, 0, 10};
    return double(one.parameterCount() - none.parameterCount()) + wider;
  }
  GptShape one{96, w.seq, w.hidden, 1, w.heads}, none{96, w.seq, w.hidden, 0, w.heads};
  if (w.experts > 0) one.moe = none.moe = MoeFfnShape{w.hidden, w.experts, w.topk};
  return double(one.parameterCount() - none.parameterCount()) + wider;
}

}  // namespace paralab::projection
