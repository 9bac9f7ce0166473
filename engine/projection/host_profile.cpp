// This machine measured as the projection's device (host_profile.h).
#include "projection/host_profile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "config.h"
#include "data/dataset.h"
#include "cpu/attention.h"
#include "cpu/gemm.h"
#include "cpu/layers.h"
#include "cpu/optim.h"
#include "model/gpt.h"
#include "model/mlp.h"
#include "optim/optimizer.h"
#include "parallel/holdings.h"  // optimizerStateSlots

namespace paralab::projection {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double medianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median seconds of `f` over `repeats` calls after one warm-up call.
template <typename F>
double timeMedian(F&& f, int repeats) {
  f();
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = Clock::now();
    f();
    t.push_back(secondsSince(t0));
  }
  return medianOf(t);
}

// The GEMMs one micro-batch of the run issues (a block, the first and last ends), as the
// compute model lists them: their shapes are what gets timed.
std::vector<OpCost> runGemms(const Projection& shape) {
  Roofline unit;  // any rates: only the shapes are read
  unit.peakFlops = 1, unit.bytesPerS = 1, unit.elementBytes = 4;
  const BlockWork w = blockOf(shape.model, shape.layout);
  const EndsWork e = endsOf(shape.model, shape.layout);
  std::vector<OpCost> ops;
  for (const auto& part : {blockForward(unit, w), firstEnd(unit, e), lastEnd(unit, e)})
    for (const OpCost& op : part)
      if (op.gemm) ops.push_back(op);
  return ops;
}

// FLOP/s of the run's kernel on one thread over the GEMMs' shapes, each as the engine's linear
// layer issues it (model/layers.cpp): the forward C = A B, the weight gradient dB += A^T dC and
// the input gradient dA = dC B^T. Their FLOPs over the sum of their median times, each GEMM
// weighted as often as the block issues it.
double measureGemm(const std::string& kernel, const std::vector<OpCost>& gemms) {
  kernels::GemmFn fn = kernels::gemm_find(kernel);
  if (!fn) fn = kernels::gemm_vendor<float>;
  double flops = 0, seconds = 0;
  for (const OpCost& op : gemms) {
    const int M = std::max(1, int(op.m)), N = std::max(1, int(op.n)), K = std::max(1, int(op.k));
    std::vector<float> A(size_t(M) * K, 0.5f), B(size_t(K) * N, 0.25f), C(size_t(M) * N, 0.1f),
        dA(A.size()), dB(B.size());
    // Enough calls for a few milliseconds, so a timer tick does not matter.
    const double one = 2.0 * M * N * K;
    const int calls = std::clamp(int(2e7 / one), 1, 1000);
    const double s = timeMedian(
        [&] {
          for (int i = 0; i < calls; ++i) {
            fn(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, C.data(), N);
            fn(true, false, K, N, M, 1.0f, A.data(), K, C.data(), N, 1.0f, dB.data(), N);
            fn(false, true, M, K, N, 1.0f, C.data(), N, B.data(), N, 0.0f, dA.data(), K);
          }
        },
        5);
    flops += 3 * one * op.count;
    seconds += s / calls * op.count;
  }
  return flops / seconds;
}

// The engine's elementwise kernels on one core over a block's activations (T rows of width h):
// LayerNorm and GELU (on the FFN's 4h), forward and backward, timed; bytes counted as the
// compute model counts them (compute_model.cpp: LayerNorm 2 e h T, GELU 2 e 4h T, a backward
// twice its forward), so the rate is what the model's byte counts take here.
double measureElementwise(int rows, int h) {
  rows = std::max(rows, 1);
  const size_t R = static_cast<size_t>(rows), H = static_cast<size_t>(h), n = R * H, wide = 4 * n;
  std::vector<float> x(n, 0.3f), y(n), dy(n, 0.1f), dx(n), gamma(H, 1.0f), beta(H, 0.0f),
      dgamma(H), dbeta(H), mean(R), rstd(R), a(wide, 0.2f), b(wide), da(wide), db(wide, 0.1f);
  const double bytes = 3.0 * (2 * 4.0 * double(n)) + 3.0 * (2 * 4.0 * double(wide));
  const int calls = std::clamp(int(4e7 / bytes), 1, 1000);
  const double s = timeMedian(
      [&] {
        for (int c = 0; c < calls; ++c) {
          kernels::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), gamma.data(),
                                     beta.data(), rows, h);
          kernels::layernorm_backward(dx.data(), dgamma.data(), dbeta.data(), dy.data(), x.data(),
                                      mean.data(), rstd.data(), gamma.data(), rows, h);
          kernels::gelu_forward(b.data(), a.data(), long(wide));
          kernels::gelu_backward(da.data(), a.data(), db.data(), long(wide));
        }
      },
      5);
  return bytes * calls / s;
}

