// The mixture-of-experts MLP's forward and backward (see moe.h): routing, capacity, the rows
// each expert runs, and the gradients back through the gates into the router.
// Where it runs: everything heavy goes through the rank's Compute — LayerNorm, the router's and
// the experts' GEMMs, the row gathers and gate-weighted scatter-adds, the all-to-alls of device
// rows. The routing decisions (softmax, top-k, capacity, which row goes where) are small ([B, E]
// numbers) and branchy, so they are made on the host, as on the CPU: on a GPU the router's
// logits come back to the host, the plan is made there and its index arrays and gates go up;
// backward brings the gates' gradients back, makes the router's [B, E] gradient on the host and
// uploads it. A few KB each way per block, and the same routing code on both devices.
// See tests/engine/tst_moe.cpp (finite differences, serial = expert parallel) and
// tst_cuda_moe.cpp (the GPU against the CPU).
#include "model/moe.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>

#include "cpu/moe.h"
#include "device/compute.h"

namespace paralab {

using namespace kernels;

int64_t MoeShape::expertParameterCount() const {
  const int64_t H = hidden;
  return H * 4 * H + 4 * H + 4 * H * H + H;
}

int64_t MoeShape::parameterCount() const {
  const int64_t H = hidden;
  const int64_t block =
      2 * H /*LN*/ + H * experts + experts /*router*/ + experts * expertParameterCount();
  return int64_t(input) * H + H + layers * block + H * classes + classes;
}

namespace {

// A serial model's "exchange": every expert is here and the tokens are the whole batch.
class LocalExchange final : public ExpertExchange {
 public:
  const ExpertTopology& topology() const override { return m_topo; }
  void gatherCounts(const float* mine, float* all, int n) override {
    std::copy(mine, mine + n, all);
  }
  void exchangeRows(const float*, const std::vector<int64_t>&, float*, const std::vector<int64_t>&,
                    int) override {
    throw std::logic_error("moe: no rows travel when one rank holds every expert");
  }

