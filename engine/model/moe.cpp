// The mixture-of-experts MLP's forward and backward (see moe.h): in_proj, then per block
// x + MoE(LN(x)) through the block's MoeFfn (moe_ffn.cpp routes and runs the experts), then the
// classifier.
// See tests/engine/tst_moe.cpp (finite differences, serial = expert parallel) and
// tst_cuda_moe.cpp (the GPU against the CPU).
#include "model/moe.h"

#include <stdexcept>

#include "device/compute.h"
#include "rng.h"

namespace paralab {

int64_t MoeShape::parameterCount() const {
  const int64_t H = hidden;
  const int64_t block = 2 * H /*LN*/ + ffn().parameterCount();
  return int64_t(input) * H + H + layers * block + H * classes + classes;
}

static std::string blockName(int l) { return "block" + std::to_string(l); }

Moe::Moe(const MoeShape& shape, uint64_t seed, MemoryTracker* tracker, ExpertPlacement placement,
         const Compute* compute)
    : m_shape(shape),
      m_tracker(tracker),
      m_compute(compute ? compute : &Compute::host()),
      m_moe{shape.ffn(), placement, shape.layers},
      m_in((m_ps.beginUnit("in_proj"), Linear(m_ps, "in_proj", shape.input, shape.hidden))),
      m_cls([&]() -> Linear {
        for (int l = 0; l < shape.layers; ++l) {  // units in forward order, as in Mlp
          const std::string n = blockName(l);
          m_ps.beginUnit(n);
          LayerNorm ln(m_ps, n + ".ln", shape.hidden);
          m_blocks.push_back({ln, MoeFfn(m_ps, n, m_moe, l)});
        }
        m_ps.beginUnit("classifier");
        return Linear(m_ps, "classifier", shape.hidden, shape.classes);
      }()) {
  resolveShard({0, 1, 0, -1, placement.shard, placement.shards}, numUnits());
  m_ps.allocate(tracker, m_compute);
  m_moe.findRanges(m_ps);
  if (m_compute->onGpu()) {  // the same draws as on the CPU, on a host twin, then uploaded
    Moe twin(shape, seed, nullptr, placement);
    m_compute->upload(m_ps.params().data(), twin.m_ps.params().data(), m_ps.numel());
    return;
  }
  Rng rng(seed);
  m_in.init(rng);
  for (Block& b : m_blocks) {
    b.ln.init();
    b.ffn.init(rng, seed);
  }
  m_cls.init(rng);
}

bool Moe::onGpu() const { return m_compute->onGpu(); }

const int* Moe::labelsHere(const int* labels, int batch) {
  if (!onGpu()) return labels;
  int* here = reinterpret_cast<int*>(m_acts.labels.data());
  m_compute->uploadInts(here, labels, batch);
  return here;
}

void Moe::ensureCapacity(int batch) {
  // Built once even for an empty batch: a rank with no rows of an evaluation chunk still runs
  // every block (its collectives) over zero rows.
  if (batch <= m_acts.capacity && !m_acts.a.empty()) return;
  const int64_t B = batch, H = m_shape.hidden;
  m_acts = Acts{};
  m_acts.capacity = batch;
  auto act = [&](Shape s) {
    return m_compute->tensor(std::move(s), MemCategory::Activations, m_tracker);
  };
  auto work = [&](Shape s) {
    return m_compute->tensor(std::move(s), MemCategory::Workspace, m_tracker);
  };
  m_acts.x = act({B, m_shape.input});
  if (onGpu()) m_acts.labels = act({B});
  for (int l = 0; l <= m_shape.layers; ++l) m_acts.a.push_back(act({B, H}));
  // fp32 under mixed precision too (model.h): LayerNorm's statistics, the logits the loss reads.
  auto wide = [&](Shape s) {
    Fp32Allocations fp32(m_tracker);
    return act(std::move(s));
  };
  for (int l = 0; l < m_shape.layers; ++l) {
    m_acts.ln.push_back(act({B, H}));
    m_acts.mean.push_back(wide({B}));
    m_acts.rstd.push_back(wide({B}));
  }
  m_acts.logits = wide({B, m_shape.classes});
  m_acts.dlogits = work({B, m_shape.classes});
  m_acts.da = work({B, H});
  m_acts.dln = work({B, H});
}

// [SECTION] Forward
void Moe::forwardTo(const float* x, int batch, bool train, UnitHooks* hooks) {
  ensureCapacity(batch);
  const int last = numUnits() - 1, L = m_shape.layers;
  const int64_t H = m_shape.hidden;
  if (train) m_moe.beginStep();
  m_compute->upload(m_acts.x.data(), x, int64_t(batch) * m_shape.input);
  stored(m_acts.x.data(), int64_t(batch) * m_shape.input);  // 16-bit where kept (model.h)
  if (hooks) hooks->beforeForward(0);
  if (batch > 0) m_in.forward(m_acts.x.data(), m_acts.a[0].data(), batch);
  stored(m_acts.a[0].data(), int64_t(batch) * H);
  if (hooks) hooks->afterForward(0);
  for (int l = 0; l < L; ++l) {
    if (hooks) hooks->beforeForward(l + 1);
    Block& b = m_blocks[size_t(l)];
    const float* in = m_acts.a[size_t(l)].data();
    float* out = m_acts.a[size_t(l) + 1].data();
    float* ln = m_acts.ln[size_t(l)].data();
    if (batch > 0)
      b.ln.forward(in, ln, m_acts.mean[size_t(l)].data(), m_acts.rstd[size_t(l)].data(), batch);
    stored(ln, int64_t(batch) * H);
    m_compute->copy(out, in, int64_t(batch) * H);  // x + sum_j gate_j expert_j(LN(x))
    b.ffn.storeIn(m_stored);
    b.ffn.forward(ln, out, batch, train, m_tracker);
    stored(out, int64_t(batch) * H);
    if (hooks) hooks->afterForward(l + 1);
  }
  if (hooks) hooks->beforeForward(last);
  if (batch > 0) m_cls.forward(m_acts.a[size_t(L)].data(), m_acts.logits.data(), batch);
  if (hooks) hooks->afterForward(last);
}

double Moe::forwardLoss(const float* x, const int* labels, int batch, double normalizer,
                        UnitHooks* hooks) {
  forwardTo(x, batch, true, hooks);
  m_batch = batch;
  return m_compute->softmaxXent(m_acts.dlogits.data(), m_acts.logits.data(),
                                labelsHere(labels, batch), batch, m_shape.classes, normalizer);
}

Evaluation Moe::evaluate(const float* x, const int* labels, int batch, UnitHooks* hooks) {
  forwardTo(x, batch, false, hooks);
  if (batch == 0) return {};
  int correct = 0;
  const double loss =
      m_compute->softmaxXent(m_acts.dlogits.data(), m_acts.logits.data(), labelsHere(labels, batch),
                             batch, m_shape.classes, 1.0, &correct);
  return {correct, batch, loss};
}

// [SECTION] Backward. `da` holds dLoss/d(block output) on entry and dLoss/d(block input) on exit.
void Moe::backward(UnitHooks* hooks) {
  const int B = m_batch, L = m_shape.layers;
  const int64_t H = m_shape.hidden;
  float* da = m_acts.da.data();
  float* dln = m_acts.dln.data();
  if (hooks) hooks->beforeBackward(L + 1);
  m_cls.backward(m_acts.a[size_t(L)].data(), m_acts.dlogits.data(), da, B);
  if (hooks) hooks->afterBackward(L + 1);
  for (int l = L - 1; l >= 0; --l) {
    if (hooks) hooks->beforeBackward(l + 1);
    Block& b = m_blocks[size_t(l)];
    const float* ln = m_acts.ln[size_t(l)].data();
    b.ffn.backward(ln, da, dln, m_tracker);
    b.ln.backward(m_acts.a[size_t(l)].data(), m_acts.mean[size_t(l)].data(),
                  m_acts.rstd[size_t(l)].data(), dln, dln, B);
    m_compute->residualAdd(da, dln, long(B) * H);  // the residual passes da through
    if (hooks) hooks->afterBackward(l + 1);
  }
  if (hooks) hooks->beforeBackward(0);
  m_in.backward(m_acts.x.data(), da, nullptr, B);
  if (hooks) hooks->afterBackward(0);
}

}  // namespace paralab
