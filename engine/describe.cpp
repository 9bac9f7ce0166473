// A run in words (describe.h): the settings table's labels and choices for the long form, and
// the short parts of a one-line description. See tests/engine/tst_describe.cpp.
#include "describe.h"

#include <algorithm>

#include "cpu/gemm.h"           // vendor_blas_name
#include "parallel/pipeline/schedule.h"  // pipelineChunks
#include "parallel/pipeline/schedule_file.h"  // isScheduleFile
#include "parallel/strategy.h"  // strategyFor: the row that runs the configuration
#include "schema.h"
#include "train/precision.h"  // precisionNote

namespace paralab {

namespace {

std::string n(long long v) { return std::to_string(v); }

// Settings that say what a run is even at their default.
bool essential(const std::string& key, const RunConfig& c) {
  static const std::vector<std::string> always = {"model", "layers", "hidden",    "dataset",
                                                  "batch", "device", "optimizer", "lr"};
  if (std::find(always.begin(), always.end(), key) != always.end()) return true;
  return c.ranks > 1 && (key == "ranks" || key == "strategy");
}

SettingWords wordsOf(const Setting& s, const RunConfig& c) {
  SettingWords w{s.key, s.label, formatValue(s.get(c)), "", ""};
  if (s.choices) {
    for (const SettingChoice& ch : s.choices(c))
      if (ch.value == w.value) {
        w.words = ch.label.empty() ? ch.value : ch.label;
        w.summary = ch.summary;
      }
    if (w.words.empty()) w.words = w.value;
    return w;
  }
  if (s.type == SettingType::Switch) {
    w.words = w.value == "true" ? "on" : "off";
    return w;
  }
  if (s.type == SettingType::Integer && w.value == "0" && !s.zeroMeans.empty()) {
    w.words = s.zeroMeans;
    return w;
  }
  w.words = w.value + (s.unit.empty() ? "" : " " + s.unit);
  return w;
}

std::string joined(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const std::string& p : parts)
    if (!p.empty()) out += (out.empty() ? "" : separator) + p;
  return out;
}

}  // namespace

const SettingWords* RunDescription::find(std::string_view key) const {
  for (const SettingWords& w : settings)
    if (w.key == key) return &w;
  return nullptr;
}

std::string RunDescription::brief(bool withRanks) const {
  std::vector<std::string> parts;
  if (ranks == "serial") {
    if (withRanks) parts.push_back(ranks);
  } else {
    parts.push_back(strategy);
    if (withRanks) parts.push_back(ranks);
  }
  parts.insert(parts.end(), layout.begin(), layout.end());
  parts.insert(parts.end(), modelParts.begin(), modelParts.end());
  parts.push_back(training);
  if (device != "cpu") parts.push_back(device);
  for (const EmulatedPart& p : emulated) parts.push_back(p.brief + " (emulated)");
  return joined(parts, " · ");
}

std::string RunDescription::line() const { return joined({model, data, brief()}, " · "); }

SettingWords settingWords(const RunConfig& config, std::string_view key) {
  if (const Setting* s = findSetting(key)) return wordsOf(*s, config);
  return SettingWords{std::string(key), std::string(key), "", std::string(key), ""};
}

