// The per-step record's JSON, both ways (see metrics.h): the `--json` lines of paralab-run, the
// figures MPI ranks send to rank 0 and the window's run file all use these names, defined in
// lessons/reference/metrics.md. See tests/engine/tst_metrics.cpp.
#include "metrics/metrics.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "metrics/straggler.h"

namespace paralab {

// [SECTION] Writing

nlohmann::json toJson(const MemorySnapshot& m) {
  nlohmann::json j;
  for (int i = 0; i < kMemCategories; ++i)
    j[std::string(memCategoryName(MemCategory(i)))] = m.current[size_t(i)];
  j["peak"] = m.peakTotal;
  for (int i = 0; i < kMemCategories; ++i)
    j["peaks"][std::string(memCategoryName(MemCategory(i)))] = m.peak[size_t(i)];
  return j;
}

nlohmann::json toJson(const RankMetrics& r) {
  nlohmann::json j = {{"rank", r.rank},
                      {"loss_sum", r.lossSum},
                      {"samples", r.samples},
                      {"compute_ms", r.computeMs},
                      {"comm_ms", r.commMs},
                      {"idle_ms", r.idleMs},
                      {"data_ms", r.dataMs},
                      {"forward_ms", r.forwardMs},
                      {"backward_ms", r.backwardMs},
                      {"optimizer_ms", r.optimizerMs},
                      {"bytes_sent", r.bytesSent},
                      {"bytes_recv", r.bytesRecv},
                      {"sent_to", r.sentTo},
                      {"mem", toJson(r.mem)}};
  // Each (op, group) the rank called, when it called any (metrics.md, `ops`).
  for (const OpTraffic& o : r.ops)
    j["ops"].push_back({{"op", o.op},
                        {"group", o.group},
                        {"calls", o.calls},
                        {"bytes_sent", o.bytesSent},
                        {"bytes_recv", o.bytesRecv},
                        {"ms", o.ms}});
  if (r.tiers)
    j["tiers"] = {{"intra_sent", r.tiers->intraSent},
                  {"intra_recv", r.tiers->intraRecv},
                  {"inter_sent", r.tiers->interSent},
                  {"inter_recv", r.tiers->interRecv}};
  if (r.bytesModelled) j["bytes_modelled"] = true;
  if (r.staleness) j["staleness"] = *r.staleness;
  if (r.spread) j["spread"] = *r.spread;
  if (r.stage)
    j["stage"] = {
        {"first_ns", r.stage->firstNs}, {"last_ns", r.stage->lastNs}, {"busy_ns", r.stage->busyNs}};
  if (r.bubble) j["bubble"] = *r.bubble;
  if (r.cpTransferMs) j["cp_transfer_ms"] = *r.cpTransferMs;
  if (r.cpHiddenMs) j["cp_hidden_ms"] = *r.cpHiddenMs;
  if (r.cpExposedMs) j["cp_exposed_ms"] = *r.cpExposedMs;
  if (r.emulatedStragglerMs) j["emulated_straggler_ms"] = *r.emulatedStragglerMs;
  if (!r.expertTokens.empty()) j["expert_tokens"] = r.expertTokens;
  if (r.droppedTokens) j["dropped_tokens"] = *r.droppedTokens;
  if (r.tokens) j["tokens"] = *r.tokens;
  if (r.auxLoss) j["aux_loss"] = *r.auxLoss;
  if (r.lossScale) j["loss_scale"] = *r.lossScale;
  if (r.skippedSteps) j["skipped_steps"] = *r.skippedSteps;
  if (r.flushedGrads) j["flushed_grads"] = *r.flushedGrads;
  if (r.overlap) j["overlap"] = toJson(*r.overlap);
  return j;
}

nlohmann::json toJson(const StepMetrics& m) {
  nlohmann::json j = {{"schema", kMetricsSchema},
                      {"step", m.step},
                      {"loss", m.loss},
                      {"step_ms", m.stepMs},
                      {"samples_per_s", m.samplesPerS},
                      {"forward_ms", m.forwardMs},
                      {"backward_ms", m.backwardMs},
                      {"optimizer_ms", m.optimizerMs},
                      {"data_ms", m.dataMs}};
  if (m.modelGflops) j["model_gflops"] = *m.modelGflops;
  if (m.testAccuracy) j["test_accuracy"] = *m.testAccuracy;
  if (m.testLoss) j["test_loss"] = *m.testLoss;
  if (m.staleness) j["staleness"] = *m.staleness;
  if (m.spread) j["spread"] = *m.spread;
  if (m.bubble) j["bubble"] = *m.bubble;
  if (m.bubbleReference) j["bubble_reference"] = *m.bubbleReference;
  if (m.accumulate) j["accumulate"] = *m.accumulate;
  if (m.world) j["world"] = *m.world;
  if (!m.expertTokens.empty()) j["expert_tokens"] = m.expertTokens;
  if (m.droppedTokens) j["dropped_tokens"] = *m.droppedTokens;
  if (m.auxLoss) j["aux_loss"] = *m.auxLoss;
  if (m.lossScale) j["loss_scale"] = *m.lossScale;
  if (m.skippedSteps) j["skipped_steps"] = *m.skippedSteps;
  if (m.flushedGrads) j["flushed_grads"] = *m.flushedGrads;
  if (!m.emulated.empty()) j["emulated"] = m.emulated;
  if (m.gpusPerNode) j["gpus_per_node"] = *m.gpusPerNode;
  addSlowestRank(j, m);  // straggler detection, derived from ranks[] (straggler.h)
  j["ranks"] = nlohmann::json::array();
  for (const RankMetrics& r : m.ranks) j["ranks"].push_back(toJson(r));
  return j;
}

// [SECTION] Reading: every field checked, a wrong one named with its place in the line.

namespace {

struct Reader {
  const nlohmann::json& j;
  std::string where;  // "ranks[2]." or ""

