// ZeRO stages 1-3 (`--strategy sync --zero 1|2|3`; Rajbhandari et al. 2020): synchronous data
// parallelism with the model states sharded over the N ranks: the serial loss, less per rank.
// Try: paralab-run --ranks 4 --zero 3 --optimizer adam --lr 0.002 --json
// See tests/engine/tst_zero.cpp and tst_parallel_equals_serial.cpp.
//
// Rank r owns chunk r of every unit (layout in zero.h). The collectives, all in this file:
//   Stage 1 (optimizer state): full params and grads; after backward each unit's gradients
//     are reduce-scattered, the rank updates its chunk, and the params are all-gathered.
//   Stage 2 (+ gradients): a unit's gradient is computed into a transient full-size buffer
//     and reduce-scattered into the owned shard as soon as backward finishes the unit; the
//     updated params are all-gathered as in stage 1.
//   Stage 3 (+ parameters; FSDP, Zhao et al. 2023): only the owned shard of the params is
//     kept; each unit is all-gathered before its forward and again before its backward, and
//     freed after each; gradients as in stage 2; no all-gather after the update.
// Bytes sent per rank per step, fp32: stages 1-2: 2(N-1)/N x 4P (= the ring all-reduce);
// stage 3: 3(N-1)/N x 4P (1.5x: the paper's 3 Psi vs 2 Psi). Model states per rank with Adam
// (bytes): 16P serial; stage 1: 8P + 8P/N; stage 2: 4P + 12P/N; stage 3: 16P/N.
// With --device cuda every buffer here is device memory of the rank's Compute; each collective
// waits for the rank's stream first (Compute::sync), since the communicator uses its own.
#include "parallel/zero.h"

#include <algorithm>
#include <stdexcept>
#include <cstring>

#include "comm/communicator.h"
#include "parallel/replica.h"

namespace paralab {

ZeroLayout::ZeroLayout(const ParamSet& ps, int n) : ranks(n), numel(ps.numel()) {
  for (const ParamUnit& pu : ps.units()) {
    Unit u;
    u.begin = pu.begin;
    u.len = pu.numel();
    u.padded = (u.len + n - 1) / n * n;
    u.chunk = u.padded / n;
    u.paddedBegin = paddedNumel;
    u.shardBegin = shardNumel;
    paddedNumel += u.padded;
    shardNumel += u.chunk;
    units.push_back(u);
  }
}

namespace {

class Zero final : public ReplicaStrategy, private UnitHooks {
 public:
  Zero(RankContext& ctx, int stage)
      : ReplicaStrategy(ctx), m_stage(stage), m_layout(m_model->params(), ctx.worldSize) {
    ParamSet& ps = m_model->params();
    const int64_t full = m_layout.paddedNumel, shard = m_layout.shardNumel;
    // Model states as this stage keeps them (Params / Grads categories: what ZeRO shards).
    m_params = compute().tensor({m_stage < 3 ? full : shard}, MemCategory::Params, ctx.memory);
    m_grads = compute().tensor({m_stage < 2 ? full : shard}, MemCategory::Grads, ctx.memory);
    // Every rank built the same initial model from the seed; keep this stage's part of it.
    const float* flat = ps.params().data();
    for (const ZeroLayout::Unit& u : m_layout.units) {
      if (m_stage < 3) {
        compute().copy(m_params.data() + u.paddedBegin, flat + u.begin, u.len);
      } else {
        const int64_t from = int64_t(m_ctx.rank) * u.chunk;  // the real floats of chunk r
        const int64_t n = std::clamp<int64_t>(u.len - from, 0, u.chunk);
        if (n > 0)  // a tiny unit's last chunks may be padding only
          compute().copy(m_params.data() + u.shardBegin, flat + u.begin + from, n);
      }
    }
    // The model's own flat buffers go: 8P bytes fewer (on a GPU the copies above are queued
    // ahead of any reuse of that memory, on the same stream).
    ps.releaseFlat();
    for (int i = 0; i < int(m_layout.units.size()); ++i) {
      bindResting(i);
      // Optimizer state for the owned chunk only: 8 bytes per owned float with Adam.
      m_opts.push_back(makeOptimizer(m_layout.units[size_t(i)].chunk));
    }
  }

  RankStep step(int64_t step, const std::vector<int>& globalBatch) override {
    RankStep out;
    out.samples = takeSlice(step, globalBatch);
    if (m_stage == 1) m_grads.zero();  // stages 2-3 zero each unit's staging buffer instead
    out.lossSum = forwardBackward(step, this);  // stages 2-3 reduce-scatter in afterBackward
    Communicator& comm = *m_ctx.comm;
    if (m_stage == 1) {
      compute().sync();
      for (const ZeroLayout::Unit& u : m_layout.units)  // in place: chunk r gets the sum
        comm.reduceScatter(m_grads.data() + u.paddedBegin, ownedGrads(u), u.chunk, ReduceOp::Sum,
                           device());
    }
    {
      ComputeSpan s(compute(), m_ctx.spans, SpanKind::Optimizer, step + 1, "optimizer");
      for (size_t i = 0; i < m_layout.units.size(); ++i)
        m_opts[i]->step(ownedParams(m_layout.units[i]), ownedGrads(m_layout.units[i]));
    }
    if (m_stage < 3) {  // every rank gets the updated chunks of the others (in place)
      compute().sync();
      for (const ZeroLayout::Unit& u : m_layout.units)
        comm.allGather(ownedParams(u), m_params.data() + u.paddedBegin, u.chunk, device());
    }
    return out;
  }

