// Optimizer state and dispatch to the update kernels (see optimizer.h).
#include "optim/optimizer.h"

#include <algorithm>
#include <stdexcept>

#include "device/compute.h"
#include "train/precision.h"

namespace paralab {

OptimizerKind optimizerKind(const std::string& name) {
  if (name == "sgd") return OptimizerKind::Sgd;
  if (name == "momentum") return OptimizerKind::Momentum;
  if (name == "adam") return OptimizerKind::Adam;
  throw std::invalid_argument("optimizer: '" + name + "' is not one of sgd, momentum, adam");
}

Optimizer::Optimizer(OptimizerKind kind, const OptimizerHyper& hyper, int64_t numel,
                     MemoryTracker* tracker, const Compute* compute)
    : m_compute(compute ? compute : &Compute::host()),
      m_kind(kind),
      m_hyper(hyper),
      m_numel(numel) {
  if (kind != OptimizerKind::Sgd) m_m = m_compute->tensor({numel}, MemCategory::Optimizer, tracker);
  if (kind == OptimizerKind::Adam)
    m_v = m_compute->tensor({numel}, MemCategory::Optimizer, tracker);
  if (sixteenBit(hyper.stored)) m_master = m_compute->tensor({numel}, MemCategory::Master, tracker);
}

void Optimizer::step(float* params, const float* grads) {
  float* const stored = params;
  if (!m_master.empty()) {
    currentMaster(stored);
    params = m_master.data();
  }
  update(params, grads);
  if (!m_master.empty()) {  // the layers read the 16-bit values, rounded on this device
    m_compute->copy(stored, params, m_numel);
    roundStored(*m_compute, m_hyper.stored, stored, m_numel);
  }
}

const float* Optimizer::currentMaster(const float* params) {
  if (m_master.empty()) return nullptr;
  if (!m_masterTaken) m_compute->copy(m_master.data(), params, m_numel);
  m_masterTaken = true;
  return m_master.data();
}

void Optimizer::loadMaster(const float* host, int64_t count) {
  if (m_master.empty()) return;
  m_master.zero();
  if (count > 0) m_compute->upload(m_master.data(), host, std::min(count, m_numel));
  m_masterTaken = true;
}

void Optimizer::update(float* params, const float* grads) {
  ++m_t;
  switch (m_kind) {
    case OptimizerKind::Sgd:
      m_compute->sgd(params, grads, m_numel, m_hyper.lr);
      break;
    case OptimizerKind::Momentum:
      m_compute->momentum(params, m_m.data(), grads, m_numel, m_hyper.lr, m_hyper.momentum);
      break;
    case OptimizerKind::Adam:
      m_compute->adam(params, m_m.data(), m_v.data(), grads, m_numel, m_hyper.lr, m_hyper.beta1,
                      m_hyper.beta2, m_hyper.eps, m_t);
      break;
  }
}

}  // namespace paralab