// The engine's attention kernel (cpu/attention.h) on one core at the run's shape: b sequences
// of s tokens, the heads this rank computes. Returns FLOP/s of the two products (scores and
// weighted sum) forward and backward, as the compute model counts them, less the softmax's
// bytes at the elementwise rate (the model counts those apart).
double measureAttention(int b, int s, int headsHere, int dh, double elementwiseBytesPerS) {
  const int C = headsHere * dh;
  const size_t rows = size_t(b) * s;
  std::vector<float> qkv(rows * 3 * C, 0.01f), out(rows * C), att(size_t(b) * headsHere * s * s),
      dout(rows * C, 0.01f), dqkv(rows * 3 * C), scratch(static_cast<size_t>(s));
  const int calls = std::clamp(int(2e7 / (12.0 * b * headsHere * double(s) * s * dh)), 1, 1000);
  const double t = timeMedian(
      [&] {
        for (int c = 0; c < calls; ++c) {
          kernels::attention_forward(out.data(), att.data(), qkv.data(), b, s, C, headsHere);
          kernels::attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(),
                                      att.data(), b, s, C, headsHere);
        }
      },
      5) / calls;
  const double scores = double(b) * headsHere * s * s;
  const double flops = 3.0 * (2 * 2.0 * scores * dh);  // forward, and the backward's two GEMMs each
  const double softmax = 3.0 * (2 * 4.0 * scores) / elementwiseBytesPerS;
  return flops / std::max(t - softmax, 0.5 * t);
}

// Bytes/s of one core taking a rank's batch slice as the engine does (parallel/data/replica.cpp):
// `rows` samples, each a row of the run's own data set copied from a random place with its
// label. The data set as it lies in memory, not a buffer of the same size: on a machine that
// keeps its cold pages elsewhere, a row read once an epoch costs far more than its bytes.
double measureBatchCopy(int rows, const Dataset& data) {
  const size_t D = size_t(data.inputDim), count = size_t(std::max<int64_t>(1, data.numTrain()));
  std::vector<float> batch(size_t(std::max(rows, 1)) * D);
  std::vector<int> labels(size_t(std::max(rows, 1)));
  uint64_t state = 88172645463325252ull;  // xorshift: random rows
  const auto next = [&] {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
  };
  const double rowBytes = 4.0 * double(D);
  const int calls = std::clamp(int(2e6 / (double(rows) * rowBytes)), 1, 1000);
  const double s = timeMedian(
      [&] {
        for (int c = 0; c < calls; ++c)
          for (int i = 0; i < rows; ++i) {
            const size_t sample = next() % count;
            std::memcpy(&batch[size_t(i) * D], &data.trainX[sample * D], D * 4);
            labels[size_t(i)] = data.trainY[sample];
          }
      },
      5);
  return double(rows) * rowBytes * calls / s;
}

// Bytes/s of the engine's softmax cross-entropy (cpu/layers.h: the loss and the logits' gradient
// in one pass) on one core over `rows` rows of `classes` logits, bytes counted as the compute
// model counts them (compute_model.cpp: 2 (4 + 4) bytes per logit). An exponential per logit
// makes it far slower than its bytes: the reason it is measured apart.
double measureLoss(int rows, int classes) {
  rows = std::max(rows, 1);
  const size_t n = size_t(rows) * size_t(classes);
  std::vector<float> logits(n), dlogits(n);
  for (size_t i = 0; i < n; ++i) logits[i] = 0.01f * float(i % 97);  // spread, as trained logits
  std::vector<int> labels(static_cast<size_t>(rows));
  for (int i = 0; i < rows; ++i) labels[size_t(i)] = i % classes;
  const double bytes = 2.0 * (4 + 4) * double(n);
  const int calls = std::clamp(int(4e6 / bytes), 1, 1000);
  const double s = timeMedian(
      [&] {
        for (int c = 0; c < calls; ++c)
          kernels::softmax_xent(dlogits.data(), logits.data(), labels.data(), rows, classes,
                                double(rows));
      },
      5);
  return bytes * calls / s;
}

