// Communication accounting: what each call cost (a span, start to end) and what it moved
// (bytes per src -> dst link), by op, algorithm and group, plus the nccl-tests bandwidths.
// The per-rank traffic bars and the N x N link heatmap read these totals; the bytes are also
// split by tier (inside this rank's node, to other nodes).
// See tests/engine/tst_comm_thread.cpp (countedBytesMatchTheory) and `paralab-bench comm`.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "comm/comm_traffic.h"

namespace paralab {

// [SECTION] Bandwidth as nccl-tests defines it (doc/PERFORMANCE.md of NVIDIA/nccl-tests).
// `bytes` is the user buffer size S: all-reduce, broadcast, reduce, send: count * 4;
// reduce-scatter: the send buffer (n * recvCount * 4); all-gather: the receive buffer
// (n * sendCount * 4); all-to-all: one rank's send buffer.
// algbw = S / t, in GB/s (1e9 bytes per second).
double algBwGBps(int64_t bytes, double seconds);
// busbw = algbw * factor: all-reduce 2(n-1)/n; reduce-scatter, all-gather, all-to-all (n-1)/n;
// broadcast, reduce, send/recv 1; barrier 0.
double busBwFactor(CommOp op, int n);

// One call as this rank saw it.
struct CommCall {
  CommOp op = CommOp::Barrier;
  CommAlgo algo = CommAlgo::Direct;
  std::string group;        // "world", "dp", ...
  int64_t step = 0;         // the step set with Communicator::setStep
  int64_t startNs = 0, endNs = 0;  // steady clock (nowNs())
  int64_t bytes = 0;        // S of the formulas above
  int64_t sent = 0, recv = 0;      // bytes this rank put on / took off links
  std::vector<int64_t> sentTo;     // per world rank: bytes this rank sent to it
  std::vector<int64_t> recvFrom;   // per world rank: bytes this rank received from it
  bool modelled = false;    // link bytes follow the algorithm's model (library collectives)
};

// One rank's accounting, shared by its communicator and every sub-communicator split from it
// (so "what did this rank send this step" is one read). Written by the rank, read by anyone.
class CommAccounting {
 public:
  CommAccounting(int worldRank, int worldSize, size_t recentCapacity = 256);

  void record(const CommCall& call);  // by Communicator, once per completed call

  CommTraffic totals() const;
  CommTraffic take();  // totals, then reset: the figures of one step
  void reset();
  std::vector<CommCall> recentCalls(size_t maxCount) const;  // oldest first

  // Ranks per node (link_model.h), for the bytes by tier; 0: one node. Set before traffic.
  void setGpusPerNode(int gpusPerNode);

  int worldRank() const { return m_worldRank; }
  int worldSize() const { return m_worldSize; }

 private:
  mutable std::mutex m_mutex;  // uncontended: one writer, rare readers
  int m_worldRank, m_worldSize;
  int m_gpusPerNode = 0;
  CommTraffic m_totals;
  std::vector<CommCall> m_recent;
  size_t m_next = 0, m_capacity;
};

}  // namespace paralab