  [[noreturn]] void fail(const std::string& key, const char* why) const {
    throw std::runtime_error(where + key + ": " + why);
  }
  const nlohmann::json& at(const std::string& key) const {
    if (!j.is_object()) fail(key, "not inside a JSON object");
    const auto it = j.find(key);
    if (it == j.end()) fail(key, "missing");
    return *it;
  }
  template <typename T>
  T get(const std::string& key) const {
    try {
      return at(key).get<T>();
    } catch (const nlohmann::json::exception&) {
      fail(key, "of the wrong type");
    }
  }
  template <typename T>
  std::optional<T> optional(const std::string& key) const {
    if (!j.contains(key)) return std::nullopt;
    return get<T>(key);
  }
  Reader in(const std::string& key) const { return {at(key), where + key + "."}; }
};

MemorySnapshot memoryFromJson(const Reader& in) {
  MemorySnapshot m;
  // "master" is absent from runs recorded before mixed precision trained: 0 bytes.
  const auto read = [](const Reader& r, MemCategory c) {
    const std::string key(memCategoryName(c));
    return c == MemCategory::Master ? r.optional<int64_t>(key).value_or(0) : r.get<int64_t>(key);
  };
  for (int i = 0; i < kMemCategories; ++i) m.current[size_t(i)] = read(in, MemCategory(i));
  m.peakTotal = in.get<int64_t>("peak");
  const Reader peaks = in.in("peaks");
  for (int i = 0; i < kMemCategories; ++i) m.peak[size_t(i)] = read(peaks, MemCategory(i));
  return m;
}

RankMetrics rankFrom(const Reader& in) {
  RankMetrics r;
  r.rank = in.get<int>("rank");
  r.lossSum = in.get<double>("loss_sum");
  r.samples = in.get<int64_t>("samples");
  r.computeMs = in.get<double>("compute_ms");
  r.commMs = in.get<double>("comm_ms");
  r.idleMs = in.get<double>("idle_ms");
  r.dataMs = in.get<double>("data_ms");
  r.forwardMs = in.get<double>("forward_ms");
  r.backwardMs = in.get<double>("backward_ms");
  r.optimizerMs = in.get<double>("optimizer_ms");
  r.bytesSent = in.get<int64_t>("bytes_sent");
  r.bytesRecv = in.get<int64_t>("bytes_recv");
  r.sentTo = in.get<std::vector<int64_t>>("sent_to");
  if (in.j.contains("ops"))
    for (size_t i = 0; i < in.at("ops").size(); ++i) {
      const Reader o{in.at("ops")[i], in.where + "ops[" + std::to_string(i) + "]."};
      r.ops.push_back({o.get<std::string>("op"), o.get<std::string>("group"),
                       o.get<int64_t>("calls"), o.get<int64_t>("bytes_sent"),
                       o.get<int64_t>("bytes_recv"), o.get<double>("ms")});
    }
  if (in.j.contains("tiers")) {
    const Reader t = in.in("tiers");
    r.tiers = TierBytes{t.get<int64_t>("intra_sent"), t.get<int64_t>("intra_recv"),
                        t.get<int64_t>("inter_sent"), t.get<int64_t>("inter_recv")};
  }
  r.bytesModelled = in.optional<bool>("bytes_modelled").value_or(false);
  r.staleness = in.optional<double>("staleness");
  r.spread = in.optional<double>("spread");
  if (in.j.contains("stage")) {
    const Reader s = in.in("stage");
    r.stage = StageTimes{s.get<int64_t>("first_ns"), s.get<int64_t>("last_ns"),
                         s.get<int64_t>("busy_ns"), true};
  }
  r.bubble = in.optional<double>("bubble");
  r.cpTransferMs = in.optional<double>("cp_transfer_ms");
  r.cpHiddenMs = in.optional<double>("cp_hidden_ms");
  r.cpExposedMs = in.optional<double>("cp_exposed_ms");
  r.emulatedStragglerMs = in.optional<double>("emulated_straggler_ms");
  r.expertTokens = in.optional<std::vector<std::vector<int64_t>>>("expert_tokens")
                       .value_or(std::vector<std::vector<int64_t>>{});
  r.droppedTokens = in.optional<int64_t>("dropped_tokens");
  r.tokens = in.optional<int64_t>("tokens");
  r.auxLoss = in.optional<double>("aux_loss");
  r.lossScale = in.optional<double>("loss_scale");
  r.skippedSteps = in.optional<int64_t>("skipped_steps");
  r.flushedGrads = in.optional<int64_t>("flushed_grads");
  if (in.j.contains("overlap"))
    r.overlap = overlapMeterFromJson(in.at("overlap"), in.where + "overlap.");
  r.mem = memoryFromJson(in.in("mem"));
  return r;
}

}  // namespace

std::string schemaRefusal(int schema) {
  return "schema: version " + std::to_string(schema) + " (this build reads " +
         (kMetricsSchema == 1 ? std::string("version 1")
                              : "versions 1 to " + std::to_string(kMetricsSchema)) +
         ")";
}

RankMetrics rankMetricsFromJson(const nlohmann::json& j) { return rankFrom({j, ""}); }

StepMetrics stepMetricsFromJson(const nlohmann::json& j) {
  const Reader in{j, ""};
  if (const int schema = in.get<int>("schema"); schema > kMetricsSchema || schema < 1)
    throw std::runtime_error(schemaRefusal(schema));
  StepMetrics m;
  m.step = in.get<int64_t>("step");
  m.loss = in.get<double>("loss");
  m.stepMs = in.get<double>("step_ms");
  m.samplesPerS = in.get<double>("samples_per_s");
  m.forwardMs = in.get<double>("forward_ms");
  m.backwardMs = in.get<double>("backward_ms");
  m.optimizerMs = in.get<double>("optimizer_ms");
  m.dataMs = in.get<double>("data_ms");
  m.modelGflops = in.optional<double>("model_gflops");
  m.testAccuracy = in.optional<double>("test_accuracy");
  m.testLoss = in.optional<double>("test_loss");
  m.staleness = in.optional<double>("staleness");
  m.spread = in.optional<double>("spread");
  m.bubble = in.optional<double>("bubble");
  m.bubbleReference = in.optional<double>("bubble_reference");
  m.accumulate = in.optional<int>("accumulate");
  m.world = in.optional<int>("world");
  m.expertTokens = in.optional<std::vector<std::vector<int64_t>>>("expert_tokens")
                       .value_or(std::vector<std::vector<int64_t>>{});
  m.droppedTokens = in.optional<int64_t>("dropped_tokens");
  m.auxLoss = in.optional<double>("aux_loss");
  m.lossScale = in.optional<double>("loss_scale");
  m.skippedSteps = in.optional<int64_t>("skipped_steps");
  m.flushedGrads = in.optional<int64_t>("flushed_grads");
  m.emulated = in.optional<std::string>("emulated").value_or("");
  m.gpusPerNode = in.optional<int>("gpus_per_node");
  const nlohmann::json& ranks = in.at("ranks");
  if (!ranks.is_array()) in.fail("ranks", "not an array");
  for (size_t i = 0; i < ranks.size(); ++i)
    m.ranks.push_back(rankFrom({ranks[i], "ranks[" + std::to_string(i) + "]."}));
  return m;
}

// [SECTION] Equality

bool bytesModelled(const StepMetrics& m) {
  for (const RankMetrics& r : m.ranks)
    if (r.bytesModelled) return true;
  return false;
}

bool operator==(const RankMetrics& a, const RankMetrics& b) {
  return a.rank == b.rank && a.lossSum == b.lossSum && a.samples == b.samples &&
         a.computeMs == b.computeMs && a.commMs == b.commMs && a.idleMs == b.idleMs &&
         a.dataMs == b.dataMs && a.forwardMs == b.forwardMs && a.backwardMs == b.backwardMs &&
         a.optimizerMs == b.optimizerMs && a.bytesSent == b.bytesSent &&
         a.bytesRecv == b.bytesRecv && a.sentTo == b.sentTo && a.ops == b.ops && a.tiers == b.tiers &&
         a.bytesModelled == b.bytesModelled && a.staleness == b.staleness && a.spread == b.spread &&
         a.stage == b.stage && a.bubble == b.bubble && a.cpTransferMs == b.cpTransferMs &&
         a.cpHiddenMs == b.cpHiddenMs && a.cpExposedMs == b.cpExposedMs &&
         a.emulatedStragglerMs == b.emulatedStragglerMs && a.expertTokens == b.expertTokens &&
         a.droppedTokens == b.droppedTokens && a.tokens == b.tokens && a.auxLoss == b.auxLoss &&
         a.lossScale == b.lossScale && a.skippedSteps == b.skippedSteps &&
         a.flushedGrads == b.flushedGrads && a.overlap == b.overlap && a.mem.current == b.mem.current && a.mem.peak == b.mem.peak &&
         a.mem.peakTotal == b.mem.peakTotal;
}

bool operator==(const StepMetrics& a, const StepMetrics& b) {
  return a.step == b.step && a.loss == b.loss && a.stepMs == b.stepMs &&
         a.samplesPerS == b.samplesPerS && a.modelGflops == b.modelGflops &&
         a.forwardMs == b.forwardMs &&
         a.backwardMs == b.backwardMs && a.optimizerMs == b.optimizerMs && a.dataMs == b.dataMs &&
         a.testAccuracy == b.testAccuracy && a.testLoss == b.testLoss && a.staleness == b.staleness && a.spread == b.spread &&
         a.bubble == b.bubble && a.bubbleReference == b.bubbleReference &&
         a.accumulate == b.accumulate && a.world == b.world &&
         a.expertTokens == b.expertTokens && a.droppedTokens == b.droppedTokens &&
         a.auxLoss == b.auxLoss && a.lossScale == b.lossScale &&
         a.skippedSteps == b.skippedSteps && a.flushedGrads == b.flushedGrads &&
         a.emulated == b.emulated && a.gpusPerNode == b.gpusPerNode && a.ranks == b.ranks;
}

}  // namespace paralab
