// One block's MoE FFN, forward and backward (see moe_ffn.h): routing, capacity, the rows each
// expert runs, and the gradients back through the gates into the router.
// Where it runs: everything heavy goes through the model's Compute — the router's and the
// experts' GEMMs, the row gathers and gate-weighted scatter-adds, the all-to-alls of device
// rows. The routing decisions (softmax, top-k, capacity, which row goes where) are small ([N, E]
// numbers) and branchy, so they are made on the host, as on the CPU: on a GPU the router's
// logits come back to the host, the plan is made there and its index arrays and gates go up;
// backward brings the gates' gradients back, makes the router's [N, E] gradient on the host and
// uploads it. A few KB each way per block, and the same routing code on both devices.
#include "model/moe_ffn.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>

#include "cpu/moe.h"
#include "device/compute.h"
#include "rng.h"

namespace paralab {

using namespace kernels;

int64_t MoeFfnShape::expertParameterCount() const {
  const int64_t H = hidden;
  return H * 4 * H + 4 * H + 4 * H * H + H;
}

int64_t MoeFfnShape::parameterCount() const {
  return int64_t(hidden) * experts + experts /*router*/ + experts * expertParameterCount();
}

void MoeParts::findRanges(const ParamSet& ps) {
  expertRanges.clear();
  denseRanges.clear();
  for (const ParamRef& r : ps.refs()) {
    auto& ranges = r.name.find(".expert") != std::string::npos ? expertRanges : denseRanges;
    if (!ranges.empty() && ranges.back().second == r.offset)
      ranges.back().second += r.numel();
    else
      ranges.push_back({r.offset, r.offset + r.numel()});
  }
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

uint64_t expertSeed(uint64_t seed, int block, int expert) {
  Rng mix(seed ^ (0xD1B54A32D192ED03ull * uint64_t(1 + block * 4096 + expert)));
  return mix.next();
}

// Grows `t` to hold rows x cols floats (at least one row), with headroom: routing varies step
// to step.
void grow(const Compute& c, Tensor& t, int64_t rows, int64_t cols, MemCategory category,
          MemoryTracker* tracker) {
  const int64_t need = std::max<int64_t>(1, rows) * cols;
  if (t.numel() >= need) return;
  t = Tensor();  // free first: the peak stays honest
  t = c.tensor({need + need / 4}, category, tracker);
}

// The plan's arrays where the row kernels read them: the host vectors on the CPU, their device
// copies (MoeFfn::uploadPlan) on a GPU.
const int* onDevice(const std::vector<int>& host, Tensor& dev, bool gpu) {
  return gpu ? reinterpret_cast<const int*>(dev.data()) : host.data();
}
const float* onDevice(const std::vector<float>& host, Tensor& dev, bool gpu) {
  return gpu ? dev.data() : host.data();
}

}  // namespace

MoeFfn::MoeFfn(ParamSet& ps, const std::string& name, MoeParts& parts, int block)
    : m_ps(&ps),
      m_parts(&parts),
      m_block(block),
      m_router(ps, name + ".router", parts.shape.hidden, parts.shape.experts) {
  const ExpertPlacement& p = parts.placement;
  if (p.shards < 1 || p.shard < 0 || p.shard >= p.shards || parts.shape.experts % p.shards != 0)
    throw std::invalid_argument("moe: the experts must split evenly over the ranks");
  const int H = parts.shape.hidden;
  for (int e = parts.firstExpert(); e < parts.firstExpert() + parts.localExperts(); ++e) {
    const std::string x = name + ".expert" + std::to_string(e);
    m_experts.push_back({Linear(ps, x + ".fc1", H, 4 * H), Linear(ps, x + ".fc2", 4 * H, H)});
  }
}

void MoeFfn::init(Rng& rng, uint64_t seed) {
  m_router.init(rng);
  for (size_t i = 0; i < m_experts.size(); ++i) {
    Rng er(expertSeed(seed, m_block, m_parts->firstExpert() + int(i)));
    m_experts[i].fc1.init(er);
    m_experts[i].fc2.init(er);
  }
}

bool MoeFfn::onGpu() const { return compute().onGpu(); }

ExpertExchange& MoeFfn::exchange() {
  static thread_local LocalExchange local;
  if (m_parts->exchange) return *m_parts->exchange;
  if (m_parts->placement.shards != 1)
    throw std::logic_error("moe: a sharded model needs an ExpertExchange");
  return local;
}

long MoeFfn::receivedRows() const {
  long R = 0;
  for (int n : m_acts.expertRows) R += n;
  return R;
}

void MoeFfn::uploadPlan(MemoryTracker* tracker) {
  static_assert(sizeof(int) == sizeof(float));  // index arrays ride in float tensors' bytes
  Acts& A = m_acts;
  const Compute& c = compute();
  const int64_t S = int64_t(A.sendTok.size()), R = int64_t(A.perm.size());
  grow(c, A.tokDev, S, 1, MemCategory::Activations, tracker);
  grow(c, A.gateDev, S, 1, MemCategory::Activations, tracker);
  grow(c, A.permDev, R, 1, MemCategory::Activations, tracker);
  grow(c, A.unpermDev, R, 1, MemCategory::Activations, tracker);
  // From pageable host memory: each copy has read its source when it returns (cuda/runtime.h).
  c.uploadInts(reinterpret_cast<int*>(A.tokDev.data()), A.sendTok.data(), S);
  c.upload(A.gateDev.data(), A.sendGate.data(), S);
  c.uploadInts(reinterpret_cast<int*>(A.permDev.data()), A.perm.data(), R);
  c.uploadInts(reinterpret_cast<int*>(A.unpermDev.data()), A.unperm.data(), R);
}

// [SECTION] Routing: top-k, gates, capacity, and who sends how many rows to whom.
void MoeFfn::routeAndPlan(int N, bool train, ExpertExchange& ex) {
  Acts& A = m_acts;
  BlockRouting& r = A.route;
  const MoeFfnShape& shape = m_parts->shape;
  const ExpertTopology& topo = ex.topology();
  const int E = shape.experts, K = shape.topk, G = m_parts->placement.shards;
  const int El = m_parts->localExperts(), first = m_parts->firstExpert();
  const int D = topo.tokenRanks, me = topo.tokenRank;
  const float* p = hostProbs();
  r.choice.assign(size_t(N) * K, 0);
  r.gate.assign(size_t(N) * K, 0.f);
  r.kept.assign(size_t(N) * K, 1);
  if (N > 0) {
    topk_rows(r.choice.data(), p, N, E, K);
    topk_gates(r.gate.data(), p, r.choice.data(), N, E, K);  // before any capacity drop
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
  const long C = train ? long(std::ceil(shape.capacityFactor * T * K / E)) : LONG_MAX;
  r.capacity = train ? C : 0;
  const long dropped = capacity_drop(r.kept.data(), r.choice.data(), N, K, all.data(), D, me, E, C);
  // Sent rows in expert order (so in EP-member order), then choice, then token.
  std::vector<long> perExpert(size_t(E), 0);
  const size_t S = r.kept.size() - size_t(dropped);
  A.sendTok.resize(S);
  A.sendSlot.resize(S);
  A.sendGate.resize(S);
  dispatch_order(A.sendTok.data(), A.sendSlot.data(), perExpert.data(), r.choice.data(),
                 r.kept.data(), N, K, E);
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
        from[size_t(q) * El + i] +=
            capacity_kept(all.data(), D, K, E, topo.epTokenRanks[size_t(q)], j, first + i, C);
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
  MoeStats& st = m_parts->stats;
  for (size_t i = 0; i < mine.size(); ++i) st.routed[size_t(m_block) * E + i % E] += int64_t(mine[i]);
  st.dropped += dropped;
  for (int n : A.expertRows) st.processed += n;
  if (shape.auxLoss > 0 && T > 0) {  // Switch: alpha E sum_e f_e P_e, P_e = mean_t p_te
    double s = 0;
    for (int t = 0; t < N; ++t)
      for (int e = 0; e < E; ++e) s += double(A.f[size_t(e)]) * p[size_t(t) * E + e];
    st.auxLoss += shape.auxLoss * E * s / T;
  }
}

void MoeFfn::stored(float* values, int64_t n) const {
  if (m_stored == Dtype::Bf16 || m_stored == Dtype::Fp16)  // on the layer's device
    compute().roundHalf(values, n, m_stored == Dtype::Fp16);
}

// [SECTION] Forward
void MoeFfn::forward(const float* x, float* out, int N, bool train, MemoryTracker* tracker) {
  const Compute& c = compute();
  Acts& A = m_acts;
  MoeParts::Workspace& w = m_parts->work;
  ExpertExchange& ex = exchange();
  const int H = m_parts->shape.hidden, E = m_parts->shape.experts;
  const bool gpu = onGpu();
  A.N = N;
  {
    Fp32Allocations wide(tracker);  // the router's softmax stays fp32 under mixed precision
    grow(c, A.probs, N, E, MemCategory::Activations, tracker);
  }
  if (N > 0) m_router.forward(x, A.probs.data(), N);  // the logits
  if (gpu) {  // the logits to the host (this waits for the stream): routing is made there
    A.probsHost.resize(size_t(N) * E);
    c.download(A.probsHost.data(), A.probs.data(), int64_t(N) * E);
  }
  float* p = hostProbs();
  if (N > 0) softmax_rows(p, p, N, E);
  routeAndPlan(N, train, ex);
  if (gpu) uploadPlan(tracker);
  const int* tok = onDevice(A.sendTok, A.tokDev, gpu);
  const float* gate = onDevice(A.sendGate, A.gateDev, gpu);
  const int* perm = onDevice(A.perm, A.permDev, gpu);
  const int* unperm = onDevice(A.unperm, A.unpermDev, gpu);
  const long S = long(A.sendTok.size()), R = receivedRows();
  const bool local = m_parts->placement.shards == 1;  // every expert here: rows need not travel
  grow(c, A.xin, R, H, MemCategory::Activations, tracker);
  grow(c, A.h, R, 4 * H, MemCategory::Activations, tracker);
  grow(c, A.g, R, 4 * H, MemCategory::Activations, tracker);
  grow(c, A.ycomb, S, H, MemCategory::Activations, tracker);
  for (Tensor* t : {&w.send, &w.recv, &w.rows})
    grow(c, *t, std::max(S, R), H, MemCategory::Workspace, tracker);
  if (local) {
    c.gatherRows(A.xin.data(), x, tok, S, H);
  } else {  // dispatch: my token rows to the experts' ranks
    c.gatherRows(w.send.data(), x, tok, S, H);
    ex.exchangeRows(w.send.data(), A.sendRows, w.recv.data(), A.recvRows, H);
    c.gatherRows(A.xin.data(), w.recv.data(), perm, R, H);
  }
  float* y = local ? A.ycomb.data() : w.rows.data();
  long off = 0;
  for (size_t i = 0; i < A.expertRows.size(); ++i) {
    const int n = A.expertRows[i];
    if (n == 0) continue;
    Expert& e = m_experts[i];
    e.fc1.forward(A.xin.data() + off * H, A.h.data() + off * 4 * H, n);
    stored(A.h.data() + off * 4 * H, int64_t(n) * 4 * H);
    c.gelu(A.g.data() + off * 4 * H, A.h.data() + off * 4 * H, long(n) * 4 * H);
    stored(A.g.data() + off * 4 * H, int64_t(n) * 4 * H);
    e.fc2.forward(A.g.data() + off * 4 * H, y + off * H, n);
    stored(y + off * H, int64_t(n) * H);  // kept (ycomb) for the gates' gradients
    off += n;
  }
  if (!local) {  // combine: the outputs back to their tokens' ranks
    c.gatherRows(w.recv.data(), y, unperm, R, H);
    ex.exchangeRows(w.recv.data(), A.recvRows, A.ycomb.data(), A.sendRows, H);
  }
  c.scatterAddRows(out, A.ycomb.data(), tok, gate, S, H);  // out += sum_j gate_j expert_j(x)
}

// [SECTION] Backward
void MoeFfn::backward(const float* x, const float* dout, float* dx, MemoryTracker* tracker) {
  const Compute& c = compute();
  Acts& A = m_acts;
  MoeParts::Workspace& w = m_parts->work;
  ExpertExchange& ex = exchange();
  const MoeFfnShape& shape = m_parts->shape;
  const int N = A.N, H = shape.hidden, E = shape.experts, K = shape.topk;
  const long S = long(A.sendTok.size()), R = receivedRows();
  const bool local = m_parts->placement.shards == 1, gpu = onGpu();
  const int* tok = onDevice(A.sendTok, A.tokDev, gpu);
  const float* gate = onDevice(A.sendGate, A.gateDev, gpu);
  const int* perm = onDevice(A.perm, A.permDev, gpu);
  const int* unperm = onDevice(A.unperm, A.unpermDev, gpu);
  grow(c, w.dtmp, N, H, MemCategory::Workspace, tracker);
  grow(c, w.dprobs, N, E, MemCategory::Workspace, tracker);
  // out[t] += sum_s gate_s y_s: dgate_s = <dout[t], y_s>, dy_s = gate_s dout[t]. On a GPU
  // dgate is made on the device and copied back only when the router needs it.
  std::vector<float> dgate(static_cast<size_t>(S));
  if (gpu) grow(c, w.dgate, S, 1, MemCategory::Workspace, tracker);
  float* dgateHere = gpu ? w.dgate.data() : dgate.data();
  c.dotRows(dgateHere, dout, tok, A.ycomb.data(), S, H);
  float* dsend = local ? w.rows.data() : w.send.data();
  c.gatherRows(dsend, dout, tok, S, H);
  c.scaleRows(dsend, gate, S, H);
  float* dy = w.rows.data();  // expert-major output gradients
  if (!local) {               // dispatch the output gradients to the experts' ranks
    ex.exchangeRows(dsend, A.sendRows, w.recv.data(), A.recvRows, H);
    c.gatherRows(dy, w.recv.data(), perm, R, H);
  }
  grow(c, w.wide, R, 4 * H, MemCategory::Workspace, tracker);
  float* dg = w.wide.data();
  float* dxin = w.recv.data();  // expert-major input gradients
  long off = 0;
  for (size_t i = 0; i < A.expertRows.size(); ++i) {
    const int n = A.expertRows[i];
    if (n == 0) continue;
    Expert& e = m_experts[i];
    e.fc2.backward(A.g.data() + off * 4 * H, dy + off * H, dg + off * 4 * H, n);
    c.geluBackward(dg + off * 4 * H, A.h.data() + off * 4 * H, dg + off * 4 * H, long(n) * 4 * H);
    e.fc1.backward(A.xin.data() + off * H, dg + off * 4 * H, dxin + off * H, n);
    off += n;
  }
  const float* dmine = dxin;  // input gradients of my sent rows, in send order
  if (!local) {               // combine: the input gradients back to their tokens' ranks
    c.gatherRows(w.send.data(), dxin, unperm, R, H);
    ex.exchangeRows(w.send.data(), A.recvRows, w.rows.data(), A.sendRows, H);
    dmine = w.rows.data();
  }
  c.zero(dx, int64_t(N) * H);
  c.scatterAddRows(dx, dmine, tok, nullptr, S, H);
  // Gates -> router logits, on the host ([N, E]); dropped choices have dgate = 0 (but stay in
  // k > 1's Z). On a GPU: dgate comes back (this waits for the stream), dprobs goes up.
  if (gpu) c.download(dgate.data(), dgateHere, S);
  std::vector<float> dslot(size_t(N) * K, 0.f);
  for (long s = 0; s < S; ++s) dslot[size_t(A.sendSlot[size_t(s)])] = dgate[size_t(s)];
  const float* p = hostProbs();
  if (gpu) w.dprobsHost.resize(size_t(N) * E);
  float* dp = gpu ? w.dprobsHost.data() : w.dprobs.data();  // the logits' gradient
  std::fill(dp, dp + size_t(N) * E, 0.f);
  topk_gates_backward(dp, p, A.route.choice.data(), A.route.gate.data(), dslot.data(), N, E, K);
  if (shape.auxLoss > 0 && A.tokens > 0) {  // d(alpha E sum_e f_e P_e)/dp_te = alpha E f_e / T
    std::vector<float> aux(size_t(N) * E);
    for (int t = 0; t < N; ++t)
      for (int e = 0; e < E; ++e)
        aux[size_t(t) * E + e] = float(shape.auxLoss * E * A.f[size_t(e)] / A.tokens);
    softmax_rows_backward(aux.data(), p, aux.data(), N, E);  // through the softmax to the logits
    for (size_t i = 0; i < aux.size(); ++i) dp[i] += aux[i];
  }
  c.upload(w.dprobs.data(), dp, int64_t(N) * E);  // the CPU: the same buffer, no copy
  m_router.backward(x, w.dprobs.data(), w.dtmp.data(), N);
  c.residualAdd(dx, w.dtmp.data(), long(N) * H);
}

}  // namespace paralab