RunDescription describeRun(const RunConfig& config) {
  RunDescription d;
  // The settings as they take effect: one that does not apply (or, serial, needs several
  // ranks) is at its default there and left out here.
  const bool serial = config.ranks <= 1;
  const SettingsInEffect effect = settingsInEffect(config, serial);
  const RunConfig& c = effect.config;
  for (const Setting& s : runSettings()) {
    if (effect.why(s.key)) continue;
    if (s.isDefault(c) && !essential(s.key, c)) continue;
    d.settings.push_back(wordsOf(s, c));
  }

  // [SECTION] The short parts
  const bool gpt = c.model == ModelKind::Gpt;
  d.model = std::string(gpt                         ? "GPT"
                        : c.model == ModelKind::Moe ? "MoE"
                                                    : "MLP") +
            " H=" + n(c.hidden) + " L=" + n(c.layers) +
            (gpt ? " " + n(c.heads) + " heads T=" + n(c.seq) : "");
  d.data = c.dataset + " · B=" + n(c.globalBatch());
  d.ranks = serial ? "serial" : n(c.ranks) + " ranks";
  if (!effect.why("strategy") && !serial) d.strategy = c.strategy;
  try {
    const StrategyInfo& row = strategyFor(c);
    d.strategyRow = row.name;
    d.strategySummary = row.summary;
  } catch (const ConfigError&) {  // a strategy the table does not have: validate() says so
    d.strategyRow = c.strategy;
  }
  if (!serial) {
    if (c.zero > 0) d.layout.push_back("ZeRO-" + n(c.zero));
    if (c.modelParallel()) d.layout.push_back("dp " + n(c.dpDegree()));
    if (c.tp > 1) d.layout.push_back("tp " + n(c.tp) + (c.sp ? " + sp" : ""));
    if (c.pp > 1) {
      d.layout.push_back("pp " + n(c.pp));
      const int chunks = pipelineChunks(c.schedule, c.pp, c.virtualStages);
      // A schedule file by its name: the learner's table, not where it lies.
      const std::string schedule = isScheduleFile(c.schedule)
                                       ? "schedule " + c.schedule.substr(c.schedule.rfind('/') + 1)
                                       : c.schedule;
      d.layout.push_back(schedule + (chunks > 1 ? " (" + n(chunks) + " chunks per rank)" : "") +
                         ", " + n(c.microbatches) + " micro-batches");
    } else if (c.modelParallel() && c.microbatches > 1) {
      d.layout.push_back(n(c.microbatches) + " micro-batches");
    }
    if (c.cp > 1)
      d.layout.push_back("cp " + n(c.cp) + (c.cpOrder == CpOrder::Zigzag ? "" : " contiguous") +
                         (c.cpKind == CpKind::Ulysses ? " ulysses" : ""));
    if (c.hasExperts() && c.ep > 1) {
      const int each = c.experts / c.ep;
      d.layout.push_back("ep " + n(c.ep) + " (" + n(each) + " expert" + (each == 1 ? "" : "s") +
                         " per rank)");
    }
  }
  if (c.hasExperts()) {
    d.modelParts.push_back("MoE " + n(c.experts) + " experts");
    d.modelParts.push_back("top-" + n(c.topk));
    for (const char* key : {"capacity-factor", "aux-loss"})
      if (const SettingWords* w = d.find(key)) d.modelParts.push_back(w->label + " " + w->value);
  }
  if (gpt && c.recompute != Recompute::None) d.modelParts.push_back("recompute " + nameOf(c.recompute));
  d.training = c.optimizer + " lr " + formatValue(c.lr);
  // Gradient accumulation: K micro-batches of B / K inside the global batch B of each step.
  if (c.accumulate > 1)
    d.training += ", accumulate " + n(c.accumulate) + " × " + n(c.globalBatch() / c.accumulate);
  // Mixed precision, and that its speed is fp32's on these kernels (train/precision.h).
  if (const std::string note = precisionNote(c); !note.empty()) d.training += ", " + note;
  d.device = nameOf(c.device);
  d.deviceWords = settingWords(c, "device").words;
  d.gemm = "GEMM " + c.kernel;
  if (c.device == Device::Cpu && c.kernel == "vendor")
    d.gemm += std::string(" (") + kernels::vendor_blas_name() + ")";
  if (c.device == Device::Cuda && c.kernel.rfind("vendor", 0) == 0) d.gemm += " (cuBLAS)";
  d.emulated = emulatedParts(config);
  return d;
}

std::vector<std::string> runFlags(const RunConfig& config,
                                  const std::vector<std::string>& leaveOut) {
  std::vector<std::string> flags;
  for (const Setting& s : runSettings()) {
    if (std::find(leaveOut.begin(), leaveOut.end(), s.key) != leaveOut.end()) continue;
    if (s.isDefault(config) && s.key != "model" && s.key != "dataset") continue;
    const SettingValue v = s.get(config);
    if (s.type == SettingType::Switch)
      flags.push_back((std::get<bool>(v) ? "--" : "--no-") + s.key);
    else {
      flags.push_back("--" + s.key);
      flags.push_back(formatValue(v));
    }
  }
  return flags;
}

}  // namespace paralab