// Bytes/s of the engine's optimizer update (cpu/optim.h) on one core over `numel` parameters,
// bytes counted as the compute model counts them (projection.cpp: the weights and each state
// read and written, the gradient read). Adam's square root and division make it slower than a
// copy of as many bytes: the reason it is measured apart from the elementwise kernels.
double measureOptimizer(const std::string& optimizer, int64_t numel) {
  const size_t n = size_t(std::clamp<int64_t>(numel, 1 << 12, int64_t(1) << 24));
  std::vector<float> p(n, 0.5f), g(n, 0.01f), m(n, 0.0f), v(n, 0.0f);
  const OptimizerHyper hyper;
  const OptimizerKind kind = optimizerKind(optimizer);
  const double bytes = double(n) * (8.0 * (1 + optimizerStateSlots(optimizer)) + 4.0);
  const int calls = std::clamp(int(4e7 / bytes), 1, 1000);
  long t = 0;
  const double s = timeMedian(
      [&] {
        for (int c = 0; c < calls; ++c) {
          ++t;
          if (kind == OptimizerKind::Sgd) kernels::sgd_update(p.data(), g.data(), long(n), hyper.lr);
          else if (kind == OptimizerKind::Momentum)
            kernels::momentum_update(p.data(), m.data(), g.data(), long(n), hyper.lr,
                                     hyper.momentum);
          else
            kernels::adam_update(p.data(), m.data(), v.data(), g.data(), long(n), hyper.lr,
                                 hyper.beta1, hyper.beta2, hyper.eps, t);
        }
      },
      5);
  return bytes * calls / s;
}

// `measure` run on `threads` threads at once, each timing its own copy: their mean rate.
template <typename F>
double onEveryBusyCore(int threads, F&& measure) {
  std::vector<double> rates(size_t(std::max(1, threads)));
  std::vector<std::thread> pool;
  for (size_t i = 1; i < rates.size(); ++i) pool.emplace_back([&, i] { rates[i] = measure(); });
  rates[0] = measure();
  for (std::thread& t : pool) t.join();
  double sum = 0;
  for (double r : rates) sum += r;
  return sum / double(rates.size());
}

// The ranks' all-reduce under the run's link: median seconds at `floats`, every rank taking
// part as in a step.
double allReduceSeconds(ThreadWorld& world, int64_t floats, int repeats) {
  std::vector<double> times(size_t(world.size()));
  world.run([&](Communicator& comm) {
    std::vector<float> buf(size_t(floats), 1.0f);
    std::vector<double> t;
    for (int i = 0; i <= repeats; ++i) {
      comm.barrier();
      const auto t0 = Clock::now();
      comm.allReduce(buf.data(), buf.data(), floats);
      if (i > 0) t.push_back(secondsSince(t0));
    }
    times[size_t(comm.rank())] = medianOf(t);
  });
  return *std::max_element(times.begin(), times.end());
}

// The engine's gradient synchronisation calls in one step (parallel/data/grad_sync.h), each paying
// the link's latency: per tensor, the MLP's input layer and head (a weight and a bias each) and
// a block's LayerNorm and two linear layers, or the GPT's two embedding tables, final LayerNorm
// and head, and a block's two LayerNorms and four linear layers; bucketed, one per --bucket-mb
// of a stage's gradients; ZeRO, one unit per block and per end.
int engineDpCalls(const RunConfig& c) {
  const bool gpt = c.model == ModelKind::Gpt;
  if (c.zero > 0) return c.layers + 2;
  if (c.dpVersion == DpVersion::PerTensor) return gpt ? 6 + 12 * c.layers : 4 + 6 * c.layers;
  const double parameters =
      double(gpt ? GptShape{kEngineVocab, c.seq, c.hidden, c.layers, c.heads}.parameterCount()
                 : MlpShape{784, c.hidden, c.layers, 10}.parameterCount());
  const double stageBytes = 4.0 * parameters / (c.tp * c.pp);
  return c.pp * std::max(1, int(std::ceil(stageBytes / (c.bucketMb * 1024 * 1024))));
}

}  // namespace

double HostProfile::coreShare() const {
  return std::min(1.0, double(cores) / std::max(1, ranks));
}

