// Communication accounting: what each call cost (a span, start to end) and what it moved
// (bytes per src -> dst link), by op, algorithm and group, plus the nccl-tests bandwidths.
// The per-rank traffic bars and the N x N link heatmap read these totals.
// See tests/engine/tst_comm_thread.cpp (countedBytesMatchTheory) and `paralab-bench comm`.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace paralab {

enum class CommOp : int {
  AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, AllToAll, AllToAllV, Send, Recv, Barrier
};
inline constexpr int kCommOps = 10;
const char* commOpName(CommOp op);  // "allreduce", "reducescatter", ...

// How a call was carried out. Naive/Ring/Direct are ParaLab's own (ThreadComm; Naive and Ring
// also over MPI point-to-point); Mpi/Nccl mean the library chose (its link bytes are modelled).
enum class CommAlgo : int { Naive, Ring, Direct, Mpi, Nccl };
inline constexpr int kCommAlgos = 5;
const char* commAlgoName(CommAlgo a);  // "naive", "ring", "direct", "mpi", "nccl"
// The span label of a call, a static string such as "allreduce ring" (Span::op needs one).
const char* commSpanLabel(CommOp op, CommAlgo a);

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

// Totals by (op, algorithm, group).
struct CommOpTotals {
  CommOp op = CommOp::Barrier;
  CommAlgo algo = CommAlgo::Direct;
  std::string group;
  int64_t calls = 0, bytes = 0, sent = 0, recv = 0, timeNs = 0;
};

// A value copy of one rank's traffic since the last take()/reset().
struct CommTraffic {
  int worldRank = 0, worldSize = 1;
  int64_t calls = 0;
  int64_t bytesSent = 0, bytesRecv = 0;  // over links, this rank
  int64_t timeNs = 0;                    // inside communication calls
  std::vector<int64_t> sentTo, recvFrom;  // per world rank (a row / column of the heatmap)
  std::vector<CommOpTotals> ops;
  bool modelled = false;  // some link bytes came from a model, not from counted transfers
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

  int worldRank() const { return m_worldRank; }
  int worldSize() const { return m_worldSize; }

 private:
  mutable std::mutex m_mutex;  // uncontended: one writer, rare readers
  int m_worldRank, m_worldSize;
  CommTraffic m_totals;
  std::vector<CommCall> m_recent;
  size_t m_next = 0, m_capacity;
};

}  // namespace paralab
