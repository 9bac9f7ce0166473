// What a rank's communication moved, as values: the ops and algorithms by name, and one rank's
// totals by (op, algorithm, group) with its bytes per link, which the window's traffic bars and
// link heatmap draw, split by tier (inside a node, between nodes). The accounting that fills
// them is comm/comm_accounting.h. See tests/engine/tst_comm_thread.cpp (countedBytesMatchTheory)
// and tst_comm_tiers.cpp.
#pragma once
#include <cstdint>
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

// Totals by (op, algorithm, group).
struct CommOpTotals {
  CommOp op = CommOp::Barrier;
  CommAlgo algo = CommAlgo::Direct;
  std::string group;
  int64_t calls = 0, bytes = 0, sent = 0, recv = 0, timeNs = 0;
};

// A rank's bytes by tier (link_model.h): to and from ranks of its own node (intra) and of
// other nodes (inter). With one node every byte is intra.
struct TierBytes {
  int64_t intraSent = 0, intraRecv = 0, interSent = 0, interRecv = 0;
  bool operator==(const TierBytes&) const = default;
};

// A value copy of one rank's traffic since the last take()/reset().
struct CommTraffic {
  int worldRank = 0, worldSize = 1;
  int64_t calls = 0;
  int64_t bytesSent = 0, bytesRecv = 0;  // over links, this rank
  int64_t timeNs = 0;                    // inside communication calls
  std::vector<int64_t> sentTo, recvFrom;  // per world rank (a row / column of the heatmap)
  std::vector<CommOpTotals> ops;
  int gpusPerNode = 0;  // the nodes `tiers` splits by (0: one node)
  TierBytes tiers;      // bytesSent and bytesRecv by tier
  bool modelled = false;  // some link bytes came from a model, not from counted transfers
};

}  // namespace paralab
