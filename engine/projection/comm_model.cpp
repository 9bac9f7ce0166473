// The communication part of the projection (comm_model.h). See tests/engine/tst_projection.cpp.
#include "projection/comm_model.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "comm/link_model.h"  // loadLinkProfile: the latencies of resources/links
#include "config.h"           // ConfigError
#include "parallel/process_grid.h"  // ProcessGrid::rankOf: where a group's ranks sit

namespace paralab::projection {

NodeLink parseNodeLink(const std::string& name) {
  if (name == "infiniband") return NodeLink::InfiniBand;
  if (name == "ethernet") return NodeLink::Ethernet;
  throw ConfigError("node-link: '" + name +
                    "' is not a node interconnect (allowed: infiniband, "
                    "ethernet)");
}

const char* nodeLinkName(NodeLink l) {
  return l == NodeLink::InfiniBand ? "infiniband" : "ethernet";
}

const char* axisName(Axis a) {
  switch (a) {
    case Axis::Dp:
      return "dp";
    case Axis::Tp:
      return "tp";
    case Axis::Pp:
      return "pp";
    case Axis::Cp:
      return "cp";
    default:
      return "ep";
  }
}

GroupPlacement placeGroup(const GridShape& shape, Axis axis, int gpusPerNode) {
  int size = 1;
  switch (axis) {
    case Axis::Dp:
      size = shape.dp;
      break;
    case Axis::Tp:
      size = shape.tp;
      break;
    case Axis::Pp:
      size = shape.pp;
      break;
    case Axis::Cp:
      size = shape.cp;
      break;
    case Axis::Ep:
      size = shape.ep;  // ep consecutive dp indices (process_grid.h)
      break;
  }
  std::map<int, int> perNode;
  for (int i = 0; i < size; ++i) {
    const int rank = axis == Axis::Tp   ? ProcessGrid::rankOf(shape, 0, i, 0, 0)
                     : axis == Axis::Pp ? ProcessGrid::rankOf(shape, 0, 0, i, 0)
                     : axis == Axis::Cp ? ProcessGrid::rankOf(shape, 0, 0, 0, i)
                                        : ProcessGrid::rankOf(shape, i, 0, 0, 0);
    ++perNode[rank / std::max(1, gpusPerNode)];
  }
  GroupPlacement g;
  g.size = size;
  g.nodes = int(perNode.size());
  g.perNode = 0;
  for (const auto& [node, count] : perNode) g.perNode = std::max(g.perNode, count);
  return g;
}

namespace {
// The link profiles of resources/links, read once (thread-safe statics: a window may project
// from a worker thread); they do not change under a running program.
const LinkProfile& profile(const char* name) {
  static const LinkProfile nvlink = loadLinkProfile("nvlink");
  static const LinkProfile infiniband = loadLinkProfile("infiniband");
  static const LinkProfile ethernet = loadLinkProfile("ethernet");
  const std::string n = name;
  return n == "nvlink" ? nvlink : n == "infiniband" ? infiniband : ethernet;
}
}  // namespace

Link linkFor(const Cluster& c, const GroupPlacement& group) {
  if (c.measuredLink) return *c.measuredLink;
  Link nvlink;
  nvlink.title = "NVLink";
  nvlink.alphaS = profile("nvlink").latencyUs * 1e-6;
  nvlink.bytesPerS = c.gpu.nvlinkGBps * 1e9 * kNvlinkFraction;
  if (group.nodes <= 1) return nvlink;
  Link net;
  net.interNode = true;
  double sharePerGpu = 0;
  if (c.nodeLink == NodeLink::InfiniBand) {
    net.title = c.gpu.nicTitle;
    net.alphaS = profile("infiniband").latencyUs * 1e-6;
    sharePerGpu = c.gpu.networkGBpsPerGpu() * 1e9 * kNetworkFraction;
  } else {
    const LinkProfile& ethernet = profile("ethernet");
    net.title = ethernet.title + ", one port per node";
    net.alphaS = ethernet.latencyUs * 1e-6;
    sharePerGpu = ethernet.bandwidthGBps * 1e9 / std::max(1, c.gpusPerNode);
  }
  net.bytesPerS = std::min(nvlink.bytesPerS, group.perNode * sharePerGpu);
  return net;
}

double collectiveSeconds(Collective op, double bytes, int n, const Link& link,
                         Algorithm algorithm) {
  if (op == Collective::PointToPoint) return link.alphaS + bytes / link.bytesPerS;
  if (n <= 1) return 0;
  const double share = double(n - 1) / n;
  switch (op) {
    case Collective::AllReduce:
      if (algorithm == Algorithm::Tree)
        return 2 * std::ceil(std::log2(double(n))) * link.alphaS +
               2 * share * bytes / link.bytesPerS;
      return 2 * (n - 1) * link.alphaS + 2 * share * bytes / link.bytesPerS;
    default:  // reduce-scatter, all-gather, all-to-all
      return (n - 1) * link.alphaS + share * bytes / link.bytesPerS;
  }
}

double busBandwidth(Collective op, double bytes, int n, double seconds) {
  const double algbw = bytes / seconds;
  if (op == Collective::PointToPoint || n <= 1) return algbw;
  const double share = double(n - 1) / n;
  return op == Collective::AllReduce ? algbw * 2 * share : algbw * share;
}

}  // namespace paralab::projection
