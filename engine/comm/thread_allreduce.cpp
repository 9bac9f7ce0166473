// The three all-reduce algorithms of the lesson, for ranks that are threads sharing memory:
// naive (every rank sums everything), ring (reduce-scatter then all-gather, 2(N-1) numbered
// steps) and direct (the default). Ranks read their neighbours' buffers directly: "rank q
// sends chunk c to rank r" is rank r reading chunk c of rank q's buffer, counted as q -> r.
// See tests/engine/tst_comm_thread.cpp and `paralab-bench comm --backend thread`.
#include <cstring>

#include "comm/comm_thread.h"
#include "comm/reduce_host.h"
#include "cuda/reduce.h"
#include "metrics/span_recorder.h"

namespace paralab {

void ThreadComm::doAllReduce(const float* send, float* recv, int64_t count, ReduceOp op,
                             CommAlgo algo, Device device) {
  switch (algo) {
    case CommAlgo::Naive: return allReduceNaive(send, recv, count, op, device);
    case CommAlgo::Ring: return allReduceRing(send, recv, count, op, device);
    default: return allReduceDirect(send, recv, count, op, device);
  }
}

// Naive: each rank receives the whole buffer of every other rank and sums all N itself.
// Per rank: sends (N-1)·m, receives (N-1)·m bytes — N/2 times the ring's traffic.
void ThreadComm::allReduceNaive(const float* send, float* recv, int64_t count, ReduceOp op,
                                Device dev) {
  Busy busy(*this);
  const int n = size();
  const uint64_t call =
      enter({CommOp::AllReduce, count, -1, static_cast<int>(op), static_cast<int>(CommAlgo::Naive)},
            send, recv, dev);
  const int64_t t0 = nowNs();
  // In place, the others still read our buffer while we sum: sum into a staging buffer.
  float* out = send == recv ? m_staging.get(count, memoryTracker(), dev) : recv;
  // step 1 of 1: read every rank's whole buffer, sum them in rank order.
  m_srcs.resize(n);
  for (int q = 0; q < n; ++q) {
    m_srcs[q] = m_g->slot(q, call).send;
    countPulled(q, count);
  }
  combine(out, m_srcs.data(), n, count, op, true, dev);
  pace(t0, everyPeer(count * 4, count * 4));
  sync();  // nobody reads our buffer any more
  if (out != recv) {
    if (dev == Device::Cuda) {
      kernels::reduce_device_copy(recv, out, count * 4, stream());
      kernels::reduce_stream_sync(stream());
    } else if (count > 0) {
      std::memcpy(recv, out, static_cast<size_t>(count) * 4);
    }
  }
  foldSent();
}

// Ring (Patarasuk & Yuan 2009; Baidu's ring all-reduce): the buffer is cut into N chunks.
// Reduce-scatter, steps s = 0..N-2: rank r sends chunk (r - s) to its right neighbour, which
// adds it to its own; after these N-1 steps rank r holds the full sum of chunk (r + 1).
// All-gather, s = 0..N-2 again: rank r sends the finished chunk (r + 1 - s) on to the right,
// which keeps it.
// Per rank: sends 2(N-1)/N · m bytes, only ever to its right neighbour.
void ThreadComm::allReduceRing(const float* send, float* recv, int64_t count, ReduceOp op,
                               Device dev) {
  Busy busy(*this);
  const int n = size(), me = rank();
  const uint64_t call =
      enter({CommOp::AllReduce, count, -1, static_cast<int>(op), static_cast<int>(CommAlgo::Ring)},
            send, recv, dev);
  const int left = (me + n - 1) % n;
  auto mod = [n](int c) { return ((c % n) + n) % n; };
  auto at = [&](int c) { return chunkBegin(mod(c), n, count); };
  auto len = [&](int c) { return chunkLen(mod(c), n, count); };
  if (n == 1) {  // sum, average and max of one buffer are that buffer
    pull(recv, send, count, me, dev);
    return sync();
  }
  const ThreadGroup::Slot& leftSlot = m_g->slot(left, call);

  for (int s = 0; s < n - 1; ++s) {
    // step s+1 of 2(N-1): the left neighbour sends chunk (r - 1 - s); add it to ours.
    // Each chunk is written once in these steps, so our own part is still in `send`; the
    // left's partial sum is in its receive buffer (in its send buffer at the first step).
    const int64_t t0 = nowNs();
    const int c = me - 1 - s;
    const float* srcs[2] = {send + at(c), (s == 0 ? leftSlot.send : leftSlot.recv) + at(c)};
    combine(recv + at(c), srcs, 2, len(c), op, s == n - 2, dev);
    countPulled(left, len(c));
    TierLoad load;  // to the right neighbour, from the left one: each on its own tier
    addLoad(load, (me + 1) % n, len(me - s) * 4, 0);
    addLoad(load, left, 0, len(c) * 4);
    pace(t0, load);
    sync();
  }
  for (int s = 0; s < n - 1; ++s) {
    // step N+s of 2(N-1): the left neighbour sends its finished chunk (r - s); keep it.
    const int64_t t0 = nowNs();
    const int c = me - s;
    pull(recv + at(c), leftSlot.recv + at(c), len(c), left, dev);
    TierLoad load;
    addLoad(load, (me + 1) % n, len(me + 1 - s) * 4, 0);
    addLoad(load, left, 0, len(c) * 4);
    pace(t0, load);
    sync();  // after the last step: nobody reads our buffer any more
  }
  foldSent();
}

// Direct (the default here): shared memory lets every rank read and write every buffer, so each
// rank reduces its own 1/N slice straight from all N buffers (a reduce-scatter) and writes the
// finished slice into all N receive buffers as it goes (an all-gather), in one step: every byte
// is read once and written once per rank that needs it, which is all a memory-bound all-reduce
// can do (paralab-bench comm's "bare" columns). The same bytes as the ring, 2(N-1)/N · m per
// rank, spread over all peers. Only the owner of slice r reads or writes slice r of any buffer,
// and a slice is written only after it was read, so in place (send == recv) is safe.
void ThreadComm::allReduceDirect(const float* send, float* recv, int64_t count, ReduceOp op,
                                 Device dev) {
  Busy busy(*this);
  const int n = size(), me = rank();
  const uint64_t call = enter(
      {CommOp::AllReduce, count, -1, static_cast<int>(op), static_cast<int>(CommAlgo::Direct)},
      send, recv, dev);
  const int64_t mine = chunkBegin(me, n, count), myLen = chunkLen(me, n, count);
  // Over an emulated link the two halves are two steps, as on a network: the reduce-scatter's
  // (q reads its slice of ours) and the all-gather's (we write ours into q).
  TierLoad load1, load2;
  for (int q = 0; q < n; ++q) {
    addLoad(load1, q, chunkLen(q, n, count) * 4, myLen * 4);
    addLoad(load2, q, myLen * 4, chunkLen(q, n, count) * 4);
  }

  // Reduce slice `me` of every rank's buffer, in rank order, into every rank's receive buffer.
  const int64_t t0 = nowNs();
  m_srcs.resize(n);
  m_dsts.resize(n);
  for (int q = 0; q < n; ++q) {
    m_srcs[q] = m_g->slot(q, call).send + mine;
    m_dsts[q] = m_g->slot(q, call).recv + mine;
    countPulled(q, myLen);
  }
  if (dev == Device::Cuda) {
    combine(recv + mine, m_srcs.data(), n, myLen, op, true, dev);
    for (int q = 0; q < n; ++q)
      if (q != me && myLen > 0)
        kernels::reduce_device_copy(m_dsts[q], recv + mine, myLen * 4, stream());
  } else if (myLen > 0) {
    reduceHostInto(m_dsts.data(), n, m_srcs.data(), n, myLen, op,
                   op == ReduceOp::Avg ? static_cast<float>(n) : 1.0f);
  }
  // The slices written into the others' buffers, and theirs into ours, as sent and received.
  for (int q = 0; q < n; ++q)
    if (q != me) {
      countSent(q, myLen * 4);
      countRecv(q, chunkLen(q, n, count) * 4);
    }
  pace(t0, load1);
  pace(nowNs(), load2);
  sync();  // every slice is final everywhere; nobody reads our buffers any more
  foldSent();
}

}  // namespace paralab
