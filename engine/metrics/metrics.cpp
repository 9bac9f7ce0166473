// JSON form of the metrics: the `--json` line of paralab-run and the app's CSV/JSON exports
// use these names (defined in lessons/reference/metrics.md).
#include "metrics/metrics.h"

#include <nlohmann/json.hpp>

namespace paralab {

nlohmann::json toJson(const MemorySnapshot& m) {
  nlohmann::json j;
  for (int i = 0; i < kMemCategories; ++i)
    j[std::string(memCategoryName(MemCategory(i)))] = m.current[size_t(i)];
  j["peak"] = m.peakTotal;
  return j;
}

nlohmann::json toJson(const StepMetrics& m) {
  nlohmann::json j = {{"step", m.step},           {"loss", m.loss},
                      {"step_ms", m.stepMs},      {"samples_per_s", m.samplesPerS},
                      {"forward_ms", m.forwardMs}, {"backward_ms", m.backwardMs},
                      {"optimizer_ms", m.optimizerMs}, {"data_ms", m.dataMs}};
  if (m.testAccuracy) j["test_accuracy"] = *m.testAccuracy;
  if (m.staleness) j["staleness"] = *m.staleness;
  if (m.spread) j["spread"] = *m.spread;
  if (m.bubble) j["bubble"] = *m.bubble;
  if (m.bubbleReference) j["bubble_reference"] = *m.bubbleReference;
  if (!m.expertTokens.empty()) j["expert_tokens"] = m.expertTokens;
  if (m.droppedTokens) j["dropped_tokens"] = *m.droppedTokens;
  if (m.auxLoss) j["aux_loss"] = *m.auxLoss;
  if (!m.emulated.empty()) j["emulated"] = m.emulated;
  j["ranks"] = nlohmann::json::array();
  for (const RankMetrics& r : m.ranks) {
    j["ranks"].push_back({{"rank", r.rank},
                          {"compute_ms", r.computeMs},
                          {"comm_ms", r.commMs},
                          {"idle_ms", r.idleMs},
                          {"bytes_sent", r.bytesSent},
                          {"bytes_recv", r.bytesRecv},
                          {"sent_to", r.sentTo},
                          {"mem", toJson(r.mem)}});
    if (r.tokens) j["ranks"].back()["tokens"] = *r.tokens;
    if (r.bubble) j["ranks"].back()["bubble"] = *r.bubble;
  }
  // Each rank's traffic split by op and group, where it called any (metrics.md, `ops`).
  for (size_t i = 0; i < m.ranks.size(); ++i)
    for (const OpTraffic& o : m.ranks[i].ops)
      j["ranks"][i]["ops"].push_back({{"op", o.op},
                                      {"group", o.group},
                                      {"calls", o.calls},
                                      {"bytes_sent", o.bytesSent},
                                      {"bytes_recv", o.bytesRecv},
                                      {"ms", o.ms}});
  return j;
}

}  // namespace paralab
