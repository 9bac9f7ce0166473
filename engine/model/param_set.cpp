// Flat parameter and gradient buffers, units and binding (see param_set.h).
#include "model/param_set.h"

#include <stdexcept>

#include "device/compute.h"

namespace paralab {

void ParamSet::beginUnit(std::string name) {
  if (!m_params.empty()) throw std::logic_error("ParamSet::beginUnit after allocate");
  m_units.push_back({std::move(name), m_numel, m_numel, int(m_refs.size()), int(m_refs.size())});
}

int ParamSet::add(std::string name, Shape shape) {
  if (!m_params.empty()) throw std::logic_error("ParamSet::add after allocate");
  if (m_units.empty()) beginUnit("params");
  ParamRef r{std::move(name), m_numel, std::move(shape), int(m_units.size()) - 1};
  m_numel += r.numel();
  m_refs.push_back(std::move(r));
  m_units.back().end = m_numel;
  m_units.back().endRef = int(m_refs.size());
  return int(m_refs.size()) - 1;
}

void ParamSet::allocate(MemoryTracker* tracker, const Compute* compute) {
  m_compute = compute ? compute : &Compute::host();
  m_params = m_compute->tensor({m_numel}, MemCategory::Params, tracker);
  m_grads = m_compute->tensor({m_numel}, MemCategory::Grads, tracker);
  bindFlat();
}

const Compute& ParamSet::compute() const { return m_compute ? *m_compute : Compute::host(); }

void ParamSet::releaseFlat() {
  m_params = Tensor();
  m_grads = Tensor();
  m_paramPtr.assign(m_refs.size(), nullptr);
  m_gradPtr.assign(m_refs.size(), nullptr);
}

void ParamSet::bindUnit(int u, float* params, float* grads) {
  const ParamUnit& unit = m_units.at(size_t(u));
  bindRange(unit.begin, unit.end, params, grads);
}

void ParamSet::bindRange(int64_t begin, int64_t end, float* params, float* grads) {
  for (size_t i = 0; i < m_refs.size(); ++i) {
    const ParamRef& r = m_refs[i];
    if (r.offset < begin || r.offset >= end) continue;
    if (r.offset + r.numel() > end) throw std::logic_error("ParamSet::bindRange cuts a weight");
    m_paramPtr[i] = params ? params + (r.offset - begin) : nullptr;
    m_gradPtr[i] = grads ? grads + (r.offset - begin) : nullptr;
  }
}

void ParamSet::bindFlat() {
  m_paramPtr.resize(m_refs.size());
  m_gradPtr.resize(m_refs.size());
  for (size_t u = 0; u < m_units.size(); ++u)
    bindUnit(int(u), m_params.data() ? m_params.data() + m_units[u].begin : nullptr,
             m_grads.data() ? m_grads.data() + m_units[u].begin : nullptr);
}

}  // namespace paralab
