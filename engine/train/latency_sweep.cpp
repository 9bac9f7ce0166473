// Latency vs throughput: forward-only timings per batch size (see latency_sweep.h).
// Try: paralab-run --latency-sweep batch=1,4,16,64,256 --json (--model gpt: windows, tokens/s);
// tests/engine/tst_cli.cpp.
#include "train/latency_sweep.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "capabilities.h"
#include "cpu/gemm.h"
#include "data/dataset.h"
#include "cuda/device.h"
#include "device/compute.h"
#include "memory/memory_tracker.h"
#include "memory_estimate.h"
#include "metrics/metrics.h"
#include "model/mlp.h"
#include "schema.h"
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
// forward over `batch` samples. A GPT sample is a window of T + 1 token ids, its evaluation T
// next-character predictions; the MoE's every expert is here and routes with no capacity limit.
class Forward {
 public:
  Forward(const RunConfig& c, const Dataset& data)
      : m_compute(Compute::forRank(c, 0)),
        m_model(makeModel(c, data, &m_memory, m_compute.get())),
        m_params(parameterCountOf(c, data)) {}
  // Evaluation uploads the batch from host memory (on a GPU) and ends in an arg-max count the
  // host reads, so the forward has finished on any device when it returns: a host clock around
  // it times the whole forward, the input's trip to the device included.
  int operator()(const float* x, const int* labels, int batch) {
    return int(m_model->evaluate(x, labels, batch).correct);
  }
  int64_t parameterCount() const { return m_params; }

 private:
  std::unique_ptr<Compute> m_compute;
  MemoryTracker m_memory;
  std::unique_ptr<Model> m_model;
  int64_t m_params = 0;
};

// "1,2,4,...,n" for the doubling sizes up to n, as parseLatencySweep reads them.
std::string doublingList(int n) {
  if (n <= 4) return n == 1 ? "1" : n == 2 ? "1,2" : "1,2,4";
  return "1,2,4,...," + std::to_string(n);
}

// The memory a forward at `batch` needs (the run's estimate, memory_estimate.h, at that batch on
// one rank: the model, the activations and the data; on a GPU the data stays on the host) and
// what this machine has, or its GPU on cuda (0: unknown, nothing is checked).
struct SweepMemory {
  int64_t need = 0, have = 0;
};
SweepMemory sweepMemory(const RunConfig& c, int batch) {
  RunConfig at = c;
  at.batch = batch, at.ranks = 1, at.scaling = Scaling::Strong;
  const MemoryEstimate e = estimateMemory(at);
  if (c.device == Device::Cuda)
    return {e.modelStates + e.activations, kernels::cuda_query_devices().memoryBytes};
  return {e.total(), machineMemoryBytes()};
}

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

std::string latencySweepProblem(const RunConfig& c, const std::vector<int>& batches) {
  if (c.ranks != 1 || c.modelParallel() || c.ep != 1 || c.dpDegree() != 1)
    return "latency-sweep: times one model on one rank (allowed: --ranks 1, no "
           "--dp/--tp/--pp/--ep)";
  // The device, the kernel of its ladder, a GPU being there, and what runs on it (no MoE on
  // cuda yet): as for training.
  if (auto err = c.validateDevice()) return *err;
  if (batches.empty()) return "";
  // The largest batch must fit: a GPT batch is windows of --seq characters, and its
  // activations grow with batch x seq (gigabytes at a few thousand windows of a long context).
  // The estimate is a lower one, so what is refused here could not have run.
  const int largest = *std::max_element(batches.begin(), batches.end());
  const SweepMemory m = sweepMemory(c, largest);
  if (m.have <= 0 || m.need <= m.have) return "";
  int fits = 0;  // the largest batch that does: the estimate grows with the batch
  for (int lo = 1, hi = largest - 1; lo <= hi;) {
    const int mid = lo + (hi - lo) / 2;
    if (sweepMemory(c, mid).need <= m.have) fits = mid, lo = mid + 1;
    else hi = mid - 1;
  }
  int pow2 = 1;
  while (pow2 * 2 <= fits) pow2 *= 2;
  const double GiB = 1024.0 * 1024 * 1024;
  char line[400];
  std::snprintf(line, sizeof line,
                "latency-sweep: batch %d of --model %s needs about %.1f GiB, %s has %.1f GiB "
                "(allowed here: ",
                largest, nameOf(c.model).c_str(), m.need / GiB,
                c.device == Device::Cuda ? "the GPU" : "this machine", m.have / GiB);
  std::string s = line;
  if (fits == 0)
    return s + "no batch size; a smaller --hidden, --layers" +
           (c.model == ModelKind::Gpt ? " or --seq" : "") + " needs less)";
  s += "batch sizes up to " + std::to_string(fits) + ", e.g. batch=" + doublingList(pow2);
  if (c.model == ModelKind::Gpt) s += " windows of " + std::to_string(c.seq) + " characters";
  return s + ")";
}

