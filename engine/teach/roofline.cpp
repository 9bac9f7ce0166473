// CPU against GPU, layer by layer (see roofline.h): the MLP's layers timed with the engine's
// Compute (the CPU's, and a GPU's where one answers) and projected with compute_model's roofline.
// See tests/engine/tst_teach_roofline.cpp and `paralab-bench roofline`.
#include "teach/roofline.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>

#include "capabilities.h"
#include "cpu/gemm.h"
#include "device/compute.h"
#include "model/mlp.h"
#include "projection/gpu_spec.h"
#include "teach/timing.h"

namespace paralab::teach {

namespace {

using projection::OpCost;

// The engine's name for each operation compute_model lists in the MLP's block, its ends and
// the layer it belongs to. A backward operation joins the layer of the forward one its name
// starts with ("FFN fc1 input grad" joins "FFN fc1").
struct LayerName {
  const char* op;
  const char* key;
  const char* title;
};
constexpr LayerName kLayers[] = {
    {"input layer", "input", "Linear 784 -> H (input)"},
    {"LayerNorm", "layernorm", "LayerNorm"},
    {"FFN fc1", "fc1", "Linear H -> 4H (fc1)"},
    {"bias + GELU", "gelu", "bias + GELU"},
    {"FFN fc2", "fc2", "Linear 4H -> H (fc2)"},
    {"residual add", "residual", "bias + residual add"},
    {"output head", "head", "Linear H -> 10 (head)"},
    {"softmax cross-entropy", "loss", "softmax cross-entropy"},
};

const LayerName* layerOf(const std::string& op) {
  for (const LayerName& l : kLayers)
    if (op.rfind(l.op, 0) == 0) return &l;
  return nullptr;
}

ProjectedLayer sumOf(const projection::Roofline& r, const std::vector<OpCost>& ops) {
  ProjectedLayer p;
  for (const OpCost& op : ops) p.seconds += op.seconds, p.flops += op.flops, p.bytes += op.bytes;
  // The roofline's verdict: FLOPs at the GEMM rate against bytes at the memory rate, every SM
  // busy. The projected time may be longer: a GEMM of fewer tiles than SMs leaves SMs idle.
  const double computeS = p.flops / r.gemmFlops(), memoryS = p.bytes / r.bytesPerS;
  p.computeBound = computeS >= memoryS;
  p.smBusy = p.seconds > 0 ? std::max(computeS, memoryS) / p.seconds : 1;
  return p;
}

// The buffers of one block's worth of layers on one device, filled with small random values.
struct Buffers {
  const Compute& c;
  std::vector<Tensor> owned;
  explicit Buffers(const Compute& compute) : c(compute) {}
  float* make(int64_t n, std::mt19937& rng) {
    owned.push_back(c.tensor({std::max<int64_t>(1, n)}, MemCategory::Workspace, nullptr));
    std::vector<float> host(size_t(std::max<int64_t>(1, n)));
    std::uniform_real_distribution<float> u(-0.05f, 0.05f);
    for (float& v : host) v = u(rng);
    c.upload(owned.back().data(), host.data(), int64_t(host.size()));
    return owned.back().data();
  }
};

// Each layer of the MLP as one call of forward then backward, as engine/model/mlp.cpp runs them
// (Linear::forward/backward, the block's LayerNorm, GELU and residual add, the loss).
std::map<std::string, std::function<void()>> mlpLayerCalls(const Compute& c, Buffers& b,
                                                           std::vector<float*>& ints, int B,
                                                           int in, int H, int classes) {
  std::mt19937 rng(7);
  const int F = 4 * H;
  float* x = b.make(int64_t(B) * in, rng);
  float *win = b.make(int64_t(in) * H, rng), *bin = b.make(H, rng);
  float *dwin = b.make(int64_t(in) * H, rng), *dbin = b.make(H, rng);
  float *a = b.make(int64_t(B) * H, rng), *da = b.make(int64_t(B) * H, rng);
  float *ln = b.make(int64_t(B) * H, rng), *dln = b.make(int64_t(B) * H, rng);
  float *mean = b.make(B, rng), *rstd = b.make(B, rng);
  float *gamma = b.make(H, rng), *beta = b.make(H, rng);
  float *dgamma = b.make(H, rng), *dbeta = b.make(H, rng);
  float *w1 = b.make(int64_t(H) * F, rng), *b1 = b.make(F, rng);
  float *dw1 = b.make(int64_t(H) * F, rng), *db1 = b.make(F, rng);
  float *h1 = b.make(int64_t(B) * F, rng), *dh1 = b.make(int64_t(B) * F, rng);
  float *g = b.make(int64_t(B) * F, rng), *dg = b.make(int64_t(B) * F, rng);
  float *w2 = b.make(int64_t(F) * H, rng), *b2 = b.make(H, rng);
  float *dw2 = b.make(int64_t(F) * H, rng), *db2 = b.make(H, rng);
  float *h2 = b.make(int64_t(B) * H, rng), *dh2 = b.make(int64_t(B) * H, rng);
  float *wh = b.make(int64_t(H) * classes, rng), *bh = b.make(classes, rng);
  float *dwh = b.make(int64_t(H) * classes, rng), *dbh = b.make(classes, rng);
  float *logits = b.make(int64_t(B) * classes, rng), *dlogits = b.make(int64_t(B) * classes, rng);
  // The labels: ints in a buffer of this device, 4 bytes each as floats are.
  float* labelMem = b.make(B, rng);
  std::vector<int> labels(static_cast<size_t>(B));
  for (int i = 0; i < B; ++i) labels[size_t(i)] = i % classes;
  c.uploadInts(reinterpret_cast<int*>(labelMem), labels.data(), B);
  ints.push_back(labelMem);
  const int* y = reinterpret_cast<const int*>(labelMem);
  // A linear layer's three GEMMs as model/layers.cpp issues them: y = x w, dw += x^T dy and,
  // unless `dx` is null, dx = dy w^T (x is rows x n, w n x m).
  const auto linear = [&c, B](int n, int m, const float* xin, const float* w, float* y,
                              const float* dy, float* dw, float* dx) {
    c.gemm(false, false, B, m, n, 1.f, xin, n, w, m, 0.f, y, m);
    c.gemm(true, false, n, m, B, 1.f, xin, n, dy, m, 1.f, dw, m);
    if (dx) c.gemm(false, true, B, n, m, 1.f, dy, m, w, m, 0.f, dx, n);
  };
  std::map<std::string, std::function<void()>> calls;
  calls["input"] = [=, &c] {  // no input gradient: the pixels need none
    linear(in, H, x, win, a, da, dwin, nullptr);
    c.biasAdd(a, bin, B, H);
    c.biasBackward(dbin, da, B, H);
  };
  calls["layernorm"] = [=, &c] {
    c.layerNorm(ln, mean, rstd, a, gamma, beta, B, H);
    c.layerNormBackward(da, dgamma, dbeta, dln, a, mean, rstd, gamma, B, H);
  };
  calls["fc1"] = [=] { linear(H, F, ln, w1, h1, dh1, dw1, dln); };
  calls["gelu"] = [=, &c] {
    c.biasAdd(h1, b1, B, F);
    c.gelu(g, h1, long(B) * F);
    c.geluBackward(dh1, h1, dg, long(B) * F);
    c.biasBackward(db1, dh1, B, F);
  };
  calls["fc2"] = [=] { linear(F, H, g, w2, h2, dh2, dw2, dg); };
  calls["residual"] = [=, &c] {
    c.biasAdd(h2, b2, B, H);
    c.residualAdd(a, h2, long(B) * H);
    c.biasBackward(db2, dh2, B, H);
    c.residualAdd(da, dln, long(B) * H);
  };
  calls["head"] = [=, &c] {
    linear(H, classes, a, wh, logits, dlogits, dwh, da);
    c.biasAdd(logits, bh, B, classes);
    c.biasBackward(dbh, dlogits, B, classes);
  };
  calls["loss"] = [=, &c] { c.softmaxXent(dlogits, logits, y, B, classes, double(B)); };
  return calls;
}

// Seconds of one call of `f` on `c`: enough calls per timed sample to last about a millisecond
// (a batch-1 layer takes microseconds), the median of `repeats` samples.
double timeLayer(const Compute& c, const std::function<void()>& f, int repeats) {
  f();
  c.sync();  // warm: caches, the first call's allocations
  const double once = secondsOf([&] {
    f();
    c.sync();
  });
  const int calls = std::clamp(int(1e-3 / std::max(once, 1e-9)), 1, 2000);
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r)
    samples.push_back(secondsOf([&] {
                        for (int i = 0; i < calls; ++i) f();
                        c.sync();
                      }) /
                      calls);
  return median(samples);
}

}  // namespace

