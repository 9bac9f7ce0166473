// The teaching benchmarks as jobs: a block's options chosen, its kind run (see jobs/bench_job.h).
// See tests/engine/tst_jobs.cpp and tests/app/tst_window.cpp (benchStepDrawsItsChart).
#include "jobs/bench_job.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <utility>

#include "capabilities.h"
#include "data/dataset.h"
#include "jobs/bench_settings.h"
#include "schema.h"
#include "train/sweep.h"

namespace paralab::jobs {

namespace {

// 365706 -> "365,706"
std::string grouped(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

// The CPU's sweep, then the GPU's where there is one; progress counts the batch sizes of both.
void runLatency(const BenchRequest& request, BenchResult& result, const ReportProgress& progress) {
  const RunConfig cpu = latencyConfig(request);
  const std::vector<int> batches = latencyBatches(request);
  RunConfig gpu = cpu;
  gpu.device = Device::Cuda;
  const GpuAvailability g = gpuAvailability();
  // With the batches: a GPU too small for the largest is said, not an error of the whole step.
  std::string why = g.count > 0 ? latencySweepProblem(gpu, batches) : g.reason;
  const int n = int(batches.size()), total = why.empty() ? 2 * n : n;
  const auto report = [&](int done) { return !progress || progress(done, total); };
  const LatencySweepOptions options;
  result.latencyBudgetMs = options.maxMsPerSize;
  result.latencyCpu =
      runLatencySweep(cpu, batches, options, [&](int done, int) { return report(done); });
  const std::string params = grouped(result.latencyCpu->parameterCount);
  const std::string h = std::to_string(cpu.hidden), l = std::to_string(cpu.layers);
  if (cpu.model == ModelKind::Gpt)
    result.latencyModel = "GPT H=" + h + ", L=" + l + ", " + std::to_string(cpu.heads) +
                          " heads, T=" + std::to_string(cpu.seq) + ", " + params + " parameters, " +
                          cpu.dataset + " test windows";
  else
    result.latencyModel = nameOf(cpu.model) + " H=" + h + ", L=" + l + ", " + params +
                          " parameters, " + cpu.dataset + " test samples";
  if (!why.empty() || result.latencyCpu->cancelled) {
    result.gpuNotRun = why.empty() ? "cancelled" : why;
    return;
  }
  result.latencyGpu =
      runLatencySweep(gpu, batches, options, [&](int done, int) { return report(n + done); });
}

}  // namespace

// A key the request does not hold takes its row's default (jobs/bench_settings.h).
double BenchRequest::number(const std::string& key) const {
  if (const auto it = numbers.find(key); it != numbers.end()) return it->second;
  const Setting* s = findBenchSetting(kind, key);
  const SettingValue v = s ? s->get(RunConfig{}) : SettingValue{};
  const int64_t* n = std::get_if<int64_t>(&v);
  return n ? double(*n) : 0;
}

std::string BenchRequest::word(const std::string& key) const {
  if (const auto it = words.find(key); it != words.end()) return it->second;
  const Setting* s = findBenchSetting(kind, key);
  const SettingValue v = s ? s->get(RunConfig{}) : SettingValue{};
  const std::string* w = std::get_if<std::string>(&v);
  return w ? *w : std::string();
}

teach::GemmLadderOptions ladderOptions(const BenchRequest& b) {
  teach::GemmLadderOptions o;
  o.sizes = {int(b.number("size"))};
  const int threads = int(b.number("threads"));
  o.threads = threads > 0 ? threads : machineCores();
  o.repeats = int(b.number("repeats"));
  return o;
}

teach::FalseSharingOptions falseSharingOptions(const BenchRequest& b) {
  teach::FalseSharingOptions o;
  const int threads = int(b.number("threads"));
  o.maxThreads = threads > 0 ? threads : std::clamp(machineCores(), 2, 8);
  o.increments = long(b.number("increments"));
  return o;
}

RunConfig latencyConfig(const BenchRequest& b) {
  RunConfig c;  // paralab-run's model, so the step and `paralab-run --latency-sweep` agree
  c.hidden = int(b.number("hidden"));
  c.layers = int(b.number("layers"));
  if (b.word("model") == "gpt") {
    c.model = ModelKind::Gpt;
    c.seq = int(b.number("seq"));
    c.heads = int(b.number("heads"));
    datasetFollowsModel(c);  // its own text, as `paralab-run --model gpt` reads
    // Without Debian's fortunes the synthetic text, as the MLP falls back to synthetic images.
    if (!std::filesystem::is_directory(dataFolder(c))) c.dataset = "synthetic";
    return c;
  }
  c.dataset = missingFashionMnistFile(c.dataDir).empty() ? "fashion-mnist" : "synthetic";
  return c;
}

std::vector<int> latencyBatches(const BenchRequest& b) {
  std::vector<int> batches;
  for (int n = 1; n <= int(b.number("max-batch")); n *= 2) batches.push_back(n);
  return batches;
}

teach::RooflineOptions rooflineOptions(const BenchRequest& b) {
  teach::RooflineOptions o;
  const auto given = [&](const char* key, int fallback) {
    return b.given.count(key) ? int(b.number(key)) : fallback;
  };
  o.hidden = given("hidden", b.settings.hidden);
  o.layers = given("layers", b.settings.layers);
  o.kernel = isGemmKernel(Device::Cpu, b.settings.kernel) ? b.settings.kernel : "vendor";
  o.batches = {1, int(b.number("max-batch"))};
  o.precision = projection::parsePrecision(b.word("precision"));
  o.repeats = int(b.number("repeats"));
  return o;
}

teach::LayoutProjectionOptions layoutOptions(const BenchRequest& b) {
  teach::LayoutProjectionOptions o;
  const auto n = [&](const char* key) { return int(b.number(key)); };
  o.gpu = b.word("gpu");
  o.gpus = n("gpus");
  o.nodeLink = b.word("node-link");
  o.layers = n("layers"), o.hidden = n("hidden"), o.heads = n("heads");
  o.seq = n("seq"), o.vocab = n("vocab"), o.batch = n("batch"), o.pp = n("pp");
  o.recompute = b.word("recompute");
  o.tps.clear();
  for (int tp = n("min-tp"); tp <= n("max-tp"); tp *= 2) o.tps.push_back(tp);
  return o;
}

BenchResult runBench(const BenchRequest& request, const ReportProgress& progress) {
  BenchResult result;
  result.kind = request.kind;
  result.repeats = int(request.number("repeats"));
  const std::string& kind = request.kind;
  if (kind == "gemm-ladder")
    result.ladder = teach::runGemmLadder(ladderOptions(request), progress);
  else if (kind == "simd-width")
    result.simd = teach::runSimdWidth(result.repeats, progress);
  else if (kind == "false-sharing")
    result.falseSharing = teach::runFalseSharing(falseSharingOptions(request), progress);
  else if (kind == "latency")
    runLatency(request, result, progress);
  else if (kind == "roofline")
    result.roofline = teach::runRoofline(rooflineOptions(request), progress);
  else if (kind == "layouts") {
    const teach::LayoutProjectionOptions options = layoutOptions(request);
    if (options.tps.empty()) throw std::invalid_argument("bench: min-tp is above max-tp");
    result.layouts = teach::runLayoutProjection(options);
  } else if (kind == "gpu-counts") {
    result.gpuCounts = teach::runGpuCounts(request.word("experiment"));
  } else if (kind == "gil") {
    teach::GilOptions o;
    o.maxWorkers = int(request.number("max-workers"));
    o.iterations = long(request.number("iterations"));
    o.repeats = result.repeats;
    result.gil = teach::runGil(o, progress);
  } else
    throw std::invalid_argument("bench: no benchmark called '" + kind + "'");
  return result;
}

std::unique_ptr<Job<BenchResult>> startBench(BenchRequest request, JobCallbacks callbacks) {
  return std::make_unique<Job<BenchResult>>(
      [r = std::move(request)](const ReportProgress& progress) { return runBench(r, progress); },
      std::move(callbacks));
}

}  // namespace paralab::jobs
