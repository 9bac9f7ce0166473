// The GPT's forward, backward, evaluation and sampling (see gpt.h).
// See tests/engine/tst_gpt.cpp.
#include "model/gpt.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "device/compute.h"
#include "run_choices.h"
#include "rng.h"

namespace paralab {

int64_t GptShape::parameterCount() const {
  const int64_t V = vocab, T = seq, C = hidden;
  const int64_t ffn = moe ? moe->parameterCount() : C * 4 * C + 4 * C /*fc1*/ + 4 * C * C + C;
  const int64_t block = 4 * C /*2 LN*/ + C * 3 * C + 3 * C /*qkv*/ + C * C + C /*proj*/ + ffn;
  return V * C + T * C + layers * block + 2 * C + C * V + V;
}

Recompute recomputeFromName(const std::string& name) {
  if (const std::optional<Recompute> r = fromName<Recompute>(name)) return *r;
  throw std::invalid_argument("recompute: '" + name + "' is not one of none, selective, full");
}

static std::string blockName(int l) { return "block" + std::to_string(l); }

Gpt::Gpt(const GptShape& shape, uint64_t seed, MemoryTracker* tracker, const Compute* compute,
         Recompute recompute, const ModelShard& shard, bool initialise)
    : m_shape(shape),
      m_recompute(recompute),
      m_tracker(tracker),
      m_compute(compute ? compute : &Compute::host()) {
  const int V = shape.vocab, T = shape.seq, C = shape.hidden, L = shape.layers;
  if (V < 1 || T < 1 || C < 1 || L < 1 || shape.heads < 1 || C % shape.heads != 0)
    throw std::invalid_argument("Gpt: heads " + std::to_string(shape.heads) +
                                " must divide hidden " + std::to_string(C) +
                                ", and every size be at least 1");
  resolveShard(shard, L + 2);
  const int tp = m_shard.tpSize;
  if (shape.heads % tp != 0)
    throw std::invalid_argument("Gpt: tensor parallelism over " + std::to_string(tp) +
                                " ranks splits the heads, and " + std::to_string(tp) +
                                " does not divide " + std::to_string(shape.heads));
  // Cut by tensor or pipeline parallelism (the expert placement aside).
  const bool cut = !whole();
  if (shape.moe) {
    if (cut || shape.moe->hidden != C)
      throw std::invalid_argument("Gpt: the MoE FFN composes with data and expert parallelism "
                                  "only, and its experts are C wide");
    m_moe.shape = *shape.moe;
    m_moe.placement = {m_shard.epSize, m_shard.epRank};
    m_moe.blocks = L;
  } else if (m_shard.epSize != 1) {
    throw std::invalid_argument("Gpt: expert parallelism needs the MoE FFN (--ffn moe)");
  }
  // Units in the order of the forward pass (gradient buckets and pipeline stages rely on it).
  if (hasUnit(0)) {
    m_ps.beginUnit("embed");
    m_wte = m_ps.add("embed.wte", {V, C});
    m_wpe = m_ps.add("embed.wpe", {T, C});
  }
  m_firstBlock = std::max(0, m_shard.firstUnit - 1);
  for (int l = m_firstBlock; l < L && hasUnit(l + 1); ++l) {
    const std::string b = blockName(l);
    m_ps.beginUnit(b);
    Block k{LayerNorm(m_ps, b + ".ln1", C), Linear(m_ps, b + ".attn.qkv", C, 3 * C / tp),
            Linear(m_ps, b + ".attn.proj", C / tp, C), LayerNorm(m_ps, b + ".ln2", C), {}, {}, {}};
    if (shape.moe) {
      k.moe.emplace(m_ps, b + ".moe", m_moe, l);
    } else {
      k.fc1.emplace(m_ps, b + ".fc1", C, 4 * C / tp);
      k.fc2.emplace(m_ps, b + ".fc2", 4 * C / tp, C);
    }
    m_blocks.push_back(std::move(k));
  }
  if (hasUnit(L + 1)) {
    m_ps.beginUnit("head");
    m_lnf.emplace_back(m_ps, "head.lnf", C);
    m_head.emplace_back(m_ps, "head.out", C, V);
  }
  m_ps.allocate(tracker, m_compute);
  if (shape.moe) m_moe.findRanges(m_ps);
  // qkv's columns are q | k | v: a rank's heads are a slice of each of the three.
  auto groupsOf = [](const std::string& name) {
    return name.find(".attn.qkv") != std::string::npos ? 3 : 1;
  };
  if (cut) {  // draw the whole model (untracked: it lives only here), keep the slices
    Gpt full(shape, seed, nullptr, nullptr, Recompute::None, {}, initialise);
    sliceFrom(full.m_ps, groupsOf);
    if (initialise) takeSlicesOf(full.m_ps);
    return;
  }
  sliceFrom(m_ps, groupsOf);
  if (!initialise) return;
  if (m_compute->onGpu()) {  // the same draws as on the CPU, on a host twin, then uploaded
    Gpt twin(shape, seed, nullptr, nullptr, Recompute::None, shard);
    m_compute->upload(m_ps.params().data(), twin.m_ps.params().data(), m_ps.numel());
    m_compute->sync();
    return;
  }
  Rng rng(seed);
  for (int ref : {m_wte, m_wpe}) {
    float* w = m_ps.param(ref);
    for (int64_t i = 0; i < m_ps.ref(ref).numel(); ++i) w[i] = float(0.02 * rng.normal());
  }
  for (Block& b : m_blocks) {
    b.ln1.init();
    b.qkv.init(rng);
    std::fill_n(m_ps.param(b.qkv.biasRef()) + C, C, 0.f);  // the key bias stays 0 (gpt.h)
    b.proj.init(rng);
    b.ln2.init();
    if (b.moe) {
      b.moe->init(rng, seed);  // the router from rng, each expert from a stream of its own
    } else {
      b.fc1->init(rng);
      b.fc2->init(rng);
    }
  }
  m_lnf[0].init();
  m_head[0].init(rng);
}

void Gpt::ensureCapacity(int B, int T) {
  const int64_t rows = int64_t(B) * T, att = int64_t(B) * m_shape.heads * T * T;
  if (rows <= m_acts.rows && att <= m_acts.attCapacity) return;
  const int64_t R = std::max(rows, m_acts.rows), A = std::max(att, m_acts.attCapacity);
  const int64_t C = m_shape.hidden, V = m_shape.vocab;
  const int64_t L = m_shape.layers;
  auto act = [&](Shape s) {
    return m_compute->tensor(std::move(s), MemCategory::Activations, m_tracker);
  };
  auto work = [&](Shape s) {
    return m_compute->tensor(std::move(s), MemCategory::Workspace, m_tracker);
  };
  m_acts = Acts{};  // free the old buffers before allocating: the peak stays honest
  Acts a;
  a.rows = R;
  a.attCapacity = A;
  // fp32 under mixed precision too (model.h): token ids, LayerNorm's statistics, the logits.
  const auto fp32 = [&](auto make, Shape shape) {
    Fp32Allocations wide(m_tracker);
    return make(std::move(shape));
  };
  a.tokens = fp32(act, {R});
  a.targets = fp32(act, {R});
  for (int64_t l = 0; l <= L; ++l) a.a.push_back(act({R, C}));
  // Kept per block, or (full recomputation) one block's worth refilled in the backward.
  const bool full = m_recompute == Recompute::Full;
  auto kept = [&](Shape shape) { return full ? work(std::move(shape)) : act(std::move(shape)); };
  for (int64_t l = 0; l < (full ? 1 : L); ++l) {
    BlockActs b;
    b.ln1 = kept({R, C});
    b.mean1 = fp32(kept, {R});
    b.rstd1 = fp32(kept, {R});
    b.qkv = kept({R, 3 * C});
    if (m_recompute != Recompute::Selective) b.att = kept({A});
    b.y = kept({R, C});
    b.mid = kept({R, C});
    b.ln2 = kept({R, C});
    b.mean2 = fp32(kept, {R});
    b.rstd2 = fp32(kept, {R});
    if (!m_shape.moe) {  // the MoE layer keeps its experts' rows itself
      b.h = kept({R, 4 * C});
      b.g = kept({R, 4 * C});
    }
    a.block.push_back(std::move(b));
  }
  if (m_recompute == Recompute::Selective) a.att = work({A});
  a.lnf = act({R, C});
  a.meanf = fp32(act, {R});
  a.rstdf = fp32(act, {R});
  a.logits = fp32(act, {R, V});
  a.dlogits = work({R, V});
  a.da = work({R, C});
  a.dtmp = work({R, C});
  a.dqkv = work({R, 3 * C});
  a.dh = work({R, 4 * C});
  a.scratch = work({std::max<int64_t>(A / std::max<int64_t>(1, T), T)});  // B*NH*T (GPU), T (CPU)
  m_acts = std::move(a);
}

void splitWindows(const float* x, int batch, int T, int V, int* tokens, int* targets) {
  for (int b = 0; b < batch; ++b)
    for (int t = 0; t <= T; ++t) {
      const float f = x[size_t(b) * (T + 1) + size_t(t)];
      const int id = int(f);
      if (!(f >= 0) || float(id) != f || id >= V)
        throw std::invalid_argument("Gpt: window " + std::to_string(b) + " position " +
                                    std::to_string(t) + " holds " + std::to_string(f) +
                                    ", not a token id in 0.." + std::to_string(V - 1));
      if (tokens && t < T) tokens[size_t(b) * T + size_t(t)] = id;
      if (targets && t > 0) targets[size_t(b) * T + size_t(t - 1)] = id;
    }
}

void Gpt::loadTokens(const float* x, int batch) {
  if (!whole()) throw std::logic_error("Gpt: a shard runs its parts from gpt_parallel.cpp");
  const int T = m_shape.seq;
  m_hostTokens.resize(size_t(batch) * T);
  m_hostTargets.resize(size_t(batch) * T);
  splitWindows(x, batch, T, m_shape.vocab, m_hostTokens.data(), m_hostTargets.data());
  ensureCapacity(batch, T);
  const int64_t n = int64_t(batch) * T;
  int* tokens = reinterpret_cast<int*>(m_acts.tokens.data());
  int* targets = reinterpret_cast<int*>(m_acts.targets.data());
  if (m_compute->onGpu()) {
    m_compute->uploadInts(tokens, m_hostTokens.data(), n);
    m_compute->uploadInts(targets, m_hostTargets.data(), n);
  } else {
    std::copy_n(m_hostTokens.data(), n, tokens);
    std::copy_n(m_hostTargets.data(), n, targets);
  }
}

void Gpt::forwardTo(int B, int T, bool train, UnitHooks* hooks,
                    const std::function<void()>& inFirstUnit,
                    const std::function<void()>& inLastUnit) {
  const int C = m_shape.hidden;
  const int rows = B * T;
  const int last = numUnits() - 1;
  if (train && m_shape.moe) m_moe.beginStep();
  if (hooks) hooks->beforeForward(0);
  if (inFirstUnit) inFirstUnit();
  Acts& A = m_acts;
  if (rows > 0)
    m_compute->embedding(A.a[0].data(), reinterpret_cast<const int*>(A.tokens.data()),
                         m_ps.param(m_wte), m_ps.param(m_wpe), B, T, C);
  stored(A.a[0].data(), int64_t(rows) * C);  // 16-bit activations where kept (model.h)
  if (hooks) hooks->afterForward(0);
  for (int l = 0; l < int(m_blocks.size()); ++l) {
    if (hooks) hooks->beforeForward(l + 1);
    blockForward(l, B, T, true, train);
    if (hooks) hooks->afterForward(l + 1);
  }
  if (hooks) hooks->beforeForward(last);
  if (rows > 0) {
    m_lnf[0].forward(A.a[m_blocks.size()].data(), A.lnf.data(), A.meanf.data(), A.rstdf.data(),
                     rows);
    stored(A.lnf.data(), int64_t(rows) * C);
    m_head[0].forward(A.lnf.data(), A.logits.data(), rows);
    if (inLastUnit) inLastUnit();
  }
  if (hooks) hooks->afterForward(last);
}

void Gpt::blockForward(int l, int B, int T, bool toOutput, bool train) {
  Block& b = m_blocks[size_t(l)];
  const int C = m_shape.hidden, rows = B * T;
  if (b.moe) b.moe->storeIn(m_stored);  // its experts' rows in 16 bits too (moe_ffn.h)
  if (rows == 0) {  // no tokens here: only the MoE's exchanges, for the other ranks' tokens
    if (b.moe && toOutput) b.moe->forward(nullptr, nullptr, 0, train, m_tracker);
    return;
  }
  Acts& A = m_acts;
  BlockActs& k = actsOf(l);
  // x + proj(attention(qkv(LN1(x)))) ...
  const int64_t n = int64_t(rows) * C;  // mixed precision: each kept output rounded (model.h)
  b.ln1.forward(A.a[size_t(l)].data(), k.ln1.data(), k.mean1.data(), k.rstd1.data(), rows);
  stored(k.ln1.data(), n);
  b.qkv.forward(k.ln1.data(), k.qkv.data(), rows);
  stored(k.qkv.data(), 3 * n);
  m_compute->attention(k.y.data(), attOf(l), k.qkv.data(), B, T, C, m_shape.heads);
  stored(k.y.data(), n);
  if (m_recompute != Recompute::Selective) stored(attOf(l), n / C * m_shape.heads * T);
  b.proj.forward(k.y.data(), k.mid.data(), rows);
  m_compute->residualAdd(k.mid.data(), A.a[size_t(l)].data(), long(rows) * C);
  stored(k.mid.data(), n);
  // ... then + fc2(GELU(fc1(LN2(.))))
  b.ln2.forward(k.mid.data(), k.ln2.data(), k.mean2.data(), k.rstd2.data(), rows);
  stored(k.ln2.data(), n);
  float* out = A.a[size_t(l) + 1].data();
  if (b.moe) {  // ... or + MoE(LN2(.)): the experts' outputs added onto the stream
    if (!toOutput) return;
    m_compute->copy(out, k.mid.data(), int64_t(rows) * C);
    b.moe->forward(k.ln2.data(), out, rows, train, m_tracker);
    stored(out, n);
    return;
  }
  if (m_stored == Dtype::Fp32) {  // fc1's bias added in GELU's pass (the same bits)
    b.fc1->forward(k.ln2.data(), k.h.data(), rows, false);
    m_compute->biasGelu(k.h.data(), k.g.data(), m_ps.param(b.fc1->biasRef()), rows, 4 * C);
  } else {  // 16 bits: GELU reads h as kept
    b.fc1->forward(k.ln2.data(), k.h.data(), rows);
    stored(k.h.data(), 4 * n);
    m_compute->gelu(k.g.data(), k.h.data(), long(rows) * 4 * C);
    stored(k.g.data(), 4 * n);
  }
  if (!toOutput) return;
  b.fc2->forward(k.g.data(), out, rows);
  m_compute->residualAdd(out, k.mid.data(), long(rows) * C);
  stored(out, n);
}

void Gpt::lossAndGrad(int B, int T, double normalizer, double* lossSum, int* correct) {
  // Each of the B*T rows is one prediction; a sample's loss is the mean of its T, so the sum
  // over samples is the sum over rows / T, and each row's gradient is 1 / (normalizer T).
  const double rowsLoss = m_compute->softmaxXent(
      m_acts.dlogits.data(), m_acts.logits.data(),
      reinterpret_cast<const int*>(m_acts.targets.data()), B * T, m_shape.vocab,
      normalizer * double(T), correct);
  *lossSum = rowsLoss / double(T);
}

double Gpt::forwardLoss(const float* x, const int* /*labels*/, int batch, double normalizer,
                        UnitHooks* hooks) {
  double loss = 0;
  forwardTo(
      batch, m_shape.seq, true, hooks, [&] { loadTokens(x, batch); },
      [&] { lossAndGrad(batch, m_shape.seq, normalizer, &loss, nullptr); });
  m_B = batch;
  return loss;
}

void Gpt::backward(UnitHooks* hooks) {
  Acts& A = m_acts;
  const int B = m_B, T = m_shape.seq, C = m_shape.hidden, NH = m_shape.heads;
  const int rows = B * T;
  const size_t L = m_blocks.size();
  // da holds dLoss/d(residual stream) as we walk back down it.
  if (hooks) hooks->beforeBackward(int(L) + 1);
  m_head[0].backward(A.lnf.data(), A.dlogits.data(), A.dtmp.data(), rows);
  m_lnf[0].backward(A.a[L].data(), A.meanf.data(), A.rstdf.data(), A.dtmp.data(), A.da.data(),
                    rows);
  if (hooks) hooks->afterBackward(int(L) + 1);
  for (int l = int(L); l-- > 0;) {
    if (hooks) hooks->beforeBackward(l + 1);
    Block& b = m_blocks[size_t(l)];
    if (m_recompute == Recompute::Full)  // the block's activations again
      blockForward(l, B, T, false, true);
    BlockActs& k = actsOf(l);
    // a[l+1] = mid + fc2(gelu(fc1(ln2(mid)))) or mid + MoE(ln2(mid)): da passes through, the
    // branch adds to it.
    if (b.moe) {
      b.moe->backward(k.ln2.data(), A.da.data(), A.dtmp.data(), m_tracker);
    } else {
      b.fc2->backward(k.g.data(), A.da.data(), A.dh.data(), rows);
      // GELU's backward with fc1's bias gradient in the same pass, then fc1's dW and dx.
      m_compute->geluBackwardBias(A.dh.data(), m_ps.grad(b.fc1->biasRef()), k.h.data(),
                                  A.dh.data(), rows, 4 * C);
      b.fc1->backwardWeight(k.ln2.data(), A.dh.data(), rows, false);
      b.fc1->backwardInput(A.dh.data(), A.dtmp.data(), rows);
    }
    b.ln2.backward(k.mid.data(), k.mean2.data(), k.rstd2.data(), A.dtmp.data(), A.dtmp.data(),
                   rows);
    m_compute->residualAdd(A.da.data(), A.dtmp.data(), long(rows) * C);  // da = dmid
    // mid = a[l] + proj(attention(qkv(ln1(a[l])))): the same again.
    b.proj.backward(k.y.data(), A.da.data(), A.dtmp.data(), rows);
    if (m_recompute == Recompute::Selective) {  // the probabilities, from the kept qkv
      m_compute->attentionProbs(attOf(l), k.qkv.data(), B, T, C, NH);
      stored(attOf(l), int64_t(rows) * NH * T);
    }
    m_compute->attentionBackward(A.dqkv.data(), A.scratch.data(), A.dtmp.data(), k.qkv.data(),
                                 attOf(l), B, T, C, NH);
    b.qkv.backward(k.ln1.data(), A.dqkv.data(), A.dtmp.data(), rows);
    m_compute->zero(m_ps.grad(b.qkv.biasRef()) + C, C);  // the key bias stays 0 (gpt.h)
    b.ln1.backward(A.a[size_t(l)].data(), k.mean1.data(), k.rstd1.data(), A.dtmp.data(),
                   A.dtmp.data(), rows);
    m_compute->residualAdd(A.da.data(), A.dtmp.data(), long(rows) * C);  // da = da[l]
    if (hooks) hooks->afterBackward(l + 1);
  }
  if (hooks) hooks->beforeBackward(0);
  m_compute->embeddingBackward(m_ps.grad(m_wte), m_ps.grad(m_wpe), A.da.data(),
                               reinterpret_cast<const int*>(A.tokens.data()), B, T, C);
  if (hooks) hooks->afterBackward(0);
}

Evaluation Gpt::evaluate(const float* x, const int* /*labels*/, int batch, UnitHooks* hooks) {
  double loss = 0;
  int correct = 0;
  forwardTo(
      batch, m_shape.seq, false, hooks, [&] { loadTokens(x, batch); },
      [&] { lossAndGrad(batch, m_shape.seq, 1.0, &loss, &correct); });
  return {correct, int64_t(batch) * m_shape.seq, loss};
}

void Gpt::generate(std::vector<int>& ids, int count, uint64_t seed) {
  if (ids.empty()) throw std::invalid_argument("Gpt::generate: no id to start from");
  const int V = m_shape.vocab;
  Rng rng(seed);
  std::vector<float> row(static_cast<size_t>(V));
  std::vector<double> p(static_cast<size_t>(V));
  for (int k = 0; k < count; ++k) {
    // The last T ids (fewer at the start): positions 0.., a batch of one sequence.
    const int T = int(std::min<size_t>(ids.size(), size_t(m_shape.seq)));
    ensureCapacity(1, T);
    m_hostTokens.assign(ids.end() - T, ids.end());
    int* tokens = reinterpret_cast<int*>(m_acts.tokens.data());
    if (m_compute->onGpu()) m_compute->uploadInts(tokens, m_hostTokens.data(), T);
    else std::copy_n(m_hostTokens.data(), T, tokens);
    forwardTo(1, T, false, nullptr);
    m_compute->download(row.data(), m_acts.logits.data() + int64_t(T - 1) * V, V);
    const float top = *std::max_element(row.begin(), row.end());
    double sum = 0;
    for (int v = 0; v < V; ++v) sum += p[size_t(v)] = std::exp(double(row[size_t(v)] - top));
    double u = rng.uniform() * sum;
    int pick = V - 1;
    for (int v = 0; v < V; ++v)
      if ((u -= p[size_t(v)]) < 0) {
        pick = v;
        break;
      }
    ids.push_back(pick);
  }
}

}  // namespace paralab