double RooflineBatch::cpuStepSeconds() const {
  double s = 0;
  for (const RooflineLayer& l : layers) s += l.count * l.cpuSeconds;
  return s;
}

double RooflineBatch::gpuStepSeconds() const {
  double s = 0;
  for (const RooflineLayer& l : layers) s += l.count * l.gpuSeconds;
  return s;
}

double RooflineBatch::projectedStepSeconds(size_t gpu) const {
  double s = 0;
  for (const RooflineLayer& l : layers)
    if (gpu < l.projected.size()) s += l.count * l.projected[gpu].seconds;
  return s;
}

std::vector<RooflineLayer> projectedMlpLayers(const projection::Roofline& r, int hidden, int input,
                                              int classes, int layers, int batch) {
  projection::BlockWork block;
  block.attention = false;
  block.microBatch = batch;
  block.seq = 1;
  block.hidden = hidden;
  block.heads = 1;
  projection::EndsWork ends;
  ends.gpt = false;
  ends.samples = batch;
  ends.hidden = hidden;
  ends.input = input;
  ends.classes = classes;
  // Forward order: the input layer, one block forward then backward, the head and the loss.
  std::vector<OpCost> ops = projection::firstEnd(r, ends);
  for (const auto& part : {projection::blockForward(r, block), projection::blockBackward(r, block),
                           projection::lastEnd(r, ends)})
    ops.insert(ops.end(), part.begin(), part.end());
  std::vector<RooflineLayer> out;
  std::vector<std::vector<OpCost>> opsOf;
  for (const OpCost& op : ops) {
    const LayerName* l = layerOf(op.name);
    if (!l) throw std::logic_error("roofline: no MLP layer for the operation '" + op.name + "'");
    auto it = std::find_if(out.begin(), out.end(), [&](const RooflineLayer& x) { return x.key == l->key; });
    if (it == out.end()) {
      RooflineLayer layer;
      layer.key = l->key;
      layer.title = l->title;
      const std::string k = l->key;
      layer.count = k == "input" || k == "head" || k == "loss" ? 1 : layers;
      out.push_back(layer);
      opsOf.emplace_back();
      it = out.end() - 1;
    }
    it->ops.push_back(op.name);
    opsOf[size_t(it - out.begin())].push_back(op);
  }
  for (size_t i = 0; i < out.size(); ++i) out[i].projected = {sumOf(r, opsOf[i])};
  return out;
}

