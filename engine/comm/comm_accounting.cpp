// Communication accounting and the nccl-tests bandwidth formulas (see comm_accounting.h).
// See tests/engine/tst_comm_thread.cpp (countedBytesMatchTheory, accountingTotals) and
// tst_comm_tiers.cpp (bytes by tier).
#include "comm/comm_accounting.h"

#include <algorithm>
#include <array>
#include <string>

#include "comm/link_model.h"

namespace paralab {

const char* commOpName(CommOp op) {
  static constexpr const char* kNames[kCommOps] = {
      "allreduce", "reducescatter", "allgather", "broadcast", "reduce",
      "alltoall",  "alltoallv",     "send",      "recv",      "barrier"};
  return kNames[static_cast<int>(op)];
}

const char* commAlgoName(CommAlgo a) {
  static constexpr const char* kNames[kCommAlgos] = {"naive", "ring", "direct", "mpi", "nccl"};
  return kNames[static_cast<int>(a)];
}

const char* commSpanLabel(CommOp op, CommAlgo a) {
  // Built once; the strings live as long as the program, as Span::op requires.
  static const auto kLabels = [] {
    std::array<std::array<std::string, kCommAlgos>, kCommOps> t;
    for (int o = 0; o < kCommOps; ++o)
      for (int g = 0; g < kCommAlgos; ++g)
        t[o][g] = std::string(commOpName(static_cast<CommOp>(o))) + " " +
                  commAlgoName(static_cast<CommAlgo>(g));
    return t;
  }();
  return kLabels[static_cast<int>(op)][static_cast<int>(a)].c_str();
}

double algBwGBps(int64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0;
}

double busBwFactor(CommOp op, int n) {
  if (n <= 1) return op == CommOp::Send || op == CommOp::Recv ? 1.0 : 0.0;
  const double nn = n;
  switch (op) {
    case CommOp::AllReduce: return 2.0 * (nn - 1) / nn;
    case CommOp::ReduceScatter:
    case CommOp::AllGather:
    case CommOp::AllToAll:
    case CommOp::AllToAllV: return (nn - 1) / nn;
    case CommOp::Broadcast:
    case CommOp::Reduce:
    case CommOp::Send:
    case CommOp::Recv: return 1.0;
    case CommOp::Barrier: return 0.0;
  }
  return 0.0;
}

CommAccounting::CommAccounting(int worldRank, int worldSize, size_t recentCapacity)
    : m_worldRank(worldRank), m_worldSize(worldSize), m_capacity(recentCapacity) {
  reset();
}

void CommAccounting::reset() {
  std::lock_guard lock(m_mutex);
  m_totals = CommTraffic{};
  m_totals.worldRank = m_worldRank;
  m_totals.worldSize = m_worldSize;
  m_totals.sentTo.assign(m_worldSize, 0);
  m_totals.recvFrom.assign(m_worldSize, 0);
  m_totals.gpusPerNode = m_gpusPerNode;
}

void CommAccounting::setGpusPerNode(int gpusPerNode) {
  std::lock_guard lock(m_mutex);
  m_gpusPerNode = gpusPerNode;
  m_totals.gpusPerNode = gpusPerNode;
}

void CommAccounting::record(const CommCall& c) {
  std::lock_guard lock(m_mutex);
  CommTraffic& t = m_totals;
  const int64_t ns = c.endNs - c.startNs;
  ++t.calls;
  t.bytesSent += c.sent;
  t.bytesRecv += c.recv;
  t.timeNs += ns;
  t.modelled = t.modelled || c.modelled;
  for (int q = 0; q < m_worldSize; ++q) {
    t.sentTo[q] += c.sentTo[q];
    t.recvFrom[q] += c.recvFrom[q];
    // Each byte on the tier of the link it crossed (link_model.h).
    if (sameNode(m_worldRank, q, m_gpusPerNode)) {
      t.tiers.intraSent += c.sentTo[q];
      t.tiers.intraRecv += c.recvFrom[q];
    } else {
      t.tiers.interSent += c.sentTo[q];
      t.tiers.interRecv += c.recvFrom[q];
    }
  }
  CommOpTotals* row = nullptr;
  for (CommOpTotals& o : t.ops)
    if (o.op == c.op && o.algo == c.algo && o.group == c.group) row = &o;
  if (!row) {
    t.ops.push_back(CommOpTotals{c.op, c.algo, c.group});
    row = &t.ops.back();
  }
  ++row->calls;
  row->bytes += c.bytes;
  row->sent += c.sent;
  row->recv += c.recv;
  row->timeNs += ns;

  if (m_capacity == 0) return;
  if (m_recent.size() < m_capacity) {
    m_recent.push_back(c);
  } else {
    m_recent[m_next] = c;  // assignment reuses the slot's vectors
  }
  m_next = (m_next + 1) % m_capacity;
}

CommTraffic CommAccounting::totals() const {
  std::lock_guard lock(m_mutex);
  return m_totals;
}

CommTraffic CommAccounting::take() {
  CommTraffic t = totals();
  reset();
  return t;
}

std::vector<CommCall> CommAccounting::recentCalls(size_t maxCount) const {
  std::lock_guard lock(m_mutex);
  std::vector<CommCall> out;
  const size_t n = m_recent.size();
  const size_t k = std::min(maxCount, n);
  // Oldest first: when full, the oldest is at m_next.
  const size_t first = n < m_capacity ? n - k : (m_next + n - k) % n;
  for (size_t i = 0; i < k; ++i) out.push_back(m_recent[(first + i) % n]);
  return out;
}

}  // namespace paralab