HostProfile measureHost(const RunConfig& c) {
  HostProfile h;
  h.cores = std::max(1u, std::thread::hardware_concurrency());
  h.ranks = std::max(1, c.ranks);
  // The run's data (shared with the run's, if it is training) and its shapes: their projection
  // on any device resolves the micro-batch and the split.
  const std::shared_ptr<const Dataset> data = loadRunData(c);
  HostProfile shapeOnly = h;
  shapeOnly.gemmFlops = 1e9, shapeOnly.bytesPerS = 1e9;
  shapeOnly.link.bytesPerS = 1e9;
  const Projection shape = projectOnHost(c, shapeOnly, data->text() ? data->classes : kEngineVocab);
  const Layout& l = shape.layout;
  const ModelSpec& m = shape.model;
  const int tokens = l.microBatchSize * m.tokensPerSample() / l.cp;
  const std::vector<OpCost> gemms = runGemms(shape);
  // As many cores busy at once as the run keeps busy: a core's rate with its neighbours at work
  // (shared caches, memory, clocks) is what a rank gets, not its rate alone.
  const int busy = std::min(h.cores, h.ranks);
  kernels::vendor_blas_set_threads(1);  // a rank is one worker
  kernels::gemm_set_threads(1);
  h.gemmFlops = onEveryBusyCore(busy, [&] { return measureGemm(c.kernel, gemms); });
  h.bytesPerS = onEveryBusyCore(busy, [&] { return measureElementwise(tokens, m.hidden); });
  // The batch a rank copies: an image's 784 floats, or a window's tokens and targets (ints).
  h.sampleBytes = m.gpt() ? 2.0 * 4 * m.seq : 4.0 * m.input;
  const int perRank = std::max(1, l.globalBatch / std::max(1, l.dp * l.cp));
  h.dataBytesPerS = onEveryBusyCore(busy, [&] { return measureBatchCopy(perRank, *data); });
  // The loss over a micro-batch's rows: a window's every token against the vocabulary, or an
  // image against the classes.
  h.lossBytesPerS = onEveryBusyCore(busy, [&] {
    return measureLoss(l.microBatchSize * m.tokensPerSample() / l.cp,
                       m.gpt() ? m.vocab : m.classes);
  });
  // The parameters one rank updates: its stage's share of the weights, a 1/replicas shard of
  // them under ZeRO.
  const double updated = shape.parameters / std::max(1, l.tp * l.pp) /
                         (l.zero >= 1 ? std::max(1, l.dp * l.cp) : 1);
  h.optimizerBytesPerS =
      onEveryBusyCore(busy, [&] { return measureOptimizer(c.optimizer, int64_t(updated)); });
  if (m.gpt())
    h.attentionFlops = onEveryBusyCore(busy, [&] {
      return measureAttention(l.microBatchSize, m.seq / l.cp, m.heads / l.tp, m.hidden / m.heads,
                              h.bytesPerS);
    });

  // alpha from a one-float all-reduce, beta from one of the gradients' size: the ring's
  // 2(n - 1) alpha + 2 (n - 1) / n bytes / B (comm_model.h), n the run's ranks.
  const int n = h.ranks;
  if (n > 1) {
    CommOptions options;
    options.link = c.link;
    options.algorithm = AllReduceAlgo::Ring;
    ThreadWorld world(n, options);
    const int64_t big = std::max<int64_t>(int64_t(shape.parameters / std::max(1, l.tp * l.pp)),
                                          int64_t(1) << 20);
    const double tSmall = allReduceSeconds(world, 1, 20);
    const double tBig = allReduceSeconds(world, big, 5);
    const double steps = 2.0 * (n - 1), share = 2.0 * (n - 1) / n;
    h.link.alphaS = tSmall / steps;
    h.link.bytesPerS = share * 4.0 * double(big) / std::max(1e-9, tBig - tSmall);
    const double fit = collectiveSeconds(Collective::AllReduce, 4.0 * double(big), n, h.link);
    h.linkFitError = std::abs(fit - tBig) / tBig;
    h.link.title = c.link == "none" ? "thread ranks, shared memory (measured)"
                                    : "thread ranks, emulated " + c.link + " link (measured)";
  } else {
    h.link.title = "one rank: no link";
    h.link.bytesPerS = 1e12;
  }
  char title[256];
  std::snprintf(title, sizeof title, "this machine: %d cores, %s kernel (measured)", h.cores,
                c.kernel.c_str());
  h.title = title;
  return h;
}