RooflineResult runRoofline(const RooflineOptions& o, const BenchProgress& progress) {
  if (o.hidden < 1 || o.hidden > 4096) throw std::invalid_argument("hidden: 1..4096");
  if (o.layers < 1 || o.layers > 64) throw std::invalid_argument("layers: 1..64");
  if (o.batches.empty()) throw std::invalid_argument("batches: give at least one");
  for (int b : o.batches)
    if (b < 1 || b > 65536) throw std::invalid_argument("batches: each is 1..65536");
  if (o.repeats < 1) throw std::invalid_argument("repeats: at least 1");
  RooflineResult r;
  r.hidden = o.hidden, r.layers = o.layers;
  r.parameters = MlpShape{o.input, o.hidden, o.layers, o.classes}.parameterCount();
  r.precision = projection::precisionName(o.precision);
  std::vector<projection::Roofline> roofs;
  for (const std::string& name : o.gpus) {
    const projection::GpuSpec spec = projection::loadGpu(name);
    roofs.push_back(projection::Roofline::of(spec, o.precision));
    r.gpus.push_back({spec.name, spec.title, roofs.back().gemmFlops() / 1e12,
                      roofs.back().bytesPerS / 1e9, roofs.back().ridge()});
  }
  // The projection of each layer, one entry per GPU.
  for (int batch : o.batches) {
    RooflineBatch rb;
    rb.batch = batch;
    for (size_t g = 0; g < roofs.size(); ++g) {
      const std::vector<RooflineLayer> p =
          projectedMlpLayers(roofs[g], o.hidden, o.input, o.classes, o.layers, batch);
      if (g == 0) {
        rb.layers = p;
        for (RooflineLayer& l : rb.layers) l.projected.clear();
      }
      for (size_t i = 0; i < p.size(); ++i) rb.layers[i].projected.push_back(p[i].projected[0]);
    }
    r.batches.push_back(rb);
  }
  // The devices that measure: this CPU, on one thread as a rank runs; a GPU where one answers.
  auto cpu = Compute::cpu(o.kernel);
  kernels::vendor_blas_set_threads(1);
  r.kernel = o.kernel;
  r.threads = o.kernel == "threaded" || o.kernel == "tiled" ? kernels::gemm_threads() : 1;
  std::unique_ptr<Compute> gpu;
  if (o.measureGpu) {
    const GpuAvailability a = gpuAvailability();
    if (a.count > 0) {
      gpu = Compute::cuda(0, o.gpuKernel);
      r.measuredGpu = a.name;
    } else {
      r.gpuNotRun = a.reason.empty() ? "no GPU here" : a.reason;
    }
  } else {
    r.gpuNotRun = "not asked for";
  }
  const int layersPerBatch = int(std::size(kLayers));
  const int total = int(o.batches.size()) * layersPerBatch * (gpu ? 2 : 1);
  int done = 0;
  for (RooflineBatch& rb : r.batches) {
    for (const Compute* c : {cpu.get(), gpu.get()}) {
      if (!c) continue;
      Buffers buffers(*c);
      std::vector<float*> ints;
      auto calls = mlpLayerCalls(*c, buffers, ints, rb.batch, o.input, o.hidden, o.classes);
      for (RooflineLayer& l : rb.layers) {
        const double s = timeLayer(*c, calls.at(l.key), o.repeats);
        (c == cpu.get() ? l.cpuSeconds : l.gpuSeconds) = s;
        if (progress && !progress(++done, total)) {
          r.cancelled = true;
          return r;
        }
      }
    }
  }
  return r;
}

}  // namespace paralab::teach