  // Stage 3: collective, every rank gathers the whole model (Comm memory until endEval).
  Mlp& beginEval() override {
    if (m_stage < 3) return *m_model;
    m_evalParams = compute().tensor({m_layout.paddedNumel}, MemCategory::Comm, m_ctx.memory);
    compute().sync();
    for (int i = 0; i < int(m_layout.units.size()); ++i) {
      const ZeroLayout::Unit& u = m_layout.units[size_t(i)];
      m_ctx.comm->allGather(ownedParams(u), m_evalParams.data() + u.paddedBegin, u.chunk, device());
      m_model->params().bindUnit(i, m_evalParams.data() + u.paddedBegin, nullptr);
    }
    return *m_model;
  }
  void endEval() override {
    if (m_stage < 3) return;
    for (int i = 0; i < int(m_layout.units.size()); ++i) bindResting(i);
    m_evalParams = Tensor();
  }

  // Live reconfiguration: gather every unit's chunks (all-gather, counted) into the serial
  // layout on rank 0; loading takes back this rank's chunk of each unit.
  void saveState(TrainingState& state) override {
    const int64_t P = m_layout.numel;
    const bool root = m_ctx.rank == 0;
    Optimizer& first = *m_opts.front();
    if (root) {
      state.params.assign(size_t(P), 0.f);
      state.optM.assign(first.momentOne() ? size_t(P) : 0, 0.f);
      state.optV.assign(first.momentTwo() ? size_t(P) : 0, 0.f);
      state.optimizerSteps = first.steps();
    }
    // Gathered on the rank's device, copied back to the host by the root.
    Tensor full = compute().tensor({m_layout.paddedNumel}, MemCategory::Comm, m_ctx.memory);
    compute().sync();
    auto gather = [&](auto ownedOf, std::vector<float>& out) {
      for (size_t i = 0; i < m_layout.units.size(); ++i) {
        const ZeroLayout::Unit& u = m_layout.units[i];
        m_ctx.comm->allGather(ownedOf(i), full.data() + u.paddedBegin, u.chunk, device());
        if (root) compute().download(out.data() + u.begin, full.data() + u.paddedBegin, u.len);
      }
    };
    if (m_stage < 3) {
      if (root)
        for (const ZeroLayout::Unit& u : m_layout.units)
          compute().download(state.params.data() + u.begin, m_params.data() + u.paddedBegin, u.len);
    } else {
      gather([&](size_t i) { return ownedParams(m_layout.units[i]); }, state.params);
    }
    if (first.momentOne()) gather([&](size_t i) { return m_opts[i]->momentOne(); }, state.optM);
    if (first.momentTwo()) gather([&](size_t i) { return m_opts[i]->momentTwo(); }, state.optV);
  }

  void loadState(const TrainingState& state) override {
    if (int64_t(state.params.size()) != m_layout.numel)
      throw std::runtime_error("the saved state does not fit this model");
    for (size_t i = 0; i < m_layout.units.size(); ++i) {
      const ZeroLayout::Unit& u = m_layout.units[i];
      // This rank's chunk of the unit: its real floats (the padded tail stays zero).
      const int64_t from = int64_t(m_ctx.rank) * u.chunk;
      const int64_t n = std::clamp<int64_t>(u.len - from, 0, u.chunk);
      auto take = [&](const std::vector<float>& src, float* dst) {
        if (dst && !src.empty() && n > 0) compute().upload(dst, src.data() + u.begin + from, n);
      };
      if (m_stage < 3)
        compute().upload(m_params.data() + u.paddedBegin, state.params.data() + u.begin, u.len);
      else
        take(state.params, ownedParams(u));
      take(state.optM, m_opts[i]->momentOne());
      take(state.optV, m_opts[i]->momentTwo());
      m_opts[i]->setSteps(state.optimizerSteps);
    }
    compute().sync();
  }

