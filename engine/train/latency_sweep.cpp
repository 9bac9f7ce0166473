// Latency vs throughput: forward-only timings per batch size (see latency_sweep.h).
// Try: paralab-run --latency-sweep batch=1,4,16,64,256 --json; tests/engine/tst_cli.cpp.
#include "train/latency_sweep.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "capabilities.h"
#include "cpu/gemm.h"
#include "data/dataset.h"
#include "device/compute.h"
#include "memory/memory_tracker.h"
#include "metrics/metrics.h"
#include "model/mlp.h"
#include "model/moe.h"
#include "teach/timing.h"

namespace paralab {

namespace {

constexpr int kMaxBatch = 65536;  // RunConfig's --batch range
const char* const kAllowed = "allowed: batch=1,2,4,...,4096, sizes 1..65536";

[[noreturn]] void bad(const std::string& what) {
  throw ConfigError("latency-sweep: " + what + " (" + kAllowed + ")");
}

int parseSize(const std::string& item) {
  try {
    size_t used = 0;
    const long n = std::stol(item, &used);
    if (used == item.size() && n >= 1 && n <= kMaxBatch) return int(n);
  } catch (const std::exception&) {
  }
  bad("'" + item + "' is not a batch size");
}

// One model of the configured kind on rank 0's Compute (--device, --kernel) behind one call: a
// forward over `batch` samples.
class Forward {
 public:
  Forward(const RunConfig& c, const Dataset& data) : m_compute(Compute::forRank(c, 0)) {
    if (c.model == "moe") {
      MoeShape s;
      s.input = data.inputDim, s.classes = data.classes, s.hidden = c.hidden, s.layers = c.layers;
      s.experts = c.experts, s.topk = c.topk, s.capacityFactor = c.capacityFactor;
      m_moe = std::make_unique<Moe>(s, c.seed, &m_memory, ExpertPlacement{}, m_compute.get());
      m_params = s.parameterCount();
    } else {
      m_model = makeModel(c, data, &m_memory, m_compute.get());
      m_params = parameterCountOf(c, data);
    }
  }
  // Evaluation uploads the batch from host memory (on a GPU) and ends in an arg-max count the
  // host reads, so the forward has finished on any device when it returns: a host clock around
  // it times the whole forward, the input's trip to the device included.
  int operator()(const float* x, const int* labels, int batch) {
    return m_model ? int(m_model->evaluate(x, labels, batch).correct)
                   : m_moe->countCorrect(x, labels, batch);
  }
  int64_t parameterCount() const { return m_params; }

 private:
  std::unique_ptr<Compute> m_compute;
  MemoryTracker m_memory;
  std::unique_ptr<Model> m_model;
  std::unique_ptr<Moe> m_moe;
  int64_t m_params = 0;
};

}  // namespace

std::vector<int> parseLatencySweep(const std::string& spec) {
  const std::string prefix = "batch=";
  if (spec.rfind(prefix, 0) != 0) bad("expected batch=LIST, got '" + spec + "'");
  std::vector<std::string> items;
  std::stringstream ss(spec.substr(prefix.size()));
  for (std::string item; std::getline(ss, item, ',');) items.push_back(item);
  std::vector<int> out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i] != "...") {
      out.push_back(parseSize(items[i]));
      continue;
    }
    // "a, b, ..., z": a geometric run with ratio b / a, through z.
    if (out.size() < 2 || i + 1 >= items.size() || items[i + 1] == "...")
      bad("'...' needs two sizes before it and one after");
    const int a = out[out.size() - 2], b = out.back(), z = parseSize(items[i + 1]);
    if (b <= a || b % a != 0)
      bad("'...' continues a ratio: " + std::to_string(b) + " / " + std::to_string(a) +
          " is not a whole number above 1");
    for (int64_t n = int64_t(b) * (b / a); n < z; n *= b / a) out.push_back(int(n));
  }
  if (out.empty()) bad("no batch sizes given");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string latencySweepProblem(const RunConfig& c) {
  if (c.ranks != 1 || c.tp != 1 || c.pp != 1 || c.ep != 1 || c.dpDegree() != 1)
    return "latency-sweep: times one model on one rank (allowed: --ranks 1, no "
           "--dp/--tp/--pp/--ep)";
  // A batch of the GPT is windows of --seq characters, whose activations at the sweep's batch
  // sizes (up to 4096 windows) would take gigabytes: not offered until it is measured.
  if (c.model == "gpt")
    return "latency-sweep: times the MLP and the MoE (allowed: --model mlp, moe); the GPT's "
           "sweep over batch sizes is not built yet";
  // The device, the kernel of its ladder, a GPU being there, and what runs on it (no MoE on
  // cuda yet): as for training.
  if (auto err = c.validateDevice()) return *err;
  return "";
}

