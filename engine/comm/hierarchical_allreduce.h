// The hierarchical all-reduce's state inside a Communicator (AllReduceAlgo::Hierarchical): the
// group of this rank's node and the group across nodes of its local index, split on first use,
// and the staging buffer that pads a count to a multiple of the node's ranks; and the split into
// those two groups, which HSDP's sharding uses too (parallel/data/grad_sync.h).
// See hierarchical_allreduce.cpp, tests/engine/tst_comm_tiers.cpp and tst_hsdp.cpp.
#pragma once
#include <memory>
#include <string>
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

// A group cut along its nodes (--gpus-per-node): `node` holds the group's ranks in this rank's
// node, ordered as in the group; `across` the group's ranks of this rank's local index in every
// node, ordered by node, so its rank is this node's index among the group's nodes.
struct NodeGroups {
  std::unique_ptr<Communicator> node, across;
};
// Collective over `group`. Local index l of one node must meet local index l of every other,
// so every node must hold as many of the group's ranks: otherwise CommError on every rank,
// "<what> over group 'dp' needs as many of its ranks in every node (node 0 holds 2, ...)".
NodeGroups splitByNode(Communicator& group, const std::string& what, const std::string& nodeName,
                       const std::string& acrossName);

}  // namespace paralab