  // The replica's list, with what this stage shards replaced by the owned chunk of each unit
  // (flattened): grads from stage 2, params at stage 3; the optimizer state always.
  RankHoldings holdings() const override {
    RankHoldings h = ReplicaStrategy::holdings();
    std::erase_if(h.items, [&](const HeldSlice& s) {
      return (s.kind == HoldingKind::Grads && m_stage >= 2) || (s.kind == HoldingKind::Params && m_stage == 3);
    });
    const int slots = optimizerStateSlots(m_ctx.config->optimizer);
    for (size_t i = 0; i < m_layout.units.size(); ++i) {
      const ZeroLayout::Unit& u = m_layout.units[i];
      const std::string name = m_model->params().units()[i].name + " (flat)";
      const int64_t begin = std::min(u.len, m_ctx.rank * u.chunk), end = std::min(u.len, begin + u.chunk);
      auto chunk = [&](HoldingKind k, int64_t cols) {
        h.items.push_back({name, k, 0, begin, end, u.len, u.chunk, cols, u.chunk * cols * 4});
      };
      if (m_stage == 3) chunk(HoldingKind::Params, 1);
      if (m_stage >= 2) chunk(HoldingKind::Grads, 1);
      if (slots > 0) chunk(HoldingKind::Optimizer, slots);
    }
    return h;
  }

 private:
  // [SECTION] Hooks around each unit (called outside the forward/backward compute spans).
  void beforeForward(int i) override {
    if (m_stage == 3) m_model->params().bindUnit(i, gather(i), nullptr);
  }
  void afterForward(int i) override {
    if (m_stage == 3) release(i);
  }
  void beforeBackward(int i) override {
    if (m_stage < 2) return;
    const ZeroLayout::Unit& u = m_layout.units[size_t(i)];
    // The unit's full gradient lives only while backward computes it: transient, so Comm.
    // Zero-filled on allocation: backward accumulates into it.
    m_staging = compute().tensor({u.padded}, MemCategory::Comm, m_ctx.memory);
    float* params = m_stage == 3 ? gather(i) : m_params.data() + u.paddedBegin;
    m_model->params().bindUnit(i, params, m_staging.data());
  }
  void afterBackward(int i) override {
    if (m_stage < 2) return;
    const ZeroLayout::Unit& u = m_layout.units[size_t(i)];
    // Rank r keeps the sum over ranks of chunk r: (N-1)/N x 4 x padded bytes sent.
    compute().sync();
    m_ctx.comm->reduceScatter(m_staging.data(), ownedGrads(u), u.chunk, ReduceOp::Sum, device());
    release(i);
  }

  // Stage 3: the unit's whole parameters from every rank's chunk, (N-1)/N x 4 x padded bytes.
  float* gather(int i) {
    const ZeroLayout::Unit& u = m_layout.units[size_t(i)];
    m_gathered = compute().tensor({u.padded}, MemCategory::Comm, m_ctx.memory);
    compute().sync();  // the owned chunk's update and the buffer's zero fill are done
    m_ctx.comm->allGather(ownedParams(u), m_gathered.data(), u.chunk, device());
    return m_gathered.data();
  }
  // Back to what the unit holds between uses; transient buffers freed.
  void release(int i) {
    bindResting(i);
    m_gathered = Tensor();
    m_staging = Tensor();
  }
  // Stages 1-2: the full padded params (stage 1 also grads); stage 3: nothing (gathered on use).
  void bindResting(int i) {
    const ZeroLayout::Unit& u = m_layout.units[size_t(i)];
    float* params = m_stage < 3 ? m_params.data() + u.paddedBegin : nullptr;
    float* grads = m_stage == 1 ? m_grads.data() + u.paddedBegin : nullptr;
    m_model->params().bindUnit(i, params, grads);
  }

  // This rank's chunk of a unit: inside the full buffer (chunk r of the unit) or the shard.
  float* ownedParams(const ZeroLayout::Unit& u) {
    return m_stage < 3 ? m_params.data() + u.paddedBegin + m_ctx.rank * u.chunk
                       : m_params.data() + u.shardBegin;
  }
  float* ownedGrads(const ZeroLayout::Unit& u) {
    return m_stage < 2 ? m_grads.data() + u.paddedBegin + m_ctx.rank * u.chunk
                       : m_grads.data() + u.shardBegin;
  }

  int m_stage;
  ZeroLayout m_layout;
  Tensor m_params;      // stages 1-2: every unit, padded [paddedNumel]; 3: owned shard
  Tensor m_grads;       // stage 1: every unit, padded; stages 2-3: owned shard
  Tensor m_gathered;    // stage 3: one unit's parameters while it runs (Comm)
  Tensor m_staging;     // stages 2-3: one unit's full gradient while backward computes it (Comm)
  Tensor m_evalParams;  // stage 3: the whole model during evaluation (Comm)
  // One per unit over the owned chunk; Adam and momentum are elementwise, so this is the
  // same update as one optimizer over the whole model, and the owned chunks need no copying.
  std::vector<std::unique_ptr<Optimizer>> m_opts;
};

}  // namespace

std::unique_ptr<Strategy> makeZero1(RankContext& ctx) { return std::make_unique<Zero>(ctx, 1); }
std::unique_ptr<Strategy> makeZero2(RankContext& ctx) { return std::make_unique<Zero>(ctx, 2); }
std::unique_ptr<Strategy> makeZero3(RankContext& ctx) { return std::make_unique<Zero>(ctx, 3); }

}  // namespace paralab