LatencySweepResult runLatencySweep(const RunConfig& c, const std::vector<int>& batches,
                                   const LatencySweepOptions& o,
                                   const std::function<bool(int, int)>& progress) {
  if (const std::string p = latencySweepProblem(c); !p.empty()) throw ConfigError(p);
  kernels::vendor_blas_set_threads(1);  // one rank is one worker, as in training
  const std::shared_ptr<const Dataset> data = loadRunData(c);
  Forward forward(c, *data);
  LatencySweepResult r;
  r.device = c.device, r.kernel = c.kernel, r.model = c.model;
  r.parameterCount = forward.parameterCount();
  // The CPU's threaded rungs spread one GEMM over the GEMM pool; the others run on this thread.
  if (c.device == "cpu")
    r.threads = c.kernel == "threaded" || c.kernel == "tiled" ? kernels::gemm_threads() : 1;
  else
    r.gpu = gpuAvailability().name;

  // The largest batch's inputs: test samples (inference sees held-out data), repeated when
  // the batch is larger than the test split. Every batch size reads from the start.
  const int maxBatch = batches.empty() ? 0 : *std::max_element(batches.begin(), batches.end());
  const int64_t nTest = data->numTest(), dim = data->inputDim;
  std::vector<float> x(static_cast<size_t>(maxBatch * dim));
  std::vector<int> y(static_cast<size_t>(maxBatch));
  for (int i = 0; i < maxBatch; ++i) {
    const int64_t s = i % nTest;
    std::copy_n(data->testX.begin() + s * dim, dim, x.begin() + i * dim);
    y[size_t(i)] = data->testY[size_t(s)];
  }

  using Clock = std::chrono::steady_clock;
  const auto msSince = [](Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  for (int batch : batches) {
    for (int w = 0; w < o.warmup; ++w) forward(x.data(), y.data(), batch);
    // How many forwards make one timed sample last minRepeatMs (timer and scheduler noise are
    // tens of µs; one forward at batch 1 is about that).
    auto t0 = Clock::now();
    forward(x.data(), y.data(), batch);
    const double once = std::max(msSince(t0), 1e-4);
    const int inner = std::max(1, int(std::ceil(o.minRepeatMs / once)));
    std::vector<double> perForward;
    for (int rep = 0; rep < o.repeats; ++rep) {
      t0 = Clock::now();
      for (int k = 0; k < inner; ++k) forward(x.data(), y.data(), batch);
      perForward.push_back(msSince(t0) / inner);
    }
    LatencyPoint p;
    p.batch = batch;
    p.msPerForward = teach::median(perForward);
    p.samplesPerS = batch / (p.msPerForward * 1e-3);
    p.usPerSample = p.msPerForward * 1e3 / batch;
    p.repeats = o.repeats;
    p.forwardsPerRepeat = inner;
    r.points.push_back(p);
    const int done = int(r.points.size()), total = int(batches.size());
    if (progress && !progress(done, total) && done < total) {
      r.cancelled = true;
      break;
    }
  }
  return r;
}

nlohmann::json toJson(const LatencySweepResult& r, const RunConfig& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (const LatencyPoint& p : r.points)
    rows.push_back({{"batch", p.batch},
                    {"ms_per_forward", p.msPerForward},
                    {"samples_per_s", p.samplesPerS},
                    {"us_per_sample", p.usPerSample},
                    {"repeats", p.repeats},
                    {"forwards_per_repeat", p.forwardsPerRepeat}});
  nlohmann::json j = {{"schema", kMetricsSchema},
                      {"latency_sweep", true},
                      {"device", r.device},
                      {"kernel", r.kernel},
                      {"model", r.model},
                      {"parameters", r.parameterCount},
                      {"config", c.toJson()},
                      {"points", rows}};
  if (r.device == "cpu")
    j["gemm_threads"] = r.threads;
  else
    j["gpu"] = r.gpu;
  return j;
}

}  // namespace paralab
