// ProcessGrid: where each rank sits in the dp x pp x tp mesh and the sub-communicators of
// each axis. The rank layout lives in this file and nowhere else (DESIGN.md §2): tensor
// parallelism varies fastest (its ranks are neighbours: the fast links of one node), then data
// parallelism, then pipeline stages (Megatron-LM's order). Expert-parallel groups are carved
// out of the dp axis: ep consecutive dp indices form one group (ep divides dp), as in
// DeepSpeed-MoE. See tests/engine/tst_process_grid.cpp.
#pragma once
#include <memory>
#include <optional>
#include <string>

namespace paralab {

class Communicator;

struct GridShape {
  int dp = 1, tp = 1, pp = 1, ep = 1;
  int world() const { return dp * tp * pp; }
};

struct GridCoords {
  int dp = 0, tp = 0, pp = 0;
  int ep = 0;       // index within this rank's expert-parallel group (0..ep-1)
  int epGroup = 0;  // which expert-parallel group along the dp axis (0..dp/ep-1)
};

class ProcessGrid {
 public:
  // One line naming the violated constraint, or nothing.
  static std::optional<std::string> validate(const GridShape& shape, int worldSize);
  static int rankOf(const GridShape& shape, int dp, int tp, int pp);
  static GridCoords coordsOf(const GridShape& shape, int rank);

  // Collective over `world`: every rank builds its groups (split) in the same order.
  ProcessGrid(const GridShape& shape, Communicator& world);
  ~ProcessGrid();

  const GridShape& shape() const { return m_shape; }
  const GridCoords& coords() const { return m_coords; }
  Communicator& world() { return *m_world; }
  Communicator& dp() { return *m_dp; }  // same (pp, tp): the ranks holding the same weights
  Communicator& tp() { return *m_tp; }  // same (dp, pp): the ranks splitting one layer
  Communicator& pp() { return *m_pp; }  // same (dp, tp): the stages of one pipeline; rank = stage
  Communicator& ep() { return *m_ep; }  // consecutive dp indices sharing their experts
  // Same (pp, tp, ep index), across expert-parallel groups: the replicas of one expert.
  Communicator& expertDp() { return *m_expertDp; }

 private:
  GridShape m_shape;
  GridCoords m_coords;
  Communicator* m_world;
  std::unique_ptr<Communicator> m_dp, m_tp, m_pp, m_ep, m_expertDp;
};

}  // namespace paralab
