// JSON form of a rank's holdings (see holdings.h). See tests/engine/tst_holdings.cpp.
#include "parallel/holdings.h"

#include <nlohmann/json.hpp>

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

nlohmann::json toJson(const RankHoldings& h) {
  nlohmann::json items = nlohmann::json::array(), groups = nlohmann::json::array(),
                 ops = nlohmann::json::array();
  for (const HeldSlice& s : h.items)
    items.push_back({{"tensor", s.tensor},
                     {"kind", holdingKindName(s.kind)},
                     {"dim", s.dim},
                     {"begin", s.begin},
                     {"end", s.end},
                     {"total", s.total},
                     {"rows", s.rows},
                     {"cols", s.cols},
                     {"bytes", s.bytes}});
  for (const HeldGroup& g : h.groups) groups.push_back({{"name", g.name}, {"ranks", g.worldRanks}});
  for (const CommOpTotals& o : h.lastStep.ops)
    ops.push_back(
        {{"op", commOpName(o.op)}, {"group", o.group}, {"calls", o.calls}, {"bytes_sent", o.sent}});
  return {{"rank", h.rank},
          {"coords", {{"dp", h.coords.dp}, {"tp", h.coords.tp}, {"pp", h.coords.pp}}},
          {"items", items},
          {"groups", groups},
          {"sent_to", h.lastStep.sentTo},
          {"sent_by_op", ops}};
}

}  // namespace paralab
