// The tensor-parallel pair's exchanges (column_row.h). Each collective waits for the rank's
// stream first (ready()): the communicator reads and writes on its own.
// See tests/engine/tst_model_parallel.cpp and tst_gpt.cpp.
#include "parallel/tensor/column_row.h"

#include "comm/communicator.h"
#include "device/compute.h"
#include "parallel/data/grad_sync.h"

namespace paralab {

MicroRows ColumnRowStage::splitRows(MicroRows r) const {
  if (!m_sp) return r;
  r.full = (r.full + m_T - 1) / m_T * m_T;
  r.local = r.full / m_T;
  r.first = m_tp.rank() * r.local;
  return r;
}

void ColumnRowStage::keepOwnRows(float* mine, const float* all, const MicroRows& r,
                                 int64_t width) const {
  if (m_sp) m_compute.copy(mine, all + int64_t(r.first) * width, int64_t(r.local) * width);
}

const float* ColumnRowStage::gatherRows(const float* mine, float* all, const MicroRows& r,
                                        int64_t width) const {
  if (!m_sp) return mine;
  ready();
  m_tp.allGather(mine, all, int64_t(r.local) * width, device());
  return all;
}

float* ColumnRowStage::keepRows(const float* mine, float* keep, const MicroRows& r,
                                int64_t width) const {
  if (m_sp) {
    ready();
    m_tp.allGather(mine, keep, int64_t(r.local) * width, device());
  } else {
    m_compute.copy(keep, mine, int64_t(r.local) * width);
  }
  return keep;
}

void ColumnRowStage::sumRows(float* partial, float* local, const MicroRows& r,
                             int64_t width) const {
  if (m_sp) {
    ready();
    m_tp.reduceScatter(partial, local, int64_t(r.local) * width, ReduceOp::Sum, device());
  } else if (m_T > 1) {
    ready();
    m_tp.allReduce(local, local, int64_t(r.local) * width, ReduceOp::Sum, AllReduceAlgo::Configured,
                   device());
  }
}

float* ColumnRowStage::sumPartialGradient(float* partial, float* scratch, const MicroRows& r,
                                          int64_t width) const {
  float* local = m_sp ? scratch : partial;
  sumRows(partial, local, r, width);
  return local;
}

void ColumnRowStage::sumNormGradients(GradSync& sync, const std::vector<int64_t>& offsets,
                                      int64_t width) const {
  if (!m_sp) return;
  ready();
  for (const int64_t at : offsets)
    for (const HeldGradients& g : sync.heldGradients(at, at + 2 * width))
      m_tp.allReduce(g.grads, g.grads, g.count, ReduceOp::Sum, AllReduceAlgo::Configured, device());
}

}  // namespace paralab