 private:
  ExpertTopology m_topo;
};

std::string blockName(int l) { return "block" + std::to_string(l); }

// Each expert draws its initial weights from a stream of its own, so a rank holding experts
// 2..3 builds exactly the weights the serial model holds for them without drawing the others.
uint64_t expertSeed(uint64_t seed, int block, int expert) {
  Rng mix(seed ^ (0xD1B54A32D192ED03ull * uint64_t(1 + block * 4096 + expert)));
  return mix.next();
}

}  // namespace

Moe::Moe(const MoeShape& shape, uint64_t seed, MemoryTracker* tracker, ExpertPlacement placement,
         const Compute* compute)
    : m_shape(shape),
      m_place(placement),
      m_tracker(tracker),
      m_compute(compute ? compute : &Compute::host()),
      m_in((m_ps.beginUnit("in_proj"), Linear(m_ps, "in_proj", shape.input, shape.hidden))),
      m_cls([&]() -> Linear {
        if (placement.shards < 1 || shape.experts % placement.shards != 0)
          throw std::invalid_argument("moe: the experts must split evenly over the ranks");
        const int H = shape.hidden;
        for (int l = 0; l < shape.layers; ++l) {  // units in forward order, as in Mlp
          const std::string n = blockName(l);
          m_ps.beginUnit(n);
          Block b{LayerNorm(m_ps, n + ".ln", H), Linear(m_ps, n + ".router", H, shape.experts), {}};
          for (int e = firstExpert(); e < firstExpert() + localExperts(); ++e) {
            const std::string x = n + ".expert" + std::to_string(e);
            b.experts.push_back(
                {Linear(m_ps, x + ".fc1", H, 4 * H), Linear(m_ps, x + ".fc2", 4 * H, H)});
          }
          m_blocks.push_back(std::move(b));
        }
        m_ps.beginUnit("classifier");
        return Linear(m_ps, "classifier", shape.hidden, shape.classes);
      }()) {
  m_ps.allocate(tracker, m_compute);
  // Expert weights are summed over the expert's replicas, the rest over every replica.
  for (const ParamRef& r : m_ps.refs()) {
    auto& ranges = r.name.find(".expert") != std::string::npos ? m_expertRanges : m_denseRanges;
    if (!ranges.empty() && ranges.back().second == r.offset)
      ranges.back().second += r.numel();
    else
      ranges.push_back({r.offset, r.offset + r.numel()});
  }
  if (m_compute->onGpu()) {  // the same draws as on the CPU, on a host twin, then uploaded
    Moe twin(shape, seed, nullptr, placement);
    m_compute->upload(m_ps.params().data(), twin.m_ps.params().data(), m_ps.numel());
    return;
  }
  Rng rng(seed);
  m_in.init(rng);
  for (int l = 0; l < shape.layers; ++l) {
    m_blocks[size_t(l)].ln.init();
    m_blocks[size_t(l)].router.init(rng);
    for (int i = 0; i < localExperts(); ++i) {
      Rng er(expertSeed(seed, l, firstExpert() + i));
      m_blocks[size_t(l)].experts[size_t(i)].fc1.init(er);
      m_blocks[size_t(l)].experts[size_t(i)].fc2.init(er);
    }
  }
  m_cls.init(rng);
}

bool Moe::onGpu() const { return m_compute->onGpu(); }

void Moe::grow(Tensor& t, int64_t rows, int64_t cols, MemCategory category) {
  const int64_t need = std::max<int64_t>(1, rows) * cols;
  if (t.numel() >= need) return;
  t = Tensor();  // free first: the peak stays honest
  // Headroom: routing varies step to step.
  t = m_compute->tensor({need + need / 4}, category, m_tracker);
}

float* Moe::hostProbs(BlockActs& A) { return onGpu() ? A.probsHost.data() : A.probs.data(); }

void Moe::uploadPlan(BlockActs& A) {
  static_assert(sizeof(int) == sizeof(float));  // index arrays ride in float tensors' bytes
  const int64_t S = int64_t(A.sendTok.size()), R = int64_t(A.perm.size());
  grow(A.tokDev, S, 1, MemCategory::Activations);
  grow(A.gateDev, S, 1, MemCategory::Activations);
  grow(A.permDev, R, 1, MemCategory::Activations);
  grow(A.unpermDev, R, 1, MemCategory::Activations);
  // From pageable host memory: each copy has read its source when it returns (cuda/runtime.h).
  m_compute->uploadInts(reinterpret_cast<int*>(A.tokDev.data()), A.sendTok.data(), S);
  m_compute->upload(A.gateDev.data(), A.sendGate.data(), S);
  m_compute->uploadInts(reinterpret_cast<int*>(A.permDev.data()), A.perm.data(), R);
  m_compute->uploadInts(reinterpret_cast<int*>(A.unpermDev.data()), A.unperm.data(), R);
}

const int* Moe::labelsHere(const int* labels, int batch) {
  if (!onGpu()) return labels;
  int* here = reinterpret_cast<int*>(m_acts.labels.data());
  m_compute->uploadInts(here, labels, batch);
  return here;
}

namespace {

// The plan's arrays where the row kernels read them: the host vectors on the CPU, their device
// copies (Moe::uploadPlan) on a GPU.
const int* onDevice(const std::vector<int>& host, Tensor& dev, bool gpu) {
  return gpu ? reinterpret_cast<const int*>(dev.data()) : host.data();
}
const float* onDevice(const std::vector<float>& host, Tensor& dev, bool gpu) {
  return gpu ? dev.data() : host.data();
}

}  // namespace

void Moe::ensureCapacity(int batch) {
  // Built once even for an empty batch: a rank with no rows of an evaluation chunk still runs
  // every block (its collectives) over zero rows.
  if (batch <= m_acts.capacity && !m_acts.blocks.empty()) return;
  const int64_t B = batch, H = m_shape.hidden, E = m_shape.experts;
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
  m_acts.blocks.resize(size_t(m_shape.layers));
  for (BlockActs& A : m_acts.blocks) {
    A.ln = act({B, H});
    A.mean = act({B});
    A.rstd = act({B});
    A.probs = act({B, E});
  }
  m_acts.logits = act({B, m_shape.classes});
  m_acts.dlogits = work({B, m_shape.classes});
  m_acts.da = work({B, H});
  m_acts.dln = work({B, H});
  m_acts.dtmp = work({B, H});
  m_acts.dprobs = work({B, E});
}

// [SECTION] Routing: top-k, gates, capacity, and who sends how many rows to whom.
void Moe::routeAndPlan(int l, int B, bool train, ExpertExchange& ex) {
  BlockActs& A = m_acts.blocks[size_t(l)];
  BlockRouting& r = A.route;
  const ExpertTopology& topo = ex.topology();
  const int E = m_shape.experts, K = m_shape.topk, G = m_place.shards, El = localExperts();
  const int D = topo.tokenRanks, me = topo.tokenRank;
  const float* p = hostProbs(A);
  r.choice.assign(size_t(B) * K, 0);
  r.gate.assign(size_t(B) * K, 0.f);
  r.kept.assign(size_t(B) * K, 1);
  if (B > 0) {
    topk_rows(r.choice.data(), p, B, E, K);
    topk_gates(r.gate.data(), p, r.choice.data(), B, E, K);  // before any capacity drop
  }
  std::vector<float> mine(size_t(K) * E, 0.f);
  for (size_t s = 0; s < r.choice.size(); ++s) mine[(s % K) * E + r.choice[s]] += 1.f;
  // Every token rank's counts per (choice, expert): the global capacity and the row counts of
  // both all-to-alls follow from them, identically on every rank.
  std::vector<float> all(size_t(D) * K * E);
  ex.gatherCounts(mine.data(), all.data(), K * E);
  double T = 0;  // tokens of the global batch: everyone's first choices
  for (int d = 0; d < D; ++d)
    for (int e = 0; e < E; ++e) T += all[size_t(d) * K * E + e];
  A.tokens = T;
  const long C = train ? long(std::ceil(m_shape.capacityFactor * T * K / E)) : LONG_MAX;
  r.capacity = train ? C : 0;
  const long dropped = capacity_drop(r.kept.data(), r.choice.data(), B, K, all.data(), D, me, E, C);
  // Sent rows in expert order (so in EP-member order), then choice, then token.
  std::vector<long> perExpert(size_t(E), 0);
  const size_t S = r.kept.size() - size_t(dropped);
  A.sendTok.resize(S);
  A.sendSlot.resize(S);
  A.sendGate.resize(S);
  dispatch_order(A.sendTok.data(), A.sendSlot.data(), perExpert.data(), r.choice.data(),
                 r.kept.data(), B, K, E);
  for (size_t i = 0; i < S; ++i) A.sendGate[i] = r.gate[size_t(A.sendSlot[i])];
  A.sendRows.assign(size_t(G), 0);
  for (int e = 0; e < E; ++e) A.sendRows[size_t(e / El)] += perExpert[size_t(e)];
  // Received: member q's rows for each of my experts (the same capacity arithmetic on the same
  // counts as q did); the experts run on expert-major rows.
  std::vector<long> from(size_t(G) * El, 0);
  A.recvRows.assign(size_t(G), 0);
  A.expertRows.assign(size_t(El), 0);
  for (int q = 0; q < G; ++q)
    for (int i = 0; i < El; ++i) {
      for (int j = 0; j < K; ++j)
        from[size_t(q) * El + i] += capacity_kept(all.data(), D, K, E, topo.epTokenRanks[size_t(q)],
                                                  j, firstExpert() + i, C);
      A.recvRows[size_t(q)] += from[size_t(q) * El + i];
      A.expertRows[size_t(i)] += int(from[size_t(q) * El + i]);
    }
  long R = 0;
  for (long n : from) R += n;
  A.perm.resize(G > 1 ? size_t(R) : 0);
  A.unperm.resize(A.perm.size());
  if (G > 1) expert_major_perm(A.perm.data(), A.unperm.data(), from.data(), G, El);
  A.f.assign(size_t(E), 0.f);  // f_e: share of the step's token choices routed to e
  for (size_t i = 0; i < all.size(); ++i) A.f[i % E] += float(all[i] / (T * K));
  if (!train) return;
  for (size_t i = 0; i < mine.size(); ++i)
    m_stats.routed[size_t(l) * E + i % E] += int64_t(mine[i]);
  m_stats.dropped += dropped;
  for (int n : A.expertRows) m_stats.processed += n;
  if (m_shape.auxLoss > 0 && T > 0) {  // Switch: alpha E sum_e f_e P_e, P_e = mean_t p_te
    double s = 0;
    for (int t = 0; t < B; ++t)
      for (int e = 0; e < E; ++e) s += double(A.f[size_t(e)]) * p[size_t(t) * E + e];
    m_stats.auxLoss += m_shape.auxLoss * E * s / T;
  }
}

// [SECTION] Forward
void Moe::blockForward(int l, int B, bool train, ExpertExchange& ex) {
  const Compute& c = *m_compute;
  Block& b = m_blocks[size_t(l)];
  BlockActs& A = m_acts.blocks[size_t(l)];
  const int H = m_shape.hidden, E = m_shape.experts;
  const bool gpu = onGpu();
  const float* in = m_acts.a[size_t(l)].data();
  float* out = m_acts.a[size_t(l) + 1].data();
  if (B > 0) {
    b.ln.forward(in, A.ln.data(), A.mean.data(), A.rstd.data(), B);
    b.router.forward(A.ln.data(), A.probs.data(), B);  // the logits
  }
  if (gpu) {  // the logits to the host (this waits for the stream): routing is made there
    A.probsHost.resize(size_t(B) * E);
    c.download(A.probsHost.data(), A.probs.data(), int64_t(B) * E);
  }
  float* p = hostProbs(A);
  if (B > 0) softmax_rows(p, p, B, E);
  routeAndPlan(l, B, train, ex);
  if (gpu) uploadPlan(A);
  const int* tok = onDevice(A.sendTok, A.tokDev, gpu);
  const float* gate = onDevice(A.sendGate, A.gateDev, gpu);
  const int* perm = onDevice(A.perm, A.permDev, gpu);
  const int* unperm = onDevice(A.unperm, A.unpermDev, gpu);
  const long S = long(A.sendTok.size());
  long R = 0;
  for (int n : A.expertRows) R += n;
  const bool local = m_place.shards == 1;  // every expert here: rows need not travel
  grow(A.xin, R, H, MemCategory::Activations);
  grow(A.h, R, 4 * H, MemCategory::Activations);
  grow(A.g, R, 4 * H, MemCategory::Activations);
  grow(A.ycomb, S, H, MemCategory::Activations);
  for (Tensor* t : {&m_acts.send, &m_acts.recv, &m_acts.rows})
    grow(*t, std::max(S, R), H, MemCategory::Workspace);
  if (local) {
    c.gatherRows(A.xin.data(), A.ln.data(), tok, S, H);
  } else {  // dispatch: my token rows to the experts' ranks
    c.gatherRows(m_acts.send.data(), A.ln.data(), tok, S, H);
    ex.exchangeRows(m_acts.send.data(), A.sendRows, m_acts.recv.data(), A.recvRows, H);
    c.gatherRows(A.xin.data(), m_acts.recv.data(), perm, R, H);
  }
  float* y = local ? A.ycomb.data() : m_acts.rows.data();
  long off = 0;
  for (size_t i = 0; i < A.expertRows.size(); ++i) {
    const int n = A.expertRows[i];
    if (n == 0) continue;
    Expert& x = b.experts[i];
    x.fc1.forward(A.xin.data() + off * H, A.h.data() + off * 4 * H, n);
    c.gelu(A.g.data() + off * 4 * H, A.h.data() + off * 4 * H, long(n) * 4 * H);
    x.fc2.forward(A.g.data() + off * 4 * H, y + off * H, n);
    off += n;
  }
  if (!local) {  // combine: the outputs back to their tokens' ranks
    c.gatherRows(m_acts.recv.data(), y, unperm, R, H);
    ex.exchangeRows(m_acts.recv.data(), A.recvRows, A.ycomb.data(), A.sendRows, H);
  }
  c.copy(out, in, int64_t(B) * H);  // x + sum_j gate_j expert_j(LN(x))
  c.scatterAddRows(out, A.ycomb.data(), tok, gate, S, H);
}

void Moe::forwardTo(const float* x, int batch, bool train, UnitHooks* hooks, ExpertExchange& ex) {
  ensureCapacity(batch);
  const int last = numUnits() - 1, L = m_shape.layers;
  if (train) m_stats = MoeStats{std::vector<int64_t>(size_t(L) * m_shape.experts, 0)};
  m_compute->upload(m_acts.x.data(), x, int64_t(batch) * m_shape.input);
  if (hooks) hooks->beforeForward(0);
  if (batch > 0) m_in.forward(m_acts.x.data(), m_acts.a[0].data(), batch);
  if (hooks) hooks->afterForward(0);
  for (int l = 0; l < L; ++l) {
    if (hooks) hooks->beforeForward(l + 1);
    blockForward(l, batch, train, ex);
    if (hooks) hooks->afterForward(l + 1);
  }
  if (hooks) hooks->beforeForward(last);
  if (batch > 0) m_cls.forward(m_acts.a[size_t(L)].data(), m_acts.logits.data(), batch);
  if (hooks) hooks->afterForward(last);
}

static ExpertExchange& orLocal(ExpertExchange* ex, const ExpertPlacement& place) {
  static thread_local LocalExchange local;
  if (ex) return *ex;
  if (place.shards != 1) throw std::logic_error("moe: a sharded model needs an ExpertExchange");
  return local;
}

double Moe::forwardLoss(const float* x, const int* labels, int batch, double normalizer,
                        UnitHooks* hooks, ExpertExchange* exchange) {
  forwardTo(x, batch, true, hooks, orLocal(exchange, m_place));
  m_batch = batch;
  return m_compute->softmaxXent(m_acts.dlogits.data(), m_acts.logits.data(),
                                labelsHere(labels, batch), batch, m_shape.classes, normalizer);
}

int Moe::countCorrect(const float* x, const int* labels, int batch, UnitHooks* hooks,
                      ExpertExchange* exchange) {
  forwardTo(x, batch, false, hooks, orLocal(exchange, m_place));
  if (batch == 0) return 0;
  return m_compute->countCorrect(m_acts.logits.data(), labelsHere(labels, batch), batch,
                                 m_shape.classes, m_acts.dlogits.data());
}

// [SECTION] Backward. `da` holds dLoss/d(block output) on entry and dLoss/d(block input) on exit.
void Moe::blockBackward(int l, ExpertExchange& ex) {
  const Compute& c = *m_compute;
  Block& b = m_blocks[size_t(l)];
  BlockActs& A = m_acts.blocks[size_t(l)];
  const int B = m_batch, H = m_shape.hidden, E = m_shape.experts, K = m_shape.topk;
  const long S = long(A.sendTok.size());
  long R = 0;
  for (int n : A.expertRows) R += n;
  const bool local = m_place.shards == 1, gpu = onGpu();
  const int* tok = onDevice(A.sendTok, A.tokDev, gpu);
  const float* gate = onDevice(A.sendGate, A.gateDev, gpu);
  const int* perm = onDevice(A.perm, A.permDev, gpu);
  const int* unperm = onDevice(A.unperm, A.unpermDev, gpu);
  float* da = m_acts.da.data();
  // out[t] = x[t] + sum_s gate_s y_s: dgate_s = <da[t], y_s>, dy_s = gate_s da[t]. On a GPU
  // dgate is made on the device and copied back only when the router needs it.
  std::vector<float> dgate(static_cast<size_t>(S));
  if (gpu) grow(m_acts.dgate, S, 1, MemCategory::Workspace);
  float* dgateHere = gpu ? m_acts.dgate.data() : dgate.data();
  c.dotRows(dgateHere, da, tok, A.ycomb.data(), S, H);
  float* dsend = local ? m_acts.rows.data() : m_acts.send.data();
  c.gatherRows(dsend, da, tok, S, H);
  c.scaleRows(dsend, gate, S, H);
  float* dy = m_acts.rows.data();  // expert-major output gradients
  if (!local) {                    // dispatch the output gradients to the experts' ranks
    ex.exchangeRows(dsend, A.sendRows, m_acts.recv.data(), A.recvRows, H);
    c.gatherRows(dy, m_acts.recv.data(), perm, R, H);
  }
  grow(m_acts.wide, R, 4 * H, MemCategory::Workspace);
  float* dg = m_acts.wide.data();
  float* dx = m_acts.recv.data();  // expert-major input gradients
  long off = 0;
  for (size_t i = 0; i < A.expertRows.size(); ++i) {
    const int n = A.expertRows[i];
    if (n == 0) continue;
    Expert& x = b.experts[i];
    x.fc2.backward(A.g.data() + off * 4 * H, dy + off * H, dg + off * 4 * H, n);
    c.geluBackward(dg + off * 4 * H, A.h.data() + off * 4 * H, dg + off * 4 * H, long(n) * 4 * H);
    x.fc1.backward(A.xin.data() + off * H, dg + off * 4 * H, dx + off * H, n);
    off += n;
  }
  const float* dmine = dx;  // input gradients of my sent rows, in send order
  if (!local) {             // combine: the input gradients back to their tokens' ranks
    c.gatherRows(m_acts.send.data(), dx, unperm, R, H);
    ex.exchangeRows(m_acts.send.data(), A.recvRows, m_acts.rows.data(), A.sendRows, H);
    dmine = m_acts.rows.data();
  }
  float* dln = m_acts.dln.data();
  c.zero(dln, int64_t(B) * H);
  c.scatterAddRows(dln, dmine, tok, nullptr, S, H);
  // Gates -> router probabilities, on the host ([B, E]); dropped choices have dgate = 0 (but
  // stay in k > 1's Z). On a GPU: dgate comes back (this waits for the stream), dprobs goes up.
  if (gpu) c.download(dgate.data(), dgateHere, S);
  std::vector<float> dslot(size_t(B) * K, 0.f);
  for (long s = 0; s < S; ++s) dslot[size_t(A.sendSlot[size_t(s)])] = dgate[size_t(s)];
  const float* p = hostProbs(A);
  if (gpu) m_acts.dprobsHost.resize(size_t(B) * E);
  float* dp = gpu ? m_acts.dprobsHost.data() : m_acts.dprobs.data();
  std::fill(dp, dp + size_t(B) * E, 0.f);
  topk_gates_backward(dp, p, A.route.choice.data(), A.route.gate.data(), dslot.data(), B, E, K);
  if (m_shape.auxLoss > 0 && A.tokens > 0)  // d(alpha E sum_e f_e P_e)/dp_te = alpha E f_e / T
    for (int t = 0; t < B; ++t)
      for (int e = 0; e < E; ++e)
        dp[size_t(t) * E + e] += float(m_shape.auxLoss * E * A.f[size_t(e)] / A.tokens);
  softmax_rows_backward(dp, p, dp, B, E);
  c.upload(m_acts.dprobs.data(), dp, int64_t(B) * E);  // the CPU: the same buffer, no copy
  b.router.backward(A.ln.data(), m_acts.dprobs.data(), m_acts.dtmp.data(), B);
  c.residualAdd(dln, m_acts.dtmp.data(), long(B) * H);
  b.ln.backward(m_acts.a[size_t(l)].data(), A.mean.data(), A.rstd.data(), dln, dln, B);
  c.residualAdd(da, dln, long(B) * H);  // the residual passes da through
}

void Moe::backward(UnitHooks* hooks, ExpertExchange* exchange) {
  ExpertExchange& ex = orLocal(exchange, m_place);
  const int B = m_batch, L = m_shape.layers;
  if (hooks) hooks->beforeBackward(L + 1);
  m_cls.backward(m_acts.a[size_t(L)].data(), m_acts.dlogits.data(), m_acts.da.data(), B);
  if (hooks) hooks->afterBackward(L + 1);
  for (int l = L - 1; l >= 0; --l) {
    if (hooks) hooks->beforeBackward(l + 1);
    blockBackward(l, ex);
    if (hooks) hooks->afterBackward(l + 1);
  }
  if (hooks) hooks->beforeBackward(0);
  m_in.backward(m_acts.x.data(), m_acts.da.data(), nullptr, B);
  if (hooks) hooks->afterBackward(0);
}

}  // namespace paralab
