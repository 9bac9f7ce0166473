// The projection's cluster settings table (projection_settings.h).
// See tests/engine/tst_projection_layouts.cpp (clusterSettingsAreATable).
#include "projection/projection_settings.h"

#include "projection/gpu_spec.h"

namespace paralab::projection {

namespace {

constexpr const char* kCluster = "Cluster";

std::vector<SettingChoice> gpuChoices(const RunConfig&) {
  std::vector<SettingChoice> out;
  for (const std::string& name : gpuNames()) {
    try {
      const GpuSpec g = loadGpu(name);
      out.push_back({name, g.title, g.nicTitle.empty() ? g.title : g.title + ", " + g.nicTitle});
    } catch (const ConfigError& e) {  // a malformed datasheet: --project names it when chosen
      out.push_back({name, name, e.what()});
    }
  }
  return out;
}

std::vector<Setting> clusterTable() {
  std::vector<Setting> t;
  t.push_back(extraSetting("gpu", SettingType::Text, std::string("h100-sxm"))
                  .in(kCluster, "GPU")
                  .describe("The GPU kind, from its datasheet (resources/gpus)",
                            "Peak FLOP/s per precision, memory and its bandwidth, NVLink and the "
                            "node's network adapters.")
                  .oneOf(gpuChoices));
  t.push_back(extraSetting("gpus", SettingType::Integer, int64_t(8))
                  .in(kCluster, "GPUs")
                  .describe("GPUs in all: one rank each")
                  .range(1, 10'000'000));
  t.push_back(extraSetting("gpus-per-node", SettingType::Integer, int64_t(8))
                  .in(kCluster, "GPUs per node")
                  .describe("N: GPUs per node for --project",
                            "GPUs of a node talk over NVLink; nodes over the node link.")
                  .range(1, 1024));
  t.push_back(
      extraSetting("node-link", SettingType::Text, std::string("infiniband"))
          .in(kCluster, "Between nodes")
          .describe("infiniband|ethernet: between the nodes of --project (InfiniBand: "
                    "the GPU's node adapters; ethernet: resources/links/ethernet.json, "
                    "one port per node)")
          .oneOf({{"infiniband", "InfiniBand", "The node's adapters of the GPU's datasheet"},
                  {"ethernet", "Ethernet", "One port per node (resources/links)"}}));
  // The run's precision row (run_settings_model.cpp): a projection assumes bf16 unless given.
  t.push_back(*findSetting("precision"));
  t.push_back(extraSetting("vocab", SettingType::Integer, int64_t(0))
                  .in(kCluster, "Vocabulary")
                  .describe("V: the GPT's vocabulary for --project (default 96; a training run's "
                            "vocabulary is its data set's characters)")
                  .range(0, 10'000'000)
                  .zeroIs("the engine's 96 characters")
                  .appliesWhen([](const RunConfig& c) -> Setting::Why {
                    if (c.model == ModelKind::Gpt) return std::nullopt;
                    return std::string(
                        "the MLP's inputs and classes are its data set's "
                        "(allowed: --vocab with --model gpt)");
                  }));
  t.push_back(
      extraSetting("attention-kernel", SettingType::Text, std::string("materialised"))
          .in(kCluster, "Attention kernel")
          .describe("materialised|cudnn|flash2: attention in --project: its products as GEMMs "
                    "with the scores written to memory, or one fused kernel at the rate "
                    "measured for it on the GPU (resources/gpus)",
                    "cuDNN's is what Transformer Engine (Megatron-Core) runs on Hopper; "
                    "FlashAttention-2 is PyTorch's scaled_dot_product_attention.")
          .oneOf({{"materialised", "Scores in memory", "GEMMs, the s x s scores written out"},
                  {"cudnn", "Fused (cuDNN)", "Transformer Engine's on Hopper, measured"},
                  {"flash2", "Fused (FlashAttention-2)", "PyTorch's SDPA, measured"}})
          .appliesWhen([](const RunConfig& c) -> Setting::Why {
            if (c.model == ModelKind::Gpt) return std::nullopt;
            return std::string("the MLP has no attention (allowed: --attention-kernel with "
                               "--model gpt)");
          }));
  for (Setting& s : t) s.owner = "projection";
  return t;
}

}  // namespace

const std::vector<Setting>& projectionSettings() {
  static const std::vector<Setting> table = clusterTable();
  return table;
}

const Setting* findProjectionSetting(std::string_view key) {
  return findSetting(projectionSettings(), key);
}

std::optional<std::string> checkCluster(const RunConfig& config, const RunProjection& q) {
  RunConfig c = config;
  const auto put = [&](const char* key, SettingValue v) { findProjectionSetting(key)->set(c, v); };
  put("gpus-per-node", int64_t(q.gpusPerNode));
  put("node-link", q.nodeLink);
  put("precision", q.precision);
  put("vocab", int64_t(q.vocab));
  put("attention-kernel", q.attentionKernel);
  for (const Setting& s : projectionSettings()) {
    if (s.key == "gpu" || s.key == "gpus") continue;  // GPU:COUNT, read with its own words
    if (auto err = s.check(c)) return err;
    if (auto err = inapplicable(s, c)) return err;
  }
  return std::nullopt;
}

}  // namespace paralab::projection
