// Tensor parallelism (`--tp T`; Shoeybi et al. 2019, Megatron-LM) and sequence parallelism
// (`--sp`; Korthikanti et al. 2022) on one MLP stage's micro-batch. Try:
//   paralab-run --tp 2 --json   |   paralab-run --tp 2 --sp --json
// See tests/engine/tst_model_parallel.cpp (equal to serial; traffic against the formulas).
//
// Each block is LayerNorm -> fc1 (H -> 4H) -> GELU -> fc2 (4H -> H) + residual: fc1 is the
// column-parallel layer of Megatron's pair (H -> 4H/T), fc2 the row-parallel one, GELU runs on
// the rank's own columns (column_row.h has the pair's exchanges, TP and SP).
//   TP, per block and micro-batch of b rows: forward an all-reduce of fc2's partial outputs,
//   backward one of fc1's partial input gradients, b x H floats each. fc2's bias is added once,
//   after the sum. Replicated: the input projection, the classifier and every LayerNorm (the
//   FFN holds 8H^2 of a block's 8H^2 + 7H weights).
//   SP: the samples play the tokens' part: rank t keeps rows t of T of each micro-batch, padded
//   to a multiple of T with zero rows (zero gradients). At the ends of the split region, per
//   micro-batch: the first stage's input projection runs on the rank's own rows (its backward
//   all-gathers the gradient rows, b x H, so every rank computes the whole, identical weight
//   gradient), the last stage all-gathers the residual for the classifier (b x H; its backward
//   needs no exchange: every rank has the whole, identical gradient and keeps its rows). The
//   LayerNorm weights' gradients are summed over the group once per step, 2H floats per block
//   (with ZeRO on dp the part of them the rank owns), as Megatron does.
// With --device cuda every buffer here is device memory of the rank's Compute and every
// kernel goes on its stream.
#include "parallel/tensor/tensor_parallel.h"

#include <algorithm>
#include <stdexcept>

#include "comm/communicator.h"
#include "device/compute.h"
#include "parallel/data/grad_sync.h"
#include "parallel/pipeline/pipeline.h"

