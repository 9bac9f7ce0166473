// Mixed precision over several micro-batches (model_parallel.cpp): each micro-batch's weight
// gradients are rounded to 16 bits on their own, as a 16-bit GEMM writes them, and added to
// the fp32 sum of the earlier ones (Megatron's main_grad), never summed in 16 bits.
// See lessons/reference/precision.md; run: ctest -R tst_precision_model_parallel
#pragma once
#include <algorithm>
#include <vector>

#include "device/compute.h"
#include "model/model.h"

namespace paralab {

// Sits between MixedPrecision::Hooks (outside, which rounds the unit's gradients after its
// backward) and the gradient sync (`inner`). Before a unit's backward the sum so far moves to
// an fp32 stash (Workspace: the largest unit's gradients) and the gradients restart at zero;
// after it (once rounded) the stash is added back. The first backward of a unit in a step
// needs no stash: its gradients start at zero. Not for ZeRO-2/3, whose per-micro-batch
// buffers start at zero and whose sum is the owned shard's (grad_sync.h).
class MicroGradients final : public UnitHooks {
 public:
  MicroGradients(ParamSet& ps, Compute& compute, MemoryTracker* memory, UnitHooks* inner)
      : m_ps(ps),
        m_compute(compute),
        m_memory(memory),
        m_inner(inner),
        m_seen(ps.units().size(), 0) {}
  void beginStep() { std::fill(m_seen.begin(), m_seen.end(), 0); }
  void beforeForward(int u) override { m_inner->beforeForward(u); }
  void afterForward(int u) override { m_inner->afterForward(u); }
  void beforeBackward(int u) override {
    m_inner->beforeBackward(u);
    m_stashed = m_seen[size_t(u)]++ > 0;
    if (!m_stashed) return;
    const ParamUnit& unit = m_ps.units()[size_t(u)];
    if (m_stash.numel() < unit.numel()) {
      int64_t most = 0;
      for (const ParamUnit& x : m_ps.units()) most = std::max(most, x.numel());
      m_stash = Tensor();
      m_stash = m_compute.tensor({most}, MemCategory::Workspace, m_memory);
    }
    eachRef(unit, [&](float* grad, float* stash, int64_t n) {
      m_compute.copy(stash, grad, n);
      m_compute.zero(grad, n);
    });
  }
  void afterBackward(int u) override {
    if (m_stashed)
      eachRef(m_ps.units()[size_t(u)], [&](float* grad, float* stash, int64_t n) {
        m_compute.residualAdd(grad, stash, long(n));
      });
    m_stashed = false;
    m_inner->afterBackward(u);
  }

 private:
  template <class F>
  void eachRef(const ParamUnit& unit, F f) {
    int64_t at = 0;
    for (int i = unit.firstRef; i < unit.endRef; ++i) {
      const int64_t n = m_ps.ref(i).numel();
      f(m_ps.grad(i), m_stash.data() + at, n);
      at += n;
    }
  }
  ParamSet& m_ps;
  Compute& m_compute;
  MemoryTracker* m_memory;
  UnitHooks* m_inner;
  std::vector<int> m_seen;  // backwards of each unit this step
  Tensor m_stash;
  bool m_stashed = false;  // the unit in backward has its earlier sum in m_stash
};

}  // namespace paralab
