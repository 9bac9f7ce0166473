// The one place every backend's calls pass through: argument checks, the algorithm choice, and
// the accounting of each call (a span, bytes per link) — see communicator.h.
// See tests/engine/tst_comm_thread.cpp (countedBytesMatchTheory, spansRecorded).
#include "comm/communicator.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>
#include <utility>

#include "comm/flight_recorder.h"
#include "comm/hierarchical_allreduce.h"

#include "metrics/span_recorder.h"

namespace paralab {

// [SECTION] Names

const char* allReduceAlgoName(AllReduceAlgo a) {
  switch (a) {
    case AllReduceAlgo::Configured: return "configured";
    case AllReduceAlgo::Default: return "default";
    case AllReduceAlgo::Naive: return "naive";
    case AllReduceAlgo::Ring: return "ring";
    case AllReduceAlgo::Hierarchical: return "hierarchical";
  }
  return "?";
}

AllReduceAlgo parseAllReduceAlgo(const std::string& name) {
  if (name == "default") return AllReduceAlgo::Default;
  if (name == "naive") return AllReduceAlgo::Naive;
  if (name == "ring") return AllReduceAlgo::Ring;
  if (name == "hierarchical") return AllReduceAlgo::Hierarchical;
  throw CommError("algorithm: unknown all-reduce algorithm '" + name +
                  "' (allowed: naive, ring, default, hierarchical)");
}

static const char* reduceOpName(int op) {
  switch (op) {
    case 0: return "sum";
    case 1: return "avg";
    case 2: return "max";
  }
  return "";
}

std::string Communicator::describe(const CallSignature& s) {
  std::string d = std::string(commOpName(s.op)) + " of " + std::to_string(s.count) + " floats";
  if (s.reduceOp >= 0) d += std::string(" (") + reduceOpName(s.reduceOp) + ")";
  if (s.root >= 0) d += " from/to root " + std::to_string(s.root);
  if (s.algo >= 0) d += std::string(" by ") + commAlgoName(static_cast<CommAlgo>(s.algo));
  return d;
}

// [SECTION] The call record

// Opens the call record on construction; finish() closes it (span + totals). An exception
// leaves it unrecorded: a failed call moved nothing we can vouch for.
class Communicator::CallScope {
 public:
  CallScope(Communicator& c, CommOp op, CommAlgo algo, int64_t bytes) : m_c(c) {
    CommCall& k = c.m_call;
    const int world = c.m_ctx->accounting->worldSize();
    k.op = op;
    k.algo = algo;
    if (k.group != c.m_group) k.group = c.m_group;
    k.step = c.m_ctx->step;
    k.bytes = bytes;
    k.sent = k.recv = 0;
    k.sentTo.assign(world, 0);
    k.recvFrom.assign(world, 0);
    k.modelled = false;
    c.m_label = commSpanLabel(op, algo);
    if (FlightRecorder* fr = c.m_ctx->recorder) {
      if (fr->hangsAt(k.step)) c.stopHere(op);
      m_flight = fr->issue(FlightEntry{++c.m_seq, commOpName(op), c.m_group, bytes, k.step,
                                       CommPurpose::current(), false},
                           c.m_worldRanks);
    }
    c.m_open = true;
    k.startNs = nowNs();
    c.m_deadlineNs = k.startNs + static_cast<int64_t>(c.m_options.timeoutSeconds * 1e9);
  }
  ~CallScope() { m_c.m_open = false; }
  void finish() {
    CommCall& k = m_c.m_call;
    k.endNs = nowNs();
    m_c.m_ctx->accounting->record(k);
    if (SpanRecorder* spans = m_c.m_ctx->spans)
      spans->record(Span{SpanKind::Comm, k.startNs, k.endNs, k.bytes, m_c.m_label, k.step});
    if (FlightRecorder* fr = m_c.m_ctx->recorder) fr->done(m_flight);
  }

