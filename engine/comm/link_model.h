// Link emulation: a latency + bandwidth model of one interconnect, read from
// resources/links/<name>.json. With a profile set, ThreadComm finishes each transfer step no
// earlier than the model says, so real step times show what a slower link does ("emulated").
// See tests/engine/tst_comm_thread.cpp (linkEmulation) and `paralab-bench comm --link pcie`.
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

// The profiles shipped in resources/links (platform.h: dataDir), sorted.
std::vector<std::string> linkProfileNames();
// Reads resources/links/<name>.json; throws CommError naming the profile and the allowed
// names when it is unknown, or the file and field when it is malformed.
LinkProfile loadLinkProfile(const std::string& name);

}  // namespace paralab
