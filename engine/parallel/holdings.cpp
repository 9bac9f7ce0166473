// JSON form of a rank's holdings (see holdings.h). See tests/engine/tst_holdings.cpp.
#include "parallel/holdings.h"

#include <nlohmann/json.hpp>

#include "model/gpt.h"
#include "model/param_set.h"

namespace paralab {

const char* holdingKindName(HoldingKind k) {
  switch (k) {
    case HoldingKind::Params:
      return "params";
    case HoldingKind::Grads:
      return "grads";
    case HoldingKind::Optimizer:
      return "optimizer";
    case HoldingKind::Activations:
      return "activations";
    case HoldingKind::Batch:
      return "batch";
    case HoldingKind::Master:
      return "master";
  }
  return "?";
}

void addWholeTensors(std::vector<HeldSlice>& items, const ParamSet& ps, HoldingKind kind) {
  for (const ParamRef& r : ps.refs()) {
    const int64_t rows = r.shape.at(0), cols = r.numel() / rows;
    items.push_back({r.name, kind, -1, 0, rows, rows, rows, cols, r.numel() * 4});
  }
}

int optimizerStateSlots(const std::string& optimizer) {
  return optimizer == "adam" ? 2 : optimizer == "momentum" ? 1 : 0;
}

int64_t attentionProbsBytes(int64_t windows, int heads, int seq) {
  return windows * heads * int64_t(seq) * seq * 4;
}

GptActivationBytes gptActivationBytes(const GptShape& shape, Recompute recompute, int64_t windows) {
  const int64_t R = windows * shape.seq, C = shape.hidden, V = shape.vocab, L = shape.layers;
  const int64_t att = attentionProbsBytes(windows, shape.heads, shape.seq) / 4;
  // One block's buffers but the probabilities: ln1, qkv, y, mid, ln2 (C + 3C + C + C + C wide),
  // the two LayerNorms' mean and rstd (1 each), fc1's and GELU's outputs (4C each; the MoE
  // keeps its own rows instead).
  const int64_t block = R * (7 * C + 4 + (shape.moe ? 0 : 8 * C));
  // Always kept: token ids and targets, the residual stream a[0..L], the final LayerNorm's
  // output, mean and rstd, the logits.
  const int64_t always = 2 * R + (L + 1) * R * C + R * C + 2 * R + R * V;
  GptActivationBytes out;
  switch (recompute) {
    case Recompute::None:  // every block's, probabilities included
      out.stored = always + L * (block + att);
      break;
    case Recompute::Selective:  // every block's but the probabilities: one block's of those
      out.stored = always + L * block;
      out.recomputed = att;
      break;
    case Recompute::Full:  // only each block's input (a[l]); one block's buffers refilled
      out.stored = always;
      out.recomputed = block + att;
      break;
  }
  out.stored *= 4;
  out.recomputed *= 4;
  return out;
}

const char* const kStoredActivations = "activations stored for backward";

std::string recomputedActivationsName(Recompute recompute) {
  switch (recompute) {
    case Recompute::None:
      return "";
    case Recompute::Selective:
      return "recomputed in backward: attention probabilities (one block's buffers)";
    case Recompute::Full:
      return "recomputed in backward: block internals (one block's buffers)";
  }
  return "";
}

nlohmann::json toJson(const RankHoldings& h) {
  nlohmann::json items = nlohmann::json::array(), groups = nlohmann::json::array(),
                 ops = nlohmann::json::array();
  for (const HeldSlice& s : h.items) {
    items.push_back({{"tensor", s.tensor},
                     {"kind", holdingKindName(s.kind)},
                     {"dim", s.dim},
                     {"begin", s.begin},
                     {"end", s.end},
                     {"total", s.total},
                     {"rows", s.rows},
                     {"cols", s.cols},
                     {"bytes", s.bytes},
                     {"recomputed", s.recomputed}});
    if (s.inFlight) items.back()["in_flight"] = true;
    if (s.dtype != Dtype::Fp32) items.back()["dtype"] = nameOf(s.dtype);
    if (s.tpShards > 1) items.back()["tp_shard"] = s.tpShard, items.back()["tp_shards"] = s.tpShards;
  }
  for (const HeldGroup& g : h.groups) groups.push_back({{"name", g.name}, {"ranks", g.worldRanks}});
  for (const CommOpTotals& o : h.lastStep.ops)
    ops.push_back(
        {{"op", commOpName(o.op)}, {"group", o.group}, {"calls", o.calls}, {"bytes_sent", o.sent}});
  return {{"rank", h.rank},
          {"coords",
           {{"dp", h.coords.dp}, {"tp", h.coords.tp}, {"pp", h.coords.pp}, {"cp", h.coords.cp}}},
          {"items", items},
          {"groups", groups},
          {"sent_to", h.lastStep.sentTo},
          {"sent_by_op", ops}};
}

}  // namespace paralab