 private:
  Communicator& m_c;
  uint64_t m_flight = 0;
};

void Communicator::stopHere(CommOp op) {
  // Thread ranks see the abort the others' watchdog raises; an MPI process is ended by mpirun
  // when another's watchdog ends its own. Bounded either way: past three timeouts it gives up.
  if (backend() == Backend::Mpi && m_ctx->recorder) {
    // A stopped process's recorder, beside its output: nothing changes in it from here on.
    std::fprintf(stderr, "%s\n", m_ctx->recorder->dumpLine().c_str());
    std::fflush(stderr);
  }
  const int64_t until = nowNs() + static_cast<int64_t>((3 * m_options.timeoutSeconds + 5) * 1e9);
  while (!aborted() && nowNs() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  throw CommAborted("rank " + std::to_string(worldRank()) + " stopped before " + commOpName(op) +
                    " on group '" + m_group + "' (emulated hang)");
}

Communicator::Communicator(int rank, int size, std::string group, std::vector<int> worldRanks,
                           CommOptions options, LinkProfile link,
                           std::shared_ptr<RankContext> ctx)
    : m_options(std::move(options)), m_link(std::move(link)), m_rank(rank), m_size(size),
      m_group(std::move(group)), m_worldRanks(std::move(worldRanks)), m_ctx(std::move(ctx)) {
  if (m_options.timeoutSeconds <= 0) throw CommError("timeout: must be > 0 seconds");
  if (m_options.gpusPerNode < 0) throw CommError("gpus-per-node: must be >= 0");
  m_ctx->accounting->setGpusPerNode(m_options.gpusPerNode);
}

Communicator::~Communicator() = default;

void Communicator::armDeadline(const char* label) {
  m_deadlineNs = nowNs() + static_cast<int64_t>(m_options.timeoutSeconds * 1e9);
  m_label = label;
}

void Communicator::countSent(int peer, int64_t bytes) {
  m_call.sentTo[m_worldRanks[peer]] += bytes;
  m_call.sent += bytes;
}

void Communicator::countRecv(int peer, int64_t bytes) {
  m_call.recvFrom[m_worldRanks[peer]] += bytes;
  m_call.recv += bytes;
}

void Communicator::countModelled(CommOp op, int64_t bytes, int root,
                                 const std::vector<int64_t>* sendCounts,
                                 const std::vector<int64_t>* recvCounts) {
  const int n = m_size, r = m_rank;
  m_call.modelled = true;
  if (n == 1) return;
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  const int64_t count = bytes / 4;
  // Chunk q of a ring over `count` floats: [q*count/n, (q+1)*count/n), in bytes.
  auto chunk = [&](int q) {
    q = ((q % n) + n) % n;
    return ((q + 1) * count / n - q * count / n) * 4;
  };
  switch (op) {
    case CommOp::AllReduce:
      // Ring: reduce-scatter step s sends chunk (r - s), all-gather step s chunk (r + 1 - s).
      for (int s = 0; s < n - 1; ++s) {
        countSent(right, chunk(r - s) + chunk(r + 1 - s));
        countRecv(left, chunk(r - 1 - s) + chunk(r - s));
      }
      break;
    case CommOp::ReduceScatter:
    case CommOp::AllGather:
      // Ring of n - 1 steps, one block (bytes / n) each way per step.
      countSent(right, (n - 1) * (bytes / n));
      countRecv(left, (n - 1) * (bytes / n));
      break;
    case CommOp::Broadcast:
      // Pipelined chain root -> root+1 -> ...: all but the last rank forward the buffer.
      if (right != root) countSent(right, bytes);
      if (r != root) countRecv(left, bytes);
      break;
    case CommOp::Reduce:
      // Chain ending at root: all but root send the partial sums on.
      if (r != root) countSent(right, bytes);
      if (left != root) countRecv(left, bytes);
      break;
    case CommOp::AllToAll:
    case CommOp::AllToAllV:
      for (int q = 0; q < n; ++q) {
        if (q == r) continue;
        countSent(q, sendCounts ? (*sendCounts)[q] * 4 : bytes / n);
        countRecv(q, recvCounts ? (*recvCounts)[q] * 4 : bytes / n);
      }
      break;
    case CommOp::Send:
    case CommOp::Recv:
    case CommOp::Barrier:
      break;
  }
}

// [SECTION] Argument checks and dispatch

static void needCount(const char* what, int64_t count) {
  if (count < 0) throw CommError(std::string(what) + ": count must be >= 0, got " +
                                 std::to_string(count));
}

static void needBuffer(const char* what, const void* p, int64_t count) {
  if (count > 0 && !p) throw CommError(std::string(what) + ": null buffer for " +
                                       std::to_string(count) + " floats");
}

static void needRank(const char* what, const char* role, int r, int size) {
  if (r < 0 || r >= size)
    throw CommError(std::string(what) + ": " + role + " " + std::to_string(r) +
                    " is not a rank of this group (0.." + std::to_string(size - 1) + ")");
}

void Communicator::allReduce(const float* send, float* recv, int64_t count, ReduceOp op,
                             AllReduceAlgo algo, Device device) {
  needCount("allreduce", count);
  needBuffer("allreduce", send, count);
  needBuffer("allreduce", recv, count);
  if (algo == AllReduceAlgo::Configured) algo = m_options.algorithm;
  if (algo == AllReduceAlgo::Configured) algo = AllReduceAlgo::Default;
  // Three collectives of their own on two groups, each accounted as it runs.
  if (algo == AllReduceAlgo::Hierarchical) return allReduceHierarchical(send, recv, count, op, device);
  const CommAlgo a = algo == AllReduceAlgo::Naive  ? CommAlgo::Naive
                     : algo == AllReduceAlgo::Ring ? CommAlgo::Ring
                                                   : defaultAlgo();
  CallScope call(*this, CommOp::AllReduce, a, count * 4);
  doAllReduce(send, recv, count, op, a, device);
  call.finish();
}

void Communicator::reduceScatter(const float* send, float* recv, int64_t recvCount, ReduceOp op,
                                 Device device) {
  needCount("reducescatter", recvCount);
  needBuffer("reducescatter", send, recvCount);
  needBuffer("reducescatter", recv, recvCount);
  CallScope call(*this, CommOp::ReduceScatter, defaultAlgo(), recvCount * m_size * 4);
  doReduceScatter(send, recv, recvCount, op, device);
  call.finish();
}

void Communicator::allGather(const float* send, float* recv, int64_t sendCount, Device device) {
  needCount("allgather", sendCount);
  needBuffer("allgather", send, sendCount);
  needBuffer("allgather", recv, sendCount);
  CallScope call(*this, CommOp::AllGather, defaultAlgo(), sendCount * m_size * 4);
  doAllGather(send, recv, sendCount, device);
  call.finish();
}

void Communicator::broadcast(float* buf, int64_t count, int root, Device device) {
  needCount("broadcast", count);
  needBuffer("broadcast", buf, count);
  needRank("broadcast", "root", root, m_size);
  CallScope call(*this, CommOp::Broadcast, defaultAlgo(), count * 4);
  doBroadcast(buf, count, root, device);
  call.finish();
}

void Communicator::reduce(const float* send, float* recv, int64_t count, int root, ReduceOp op,
                          Device device) {
  needCount("reduce", count);
  needBuffer("reduce", send, count);
  needRank("reduce", "root", root, m_size);
  if (m_rank == root) needBuffer("reduce", recv, count);
  CallScope call(*this, CommOp::Reduce, defaultAlgo(), count * 4);
  doReduce(send, recv, count, root, op, device);
  call.finish();
}

void Communicator::allToAll(const float* send, float* recv, int64_t countPerPeer, Device device) {
  needCount("alltoall", countPerPeer);
  needBuffer("alltoall", send, countPerPeer);
  needBuffer("alltoall", recv, countPerPeer);
  CallScope call(*this, CommOp::AllToAll, defaultAlgo(), countPerPeer * m_size * 4);
  doAllToAll(send, recv, countPerPeer, device);
  call.finish();
}

void Communicator::allToAllv(const float* send, const std::vector<int64_t>& sendCounts,
                             float* recv, const std::vector<int64_t>& recvCounts,
                             Device device) {
  if (static_cast<int>(sendCounts.size()) != m_size ||
      static_cast<int>(recvCounts.size()) != m_size)
    throw CommError("alltoallv: sendCounts and recvCounts need one entry per rank (" +
                    std::to_string(m_size) + "), got " + std::to_string(sendCounts.size()) +
                    " and " + std::to_string(recvCounts.size()));
  int64_t sendTotal = 0, recvTotal = 0;
  for (int q = 0; q < m_size; ++q) {
    needCount("alltoallv", sendCounts[q]);
    needCount("alltoallv", recvCounts[q]);
    sendTotal += sendCounts[q];
    recvTotal += recvCounts[q];
  }
  needBuffer("alltoallv", send, sendTotal);
  needBuffer("alltoallv", recv, recvTotal);
  CallScope call(*this, CommOp::AllToAllV, defaultAlgo(), sendTotal * 4);
  doAllToAllv(send, sendCounts.data(), recv, recvCounts.data(), device);
  call.finish();
}

void Communicator::send(const float* buf, int64_t count, int peer, Device device) {
  needCount("send", count);
  needBuffer("send", buf, count);
  needRank("send", "peer", peer, m_size);
  if (peer == m_rank) throw CommError("send: a rank cannot send to itself");
  CallScope call(*this, CommOp::Send, defaultAlgo(), count * 4);
  doSend(buf, count, peer, device);
  call.finish();
}

void Communicator::recv(float* buf, int64_t count, int peer, Device device) {
  needCount("recv", count);
  needBuffer("recv", buf, count);
  needRank("recv", "peer", peer, m_size);
  if (peer == m_rank) throw CommError("recv: a rank cannot receive from itself");
  CallScope call(*this, CommOp::Recv, defaultAlgo(), count * 4);
  doRecv(buf, count, peer, device);
  call.finish();
}

void Communicator::barrier() {
  CallScope call(*this, CommOp::Barrier, defaultAlgo(), 0);
  doBarrier();
  call.finish();
}

std::unique_ptr<Communicator> Communicator::split(int color, int key, const std::string& name) {
  // Not accounted as traffic (it is set-up), but bounded by the timeout like any call.
  armDeadline("split");
  return doSplit(color, key, name.empty() ? m_group + ":" + std::to_string(color) : name);
}

}  // namespace paralab
