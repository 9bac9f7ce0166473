// The hierarchical all-reduce (`--allreduce hierarchical`, AllReduceAlgo::Hierarchical): a
// buffer summed over M nodes of L ranks in three collectives, so that only a 1/L share of it
// crosses the network (Horovod's HOROVOD_HIERARCHICAL_ALLREDUCE; Jia et al. 2018):
//   step 1 of 3: reduce-scatter inside the node: local rank l keeps the node's sum of chunk l;
//   step 2 of 3: all-reduce chunk l across the nodes, among the M ranks of local index l (ring);
//   step 3 of 3: all-gather inside the node: every rank gets every finished chunk.
// Bytes sent per rank, with the count padded to L·b floats (b = ceil(count / L)), S = 4·L·b:
//   inside its node 2(L-1)/L · S, to other nodes 2(M-1)/M · S/L,
// against the flat ring's 2(N-1)/N · S, all of which a rank at a node's edge sends across.
// See tests/engine/tst_comm_tiers.cpp and lessons/13-putting-together.
#include "comm/hierarchical_allreduce.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "memory/memory_tracker.h"

namespace paralab {

Communicator::Hierarchy::~Hierarchy() {
  if (tracker && !staging.empty()) tracker->sub(MemCategory::Comm, int64_t(staging.size()) * 4);
}

namespace {

int nodeOf(int worldRank, int gpusPerNode) { return gpusPerNode > 0 ? worldRank / gpusPerNode : 0; }

}  // namespace

NodeGroups splitByNode(Communicator& group, const std::string& what, const std::string& nodeName,
                       const std::string& acrossName) {
  const int G = group.options().gpusPerNode;
  // Every member sees the same members, so all refuse alike.
  std::map<int, int> perNode;
  for (int q = 0; q < group.size(); ++q) ++perNode[nodeOf(group.worldRankOf(q), G)];
  std::string counts;
  bool even = true;
  for (const auto& [node, ranks] : perNode) {
    counts += (counts.empty() ? "" : ", ") + std::string("node ") + std::to_string(node) +
              " holds " + std::to_string(ranks);
    even = even && ranks == perNode.begin()->second;
  }
  if (!even)
    throw CommError(what + " over group '" + group.group() +
                    "' needs as many of its ranks in every node (" + counts + ")");
  const int node = nodeOf(group.worldRank(), G);
  NodeGroups out;
  out.node = group.split(node, group.rank(), nodeName);
  out.across = group.split(out.node->rank(), node, acrossName);
  return out;
}

void Communicator::allReduceHierarchical(const float* send, float* recv, int64_t count, ReduceOp op,
                                         Device device) {
  if (device == Device::Cuda)
    throw CommError("allreduce: hierarchical runs on host buffers (--device cpu)");
  if (count == 0) return;  // every rank has the same count: all return
  if (!m_hierarchy) {
    NodeGroups groups =
        splitByNode(*this, "allreduce: hierarchical", m_group + ":node", m_group + ":nodes");
    auto h = std::make_unique<Hierarchy>();
    h->node = std::move(groups.node);
    h->across = std::move(groups.across);
    h->tracker = memoryTracker();
    m_hierarchy = std::move(h);
  }
  Hierarchy& h = *m_hierarchy;
  const int L = h.node->size(), l = h.node->rank();
  const int64_t b = (count + L - 1) / L, padded = b * L;
  // A count L does not divide is padded with zeros (their sums are thrown away), as ZeRO pads.
  float* buf = recv;
  const float* from = send;
  if (padded != count) {
    if (int64_t(h.staging.size()) < padded) {
      if (h.tracker) h.tracker->add(MemCategory::Comm, (padded - int64_t(h.staging.size())) * 4);
      h.staging.resize(size_t(padded));
    }
    buf = h.staging.data();
    std::memcpy(buf, send, size_t(count) * 4);
    std::fill(buf + count, buf + padded, 0.f);
    from = buf;
  }
  // step 1 of 3: the node's sum of chunk l, on local rank l: 2·(L-1)·b·4 bytes over steps 1 and 3.
  h.node->reduceScatter(from, buf + l * b, b, op, device);
  // step 2 of 3: chunk l summed over the nodes by the ranks of local index l (the ring).
  h.across->allReduce(buf + l * b, buf + l * b, b, op, AllReduceAlgo::Ring, device);
  // step 3 of 3: every finished chunk to every rank of the node.
  h.node->allGather(buf + l * b, buf, b, device);
  if (buf != recv) std::memcpy(recv, buf, size_t(count) * 4);
}

}  // namespace paralab