namespace {

Projection projectAtShare(const RunConfig& c, const HostProfile& host, int vocab, double share) {
  Cluster cluster;
  GpuSpec& g = cluster.gpu;
  g.name = "this-machine";
  g.title = host.title;
  g.source = "measured on this machine for this run's shapes";
  // Every precision at the measured fp32 rate; the roofline's bandwidth share undone, since the
  // elementwise rate is already what the kernels reach.
  g.fp32Tflops = g.tf32Tflops = g.bf16Tflops = host.gemmFlops * share / 1e12;
  g.matmulTflopsBf16 = g.bf16Tflops;
  g.hbmGBps = host.bytesPerS * share / 1e9 / kHbmFraction;
  g.attentionTflops = host.attentionFlops * share / 1e12;
  g.optimizerGBps = host.optimizerBytesPerS * share / 1e9;
  g.lossGBps = host.lossBytesPerS * share / 1e9;
  g.hbmGB = 1e6;  // memory is not what this projection checks
  g.sms = 0;
  g.nodeGpus = std::max(1, c.ranks);
  cluster.gpus = std::max(1, c.ranks);
  cluster.gpusPerNode = cluster.gpus;
  cluster.measuredLink = host.link;

  ModelSpec model = modelOf(c, vocab);
  model.engineKernels = true;
  Layout layout = layoutOf(c);
  layout.precision = Precision::Fp32;
  layout.dpCalls = engineDpCalls(c);
  // The engine overlaps only stage 0's buckets with the backward (a thread of their own); its
  // ZeRO reduce-scatters in line, after a unit's backward or the whole backward.
  layout.overlapDpComm = c.zero == 0 && c.dpVersion == DpVersion::Bucket;
  if (auto err = validate(model, layout, cluster)) throw ConfigError(*err);
  Projection p = project(model, layout, cluster);
  // Each rank copies its share of the batch (cp ranks their pieces of each window).
  if (host.dataBytesPerS > 0) {
    const Layout& l = p.layout;
    const double samples = double(l.globalBatch) / std::max(1, l.dp);
    p.split.data = samples * host.sampleBytes / l.cp / (host.dataBytesPerS * share);
    const double scale = (p.stepSeconds + p.split.data) / p.stepSeconds;
    p.stepSeconds += p.split.data;
    p.tokensPerS /= scale, p.samplesPerS /= scale, p.tflopsPerGpu /= scale;
    p.modelTflopsPerGpu /= scale, p.mfu /= scale, p.hfu /= scale;
  }
  return p;
}

}  // namespace

// More ranks than cores: while every rank computes, each gets cores / ranks of a core. A
// pipeline's stages do not all compute at once: its schedule is played out in time with the
// cores shared by the stages that can run (pipeline_schedule.h), the rest of the step (gradient
// sync, optimizer) at the shared rate.
Projection projectOnHost(const RunConfig& c, const HostProfile& host, int vocab) {
  Projection shared = projectAtShare(c, host, vocab, host.coreShare());
  if (host.coreShare() >= 1 || shared.layout.pp == 1) return shared;
  const Projection own = projectAtShare(c, host, vocab, 1.0);
  const Layout& l = own.layout;
  // A stage is ranks / pp ranks (its tp, dp and cp ranks), computing together.
  const double stageCores = double(host.cores) * l.pp / std::max(1, host.ranks);
  const double pipeline = sharedCoresPipelineTime(own.stageForwardS, own.stageBackwardS,
                                                  l.microBatches, scheduleValue(l), stageCores);
  Projection p = shared;
  p.split = own.split;  // the stages' work with a core each...
  p.split.dpCommExposed = shared.split.dpCommExposed;
  p.split.optimizer = shared.split.optimizer;
  p.split.data = shared.split.data;
  // ... and the rest of the pipeline's time: fill and drain, or waiting for a core.
  const StepSplit& o = own.split;
  p.split.ppBubble = std::max(0.0, pipeline - (o.compute + o.tpComm + o.cpComm + o.epComm +
                                               o.ppComm));
  p.stepSeconds = p.split.total();
  const double scale = p.stepSeconds / shared.stepSeconds;
  p.tokensPerS /= scale, p.samplesPerS /= scale, p.tflopsPerGpu /= scale;
  p.modelTflopsPerGpu /= scale, p.mfu /= scale, p.hfu /= scale;
  return p;
}

const std::vector<CheckedLayout>& lessonLayouts() {
  static const std::vector<CheckedLayout> layouts = {
      {"lesson 5: dp 4, ring, per tensor",
       R"({"layers": 2, "ranks": 4, "hidden": 128, "batch": 256, "allreduce": "ring",
           "dp-version": "per-tensor"})"},
      {"lesson 7: dp 4, ZeRO-1, Adam",
       R"({"layers": 2, "ranks": 4, "hidden": 256, "batch": 256, "optimizer": "adam",
           "lr": 0.001, "zero": 1})"},
      {"lesson 10: GPT, tp 2",
       R"({"model": "gpt", "dataset": "fortunes", "layers": 2, "ranks": 2, "tp": 2,
           "hidden": 128, "heads": 4, "seq": 64, "batch": 16})"},
      {"lesson 11: GPT, pp 4, 1F1B, 4 micro-batches",
       R"({"model": "gpt", "dataset": "fortunes", "ranks": 4, "pp": 4, "layers": 4,
           "hidden": 128, "heads": 4, "seq": 64, "batch": 32, "microbatches": 4,
           "schedule": "1f1b"})"},
  };
  return layouts;
}

}  // namespace paralab::projection
