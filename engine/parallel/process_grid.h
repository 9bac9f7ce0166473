// ProcessGrid: where each rank sits in the pp x dp x cp x tp mesh and the sub-communicators of
// each axis. The rank layout lives in this file and nowhere else (docs/architecture.md §3): tensor
// parallelism varies fastest (its ranks are neighbours: the fast links of one node), then
// context parallelism, then data parallelism, then pipeline stages (Megatron-Core's order).
// The cp ranks of one dp index read the same windows, each its chunks of every window's tokens
// (ring_attention.h); they hold the same weights, so gradients are summed over dp x cp. Expert-parallel groups are carved
// out of the dp axis: ep consecutive dp indices form one group (ep divides dp), as in
// DeepSpeed-MoE. See tests/engine/tst_process_grid.cpp.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "parallel/grid_shape.h"

namespace paralab {

class Communicator;

class ProcessGrid {
 public:
  // One line naming the violated constraint, or nothing.
  static std::optional<std::string> validate(const GridShape& shape, int worldSize);
  static int rankOf(const GridShape& shape, int dp, int tp, int pp, int cp = 0);
  static GridCoords coordsOf(const GridShape& shape, int rank);

  // Collective over `world`: every rank builds its groups (split) in the same order.
  ProcessGrid(const GridShape& shape, Communicator& world);
  ~ProcessGrid();

  const GridShape& shape() const { return m_shape; }
  const GridCoords& coords() const { return m_coords; }
  Communicator& world() { return *m_world; }
  Communicator& dp() { return *m_dp; }  // same (pp, cp, tp): the slices of the global batch
  Communicator& tp() { return *m_tp; }  // same (dp, cp, pp): the ranks splitting one layer
  Communicator& pp() { return *m_pp; }  // same (dp, cp, tp): the stages of one pipeline
  // Same (dp, pp, tp): the chunks of one window's tokens; nullptr when cp = 1.
  Communicator* cp() { return m_cp.get(); }
  // Same (pp, tp): every rank holding the same weights, whose gradients are summed: dp x cp
  // (the dp group itself when cp = 1).
  Communicator& replicas() { return m_replicas ? *m_replicas : *m_dp; }
  Communicator& ep() { return *m_ep; }  // consecutive dp indices sharing their experts
  // Same (pp, tp, ep index), across expert-parallel groups: the replicas of one expert.
  Communicator& expertDp() { return *m_expertDp; }

 private:
  GridShape m_shape;
  GridCoords m_coords;
  Communicator* m_world;
  std::unique_ptr<Communicator> m_dp, m_tp, m_pp, m_cp, m_replicas, m_ep, m_expertDp;
};

}  // namespace paralab
