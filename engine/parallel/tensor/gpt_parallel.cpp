// Tensor parallelism (`--tp T`), sequence parallelism (`--sp`) and pipeline stages (`--pp P`)
// for the GPT. Try:
//   paralab-run --model gpt --tp 2 --json   |   paralab-run --model gpt --tp 2 --sp --pp 2 --json
// See tests/engine/tst_gpt.cpp (equal to serial; traffic against the formulas).
//
// A block is x += proj(attention(qkv(LN1(x)))), then x += fc2(GELU(fc1(LN2(x)))). Megatron's
// split of each half into a column-parallel and a row-parallel layer, so that only their sum
// is exchanged (column_row.h has the pair's exchanges, TP and SP):
//   attention: qkv column-parallel by heads (rank t computes q, k and v of heads t NH/T ..
//     (t+1) NH/T - 1 for every token), attention itself on those heads alone (heads are
//     independent), proj row-parallel (the input rows of those heads) -> partial sums;
//   FFN: fc1 column-parallel, GELU on the rank's columns, fc2 row-parallel -> partial sums.
//   TP, per block and micro-batch of B windows of s tokens (rows = B s):
//     forward:  an all-reduce of proj's and one of fc2's partial outputs, B s x C floats each;
//     backward: an all-reduce of the partial input gradients of qkv and of fc1, the same size.
//   So 4 all-reduces per block per micro-batch, one per sub-block each way. proj's and fc2's
//   biases are added once, after the sum. Replicated: the embeddings, every LayerNorm, the
//   final LayerNorm and the head; every tp rank computes the same values on them, so their
//   gradients are identical by construction and need no tp all-reduce.
//   SP: the region outside attention and the FFN (LayerNorms, residual adds) is split over the
//   group by tokens: rank t keeps tokens t of T of each micro-batch (B s / T rows; --seq a
//   multiple of T, so the blocks are equal). Each all-reduce becomes its two halves where the
//   split begins and ends:
//     forward:  all-gather of LN1's and LN2's outputs, reduce-scatter after proj and fc2;
//     backward: all-gather of the output gradients before fc2 and proj, reduce-scatter after
//               fc1 and qkv;
//   the same bytes as TP's all-reduces, while the residual stream, the stream after attention
//   and the LayerNorm statistics take 1/T of the memory. (The gathered LayerNorm outputs are
//   kept: column_row.h says why.) At the ends: the first stage
//   computes the embeddings of every token (cheap: a lookup) and keeps its own rows; its
//   backward all-gathers the gradient rows, so every rank computes the whole, identical
//   embedding gradient. The last stage all-gathers the stream for the final LayerNorm and head;
//   their backward needs no exchange (every rank has the whole gradient and keeps its rows).
//   LN1's and LN2's weights see only the rank's rows: one all-reduce per block per step (2 x 2C
//   floats) sums their gradients over the group.
// Recomputation (gpt.h) per micro-batch: selective recomputes the probabilities of the rank's
// heads from the kept qkv, no exchange. Full keeps only each block's input (SP: the rank's
// rows) and reruns the block's forward before its backward, as Megatron-LM's full activation
// checkpointing does, into one block's buffers shared by the micro-batches (Workspace): its
// collectives run again, 2 more all-reduces per block and micro-batch (SP: 2 all-gathers and
// 2 reduce-scatters), the same B s x C floats each.
// Context parallelism (--cp N, ring_attention.h): the rank's rows are its pieces of every
// window (rowsOf: B s/N per micro-batch); every unit is row by row except the embeddings (by
// position: each piece its own wpe rows) and attention (the ring). The weights' gradients are
// each rank's share over its tokens, summed over dp x cp by the GradSync (model_parallel.cpp).
// With --device cuda every buffer here is device memory of the rank's Compute, as in
// tensor_parallel.cpp.
#include "parallel/tensor/gpt_parallel.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "comm/communicator.h"
#include "device/compute.h"
#include "parallel/data/grad_sync.h"
#include "parallel/pipeline/pipeline.h"

