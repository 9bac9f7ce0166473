// The shape of the pp x dp x cp x tp (and ep) mesh and one rank's place in it: value types the
// window reads (RankHoldings::coords) and the projection places groups with. Where each rank
// sits is ProcessGrid's (parallel/process_grid.h). See tests/engine/tst_process_grid.cpp.
#pragma once

namespace paralab {

struct GridShape {
  int dp = 1, tp = 1, pp = 1, ep = 1, cp = 1;
  int world() const { return dp * tp * pp * cp; }
};

struct GridCoords {
  int dp = 0, tp = 0, pp = 0;
  int cp = 0;       // index within the context-parallel group: which chunks of each window
  int ep = 0;       // index within this rank's expert-parallel group (0..ep-1)
  int epGroup = 0;  // which expert-parallel group along the dp axis (0..dp/ep-1)
};

}  // namespace paralab
