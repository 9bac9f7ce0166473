// The residual MLP's forward and backward, and its shards (see mlp.h).
// See tests/engine/tst_model.cpp and tst_model_parallel.cpp.
#include "model/mlp.h"

#include <algorithm>
#include <stdexcept>

#include "device/compute.h"

namespace paralab {

int64_t MlpShape::parameterCount() const {
  const int64_t H = hidden;
  const int64_t block = 2 * H /*LN*/ + H * 4 * H + 4 * H /*fc1*/ + 4 * H * H + H /*fc2*/;
  return int64_t(input) * H + H + layers * block + H * classes + classes;
}

static std::string blockName(int l) { return "block" + std::to_string(l); }

Mlp::Mlp(const MlpShape& shape, uint64_t seed, MemoryTracker* tracker, const ModelShard& shard,
         bool initialise, const Compute* compute)
    : m_shape(shape),
      m_tracker(tracker),
      m_compute(compute ? compute : &Compute::host()) {
  const int H = shape.hidden, L = shape.layers;
  resolveShard(shard, L + 2);
  if ((4 * H) % m_shard.tpSize != 0)
    throw std::invalid_argument("Mlp: tensor-parallel slice " +
                                std::to_string(m_shard.tpRank) + " of " +
                                std::to_string(m_shard.tpSize) + " does not divide 4H = " +
                                std::to_string(4 * H));
  const int F = 4 * H / m_shard.tpSize;  // fc1 outputs (= fc2 inputs) on this rank
  // Units are declared in the order of the forward pass, so the flat buffer follows it
  // (what gradient buckets and pipeline stages rely on).
  if (hasUnit(0)) {
    m_ps.beginUnit("in_proj");
    m_in.emplace_back(m_ps, "in_proj", shape.input, H);
  }
  m_firstBlock = std::max(0, m_shard.firstUnit - 1);
  for (int l = m_firstBlock; l < L && hasUnit(l + 1); ++l) {
    m_ps.beginUnit(blockName(l));
    m_blocks.push_back({LayerNorm(m_ps, blockName(l) + ".ln", H),
                        Linear(m_ps, blockName(l) + ".fc1", H, F),
                        Linear(m_ps, blockName(l) + ".fc2", F, H)});
  }
  if (hasUnit(L + 1)) {
    m_ps.beginUnit("classifier");
    m_cls.emplace_back(m_ps, "classifier", H, shape.classes);
  }
  m_ps.allocate(tracker, m_compute);
  if (whole()) {
    sliceFrom(m_ps, [](const std::string&) { return 1; });
    if (!initialise) return;
    if (m_compute->onGpu()) {  // the same draws as on the CPU, on a host twin, then uploaded
      Mlp twin(shape, seed, nullptr);
      m_compute->upload(m_ps.params().data(), twin.m_ps.params().data(), m_ps.numel());
      return;
    }
    Rng rng(seed);
    m_in[0].init(rng);
    for (Block& b : m_blocks) {
      b.ln.init();
      b.fc1.init(rng);
      b.fc2.init(rng);
    }
    m_cls[0].init(rng);
    return;
  }
  // A shard: draw the whole model (untracked: it lives only here), keep this rank's slices.
  Mlp full(shape, seed, nullptr, {}, initialise);
  sliceFrom(full.m_ps, [](const std::string&) { return 1; });
  if (initialise) takeSlicesOf(full.m_ps);
}

void Mlp::ensureCapacity(int batch) {
  if (batch <= m_acts.capacity) return;
  const int64_t B = batch, H = m_shape.hidden, L = m_shape.layers;
  Acts a;
  a.capacity = batch;
  auto act = [&](Shape s) {
    return m_compute->tensor(std::move(s), MemCategory::Activations, m_tracker);
  };
  auto work = [&](Shape s) {
    return m_compute->tensor(std::move(s), MemCategory::Workspace, m_tracker);
  };
  m_acts = Acts{};  // free the old buffers before allocating: the peak stays honest
  a.x = act({B, m_shape.input});
  if (m_compute->onGpu()) a.labels = act({B});
  for (int64_t l = 0; l <= L; ++l) a.a.push_back(act({B, H}));
  for (int64_t l = 0; l < L; ++l) {
    a.ln.push_back(act({B, H}));
    a.h.push_back(act({B, 4 * H}));
    a.g.push_back(act({B, 4 * H}));
  }
  {  // fp32 under mixed precision too: LayerNorm's statistics and the logits the loss reads
    Fp32Allocations fp32(m_tracker);
    for (int64_t l = 0; l < L; ++l) {
      a.mean.push_back(act({B}));
      a.rstd.push_back(act({B}));
    }
    a.logits = act({B, m_shape.classes});
  }
  a.dlogits = work({B, m_shape.classes});
  a.da = work({B, H});
  a.dtmp = work({B, H});
  a.dh = work({B, 4 * H});
  m_acts = std::move(a);
}

void Mlp::forwardTo(const float* x, int batch, UnitHooks* hooks,
                    const std::function<void()>& inLastUnit) {
  if (!whole())
    throw std::logic_error("Mlp: a shard runs its parts one by one (tensor_parallel.cpp)");
  const int H = m_shape.hidden;
  const int last = numUnits() - 1;
  // The buffers and the batch's upload are the first unit's work (inside its span).
  if (hooks) hooks->beforeForward(0);
  ensureCapacity(batch);
  Acts& A = m_acts;
  m_compute->upload(A.x.data(), x, int64_t(batch) * m_shape.input);
  stored(A.x.data(), int64_t(batch) * m_shape.input);
  m_in[0].forward(A.x.data(), A.a[0].data(), batch);
  stored(A.a[0].data(), int64_t(batch) * H);  // 16-bit activations where kept (model.h)
  if (hooks) hooks->afterForward(0);
  for (size_t l = 0; l < m_blocks.size(); ++l) {
    if (hooks) hooks->beforeForward(int(l) + 1);
    Block& b = m_blocks[l];
    b.ln.forward(A.a[l].data(), A.ln[l].data(), A.mean[l].data(), A.rstd[l].data(), batch);
    stored(A.ln[l].data(), int64_t(batch) * H);
    b.fc1.forward(A.ln[l].data(), A.h[l].data(), batch);
    stored(A.h[l].data(), int64_t(batch) * 4 * H);
    m_compute->gelu(A.g[l].data(), A.h[l].data(), long(batch) * 4 * H);
    stored(A.g[l].data(), int64_t(batch) * 4 * H);
    b.fc2.forward(A.g[l].data(), A.a[l + 1].data(), batch);
    // residual: a[l+1] = a[l] + fc2(...)
    m_compute->residualAdd(A.a[l + 1].data(), A.a[l].data(), long(batch) * H);
    stored(A.a[l + 1].data(), int64_t(batch) * H);
    if (hooks) hooks->afterForward(int(l) + 1);
  }
  if (hooks) hooks->beforeForward(last);
  m_cls[0].forward(A.a[m_blocks.size()].data(), A.logits.data(), batch);
  if (inLastUnit) inLastUnit();
  if (hooks) hooks->afterForward(last);
}

double Mlp::forwardLoss(const float* x, const int* labels, int batch, double normalizer,
                        UnitHooks* hooks) {
  double loss = 0;
  forwardTo(x, batch, hooks, [&] {
    loss = m_compute->softmaxXent(m_acts.dlogits.data(), m_acts.logits.data(),
                                  labelsHere(labels, batch), batch, m_shape.classes, normalizer);
  });
  m_batch = batch;
  return loss;
}

const int* Mlp::labelsHere(const int* labels, int batch) {
  if (!m_compute->onGpu()) return labels;
  int* here = reinterpret_cast<int*>(m_acts.labels.data());
  m_compute->uploadInts(here, labels, batch);
  return here;
}

void Mlp::backward(UnitHooks* hooks) {
  Acts& A = m_acts;
  const int B = m_batch, H = m_shape.hidden;
  const size_t L = m_blocks.size();
  // da holds dLoss/da[l] as we walk back down the residual stream.
  if (hooks) hooks->beforeBackward(int(L) + 1);
  m_cls[0].backward(A.a[L].data(), A.dlogits.data(), A.da.data(), B);
  if (hooks) hooks->afterBackward(int(L) + 1);
  for (size_t l = L; l-- > 0;) {
    if (hooks) hooks->beforeBackward(int(l) + 1);
    Block& b = m_blocks[l];
    // a[l+1] = a[l] + fc2(gelu(fc1(ln(a[l])))): the residual passes da through unchanged,
    // the branch adds its own contribution.
    b.fc2.backward(A.g[l].data(), A.da.data(), A.dh.data(), B);
    m_compute->geluBackward(A.dh.data(), A.h[l].data(), A.dh.data(), long(B) * 4 * H);
    b.fc1.backward(A.ln[l].data(), A.dh.data(), A.dtmp.data(), B);
    b.ln.backward(A.a[l].data(), A.mean[l].data(), A.rstd[l].data(), A.dtmp.data(),
                  A.dtmp.data(), B);
    m_compute->residualAdd(A.da.data(), A.dtmp.data(), long(B) * H);
    if (hooks) hooks->afterBackward(int(l) + 1);
  }
  if (hooks) hooks->beforeBackward(0);
  m_in[0].backward(A.x.data(), A.da.data(), nullptr, B);
  if (hooks) hooks->afterBackward(0);
}

int Mlp::countCorrect(const float* x, const int* labels, int batch, UnitHooks* hooks) {
  int correct = 0;
  forwardTo(x, batch, hooks, [&] {
    correct = m_compute->countCorrect(m_acts.logits.data(), labelsHere(labels, batch), batch,
                                      m_shape.classes, m_acts.dlogits.data());
  });
  return correct;
}

Evaluation Mlp::evaluate(const float* x, const int* labels, int batch, UnitHooks* hooks) {
  int correct = 0;
  double loss = 0;
  forwardTo(x, batch, hooks, [&] {
    loss = m_compute->softmaxXent(m_acts.dlogits.data(), m_acts.logits.data(),
                                  labelsHere(labels, batch), batch, m_shape.classes, 1.0, &correct);
  });
  return {correct, batch, loss};
}

}  // namespace paralab