namespace paralab {

GptStage::GptStage(Gpt& shard, Communicator& tp, bool sp, Compute& compute, MemoryTracker* memory,
                   SpanRecorder* spans, Communicator* cp, bool zigzag, CpKind cpKind)
    : ColumnRowStage(tp, sp, compute, memory, spans),
      m_model(shard),
      m_S(shard.shape().seq),
      m_C(shard.shape().hidden),
      m_V(shard.shape().vocab),
      m_L(shard.shape().layers),
      m_Cl(shard.shape().hidden / tp.size()),
      m_NHl(shard.shape().heads / tp.size()),
      m_F(4 * shard.shape().hidden / tp.size()) {
  if (cp && cp->size() > 1) {
    if (m_sp) throw std::invalid_argument("sp: does not compose with context parallelism here");
    m_ring = makeContextAttention(cpKind, *cp, m_S, zigzag, m_NHl, m_Cl, compute, memory, spans);
  }
  m_Sl = m_ring ? m_ring->rows() : m_S;
  if (m_sp && m_S % m_T != 0)
    throw std::invalid_argument("sp: sequence parallelism splits each window's " +
                                std::to_string(m_S) + " tokens over --tp " + std::to_string(m_T) +
                                " ranks; --seq must be a multiple of it");
}

GptStage::~GptStage() = default;

MicroRows GptStage::rowsOf(int samples) const {
  // SP: --seq is a multiple of T (the constructor says so), so no padding rows.
  return splitRows({samples, m_Sl, samples * m_Sl, samples * m_Sl, 0});
}

bool GptStage::reportsLoss() const { return m_model.hasUnit(m_L + 1) && m_tp.rank() == 0; }

GptBlockActs GptStage::blockLayout(int samples, const std::function<Tensor(Shape)>& make) const {
  const MicroRows r = rowsOf(samples);
  const int64_t full = r.full, local = r.local, C = m_C;
  // fp32 under mixed precision too (stage.h): the statistics, the ring's log-sum-exp.
  auto wide = [&](Shape s) { return fp32(make, std::move(s)); };
  GptBlockActs k;
  k.ln1 = make({full, C});
  k.mean1 = wide({local});
  k.rstd1 = wide({local});
  k.qkv = make({full, 3 * int64_t(m_Cl)});
  if (m_ring)
    k.lse = m_ring->keptStored() ? make({m_ring->keptFloats(samples)})
                                 : wide({m_ring->keptFloats(samples)});
  else if (m_model.recompute() != Recompute::Selective)
    k.att = make({int64_t(samples) * m_NHl * m_S * m_S});
  k.y = make({full, m_Cl});
  k.mid = make({local, C});
  k.ln2 = make({full, C});
  k.mean2 = wide({local});
  k.rstd2 = wide({local});
  k.h = make({full, m_F});
  k.g = make({full, m_F});
  return k;
}

std::unique_ptr<MicroActs> GptStage::layout(int micro, int samples,
                                            const std::function<Tensor(Shape)>& make) const {
  auto m = std::make_unique<GptMicroActs>();
  begin(*m, micro, samples);
  const int64_t full = m->r.full, local = m->r.local, C = m_C;
  auto act = [&](Shape s) { return m->add(std::move(s), make); };
  // fp32 under mixed precision too (stage.h): token ids, statistics, logits, kept gradients.
  auto wide = [&](Shape s) {
    return m->add(std::move(s), [&](Shape t) { return fp32(make, std::move(t)); });
  };
  if (m_model.hasUnit(0)) m->tokens = wide({full});
  const int blocks = m_model.endBlock() - m_model.firstBlock();
  for (int j = 0; j <= blocks; ++j) m->a.push_back(act({local, C}));
  // Full recomputation keeps the blocks' inputs (a) only.
  if (m_model.recompute() != Recompute::Full)
    for (int j = 0; j < blocks; ++j) m->block.push_back(blockLayout(samples, act));
  if (m_model.hasUnit(m_L + 1)) {
    m->targets = wide({full});
    if (m_sp) m->aFull = act({full, C});
    m->lnf = act({full, C});
    m->meanf = wide({full});
    m->rstdf = wide({full});
    m->logits = wide({full, m_V});
    m->dlogits = wide({full, m_V});
  }
  if (splitsBackward()) {
    for (int j = 0; j < blocks; ++j)
      m->grads.push_back({wide({full, C}), wide({full, m_F}), wide({local, C}), wide({full, C}),
                          wide({full, 3 * int64_t(m_Cl)}), wide({local, C})});
    if (m_model.hasUnit(m_L + 1)) m->dlnf = wide({full, C});
    if (m_model.hasUnit(0)) m->dEmbed = wide({full, C});
  }
  return m;
}

int64_t GptStage::recomputedBytes(int samples) const {
  if (m_model.endBlock() == m_model.firstBlock()) return 0;
  switch (m_model.recompute()) {
    case Recompute::None:
      return 0;
    case Recompute::Selective:  // the probabilities of the rank's heads (the ring keeps none)
      return m_ring ? 0 : int64_t(samples) * m_NHl * m_S * m_S * int64_t(sizeof(float));
    case Recompute::Full: {  // a whole block's buffers, counted as layout() counts them
      MicroActs count;
      const auto none = [](const Shape&) { return Tensor(); };
      blockLayout(samples, [&](Shape s) { return count.add(std::move(s), none); });
      return count.bytes;
    }
  }
  return 0;
}

void GptStage::ensureScratch(const MicroRows& r) {
  if (r.full <= m_capacity) return;
  const int64_t full = r.full, local = m_sp ? full / m_T : full, C = m_C;
  auto work = [&](Shape s) {
    return m_compute.tensor(std::move(s), MemCategory::Workspace, m_memory);
  };
  for (Tensor* t : {&m_dA, &m_dtmp, &m_dFull, &m_dln, &m_y, &m_att, &m_attScratch, &m_normDiscard})
    *t = Tensor();  // free first: an honest peak
  m_block = GptBlockActs{};
  m_grads = GptBlockGrads{};
  m_dA = work({local, C});
  m_dtmp = work({local, C});
  m_dln = work({full, C});
  m_normDiscard = work({2 * C});
  m_grads = {work({full, C}),
             work({full, m_F}),
             work({local, C}),
             work({full, C}),
             work({full, 3 * int64_t(m_Cl)}),
             work({local, C})};
  const int64_t windows = full / m_Sl;
  if (!m_ring) m_attScratch = work({std::max<int64_t>(windows * m_NHl * m_S, m_S)});
  if (m_model.recompute() == Recompute::Selective && !m_ring)
    m_att = work({windows * m_NHl * m_S * m_S});
  if (m_model.recompute() == Recompute::Full && m_model.endBlock() > m_model.firstBlock())
    m_block = blockLayout(int(windows), work);
  if (m_sp) {
    m_dFull = work({full, C});
    m_y = work({full, C});
  }
  m_capacity = r.full;
}

void GptStage::loadTokens(GptMicroActs& m, const float* x) {
  const int64_t n = m.r.full;
  const bool first = m_model.hasUnit(0), last = m_model.hasUnit(m_L + 1);
  m_hostTokens.resize(size_t(m.r.rows) * m_S);
  m_hostTargets.resize(size_t(m.r.rows) * m_S);
  splitWindows(x, m.r.rows, m_S, m_V, first ? m_hostTokens.data() : nullptr,
               last ? m_hostTargets.data() : nullptr);
  if (m_ring)  // cp: keep the rank's pieces of each window (never ahead of where they were)
    for (std::vector<int>* ids : {&m_hostTokens, &m_hostTargets}) {
      int* at = ids->data();
      for (int b = 0; b < m.r.rows; ++b)
        for (const auto& [p0, len] : m_ring->chunks().pieces)
          at = std::copy_n(ids->data() + int64_t(b) * m_S + p0, len, at);
    }
  auto put = [&](Tensor& t, const std::vector<int>& ids) {
    int* dst = reinterpret_cast<int*>(t.data());
    if (m_compute.onGpu())
      m_compute.uploadInts(dst, ids.data(), n);
    else
      std::copy_n(ids.data(), n, dst);
  };
  if (first) put(m.tokens, m_hostTokens);
  if (last) put(m.targets, m_hostTargets);
}

// [SECTION] Forward

double GptStage::forward(int64_t step, MicroActs& micro, const float* x, const int* /*labels*/,
                         double normalizer, UnitHooks* hooks) {
  GptMicroActs& m = acts(micro);
  ensureScratch(m.r);
  const MicroRows& r = m.r;
  const int64_t C = m_C;
  auto span = [&] {
    return ComputeSpan(m_compute, m_spans, SpanKind::Forward, step + 1,
                       microSpanLabel(true, m.micro));
  };
  if (readsInputs()) {
    auto s = span();
    loadTokens(m, x);
  }
  if (m_model.hasUnit(0)) {
    if (hooks) hooks->beforeForward(unitOf(0));
    {
      auto s = span();
      // Every token's embedding (SP: then only this rank's rows are kept).
      float* all = m_sp ? m_y.data() : m.a[0].data();
      embed(m, all);
      keepOwnRows(m.a[0].data(), all, r, C);
      stored(m.a[0].data(), int64_t(r.local) * C);  // 16-bit where kept (stage.h)
    }
    if (hooks) hooks->afterForward(unitOf(0));
  }
  eachBlock(m_model.endBlock() - m_model.firstBlock(), unitOf(m_model.firstBlock() + 1), true,
            hooks,
            [&](int j) { blockForward(step, j, m, blockOf(m, j), m.a[size_t(j) + 1].data()); });
  if (!m_model.hasUnit(m_L + 1)) return 0;
  const float* in = gatherRows(m.a.back().data(), m.aFull.data(), r, C);  // SP ends
  if (hooks) hooks->beforeForward(unitOf(m_L + 1));
  double loss = 0;
  {
    auto s = span();
    m_model.finalNorm().forward(in, m.lnf.data(), m.meanf.data(), m.rstdf.data(), r.full);
    stored(m.lnf.data(), int64_t(r.full) * C);
    m_model.head().forward(m.lnf.data(), m.logits.data(), r.full);
    // A window's loss is the mean of its s predictions (gpt.h): each row's gradient is
    // 1 / (normalizer s), the sum over windows the sum over rows / s.
    loss = m_compute.softmaxXent(m.dlogits.data(), m.logits.data(),
                                 reinterpret_cast<const int*>(m.targets.data()), r.full, m_V,
                                 normalizer * double(m_S)) /
           double(m_S);
  }
  if (hooks) hooks->afterForward(unitOf(m_L + 1));
  return loss;
}

void GptStage::blockForward(int64_t step, int j, GptMicroActs& m, GptBlockActs& k, float* out,
                            bool again) {
  Gpt::Block& b = m_model.block(m_model.firstBlock() + j);
  const MicroRows& r = m.r;
  const int64_t C = m_C;
  ParamSet& ps = m_model.params();
  const float* in = m.a[size_t(j)].data();
  auto span = [&] {
    return ComputeSpan(m_compute, m_spans, again ? SpanKind::Backward : SpanKind::Forward, step + 1,
                       microSpanLabel(!again, m.micro));
  };
  {  // SP: the rank's rows of LN1's output land in its block of the gathered buffer
    auto s = span();
    b.ln1.forward(in, k.ln1.data() + r.first * C, k.mean1.data(), k.rstd1.data(), r.local);
    stored(k.ln1.data() + r.first * C, r.local * C);  // before SP's gather
  }
  const SpanAt at{step, again ? SpanKind::Backward : SpanKind::Forward, m.micro};
  const int64_t qkvWidth = 3 * int64_t(m_Cl), F = m_F;
  // Column-parallel: the rank's heads, every row (SP: gathered in place).
  gatherThenCompute(at, k.ln1.data() + r.first * C, k.ln1.data(), r, C,
                    [&](const float* ln, int64_t row0, int rows) {
                      b.qkv.forward(ln + row0 * C, k.qkv.data() + row0 * qkvWidth, rows);
                      stored(k.qkv.data() + row0 * qkvWidth, rows * qkvWidth);
                    });
  attend(step, m, k, again);  // in spans of its own (the ring's messages lie between them)
  // Row-parallel: this rank's partial sum of proj's output, bias not yet added; then the sum.
  computeThenSum(at, m_y.data(), k.mid.data(), r, C, [&](int64_t row0, int rows, float* dst) {
    b.proj.forward(k.y.data() + row0 * m_Cl, dst, rows, false);
  });
  {
    auto s = span();
    m_compute.biasAdd(k.mid.data(), ps.param(b.proj.biasRef()), r.local, m_C);
    m_compute.residualAdd(k.mid.data(), in, long(r.local) * C);
    stored(k.mid.data(), r.local * C);  // the fp32 sum over tp, rounded once where it is kept
    b.ln2.forward(k.mid.data(), k.ln2.data() + r.first * C, k.mean2.data(), k.rstd2.data(),
                  r.local);
    stored(k.ln2.data() + r.first * C, r.local * C);
  }
  gatherThenCompute(at, k.ln2.data() + r.first * C, k.ln2.data(), r, C,
                    [&](const float* ln, int64_t row0, int rows) {
                      b.fc1->forward(ln + row0 * C, k.h.data() + row0 * F, rows);  // column
                      stored(k.h.data() + row0 * F, rows * F);
                      m_compute.gelu(k.g.data() + row0 * F, k.h.data() + row0 * F, long(rows) * F);
                      stored(k.g.data() + row0 * F, rows * F);
                    });
  computeThenSum(at, m_y.data(), out, r, C, [&](int64_t row0, int rows, float* dst) {
    b.fc2->forward(k.g.data() + row0 * F, dst, rows, false);  // row-parallel
  });
  auto s = span();
  m_compute.biasAdd(out, ps.param(b.fc2->biasRef()), r.local, m_C);
  m_compute.residualAdd(out, k.mid.data(), long(r.local) * C);
  stored(out, r.local * C);
}

// [SECTION] Backward: each unit's B (the gradient of its input) and W (of its weights). The
// unsplit backward runs each unit's B then its W; the split one runs every B, then later
// every W from what B kept in the micro-batch's buffers.

void GptStage::backward(int64_t step, MicroActs& micro, const float* dOut, float* dIn,
                        UnitHooks* hooks) {
  GptMicroActs& m = acts(micro);
  const int64_t localFloats = int64_t(m.r.local) * m_C;
  float* dA = m_dA.data();  // dLoss / d(residual stream), this rank's rows
  if (m_model.hasUnit(m_L + 1)) {
    inUnit(unitOf(m_L + 1), true, hooks, [&] {
      headInput(step, m, dA, m_dln.data());
      headWeight(step, m, m_dln.data(), m_grads.dy2.data());
    });
  } else {
    m_compute.copy(dA, dOut, localFloats);
  }
  eachBlock(m_model.endBlock() - m_model.firstBlock(), unitOf(m_model.firstBlock() + 1), false,
            hooks, [&](int j) {
              blockInput(step, j, m, dA, m_grads);
              blockWeight(step, j, m, m_grads, false);
            });
  if (!m_model.hasUnit(0)) {
    m_compute.copy(dIn, dA, localFloats);
    return;
  }
  // SP begins: the embeddings' whole gradient needs every row's.
  const float* dA0 = gatherRows(dA, m_dFull.data(), m.r, m_C);
  inUnit(unitOf(0), true, hooks, [&] {
    ComputeSpan s(m_compute, m_spans, SpanKind::Backward, step + 1, microSpanLabel(false, m.micro));
    embedBackward(m, dA0);
  });
}

void GptStage::backwardInput(int64_t step, MicroActs& micro, const float* dOut, float* dIn,
                             UnitHooks* hooks) {
  GptMicroActs& m = acts(micro);
  if (m.grads.empty() && m_model.endBlock() > m_model.firstBlock())
    throw std::logic_error("backwardInput: buffers laid out without splitBackward");
  const int64_t localFloats = int64_t(m.r.local) * m_C;
  float* dA = m_dA.data();
  if (m_model.hasUnit(m_L + 1))
    inUnit(unitOf(m_L + 1), false, hooks, [&] { headInput(step, m, dA, m.dlnf.data()); });
  else
    m_compute.copy(dA, dOut, localFloats);
  eachBlockBack(m_model.endBlock() - m_model.firstBlock(), unitOf(m_model.firstBlock() + 1), false,
                hooks, [&](int j) { blockInput(step, j, m, dA, m.grads[size_t(j)]); });
  if (m_model.hasUnit(0))
    keepRows(dA, m.dEmbed.data(), m.r, m_C);  // the embeddings' W reads every row's
  else
    m_compute.copy(dIn, dA, localFloats);
}

void GptStage::backwardWeight(int64_t step, MicroActs& micro, UnitHooks* hooks) {
  GptMicroActs& m = acts(micro);
  if (m_model.hasUnit(m_L + 1))
    inUnit(unitOf(m_L + 1), true, hooks, [&] { headWeight(step, m, m.dlnf.data(), m_dln.data()); });
  const bool rerun = m_model.recompute() == Recompute::Full;
  eachBlockBack(m_model.endBlock() - m_model.firstBlock(), unitOf(m_model.firstBlock() + 1), true,
                hooks, [&](int j) { blockWeight(step, j, m, m.grads[size_t(j)], rerun); });
  if (m_model.hasUnit(0))
    inUnit(unitOf(0), true, hooks, [&] {
      ComputeSpan s(m_compute, m_spans, SpanKind::Backward, step + 1,
                    microSpanLabel(false, m.micro));
      embedBackward(m, m.dEmbed.data());
    });
}

void GptStage::headInput(int64_t step, GptMicroActs& m, float* dA, float* dlnf) {
  ComputeSpan s(m_compute, m_spans, SpanKind::Backward, step + 1, microSpanLabel(false, m.micro));
  const MicroRows& r = m.r;
  // Every rank computes the gradient of every row (identical): SP keeps its own.
  const float* in = m_sp ? m.aFull.data() : m.a.back().data();
  m_model.head().backwardInput(m.dlogits.data(), dlnf, r.full);
  m_model.finalNorm().backwardInput(in, m.meanf.data(), m.rstdf.data(), dlnf,
                                    m_sp ? m_dFull.data() : dA, r.full, m_normDiscard.data());
  keepOwnRows(dA, m_dFull.data(), r, m_C);
}

void GptStage::headWeight(int64_t step, GptMicroActs& m, const float* dlnf, float* discard) {
  ComputeSpan s(m_compute, m_spans, SpanKind::Backward, step + 1, microSpanLabel(false, m.micro));
  const float* in = m_sp ? m.aFull.data() : m.a.back().data();
  m_model.head().backwardWeight(m.lnf.data(), m.dlogits.data(), m.r.full);
  m_model.finalNorm().backwardWeight(in, m.meanf.data(), m.rstdf.data(), dlnf, m.r.full, discard);
}

void GptStage::blockInput(int64_t step, int j, GptMicroActs& m, float* dA, GptBlockGrads& k) {
  Gpt::Block& b = m_model.block(m_model.firstBlock() + j);
  const MicroRows& r = m.r;
  const int64_t C = m_C, local = int64_t(r.local) * C;
  // Full recomputation: the block's forward again, from its kept input into the stage's one
  // set of buffers, all of it as Megatron-LM reruns a checkpointed layer: its collectives too,
  // and fc2 with its sum, whose output (already in a[j + 1]) goes to scratch (m_dtmp, free
  // until the LayerNorm's backward below).
  if (m_model.recompute() == Recompute::Full)
    blockForward(step, j, m, m_block, m_dtmp.data(), true);
  GptBlockActs& act = blockOf(m, j);
  auto span = [&] {
    return ComputeSpan(m_compute, m_spans, SpanKind::Backward, step + 1,
                       microSpanLabel(false, m.micro));
  };
  const SpanAt at{step, SpanKind::Backward, m.micro};
  const int64_t F = m_F, qkvWidth = 3 * int64_t(m_Cl);
  // The gradient of a branch's output, every row its first GEMM sees (SP: all-gathered, block by
  // block under --tp-overlap), kept at `kept` for that GEMM's W; `use` runs on the rows.
  auto gathered = [&](Tensor& kept, const OnRows& use) {
    const float* mine = m_sp ? dA : keepRows(dA, kept.data(), r, C);
    gatherThenCompute(at, mine, kept.data(), r, C, use);
  };
  // The partial gradient of a LayerNorm's output [full, C] that `make` writes, summed: this
  // rank's rows of it, kept at `kept` for the LayerNorm's W.
  auto summed = [&](Tensor& kept, const MakeRows& make) {
    const float* dln =
        computeThenSum(at, m_dln.data(), m_sp ? kept.data() : m_dln.data(), r, C, make);
    if (dln != kept.data()) m_compute.copy(kept.data(), dln, local);
  };
  // out = mid + fc2(gelu(fc1(ln2(mid)))): dA passes through, the branch adds to it.
  float* dh = k.dh.data();
  gathered(k.dy2, [&](const float* dY, int64_t row0, int rows) {
    b.fc2->backwardInput(dY + row0 * C, dh + row0 * F, rows);
    m_compute.geluBackward(dh + row0 * F, act.h.data() + row0 * F, dh + row0 * F, long(rows) * F);
  });
  summed(k.dln2, [&](int64_t row0, int rows, float* dst) {
    b.fc1->backwardInput(dh + row0 * F, dst, rows);  // partial
  });
  {
    auto s = span();
    b.ln2.backwardInput(act.mid.data(), act.mean2.data(), act.rstd2.data(), k.dln2.data(),
                        m_dtmp.data(), r.local, m_normDiscard.data());
    m_compute.residualAdd(dA, m_dtmp.data(), long(local));  // dA = dmid
  }
  // mid = a + proj(attention(qkv(ln1(a)))): the same again.
  float* dy = m_dln.data();  // attention's output gradient [full, C/T]
  gathered(k.dy1, [&](const float* dY, int64_t row0, int rows) {
    b.proj.backwardInput(dY + row0 * C, dy + row0 * m_Cl, rows);
  });
  attendBackward(step, m, act, dy, k.dqkv.data());  // in spans of its own
  summed(k.dln1, [&](int64_t row0, int rows, float* dst) {
    b.qkv.backwardInput(k.dqkv.data() + row0 * qkvWidth, dst, rows);  // partial
  });
  auto s = span();
  b.ln1.backwardInput(m.a[size_t(j)].data(), act.mean1.data(), act.rstd1.data(), k.dln1.data(),
                      m_dtmp.data(), r.local, m_normDiscard.data());
  m_compute.residualAdd(dA, m_dtmp.data(), long(local));
}

void GptStage::blockWeight(int64_t step, int j, GptMicroActs& m, const GptBlockGrads& k,
                           bool rerun) {
  Gpt::Block& b = m_model.block(m_model.firstBlock() + j);
  const MicroRows& r = m.r;
  if (rerun) blockForward(step, j, m, m_block, m_dtmp.data(), true);
  GptBlockActs& act = blockOf(m, j);
  ComputeSpan s(m_compute, m_spans, SpanKind::Backward, step + 1, microSpanLabel(false, m.micro));
  b.fc2->backwardWeight(act.g.data(), k.dy2.data(), r.full);
  b.fc1->backwardWeight(act.ln2.data(), k.dh.data(), r.full);
  // The LayerNorms' dx, which B made, go to scratch free until the next B.
  b.ln2.backwardWeight(act.mid.data(), act.mean2.data(), act.rstd2.data(), k.dln2.data(), r.local,
                       m_dln.data());
  b.proj.backwardWeight(act.y.data(), k.dy1.data(), r.full);
  b.qkv.backwardWeight(act.ln1.data(), k.dqkv.data(), r.full);
  // The key bias stays 0 (gpt.h): the rank's k columns are m_Cl .. 2 m_Cl of its qkv.
  m_compute.zero(m_model.params().grad(b.qkv.biasRef()) + m_Cl, m_Cl);
  b.ln1.backwardWeight(m.a[size_t(j)].data(), act.mean1.data(), act.rstd1.data(), k.dln1.data(),
                       r.local, m_dln.data());
}

// [SECTION] The parts context parallelism changes: positions and attention

void GptStage::embed(GptMicroActs& m, float* out) {
  ParamSet& ps = m_model.params();
  const int* tokens = reinterpret_cast<const int*>(m.tokens.data());
  const float *wte = ps.param(m_model.wteRef()), *wpe = ps.param(m_model.wpeRef());
  if (!m_ring) return m_compute.embedding(out, tokens, wte, wpe, m.r.rows, m_S, m_C);
  int64_t row = 0;  // cp: each piece of each window, with its own positions' wpe rows
  for (int b = 0; b < m.r.rows; ++b)
    for (const auto& [p0, len] : m_ring->chunks().pieces) {
      m_compute.embedding(out + row * m_C, tokens + row, wte, wpe + int64_t(p0) * m_C, 1, len, m_C);
      row += len;
    }
}

void GptStage::embedBackward(GptMicroActs& m, const float* dA) {
  ParamSet& ps = m_model.params();
  const int* tokens = reinterpret_cast<const int*>(m.tokens.data());
  float *dwte = ps.grad(m_model.wteRef()), *dwpe = ps.grad(m_model.wpeRef());
  if (!m_ring) return m_compute.embeddingBackward(dwte, dwpe, dA, tokens, m.r.rows, m_S, m_C);
  int64_t row = 0;
  for (int b = 0; b < m.r.rows; ++b)
    for (const auto& [p0, len] : m_ring->chunks().pieces) {
      m_compute.embeddingBackward(dwte, dwpe + int64_t(p0) * m_C, dA + row * m_C, tokens + row, 1,
                                  len, m_C);
      row += len;
    }
}

void GptStage::attend(int64_t step, GptMicroActs& m, GptBlockActs& k, bool again) {
  const int64_t out = int64_t(m.r.full) * m_Cl;
  if (m_ring) {  // the output rounded where kept; Ulysses's kept values too, the ring's lse not
    m_ring->forward(step, m.micro, k.y.data(), k.lse.data(), k.qkv.data(), m.r.rows, again);
    if (m_ring->keptStored()) stored(k.lse.data(), m_ring->keptFloats(m.r.rows));
    return stored(k.y.data(), out);
  }
  ComputeSpan s(m_compute, m_spans, again ? SpanKind::Backward : SpanKind::Forward, step + 1,
                microSpanLabel(!again, m.micro));
  m_compute.attention(k.y.data(), attOf(k), k.qkv.data(), m.r.rows, m_S, m_Cl, m_NHl);
  stored(k.y.data(), out);
  if (m_model.recompute() != Recompute::Selective)
    stored(attOf(k), int64_t(m.r.rows) * m_NHl * m_S * m_S);
}

void GptStage::attendBackward(int64_t step, GptMicroActs& m, GptBlockActs& k, const float* dy,
                              float* dqkv) {
  if (m_ring)
    return m_ring->backward(step, m.micro, dqkv, dy, k.y.data(), k.lse.data(), k.qkv.data(),
                            m.r.rows);
  ComputeSpan s(m_compute, m_spans, SpanKind::Backward, step + 1, microSpanLabel(false, m.micro));
  if (m_model.recompute() == Recompute::Selective) {  // the probabilities, from the kept qkv
    m_compute.attentionProbs(attOf(k), k.qkv.data(), m.r.rows, m_S, m_Cl, m_NHl);
    stored(attOf(k), int64_t(m.r.rows) * m_NHl * m_S * m_S);  // as the serial model rounds them
  }
  m_compute.attentionBackward(dqkv, m_attScratch.data(), dy, k.qkv.data(), attOf(k), m.r.rows, m_S,
                              m_Cl, m_NHl);
}

void GptStage::finishBackward(GradSync& sync) {
  // SP: LN1's and LN2's gradients of every block cover the rank's rows only.
  std::vector<int64_t> norms;
  for (int l = m_model.firstBlock(); l < m_model.endBlock(); ++l)
    for (const LayerNorm* ln : {&m_model.block(l).ln1, &m_model.block(l).ln2})
      norms.push_back(m_model.params().ref(ln->gammaRef()).offset);
  sumNormGradients(sync, norms, m_C);
}

}  // namespace paralab