LatencySweepResult runLatencySweep(const RunConfig& config, const std::vector<int>& batches,
                                   const LatencySweepOptions& o,
                                   const std::function<bool(int, int)>& progress) {
  if (const std::string p = latencySweepProblem(config, batches); !p.empty()) throw ConfigError(p);
  RunConfig c = config;
  datasetFollowsModel(c);  // the GPT reads text: a default image data set gives way to it
  kernels::vendor_blas_set_threads(1);  // one rank is one worker, as in training
  const std::shared_ptr<const Dataset> data = loadRunData(c);
  Forward forward(c, *data);
  LatencySweepResult r;
  r.device = c.device, r.kernel = c.kernel, r.model = c.model;
  r.parameterCount = forward.parameterCount();
  const bool gpt = c.model == ModelKind::Gpt;
  if (gpt) r.tokensPerSample = c.seq;
  // The CPU's threaded rungs spread one GEMM over the GEMM pool; the others run on this thread.
  if (c.device == Device::Cpu)
    r.threads = c.kernel == "threaded" || c.kernel == "tiled" ? kernels::gemm_threads() : 1;
  else
    r.gpu = gpuAvailability().name;

  // The largest batch's inputs: test samples (inference sees held-out data; the GPT's are
  // windows), repeated when the batch is larger than the test split. Every batch size reads
  // from the start.
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
  const auto timedForward = [&](int batch) {
    const auto t0 = Clock::now();
    forward(x.data(), y.data(), batch);
    return msSince(t0);
  };
  const int total = int(batches.size());
  for (int batch : batches) {
    // The first warm-up forward, timed: a GPT size whose timing would overrun the budget is
    // left untimed, with every larger one (the list is sorted). A first forward at a new size
    // also allocates and touches its buffers, so an overrun is confirmed by a second one.
    const int forwards = std::max(1, o.warmup) + 1 + o.repeats;
    double first = timedForward(batch);
    if (gpt && first * forwards > o.maxMsPerSize) first = timedForward(batch);
    if (gpt && first * forwards > o.maxMsPerSize) {
      for (size_t i = r.points.size(); i < batches.size(); ++i) r.notTimed.push_back(batches[i]);
      char why[300];
      std::snprintf(why, sizeof why,
                    "one forward at batch %d (%lld tokens) took %.2f s, and timing a batch "
                    "size takes %d forwards: over the sweep's %.0f s per size",
                    batch, (long long)batch * c.seq, first / 1e3, forwards, o.maxMsPerSize / 1e3);
      r.notTimedWhy = why;
      if (progress) progress(total, total);
      break;
    }
    for (int w = 1; w < o.warmup; ++w) forward(x.data(), y.data(), batch);
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
    if (gpt) p.tokensPerS = p.samplesPerS * c.seq;
    r.points.push_back(p);
    const int done = int(r.points.size());
    if (progress && !progress(done, total) && done < total) {
      r.cancelled = true;
      break;
    }
  }
  return r;
}

nlohmann::json toJson(const LatencySweepResult& r, const RunConfig& config) {
  RunConfig c = config;
  datasetFollowsModel(c);  // the data set the sweep ran on
  const int T = r.tokensPerSample;
  nlohmann::json rows = nlohmann::json::array();
  for (const LatencyPoint& p : r.points) {
    rows.push_back({{"batch", p.batch},
                    {"ms_per_forward", p.msPerForward},
                    {"samples_per_s", p.samplesPerS},
                    {"us_per_sample", p.usPerSample},
                    {"repeats", p.repeats},
                    {"forwards_per_repeat", p.forwardsPerRepeat}});
    if (T > 0) {  // the GPT: a sample is a window of T predictions
      rows.back()["tokens"] = int64_t(p.batch) * T;
      rows.back()["tokens_per_s"] = p.tokensPerS;
      rows.back()["us_per_token"] = p.usPerSample / T;
    }
  }
  nlohmann::json j = {{"schema", kMetricsSchema},
                      {"latency_sweep", true},
                      {"device", nameOf(r.device)},
                      {"kernel", r.kernel},
                      {"model", nameOf(r.model)},
                      {"parameters", r.parameterCount},
                      {"config", c.toJson()},
                      {"points", rows}};
  if (r.device == Device::Cpu)
    j["gemm_threads"] = r.threads;
  else
    j["gpu"] = r.gpu;
  if (T > 0) j["tokens_per_sample"] = T;
  if (!r.notTimed.empty()) {
    j["not_timed"] = r.notTimed;
    j["not_timed_why"] = r.notTimedWhy;
  }
  return j;
}

}  // namespace paralab
