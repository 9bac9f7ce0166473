// Flat parameter and gradient buffers (see param_set.h).
#include "model/param_set.h"

#include <stdexcept>

namespace paralab {

int ParamSet::add(std::string name, Shape shape) {
  if (!m_params.empty()) throw std::logic_error("ParamSet::add after allocate");
  ParamRef r{std::move(name), m_numel, std::move(shape)};
  m_numel += r.numel();
  m_refs.push_back(std::move(r));
  return int(m_refs.size()) - 1;
}

void ParamSet::allocate(MemoryTracker* tracker) {
  m_params = Tensor({m_numel}, MemCategory::Params, tracker);
  m_grads = Tensor({m_numel}, MemCategory::Grads, tracker);
}

}  // namespace paralab
