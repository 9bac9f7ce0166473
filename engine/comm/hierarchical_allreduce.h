// The hierarchical all-reduce's state inside a Communicator (AllReduceAlgo::Hierarchical): the
// group of this rank's node and the group across nodes of its local index, split on first use,
// and the staging buffer that pads a count to a multiple of the node's ranks.
// See hierarchical_allreduce.cpp and tests/engine/tst_comm_tiers.cpp.
#pragma once
#include <memory>
#include <vector>

#include "comm/communicator.h"

namespace paralab {

struct Communicator::Hierarchy {
  std::unique_ptr<Communicator> node;    // this rank's node: L ranks, "<group>:node"
  std::unique_ptr<Communicator> across;  // one rank per node, same local index: "<group>:nodes"
  std::vector<float> staging;            // padded counts (host), counted as Comm memory
  MemoryTracker* tracker = nullptr;      // where `staging` is counted
  ~Hierarchy();
};

}  // namespace paralab
