// GradSync's state outside a step (see grad_sync.h): gathering everything for evaluation, the
// parameters and optimizer state (and mixed precision's fp32 master) to and from the serial
// layout for checkpoints and live reconfiguration, and what this rank holds for the holdings map.
// See tests/engine/tst_checkpoint.cpp, tst_precision_checkpoint.cpp, tst_hsdp.cpp and
// tst_holdings.cpp.
#include <algorithm>
#include <stdexcept>

#include "comm/communicator.h"
#include "parallel/data/grad_sync.h"
#include "train/precision.h"

namespace paralab {

// [SECTION] Evaluation and live reconfiguration

void GradSync::gatherAll() {
  if (!m_zero.shardsParameters) return;
  m_evalParams = m_compute.tensor({m_layout.paddedNumel}, MemCategory::Comm, m_memory);
  m_compute.sync();
  for (const ZeroLayout::Unit& u : m_layout.units) {
    allGather(u, ownedParams(u), m_evalParams.data() + u.paddedBegin);
    m_ps.bindRange(u.begin, u.begin + u.len, m_evalParams.data() + u.paddedBegin, nullptr);
  }
}

void GradSync::releaseAll() {
  if (!m_zero.shardsParameters) return;
  for (int m = 0; m < int(m_ps.units().size()); ++m) bindResting(m);
  m_evalParams = Tensor();
}

std::vector<float> GradSync::hostParams() {
  std::vector<float> host(size_t(m_layout.numel));
  if (!m_zero.shardsAnything()) {
    m_compute.download(host.data(), m_ps.params().data(), m_layout.numel);
    return host;
  }
  Tensor full;  // sharded parameters: gathered here (Comm)
  if (m_zero.shardsParameters)
    full = m_compute.tensor({m_layout.paddedNumel}, MemCategory::Comm, m_memory);
  m_compute.sync();
  for (const ZeroLayout::Unit& u : m_layout.units) {
    const float* at = m_params.data() + u.paddedBegin;
    if (m_zero.shardsParameters) {
      allGather(u, ownedParams(u), full.data() + u.paddedBegin);
      at = full.data() + u.paddedBegin;
    }
    m_compute.download(host.data() + u.begin, at, u.len);
  }
  return host;
}

std::vector<float> GradSync::hostMoment(int k) {
  if (!moment(0, k)) return {};
  std::vector<float> host(size_t(m_layout.numel));
  if (!m_zero.shardsAnything()) {
    m_compute.download(host.data(), moment(0, k), m_layout.numel);
    return host;
  }
  // Each rank's chunk of each unit, all-gathered on the device and copied back.
  Tensor full = m_compute.tensor({m_layout.paddedNumel}, MemCategory::Comm, m_memory);
  m_compute.sync();
  for (size_t i = 0; i < m_layout.units.size(); ++i) {
    const ZeroLayout::Unit& u = m_layout.units[i];
    allGather(u, moment(i, k), full.data() + u.paddedBegin);
    m_compute.download(host.data() + u.begin, full.data() + u.paddedBegin, u.len);
  }
  return host;
}

void GradSync::sumToRoot(Communicator& world, const std::vector<float>& local,
                         const ToSerial& toSerial, Tensor& sum) {
  std::vector<float> serial(size_t(sum.numel()), 0.f);
  toSerial(local, serial);
  m_compute.upload(sum.data(), serial.data(), sum.numel());
  m_compute.sync();
  world.reduce(sum.data(), sum.data(), sum.numel(), 0, ReduceOp::Sum, device());
}

void GradSync::save(TrainingState& state, Communicator& world, int64_t serial,
                    const ToSerial& toSerial) {
  const bool root = world.rank() == 0;
  Tensor sum = m_compute.tensor({serial}, MemCategory::Comm, m_memory);
  auto toRoot = [&](const std::vector<float>& local, std::vector<float>& out) {
    sumToRoot(world, local, toSerial, sum);
    if (!root) return;
    out.resize(size_t(serial));
    m_compute.download(out.data(), sum.data(), serial);
  };
  // HSDP: one replica's shards are the whole model. Only the first node's ranks gather them; the
  // other nodes' ranks, replicas of the same chunks, give zeros (`toSerial` keeps what world
  // rank 0, in the first node, gives).
  const bool mine = firstReplica();
  const auto nothing = [&] { return std::vector<float>(size_t(m_layout.numel), 0.f); };
  toRoot(mine ? hostParams() : nothing(), state.params);
  std::vector<float>* to[3] = {&state.optM, &state.optV, &state.master};
  for (int k = 0; k < 3; ++k)
    if (moment(0, k))  // only the first replica gathers (hostMoment is collective in its node)
      toRoot(mine ? hostMoment(k) : nothing(), *to[size_t(k)]);
  if (root) state.optimizerSteps = m_opts.front()->steps();
}

void GradSync::load(const TrainingState& state, int64_t serial, const FromSerial& fromSerial) {
  if (int64_t(state.params.size()) != serial)
    throw std::runtime_error("the saved state holds " + std::to_string(state.params.size()) +
                             " parameters, this model " + std::to_string(serial));
  const int64_t P = m_layout.numel;
  // Parameters, moment 1, moment 2, master, laid out like the flat buffer. An fp32 run takes
  // a saved master as its parameters.
  const bool master = int64_t(state.master.size()) == serial;
  std::vector<float> local[4];
  const std::vector<float>* from[4] = {
      master && !sixteenBit(m_settings.precision) ? &state.master : &state.params, &state.optM,
      &state.optV, &state.master};
  for (int k = 0; k < 4; ++k)
    if (int64_t(from[k]->size()) == serial) {
      local[k].resize(size_t(P));
      fromSerial(*from[k], local[k]);
    }
  if (!m_zero.shardsAnything()) {
    m_compute.upload(m_ps.params().data(), local[0].data(), P);
    for (int k = 0; k < 2; ++k)
      if (moment(0, k) && !local[k + 1].empty())
        m_compute.upload(moment(0, k), local[k + 1].data(), P);
    if (master) m_opts.front()->loadMaster(local[3].data(), P);
  }
  for (size_t i = 0; m_zero.shardsAnything() && i < m_layout.units.size(); ++i) {
    const ZeroLayout::Unit& u = m_layout.units[i];
    // This rank's chunk of the unit: its real floats (the padded tail stays zero).
    const int64_t at = ownedFrom(u), n = std::clamp<int64_t>(u.len - at, 0, u.chunk);
    auto take = [&](const std::vector<float>& src, float* dst) {
      if (dst && !src.empty() && n > 0) m_compute.upload(dst, src.data() + u.begin + at, n);
    };
    if (!m_zero.shardsParameters)
      m_compute.upload(m_params.data() + u.paddedBegin, local[0].data() + u.begin, u.len);
    else
      take(local[0], ownedParams(u));
    for (int k = 0; k < 2; ++k) take(local[k + 1], moment(i, k));
    if (master) m_opts[i]->loadMaster(n > 0 ? local[3].data() + u.begin + at : nullptr, n);
  }
  m_compute.sync();  // the host vectors go when this returns
  for (auto& opt : m_opts) {
    opt->setSteps(state.optimizerSteps);
    if (!master) opt->retakeMaster();  // mixed precision: from the parameters just loaded
  }
}

// [SECTION] What this rank holds

void GradSync::addHoldings(std::vector<HeldSlice>& items,
                           const std::function<void(HoldingKind)>& tensors) const {
  // Mixed precision: the parameters in 16 bits, and an fp32 master copy beside the optimizer
  // state, whole or sharded as ZeRO shards that state (Megatron's distributed optimizer).
  const Dtype stored = m_settings.precision;
  const bool master = sixteenBit(stored);
  const auto asStored = [&](HeldSlice& s) {
    if (s.kind != HoldingKind::Params || !master) return;
    s.bytes = s.bytes / 4 * valueBytes(stored);
    s.dtype = stored;
  };
  const size_t before = items.size();
  if (!m_zero.shardsParameters) tensors(HoldingKind::Params);
  for (size_t i = before; i < items.size(); ++i) asStored(items[i]);
  if (!m_zero.shardsGradients) tensors(HoldingKind::Grads);
  const int slots = optimizerStateSlots(m_settings.optimizer);
  for (const ZeroLayout::Unit& u : m_layout.units) {
    const std::string name = u.name + " (flat)";
    if (!m_zero.shardsAnything()) {
      if (slots > 0)
        items.push_back(
            {name, HoldingKind::Optimizer, -1, 0, u.len, u.len, u.len, slots, u.len * slots * 4});
      if (master)
        items.push_back({name, HoldingKind::Master, -1, 0, u.len, u.len, u.len, 1, u.len * 4});
      continue;
    }
    const int64_t begin = std::min(u.len, ownedFrom(u)), end = std::min(u.len, begin + u.chunk);
    auto chunk = [&](HoldingKind k, int64_t cols) {
      items.push_back({name, k, 0, begin, end, u.len, u.chunk, cols, u.chunk * cols * 4});
      asStored(items.back());
    };
    if (m_zero.shardsParameters) chunk(HoldingKind::Params, 1);
    if (m_zero.shardsGradients) chunk(HoldingKind::Grads, 1);
    if (slots > 0) chunk(HoldingKind::Optimizer, slots);
    if (master) chunk(HoldingKind::Master, 1);
  }
}

}  // namespace paralab