namespace paralab {

TensorParallelStage::TensorParallelStage(Mlp& shard, Communicator& tp, bool sp, Compute& compute,
                                         MemoryTracker* memory, SpanRecorder* spans)
    : ColumnRowStage(tp, sp, compute, memory, spans),
      m_model(shard),
      m_H(shard.shape().hidden),
      m_F(4 * shard.shape().hidden / tp.size()) {}

MicroRows TensorParallelStage::rowsOf(int rows) const {
  return splitRows({rows, 1, rows, rows, 0});
}

bool TensorParallelStage::reportsLoss() const {
  return m_model.hasUnit(m_model.shape().layers + 1) && m_tp.rank() == 0;
}

std::unique_ptr<MicroActs> TensorParallelStage::layout(
    int micro, int rows, const std::function<Tensor(Shape)>& make) const {
  auto m = std::make_unique<MlpMicroActs>();
  begin(*m, micro, rows);
  const int64_t full = m->r.full, local = m->r.local, H = m_H, F = m_F;
  auto act = [&](Shape s) { return m->add(std::move(s), make); };
  // fp32 under mixed precision too (stage.h): statistics, logits, labels, kept gradients.
  auto wide = [&](Shape s) {
    return m->add(std::move(s), [&](Shape t) { return fp32(make, std::move(t)); });
  };
  const MlpShape& shape = m_model.shape();
  if (m_model.hasUnit(0)) m->x = act({rows, shape.input});
  const int blocks = m_model.endBlock() - m_model.firstBlock();
  for (int j = 0; j <= blocks; ++j) m->a.push_back(act({local, H}));
  for (int j = 0; j < blocks; ++j) {
    m->ln.push_back(act({m_sp ? full : rows, H}));
    m->mean.push_back(wide({local}));
    m->rstd.push_back(wide({local}));
    m->h.push_back(act({full, F}));
    m->g.push_back(act({full, F}));
  }
  if (m_model.hasUnit(shape.layers + 1)) {
    if (m_sp) m->aFull = act({full, H});
    m->logits = wide({rows, shape.classes});
    m->dlogits = wide({rows, shape.classes});
    // The loss kernel reads labels on the device; the CPU reads the caller's host labels.
    if (m_compute.onGpu()) m->labels = wide({rows});
  }
  if (splitsBackward()) {
    for (int j = 0; j < blocks; ++j)
      m->grads.push_back({wide({full, H}), wide({full, F}), wide({local, H})});
    if (m_model.hasUnit(0)) m->dProj = wide({full, H});
  }
  return m;
}

void TensorParallelStage::ensureScratch(const MicroRows& r) {
  if (r.full <= m_capacity) return;
  const int64_t full = r.full, local = m_sp ? full / m_T : full;
  auto work = [&](Shape s) {
    return m_compute.tensor(std::move(s), MemCategory::Workspace, m_memory);
  };
  for (Tensor* t : {&m_dA, &m_dtmp, &m_dFull, &m_dln, &m_y, &m_normDiscard, &m_grads.dy2,
                    &m_grads.dh, &m_grads.dln})
    *t = Tensor();  // free first: an honest peak
  m_dA = work({local, m_H});
  m_dtmp = work({local, m_H});
  m_dln = work({full, m_H});
  m_normDiscard = work({2 * int64_t(m_H)});
  m_grads = {work({full, m_H}), work({full, m_F}), work({local, m_H})};
  if (m_sp) {
    m_dFull = work({full, m_H});
    m_y = work({full, m_H});
  }
  m_capacity = r.full;
}

// [SECTION] Forward

double TensorParallelStage::forward(int64_t step, MicroActs& micro, const float* x,
                                    const int* labels, double normalizer, UnitHooks* hooks) {
  MlpMicroActs& m = acts(micro);
  ensureScratch(m.r);
  const MlpShape& shape = m_model.shape();
  const MicroRows& r = m.r;
  if (m_model.hasUnit(0)) {
    if (hooks) hooks->beforeForward(unitOf(0));
    {
      ComputeSpan s(m_compute, m_spans, SpanKind::Forward, step + 1, microSpanLabel(true, m.micro));
      m_compute.upload(m.x.data(), x, int64_t(r.rows) * shape.input);
      stored(m.x.data(), int64_t(r.rows) * shape.input);  // 16-bit where kept (stage.h)
      // SP: only this rank's rows of the residual stream (rows past the micro-batch stay zero).
      const int real = std::clamp(r.rows - r.first, 0, r.local);
      if (real > 0)
        m_model.inProj().forward(m.x.data() + int64_t(r.first) * shape.input, m.a[0].data(), real);
      m_compute.zero(m.a[0].data() + int64_t(real) * m_H, int64_t(r.local - real) * m_H);
      stored(m.a[0].data(), int64_t(r.local) * m_H);
    }
    if (hooks) hooks->afterForward(unitOf(0));
  }
  eachBlock(m_model.endBlock() - m_model.firstBlock(), unitOf(m_model.firstBlock() + 1), true,
            hooks, [&](int j) { blockForward(step, j, m); });
  if (!m_model.hasUnit(shape.layers + 1)) return 0;
  // SP ends: every rank gets every row for the replicated classifier.
  const float* in = gatherRows(m.a.back().data(), m.aFull.data(), r, m_H);
  if (hooks) hooks->beforeForward(unitOf(shape.layers + 1));
  double loss = 0;
  {
    ComputeSpan s(m_compute, m_spans, SpanKind::Forward, step + 1, microSpanLabel(true, m.micro));
    const int* here = labels;
    if (m_compute.onGpu()) {
      m_compute.uploadInts(reinterpret_cast<int*>(m.labels.data()), labels, r.rows);
      here = reinterpret_cast<const int*>(m.labels.data());
    }
    m_model.classifier().forward(in, m.logits.data(), r.rows);
    loss = m_compute.softmaxXent(m.dlogits.data(), m.logits.data(), here, r.rows, shape.classes,
                                 normalizer);
  }
  if (hooks) hooks->afterForward(unitOf(shape.layers + 1));
  return loss;
}

void TensorParallelStage::blockForward(int64_t step, int j, MlpMicroActs& m) {
  Mlp::Block& b = m_model.block(m_model.firstBlock() + j);
  const MicroRows& r = m.r;
  const int64_t H = m_H;
  float* out = m.a[size_t(j) + 1].data();
  {
    ComputeSpan s(m_compute, m_spans, SpanKind::Forward, step + 1, microSpanLabel(true, m.micro));
    // SP: the rank's rows of the LayerNorm output land in its block of the gathered buffer.
    b.ln.forward(m.a[size_t(j)].data(), m.ln[size_t(j)].data() + r.first * H,
                 m.mean[size_t(j)].data(), m.rstd[size_t(j)].data(), r.local);
    stored(m.ln[size_t(j)].data() + r.first * H, r.local * H);  // before SP's gather
  }
  const SpanAt at{step, SpanKind::Forward, m.micro};
  float *h = m.h[size_t(j)].data(), *g = m.g[size_t(j)].data();
  // SP: all-gather (in place): fc1 needs every row.
  gatherThenCompute(at, m.ln[size_t(j)].data() + r.first * H, m.ln[size_t(j)].data(), r, H,
                    [&](const float* ln, int64_t row0, int rows) {
                      b.fc1.forward(ln + row0 * H, h + row0 * m_F, rows);  // column-parallel
                      stored(h + row0 * m_F, int64_t(rows) * m_F);
                      m_compute.gelu(g + row0 * m_F, h + row0 * m_F, long(rows) * m_F);
                      stored(g + row0 * m_F, int64_t(rows) * m_F);
                    });
  // Row-parallel: this rank's partial sum of fc2's output, bias not yet added; then the sum
  // (SP: only this rank's rows of it).
  computeThenSum(at, m_y.data(), out, r, H, [&](int64_t row0, int rows, float* dst) {
    b.fc2.forward(g + row0 * m_F, dst, rows, false);
  });
  ComputeSpan s(m_compute, m_spans, SpanKind::Forward, step + 1, microSpanLabel(true, m.micro));
  m_compute.biasAdd(out, m_model.params().param(b.fc2.biasRef()), r.local, m_H);
  m_compute.residualAdd(out, m.a[size_t(j)].data(), long(r.local * H));
  stored(out, r.local * H);  // the fp32 sum over tp, rounded once where it is kept
}

// [SECTION] Backward: each unit's B (the gradient of its input) and W (of its weights). The
// unsplit backward runs each unit's B then its W; the split one runs every B, then later
// every W from what B kept in the micro-batch's buffers.

void TensorParallelStage::backward(int64_t step, MicroActs& micro, const float* dOut, float* dIn,
                                   UnitHooks* hooks) {
  MlpMicroActs& m = acts(micro);
  const int last = m_model.shape().layers + 1;
  const int64_t localFloats = int64_t(m.r.local) * m_H;
  float* dA = m_dA.data();  // dLoss / d(residual stream), this rank's rows
  if (m_model.hasUnit(last)) {
    inUnit(unitOf(last), true, hooks, [&] {
      classifierInput(step, m, dA);
      classifierWeight(step, m);
    });
  } else {
    m_compute.copy(dA, dOut, localFloats);
  }
  eachBlock(m_model.endBlock() - m_model.firstBlock(), unitOf(m_model.firstBlock() + 1), false,
            hooks, [&](int j) {
              blockInput(step, j, m, dA, m_grads);
              blockWeight(step, j, m, m_grads);
            });
  if (!m_model.hasUnit(0)) {
    m_compute.copy(dIn, dA, localFloats);
    return;
  }
  // SP begins: the input projection's whole gradient needs every row's.
  const float* dA0 = gatherRows(dA, m_dFull.data(), m.r, m_H);
  inUnit(unitOf(0), true, hooks, [&] { inProjWeight(step, m, dA0); });
}

void TensorParallelStage::backwardInput(int64_t step, MicroActs& micro, const float* dOut,
                                        float* dIn, UnitHooks* hooks) {
  MlpMicroActs& m = acts(micro);
  if (m.grads.empty() && m_model.endBlock() > m_model.firstBlock())
    throw std::logic_error("backwardInput: buffers laid out without splitBackward");
  const int last = m_model.shape().layers + 1;
  const int64_t localFloats = int64_t(m.r.local) * m_H;
  float* dA = m_dA.data();
  if (m_model.hasUnit(last))
    inUnit(unitOf(last), false, hooks, [&] { classifierInput(step, m, dA); });
  else
    m_compute.copy(dA, dOut, localFloats);
  eachBlockBack(m_model.endBlock() - m_model.firstBlock(), unitOf(m_model.firstBlock() + 1), false,
                hooks, [&](int j) { blockInput(step, j, m, dA, m.grads[size_t(j)]); });
  if (m_model.hasUnit(0))
    keepRows(dA, m.dProj.data(), m.r, m_H);  // the input projection's W reads every row's
  else
    m_compute.copy(dIn, dA, localFloats);
}

void TensorParallelStage::backwardWeight(int64_t step, MicroActs& micro, UnitHooks* hooks) {
  MlpMicroActs& m = acts(micro);
  const int last = m_model.shape().layers + 1;
  if (m_model.hasUnit(last)) inUnit(unitOf(last), true, hooks, [&] { classifierWeight(step, m); });
  eachBlockBack(m_model.endBlock() - m_model.firstBlock(), unitOf(m_model.firstBlock() + 1), true,
                hooks, [&](int j) { blockWeight(step, j, m, m.grads[size_t(j)]); });
  if (m_model.hasUnit(0))
    inUnit(unitOf(0), true, hooks, [&] { inProjWeight(step, m, m.dProj.data()); });
}

void TensorParallelStage::classifierInput(int64_t step, MlpMicroActs& m, float* dA) {
  ComputeSpan s(m_compute, m_spans, SpanKind::Backward, step + 1, microSpanLabel(false, m.micro));
  const MicroRows& r = m.r;
  if (m_sp) {
    // Every rank computes the whole gradient of the gathered rows (identical): keep its own.
    m_compute.zero(m_dFull.data(), int64_t(r.full) * m_H);  // padding rows: zero
    m_model.classifier().backwardInput(m.dlogits.data(), m_dFull.data(), r.rows);
    keepOwnRows(dA, m_dFull.data(), r, m_H);
  } else {
    m_model.classifier().backwardInput(m.dlogits.data(), dA, r.rows);
  }
}

void TensorParallelStage::classifierWeight(int64_t step, MlpMicroActs& m) {
  ComputeSpan s(m_compute, m_spans, SpanKind::Backward, step + 1, microSpanLabel(false, m.micro));
  m_model.classifier().backwardWeight(m_sp ? m.aFull.data() : m.a.back().data(), m.dlogits.data(),
                                      m.r.rows);
}

void TensorParallelStage::inProjWeight(int64_t step, MlpMicroActs& m, const float* dY) {
  ComputeSpan s(m_compute, m_spans, SpanKind::Backward, step + 1, microSpanLabel(false, m.micro));
  m_model.inProj().backwardWeight(m.x.data(), dY, m.r.rows);
}

void TensorParallelStage::blockInput(int64_t step, int j, MlpMicroActs& m, float* dA,
                                     MlpBlockGrads& k) {
  Mlp::Block& b = m_model.block(m_model.firstBlock() + j);
  const MicroRows& r = m.r;
  const int64_t H = m_H, local = int64_t(r.local) * H;
  const SpanAt at{step, SpanKind::Backward, m.micro};
  const float* h = m.h[size_t(j)].data();
  float* dh = k.dh.data();
  // The gradient of the block output, every row fc2 saw (SP: all-gathered, block by block
  // under --tp-overlap), kept at k.dy2 for fc2's W.
  // a[j+1] = a[j] + fc2(gelu(fc1(ln(a[j])))): the residual passes dA through unchanged.
  const float* mine = m_sp ? dA : keepRows(dA, k.dy2.data(), r, H);
  gatherThenCompute(at, mine, k.dy2.data(), r, H, [&](const float* dY, int64_t row0, int rows) {
    b.fc2.backwardInput(dY + row0 * H, dh + row0 * m_F, rows);
    m_compute.geluBackward(dh + row0 * m_F, h + row0 * m_F, dh + row0 * m_F, long(rows) * m_F);
  });
  // Partial: this rank's columns' share of the LayerNorm output's gradient; summed, this
  // rank's rows, kept at k.dln for the LayerNorm's W.
  const float* dln = computeThenSum(at, m_dln.data(), m_sp ? k.dln.data() : m_dln.data(), r, H,
                                    [&](int64_t row0, int rows, float* dst) {
                                      b.fc1.backwardInput(dh + row0 * m_F, dst, rows);
                                    });
  ComputeSpan s(m_compute, m_spans, SpanKind::Backward, step + 1, microSpanLabel(false, m.micro));
  if (dln != k.dln.data()) m_compute.copy(k.dln.data(), dln, local);
  b.ln.backwardInput(m.a[size_t(j)].data(), m.mean[size_t(j)].data(), m.rstd[size_t(j)].data(),
                     k.dln.data(), m_dtmp.data(), r.local, m_normDiscard.data());
  m_compute.residualAdd(dA, m_dtmp.data(), long(local));
}

void TensorParallelStage::blockWeight(int64_t step, int j, MlpMicroActs& m,
                                      const MlpBlockGrads& k) {
  Mlp::Block& b = m_model.block(m_model.firstBlock() + j);
  const MicroRows& r = m.r;
  ComputeSpan s(m_compute, m_spans, SpanKind::Backward, step + 1, microSpanLabel(false, m.micro));
  b.fc2.backwardWeight(m.g[size_t(j)].data(), k.dy2.data(), r.full);
  b.fc1.backwardWeight(m.ln[size_t(j)].data(), k.dh.data(), r.full);
  // The LayerNorm's dx, which B made, goes to scratch free until the next B.
  b.ln.backwardWeight(m.a[size_t(j)].data(), m.mean[size_t(j)].data(), m.rstd[size_t(j)].data(),
                      k.dln.data(), r.local, m_dln.data());
}

void TensorParallelStage::finishBackward(GradSync& sync) {
  // SP: each block's LayerNorm gradients cover the rank's rows only. Summing over tp after dp
  // gives the same sum.
  std::vector<int64_t> norms;
  for (int l = m_model.firstBlock(); l < m_model.endBlock(); ++l)
    norms.push_back(m_model.params().ref(m_model.block(l).ln.gammaRef()).offset);
  sumNormGradients(sync, norms, m_H);
}

}  // namespace paralab
