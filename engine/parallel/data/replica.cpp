// The shared part of the data-parallel strategies (see replica.h).
#include "parallel/data/replica.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "model/gpt.h"

namespace paralab {

namespace {

// Records a Forward / Backward span around each unit and calls the strategy's hooks between
// them, so communication done in hooks is not counted as compute. Spans of the rank's Compute:
// on a GPU, CUDA events around the unit's kernels.
class SpanningHooks : public UnitHooks {
 public:
  SpanningHooks(Compute& compute, SpanRecorder* spans, int64_t step, UnitHooks* inner)
      : m_compute(compute), m_spans(spans), m_step(step), m_inner(inner) {}
  void beforeForward(int u) override {
    inner([&] { m_inner->beforeForward(u); });
    open(SpanKind::Forward);
  }
  void afterForward(int u) override {
    close();
    inner([&] { m_inner->afterForward(u); });
  }
  void beforeBackward(int u) override {
    inner([&] { m_inner->beforeBackward(u); });
    open(SpanKind::Backward);
  }
  void afterBackward(int u) override {
    close();
    inner([&] { m_inner->afterBackward(u); });
  }
  // Wall time spent in the strategy's hooks (its communication), ns.
  int64_t hooksNs() const { return m_hooksNs; }

 private:
  void open(SpanKind k) {
    m_open =
        m_compute.openSpan(m_spans, k, m_step, k == SpanKind::Forward ? "forward" : "backward");
  }
  void close() { m_compute.closeSpan(m_open); }
  template <class F>
  void inner(F call) {
    if (!m_inner) return;
    const int64_t t0 = nowNs();
    call();
    m_hooksNs += nowNs() - t0;
  }
  Compute& m_compute;
  SpanRecorder* m_spans;
  int64_t m_step;
  UnitHooks* m_inner;
  Compute::OpenSpan m_open;
  int64_t m_hooksNs = 0;
};

}  // namespace

ReplicaStrategy::ReplicaStrategy(RankContext& ctx)
    : m_ctx(ctx), m_faults(*ctx.config, ctx.rank), m_precision(*ctx.config) {
  ensureCompute(m_ctx, m_ownCompute);
  // Mixed precision (train/precision.h): 16-bit parameters and activations counted at 2 bytes.
  countStoredBytes(ctx.memory, ctx.config->precision);
  // Every rank builds the same initial model from the same seed: replicas start equal
  // without a broadcast.
  m_model = makeModel(*ctx.config, *ctx.data, ctx.memory, m_ctx.compute);
  if (m_precision.active()) {  // the initial weights rounded into their 16-bit store
    m_precision.runOn(compute());
    m_model->storeActivationsIn(m_precision.dtype());
    roundStored(compute(), m_precision.dtype(), m_model->params().params().data(),
                m_model->params().numel());
  }
}

int ReplicaStrategy::takeSlice(int64_t step, const std::vector<int>& globalBatch, int lossOver) {
  ScopedSpan s(m_ctx.spans, SpanKind::Data, step + 1, "take batch slice");
  const int64_t n = int64_t(globalBatch.size());
  m_globalBatch = lossOver > 0 ? lossOver : int(n);
  const int64_t begin = shardBegin(m_ctx.rank, m_ctx.worldSize, n);
  m_slice = int(shardLen(m_ctx.rank, m_ctx.worldSize, n));
  const int D = m_ctx.data->inputDim;
  m_x.resize(size_t(m_slice) * D);
  m_labels.resize(size_t(m_slice));
  for (int i = 0; i < m_slice; ++i) {
    const int sample = globalBatch[size_t(begin + i)];
    std::memcpy(&m_x[size_t(i) * D], &m_ctx.data->trainX[size_t(sample) * D], sizeof(float) * D);
    m_labels[size_t(i)] = m_ctx.data->trainY[size_t(sample)];
  }
  return m_slice;
}

double ReplicaStrategy::forwardBackward(int64_t step, UnitHooks* hooks, bool zeroGrads,
                                        bool lastMicro) {
  SpanningHooks spanning(compute(), m_ctx.spans, step + 1, hooks);
  // Mixed precision: each unit's gradients rounded to 16 bits before the strategy's hooks,
  // each micro-batch's apart from the fp32 sum of those before it.
  MixedPrecision::Hooks rounding(m_precision, m_model->params(), &spanning, m_ctx.memory);
  UnitHooks* outer = m_precision.active() ? static_cast<UnitHooks*>(&rounding) : &spanning;
  const int64_t t0 = nowNs();
  // fp16's loss scale S is folded into the normalizer: the gradients come out times S.
  const double loss = m_model->forwardLoss(m_x.data(), m_labels.data(), m_slice,
                                           m_precision.normalizer(m_globalBatch), outer);
  if (zeroGrads && m_model->params().grads().data()) m_model->params().zeroGrads();
  m_model->backward(outer);
  if (m_faults.any()) {  // --straggler, --fail: after the real compute, measured without hooks
    compute().sync();
    m_microComputeNs += nowNs() - t0 - spanning.hooksNs();
    if (lastMicro) {  // once a step, on the compute of all its micro-batches
      const int64_t computeNs = m_microComputeNs;
      m_microComputeNs = 0;
      m_faults.afterBackward(step + 1, computeNs, m_ctx.spans);
    }
  }
  return loss;
}

std::unique_ptr<Optimizer> ReplicaStrategy::makeOptimizer(int64_t numel) const {
  OptimizerHyper hyper;
  hyper.lr = float(m_ctx.config->lr);
  hyper.stored = m_ctx.config->precision;
  m_optimizerFloats += numel;
  return std::make_unique<Optimizer>(optimizerKind(m_ctx.config->optimizer), hyper, numel,
                                     m_ctx.memory, m_ctx.compute);
}

void ReplicaStrategy::addModelStates(std::vector<HeldSlice>& items) const {
  const ParamSet& ps = m_model->params();
  for (const HoldingKind k : {HoldingKind::Params, HoldingKind::Grads})
    addWholeTensors(items, ps, k);
  const int slots = optimizerStateSlots(m_ctx.config->optimizer);
  const int64_t P = ps.numel();
  if (slots > 0 && m_optimizerFloats == P)
    items.push_back({"model (flat)", HoldingKind::Optimizer, -1, 0, P, P, P, slots, P * slots * 4});
}

RankHoldings ReplicaStrategy::holdings() const {
  RankHoldings h;
  h.rank = m_ctx.rank;
  h.coords.dp = m_ctx.rank;
  addModelStates(h.items);
  const int64_t B = m_ctx.config->globalBatch();
  {
    const int64_t at = shardBegin(m_ctx.rank, m_ctx.worldSize, B),
                  n = shardLen(m_ctx.rank, m_ctx.worldSize, B);
    h.items.push_back({"global batch", HoldingKind::Batch, 0, at, at + n, B, n,
                       m_ctx.data->inputDim, n * m_ctx.data->inputDim * 4});
  }
  // The activations: this rank's rows of the batch, or with --accumulate K of its first
  // micro-batch, standing for each in turn (one micro-batch's are alive at a time).
  const int64_t micro = B / std::max(1, m_ctx.config->accumulate);
  const int64_t begin = shardBegin(m_ctx.rank, m_ctx.worldSize, micro),
                len = shardLen(m_ctx.rank, m_ctx.worldSize, micro);
  if (const auto* gpt = dynamic_cast<const Gpt*>(m_model.get())) {
    // The GPT: what the forward keeps for the backward, and (--recompute) the one block's
    // buffers the backward recomputes the rest into, from the shape for this rank's windows
    // (the tracker's workspace also holds the backward's scratch). Rows are tokens.
    const int64_t T = gpt->shape().seq, C = gpt->shape().hidden;
    const GptActivationBytes bytes = gptActivationBytes(gpt->shape(), gpt->recompute(), len);
    h.items.push_back({kStoredActivations, HoldingKind::Activations, 0, begin * T,
                       (begin + len) * T, B * T, len * T, C, bytes.stored});
    if (gpt->recompute() != Recompute::None) {
      // Selective: the probabilities, a row of NH x T per token; full: a block's buffers.
      const int64_t cols = gpt->recompute() == Recompute::Selective ? gpt->shape().heads * T : C;
      h.items.push_back({recomputedActivationsName(gpt->recompute()), HoldingKind::Activations, 0,
                         begin * T, (begin + len) * T, B * T, len * T, cols, bytes.recomputed,
                         true});
    }
  } else {
    const MemorySnapshot mem = m_ctx.memory ? m_ctx.memory->snapshot() : MemorySnapshot{};
    h.items.push_back({"activations", HoldingKind::Activations, 0, begin, begin + len, B, len,
                       m_ctx.config->hidden, mem[MemCategory::Activations]});
  }
  HeldGroup world{"world", {}};
  for (int r = 0; r < m_ctx.worldSize; ++r) world.worldRanks.push_back(r);
  h.groups.push_back(world);
  return h;
}

void ReplicaStrategy::update(int64_t step, Optimizer& opt, float* params, const float* grads) {
  ComputeSpan s(compute(), m_ctx.spans, SpanKind::Optimizer, step + 1, "optimizer");
  opt.step(params, grads);
}

// [SECTION] Live reconfiguration

void Strategy::saveState(TrainingState&) {
  throw std::runtime_error("this strategy cannot hand its state to another layout yet");
}
void Strategy::loadState(const TrainingState&) {
  throw std::runtime_error("this strategy cannot take over another layout's state yet");
}

void ReplicaStrategy::saveState(TrainingState& state) {
  Optimizer* opt = fullOptimizer();
  if (!opt) Strategy::saveState(state);
  if (m_ctx.rank != 0) return;  // every replica holds the same (rank 0's is the one kept)
  const int64_t P = m_model->params().numel();
  // Copied back to the host from wherever they live (Compute::download: memcpy on the CPU).
  auto take = [&](const float* from, std::vector<float>& to) {
    to.assign(from ? size_t(P) : 0, 0.f);
    if (from) compute().download(to.data(), from, P);
  };
  take(fullParams(), state.params);
  take(opt->momentOne(), state.optM);
  take(opt->momentTwo(), state.optV);
  take(opt->currentMaster(fullParams()), state.master);  // mixed precision's fp32 master
  state.optimizerSteps = opt->steps();
  state.lossScale = m_precision.lossScaleState();
}

void ReplicaStrategy::loadState(const TrainingState& state) {
  Optimizer* opt = fullOptimizer();
  if (!opt) Strategy::loadState(state);
  const int64_t P = m_model->params().numel();
  if (int64_t(state.params.size()) != P)
    throw std::runtime_error("the saved state holds " + std::to_string(state.params.size()) +
                             " parameters, this model " + std::to_string(P));
  compute().upload(fullParams(), state.params.data(), P);
  if (opt->momentOne() && int64_t(state.optM.size()) == P)
    compute().upload(opt->momentOne(), state.optM.data(), P);
  if (opt->momentTwo() && int64_t(state.optV.size()) == P)
    compute().upload(opt->momentTwo(), state.optV.data(), P);
  compute().sync();  // the caller's vectors may go once this returns
  opt->setSteps(state.optimizerSteps);
  if (int64_t(state.master.size()) == P)
    opt->loadMaster(state.master.data(), P);
  else
    opt->retakeMaster();  // mixed precision: from the parameters just loaded
  m_precision.restoreLossScale(state.lossScale);
}

}  // namespace paralab
