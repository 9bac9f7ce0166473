// The residual MLP's forward and backward (see mlp.h). See tests/engine/tst_model.cpp.
#include "model/mlp.h"

#include <algorithm>
#include <cstring>

#include "cpu/layers.h"

namespace paralab {

int64_t MlpShape::parameterCount() const {
  const int64_t H = hidden;
  const int64_t block = 2 * H /*LN*/ + H * 4 * H + 4 * H /*fc1*/ + 4 * H * H + H /*fc2*/;
  return int64_t(input) * H + H + layers * block + H * classes + classes;
}

static std::string blockName(int l) { return "block" + std::to_string(l); }

Mlp::Mlp(const MlpShape& shape, uint64_t seed, MemoryTracker* tracker)
    : m_shape(shape),
      m_tracker(tracker),
      m_in((m_ps.beginUnit("in_proj"), Linear(m_ps, "in_proj", shape.input, shape.hidden))),
      m_cls([&]() -> Linear {
        // Units are declared in the order of the forward pass, so the flat buffer follows it
        // (what gradient buckets and pipeline stages rely on).
        for (int l = 0; l < shape.layers; ++l) {
          m_ps.beginUnit(blockName(l));
          m_blocks.push_back({LayerNorm(m_ps, blockName(l) + ".ln", shape.hidden),
                              Linear(m_ps, blockName(l) + ".fc1", shape.hidden, 4 * shape.hidden),
                              Linear(m_ps, blockName(l) + ".fc2", 4 * shape.hidden, shape.hidden)});
        }
        m_ps.beginUnit("classifier");
        return Linear(m_ps, "classifier", shape.hidden, shape.classes);
      }()) {
  m_ps.allocate(tracker);
  Rng rng(seed);
  m_in.init(rng);
  for (Block& b : m_blocks) {
    b.ln.init();
    b.fc1.init(rng);
    b.fc2.init(rng);
  }
  m_cls.init(rng);
}

void Mlp::ensureCapacity(int batch) {
  if (batch <= m_acts.capacity) return;
  const int64_t B = batch, H = m_shape.hidden, L = m_shape.layers;
  Acts a;
  a.capacity = batch;
  auto act = [&](Shape s) { return Tensor(std::move(s), MemCategory::Activations, m_tracker); };
  auto work = [&](Shape s) { return Tensor(std::move(s), MemCategory::Workspace, m_tracker); };
  m_acts = Acts{};  // free the old buffers before allocating: the peak stays honest
  a.x = act({B, m_shape.input});
  for (int64_t l = 0; l <= L; ++l) a.a.push_back(act({B, H}));
  for (int64_t l = 0; l < L; ++l) {
    a.ln.push_back(act({B, H}));
    a.mean.push_back(act({B}));
    a.rstd.push_back(act({B}));
    a.h.push_back(act({B, 4 * H}));
    a.g.push_back(act({B, 4 * H}));
  }
  a.logits = act({B, m_shape.classes});
  a.dlogits = work({B, m_shape.classes});
  a.da = work({B, H});
  a.dtmp = work({B, H});
  a.dh = work({B, 4 * H});
  m_acts = std::move(a);
}

void Mlp::forwardTo(const float* x, int batch, UnitHooks* hooks) {
  ensureCapacity(batch);
  Acts& A = m_acts;
  const int H = m_shape.hidden;
  const int last = numUnits() - 1;
  std::memcpy(A.x.data(), x, sizeof(float) * size_t(batch) * m_shape.input);
  if (hooks) hooks->beforeForward(0);
  m_in.forward(A.x.data(), A.a[0].data(), batch);
  if (hooks) hooks->afterForward(0);
  for (size_t l = 0; l < m_blocks.size(); ++l) {
    if (hooks) hooks->beforeForward(int(l) + 1);
    Block& b = m_blocks[l];
    b.ln.forward(A.a[l].data(), A.ln[l].data(), A.mean[l].data(), A.rstd[l].data(), batch);
    b.fc1.forward(A.ln[l].data(), A.h[l].data(), batch);
    kernels::gelu_forward(A.g[l].data(), A.h[l].data(), long(batch) * 4 * H);
    b.fc2.forward(A.g[l].data(), A.a[l + 1].data(), batch);
    // residual: a[l+1] = a[l] + fc2(...)
    float* out = A.a[l + 1].data();
    const float* in = A.a[l].data();
    for (long i = 0; i < long(batch) * H; ++i) out[i] += in[i];
    if (hooks) hooks->afterForward(int(l) + 1);
  }
  if (hooks) hooks->beforeForward(last);
  m_cls.forward(A.a[m_blocks.size()].data(), A.logits.data(), batch);
  if (hooks) hooks->afterForward(last);
}

double Mlp::forwardLoss(const float* x, const int* labels, int batch, double normalizer,
                        UnitHooks* hooks) {
  forwardTo(x, batch, hooks);
  m_batch = batch;
  return kernels::softmax_xent(m_acts.dlogits.data(), m_acts.logits.data(), labels, batch,
                               m_shape.classes, normalizer);
}

void Mlp::backward(UnitHooks* hooks) {
  Acts& A = m_acts;
  const int B = m_batch, H = m_shape.hidden;
  const size_t L = m_blocks.size();
  // da holds dLoss/da[l] as we walk back down the residual stream.
  if (hooks) hooks->beforeBackward(int(L) + 1);
  m_cls.backward(A.a[L].data(), A.dlogits.data(), A.da.data(), B);
  if (hooks) hooks->afterBackward(int(L) + 1);
  for (size_t l = L; l-- > 0;) {
    if (hooks) hooks->beforeBackward(int(l) + 1);
    Block& b = m_blocks[l];
    // a[l+1] = a[l] + fc2(gelu(fc1(ln(a[l])))): the residual passes da through unchanged,
    // the branch adds its own contribution.
    b.fc2.backward(A.g[l].data(), A.da.data(), A.dh.data(), B);
    kernels::gelu_backward(A.dh.data(), A.h[l].data(), A.dh.data(), long(B) * 4 * H);
    b.fc1.backward(A.ln[l].data(), A.dh.data(), A.dtmp.data(), B);
    b.ln.backward(A.a[l].data(), A.mean[l].data(), A.rstd[l].data(), A.dtmp.data(),
                  A.dtmp.data(), B);
    float* da = A.da.data();
    const float* branch = A.dtmp.data();
    for (long i = 0; i < long(B) * H; ++i) da[i] += branch[i];
    if (hooks) hooks->afterBackward(int(l) + 1);
  }
  if (hooks) hooks->beforeBackward(0);
  m_in.backward(A.x.data(), A.da.data(), nullptr, B);
  if (hooks) hooks->afterBackward(0);
}

int Mlp::countCorrect(const float* x, const int* labels, int batch, UnitHooks* hooks) {
  forwardTo(x, batch, hooks);
  return kernels::count_correct(m_acts.logits.data(), labels, batch, m_shape.classes);
}

}  // namespace paralab
