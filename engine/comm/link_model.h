// Link emulation: a latency + bandwidth model of one interconnect, read from
// resources/links/<name>.json, and the two tiers of a cluster (inside a node, between nodes).
// ThreadComm finishes each transfer step no earlier than the model says ("emulated").
// See tests/engine/tst_comm_thread.cpp (linkEmulation), tst_comm_tiers.cpp and
// `paralab-run --ranks 4 --gpus-per-node 2 --link nvlink --node-link infiniband`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace paralab {

struct LinkProfile {
  std::string name = "none";           // the file stem: none | nvlink | pcie | infiniband | ethernet
  std::string title = "shared memory";  // for labels: "PCIe 4.0 x16"
  double latencyUs = 0;                 // per transfer step, microseconds
  double bandwidthGBps = 0;             // per direction per rank, 1e9 bytes/s; 0 = not modelled

  bool emulated() const { return latencyUs > 0 || bandwidthGBps > 0; }
  // Modelled duration of one step in which a rank sends `out` and receives `in` bytes, in ns.
  // A rank's port is full duplex and its transfers in a step share it (alpha-beta model):
  //   t = latency + max(out, in) / bandwidth.
  int64_t stepNs(int64_t out, int64_t in) const;
};

// [SECTION] Two tiers. World ranks r and q share a node when r / G == q / G, G being the GPUs
// (ranks) per node; G = 0 puts every rank in one node. Inside a node ranks talk over one profile
// (--link, NVLink in a DGX), between nodes over another (--node-link, InfiniBand), as NCCL's
// intra-node and network transports do.
enum class LinkTier : int { Intra = 0, Inter = 1 };
inline constexpr int kLinkTiers = 2;
inline bool sameNode(int worldA, int worldB, int gpusPerNode) {
  return gpusPerNode <= 0 || worldA / gpusPerNode == worldB / gpusPerNode;
}
inline LinkTier tierBetween(int worldA, int worldB, int gpusPerNode) {
  return sameNode(worldA, worldB, gpusPerNode) ? LinkTier::Intra : LinkTier::Inter;
}

// What one rank moves in one transfer step, per tier (index: LinkTier), bytes.
struct TierLoad {
  int64_t out[kLinkTiers] = {0, 0}, in[kLinkTiers] = {0, 0};
  void add(LinkTier t, int64_t outBytes, int64_t inBytes) {
    out[int(t)] += outBytes;
    in[int(t)] += inBytes;
  }
};

// The modelled duration of a step, ns: a rank's intra-node port and its network port work at
// the same time, so the step takes as long as its slower tier (a tier it moved nothing on costs
// nothing). A step with no bytes at all costs the intra-node latency, as one profile's does.
int64_t tieredStepNs(const LinkProfile& intra, const LinkProfile& inter, const TierLoad& load);

// The profiles shipped in resources/links (platform.h: dataDir), sorted.
std::vector<std::string> linkProfileNames();
// Reads resources/links/<name>.json; throws CommError naming the profile and the allowed
// names when it is unknown, or the file and field when it is malformed.
LinkProfile loadLinkProfile(const std::string& name);

}  // namespace paralab
