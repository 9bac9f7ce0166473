// The communication part of the projection: an alpha-beta model per link class (inside a node:
// NVLink; between nodes: InfiniBand or Ethernet) and the time of each collective the layouts
// issue, with the bus-bandwidth conventions of nccl-tests (all-reduce busbw = algbw 2(n-1)/n;
// reduce-scatter, all-gather, all-to-all (n-1)/n). Which link a group uses follows from where
// its ranks sit (parallel/process_grid.h, the one place the rank layout lives). See
// tests/engine/tst_projection.cpp (collectivesFollowAlphaBeta, groupsUseTheirLinks).
#pragma once
#include <optional>
#include <string>

#include "parallel/grid_shape.h"
#include "projection/gpu_spec.h"

namespace paralab::projection {

// Achievable share of the NVLink rate for NCCL collectives: all_reduce_perf of nccl-tests on 8
// A100 SXM behind NVSwitch reports a bus bandwidth of about 200 to 210 GB/s for large messages,
// of the 300 GB/s per direction (NVIDIA/nccl-tests issues #149 and #178).
constexpr double kNvlinkFraction = 0.7;
// Achievable share of the InfiniBand adapters' line rate: all_reduce_perf across nodes of 8
// A100 with HDR adapters reports about 85% of the adapters' rate on average (NVIDIA/nccl-tests
// issue #119: 84.8 of 100 GB/s). Ethernet's profile (resources/links) already gives its payload
// rate.
constexpr double kNetworkFraction = 0.85;

enum class NodeLink { InfiniBand, Ethernet };
NodeLink parseNodeLink(const std::string& name);  // "infiniband" | "ethernet"; throws ConfigError
const char* nodeLinkName(NodeLink l);

// One link class as a collective sees it: alpha seconds per step, beta = 1 / bytesPerS.
struct Link {
  std::string title;  // "NVLink", "InfiniBand HDR 200 Gb/s, one adapter per GPU"
  double alphaS = 0;
  double bytesPerS = 0;  // per rank per direction
  bool interNode = false;
};

// The machines: `gpus` GPUs of one kind, `gpusPerNode` to a node, nodes joined by `nodeLink`.
struct Cluster {
  GpuSpec gpu;
  int gpus = 8;
  int gpusPerNode = 8;
  NodeLink nodeLink = NodeLink::InfiniBand;
  // One machine whose ranks all talk over one measured link (host_profile.h): every group
  // uses it, whatever the GPU's NVLink and the node's adapters say.
  std::optional<Link> measuredLink;
  int nodes() const { return (gpus + gpusPerNode - 1) / gpusPerNode; }
};

enum class Axis { Dp, Tp, Pp, Cp, Ep };
const char* axisName(Axis a);
// Where one group of an axis sits: its size, the nodes it spans and the most of its ranks on one
// node. The group of global rank 0 (every group of an axis is placed alike).
struct GroupPlacement {
  int size = 1, nodes = 1, perNode = 1;
};
GroupPlacement placeGroup(const GridShape& shape, Axis axis, int gpusPerNode);

// The link a group's collectives run over. Inside one node: NVLink. Across nodes: each node's
// network capacity is shared evenly by its GPUs (every group of an axis communicates at once),
// and a group with k ranks on a node runs k rings in parallel, one per rank's share (NCCL's
// channels, one per adapter), so it gets k shares, at most the NVLink rate. The latencies are
// the link profiles' (resources/links: nvlink, infiniband, ethernet).
Link linkFor(const Cluster& cluster, const GroupPlacement& group);

enum class Collective { AllReduce, ReduceScatter, AllGather, AllToAll, PointToPoint };
enum class Algorithm { Ring, Tree };
// Seconds for n ranks; `bytes` is the whole buffer of one rank (for reduce-scatter its input,
// for all-gather its output, for all-to-all what it holds before the exchange).
// Ring all-reduce: 2(n-1) steps of bytes/n: 2(n-1) alpha + 2(n-1)/n bytes / B.
// Tree (NCCL's double binary tree): 2 ceil(log2 n) alpha and the ring's bandwidth term.
// Reduce-scatter, all-gather, all-to-all: (n-1) alpha + (n-1)/n bytes / B. Point to point:
// alpha + bytes / B. n = 1 costs nothing.
double collectiveSeconds(Collective op, double bytes, int n, const Link& link,
                         Algorithm algorithm = Algorithm::Ring);
// nccl-tests' bus bandwidth of a measured (or projected) collective: algbw = bytes / seconds,
// times 2(n-1)/n for all-reduce, (n-1)/n for reduce-scatter, all-gather and all-to-all, 1 for
// point to point. Equal to the link's bytesPerS for a large ring collective.
double busBandwidth(Collective op, double bytes, int n, double seconds);

}  // namespace paralab::projection
