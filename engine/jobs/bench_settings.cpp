// The table of a lesson's ```bench keys (see jobs/bench_settings.h): one row per kind and key,
// made into the schema's Setting rows, and the block's checks and request read from them.
// See tests/engine/tst_jobs.cpp (benchSettingsRefuseNamingTheKey) and tests/lessons.
#include "jobs/bench_settings.h"

#include <algorithm>

namespace paralab::jobs {

namespace {

// One key of one kind: a whole number min..max (its default byDefault), or a word of `words`
// (the first the default). `needsGpt`: a key of the GPT only (latency's seq and heads).
struct BenchRow {
  const char* kind;
  const char* key;
  double min = 0, max = 0, byDefault = 0;
  std::vector<std::string> words = {};
  const char* help = "";
  const char* zero = "";  // what 0 stands for
  bool needsGpt = false;
};

const std::vector<BenchRow>& rows() {
  static const std::vector<BenchRow> table = {
      {.kind = "gemm-ladder",
       .key = "size",
       .min = 16,
       .max = 2048,
       .byDefault = 512,
       .help = "the side n of the n×n matrices multiplied"},
      {.kind = "gemm-ladder",
       .key = "threads",
       .min = 0,
       .max = 64,
       .byDefault = 0,
       .help = "threads of the threaded rungs",
       .zero = "every core"},
      {.kind = "gemm-ladder",
       .key = "repeats",
       .min = 1,
       .max = 20,
       .byDefault = 3,
       .help = "timed runs behind each median"},
      {.kind = "simd-width",
       .key = "repeats",
       .min = 1,
       .max = 20,
       .byDefault = 5,
       .help = "timed runs behind each median"},
      {.kind = "false-sharing",
       .key = "threads",
       .min = 0,
       .max = 8,
       .byDefault = 0,
       .help = "the most threads counting",
       .zero = "every core, at least 2"},
      {.kind = "false-sharing",
       .key = "increments",
       .min = 1000,
       .max = 1e8,
       .byDefault = 2e6,
       .help = "increments each thread makes"},
      {.kind = "latency",
       .key = "model",
       .words = {"mlp", "gpt"},
       .help = "paralab-run's model, forward only"},
      {.kind = "latency",
       .key = "max-batch",
       .min = 1,
       .max = 4096,
       .byDefault = 1024,
       .help = "batches 1, 2, 4, ... up to this"},
      {.kind = "latency",
       .key = "hidden",
       .min = 16,
       .max = 1024,
       .byDefault = 128,
       .help = "hidden width H"},
      {.kind = "latency", .key = "layers", .min = 1, .max = 8, .byDefault = 2, .help = "layers L"},
      {.kind = "latency",
       .key = "seq",
       .min = 1,
       .max = 1024,
       .byDefault = 64,
       .help = "the GPT's context T, in characters",
       .needsGpt = true},
      {.kind = "latency",
       .key = "heads",
       .min = 1,
       .max = 64,
       .byDefault = 4,
       .help = "the GPT's attention heads; they divide hidden",
       .needsGpt = true},
      {.kind = "roofline",
       .key = "precision",
       .words = {"fp32", "tf32"},
       .help = "the GPUs' arithmetic projected"},
      {.kind = "roofline",
       .key = "max-batch",
       .min = 2,
       .max = 4096,
       .byDefault = 4096,
       .help = "the large batch measured beside batch 1"},
      {.kind = "roofline",
       .key = "hidden",
       .min = 16,
       .max = 1024,
       .byDefault = 128,
       .help = "hidden width H (not given: the run settings')"},
      {.kind = "roofline",
       .key = "layers",
       .min = 1,
       .max = 8,
       .byDefault = 2,
       .help = "layers L (not given: the run settings')"},
      {.kind = "roofline",
       .key = "repeats",
       .min = 1,
       .max = 20,
       .byDefault = 5,
       .help = "timed runs behind each median"},
      {.kind = "gpu-counts",
       .key = "experiment",
       .words = {"divergence", "coalescing", "gemm"},
       .help = "the GPU kernels counted on the host"},
      {.kind = "gil",
       .key = "max-workers",
       .min = 1,
       .max = 16,
       .byDefault = 4,
       .help = "threads and processes 1, 2, 4, ... up to this"},
      {.kind = "gil",
       .key = "iterations",
       .min = 1000,
       .max = 1e8,
       .byDefault = 1e6,
       .help = "steps of the Python loop, in all, split over the workers"},
      {.kind = "gil",
       .key = "repeats",
       .min = 1,
       .max = 20,
       .byDefault = 5,
       .help = "runs behind each median"},
      {.kind = "layouts",
       .key = "gpu",
       .words = {"h100-sxm", "a100-80gb", "h200"},
       .help = "the cluster's GPU"},
      {.kind = "layouts",
       .key = "node-link",
       .words = {"infiniband", "ethernet"},
       .help = "the link between nodes"},
      {.kind = "layouts",
       .key = "recompute",
       .words = {"selective", "full", "none"},
       .help = "activation recomputation"},
      {.kind = "layouts",
       .key = "gpus",
       .min = 8,
       .max = 16384,
       .byDefault = 512,
       .help = "GPUs in the cluster"},
      {.kind = "layouts",
       .key = "layers",
       .min = 1,
       .max = 256,
       .byDefault = 80,
       .help = "the GPT's layers"},
      {.kind = "layouts",
       .key = "hidden",
       .min = 64,
       .max = 65536,
       .byDefault = 8192,
       .help = "the GPT's hidden width"},
      {.kind = "layouts",
       .key = "heads",
       .min = 1,
       .max = 512,
       .byDefault = 64,
       .help = "the GPT's attention heads"},
      {.kind = "layouts",
       .key = "seq",
       .min = 1,
       .max = 131072,
       .byDefault = 4096,
       .help = "the GPT's context in tokens"},
      {.kind = "layouts",
       .key = "vocab",
       .min = 2,
       .max = 1000000,
       .byDefault = 32000,
       .help = "the vocabulary"},
      {.kind = "layouts",
       .key = "batch",
       .min = 1,
       .max = 1000000,
       .byDefault = 1024,
       .help = "the global batch in sequences"},
      {.kind = "layouts",
       .key = "pp",
       .min = 1,
       .max = 128,
       .byDefault = 8,
       .help = "pipeline stages"},
      {.kind = "layouts",
       .key = "min-tp",
       .min = 1,
       .max = 64,
       .byDefault = 8,
       .help = "the smallest tp projected (tp doubles up to max-tp)"},
      {.kind = "layouts",
       .key = "max-tp",
       .min = 1,
       .max = 64,
       .byDefault = 16,
       .help = "the largest tp projected"},
  };
  return table;
}

std::string textOf(const RunConfig& c, const std::string& key) {
  const auto it = c.extra.find(key);
  const std::string* s = it == c.extra.end() ? nullptr : std::get_if<std::string>(&it->second);
  return s ? *s : std::string();
}
int64_t wholeOf(const Setting& s, const RunConfig& c) {
  const SettingValue v = s.get(c);
  const int64_t* i = std::get_if<int64_t>(&v);
  return i ? *i : 0;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string wholeNumber(double v) { return std::to_string(int64_t(v)); }

Setting settingOf(const BenchRow& r) {
  const bool words = !r.words.empty();
  Setting s = words ? extraSetting(r.key, SettingType::Text, r.words.front())
                    : extraSetting(r.key, SettingType::Integer, int64_t(r.byDefault));
  s.owner = "bench";
  s.group = r.kind;
  s.label = r.key;
  s.inWindow = false;
  s.describe(r.help);
  if (words) {
    std::vector<SettingChoice> choices;
    for (const std::string& w : r.words)
      choices.push_back({.value = w, .label = {}, .summary = {}});
    s.oneOf(std::move(choices));
  } else {
    s.range(r.min, r.max);
    if (*r.zero) s.zeroIs(r.zero);
  }
  const std::string kind = r.kind;
  const bool needsGpt = r.needsGpt;
  s.appliesWhen([kind, needsGpt](const RunConfig& c) -> Setting::Why {
    if (textOf(c, "kind") != kind) return "applies to \"kind\": \"" + kind + "\"";
    if (needsGpt && textOf(c, "model") != "gpt") return std::string("needs \"model\": \"gpt\"");
    return std::nullopt;
  });
  return s;
}

// The GPT's heads split its width (latency; the layouts' projection checks its own).
Setting::Why headsDivideHidden(const RunConfig& c) {
  if (textOf(c, "kind") != "latency" || textOf(c, "model") != "gpt") return std::nullopt;
  const int64_t heads = wholeOf(*findBenchSetting("latency", "heads"), c);
  const int64_t hidden = wholeOf(*findBenchSetting("latency", "hidden"), c);
  if (heads > 0 && hidden % heads != 0)
    return "'heads' (" + std::to_string(heads) + ") of the GPT must divide 'hidden' (" +
           std::to_string(hidden) + ")";
  return std::nullopt;
}

// A block's values in a configuration's extra, each where its row takes its type.
RunConfig blockConfig(const std::string& kind, const BenchValues& given) {
  RunConfig c;
  c.extra["kind"] = kind;
  for (const auto& [key, value] : given) {
    const Setting* s = findBenchSetting(kind, key);
    if (!s) continue;
    const bool fits = s->type == SettingType::Text ? std::holds_alternative<std::string>(value)
                                                   : std::holds_alternative<int64_t>(value);
    if (fits) s->set(c, value);
  }
  return c;
}

}  // namespace

const std::vector<std::string>& benchKinds() {
  static const std::vector<std::string> kinds = {
      "gemm-ladder", "simd-width", "false-sharing", "latency",
      "roofline",    "layouts",    "gpu-counts",    "gil"};
  return kinds;
}

const std::vector<Setting>& benchSettings() {
  static const std::vector<Setting> table = [] {
    std::vector<Setting> out;
    Setting kind = extraSetting("kind", SettingType::Text, std::string());
    kind.owner = "bench";
    kind.label = "kind";
    kind.inWindow = false;
    kind.describe("the teaching benchmark the step runs");
    std::vector<SettingChoice> kinds;
    for (const std::string& k : benchKinds())
      kinds.push_back({.value = k, .label = {}, .summary = {}});
    kind.oneOf(std::move(kinds));
    out.push_back(std::move(kind));
    for (const BenchRow& r : rows()) out.push_back(settingOf(r));
    for (Setting& s : out)
      if (s.group == "latency" && s.key == "heads")
        s.shaped("a divisor of hidden", headsDivideHidden);
    return out;
  }();
  return table;
}

const Setting* findBenchSetting(const std::string& kind, const std::string& key) {
  for (const Setting& s : benchSettings())
    if (s.group == kind && s.key == key && !kind.empty()) return &s;
  return nullptr;
}

std::vector<std::string> benchProblems(const std::string& kind, const BenchValues& given) {
  const std::vector<std::string>& kinds = benchKinds();
  if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end())
    return {"'kind' is " +
            (kind.empty() ? std::string("missing") : "'" + kind + "', not a benchmark") +
            " (allowed: " + joined(kinds) + ")"};
  std::vector<std::string> problems, taken{"kind"};
  const RunConfig c = blockConfig(kind, given);
  for (const Setting& s : benchSettings()) {
    if (s.group != kind) continue;
    taken.push_back(s.key);
    const auto it = given.find(s.key);
    if (it == given.end()) continue;
    const SettingValue& v = it->second;
    if (s.type == SettingType::Text) {
      if (!std::holds_alternative<std::string>(v) || s.check(c))
        problems.push_back("'" + s.key + "' of " + kind + " is one of " + s.allowedText(c));
    } else {
      const int64_t* n = std::get_if<int64_t>(&v);
      if (!n || double(*n) < s.min || double(*n) > s.max)
        problems.push_back("'" + s.key + "' of " + kind + " is a whole number " +
                           wholeNumber(s.min) + ".." + wholeNumber(s.max));
    }
  }
  // A key no row of this kind takes: unknown, with the kinds that take it where some do.
  std::vector<std::string> unknown, elsewhere;
  for (const auto& [key, value] : given) {
    if (std::find(taken.begin(), taken.end(), key) != taken.end()) continue;
    unknown.push_back("'" + key + "'");
    std::vector<std::string> owners;
    for (const Setting& s : benchSettings())
      if (s.key == key && !s.group.empty()) owners.push_back(s.group);
    if (!owners.empty()) elsewhere.push_back("'" + key + "' is a key of " + joined(owners));
  }
  if (!unknown.empty()) {
    std::string line = "unknown key " + joined(unknown) + " (allowed: " + joined(taken) + ")";
    if (!elsewhere.empty()) line += "; " + joined(elsewhere);
    problems.push_back(line);
  }
  // A key its kind takes, given where the block's other choices do not use it, then the rows'
  // own forms.
  for (const Setting& s : benchSettings()) {
    if (s.group != kind) continue;
    if (given.count(s.key) && s.notApplicable)
      if (const Setting::Why why = s.notApplicable(c))
        problems.push_back("'" + s.key + "' of " + kind + " " + *why);
    if (s.formCheck)
      if (const Setting::Why why = s.formCheck(c)) problems.push_back(*why);
  }
  return problems;
}

BenchRequest benchRequest(const std::string& kind, const BenchValues& given,
                          const RunConfig& settings) {
  BenchRequest r;
  r.kind = kind;
  r.settings = settings;
  const RunConfig c = blockConfig(kind, given);
  for (const Setting& s : benchSettings()) {
    if (s.group != kind || kind.empty()) continue;
    const SettingValue v = s.get(c);
    if (const std::string* w = std::get_if<std::string>(&v))
      r.words[s.key] = *w;
    else if (const int64_t* n = std::get_if<int64_t>(&v))
      r.numbers[s.key] = double(*n);
    if (given.count(s.key)) r.given.insert(s.key);
  }
  return r;
}

}  // namespace paralab::jobs
