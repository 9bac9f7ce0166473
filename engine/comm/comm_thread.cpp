// ThreadComm: N ranks as threads of one process (the embedded default, the GUI's). Each call
// posts its arguments, meets the others at a barrier, and ranks then read each other's buffers
// directly ("pull"), counting every byte they pull per link. All-reduce is in
// thread_allreduce.cpp. See tests/engine/tst_comm_thread.cpp and `paralab-bench comm`.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <thread>
#include <utility>

#include "comm/comm_thread.h"
#include "comm/reduce_host.h"
#include "cuda/reduce.h"
#include "metrics/span_recorder.h"

namespace paralab {

// [SECTION] Steps shared by every collective

ThreadComm::ThreadComm(std::shared_ptr<ThreadGroup> group, int rank, CommOptions options,
                       LinkProfile link, LinkProfile nodeLink, std::shared_ptr<RankContext> ctx)
    : Communicator(rank, group->size(), group->name(), group->worldRanks(), std::move(options),
                   std::move(link), std::move(ctx)),
      m_g(std::move(group)), m_seenPulled(size(), 0) {
  m_nodeLink = std::move(nodeLink);
}

static std::shared_ptr<CommAccounting> worldAccounting(const ThreadGroup& g, int rank) {
  return std::make_shared<CommAccounting>(g.worldRanks()[rank], g.worldPtr()->worldSize);
}

ThreadComm::ThreadComm(std::shared_ptr<ThreadGroup> group, int rank, CommOptions options,
                       LinkProfile link, LinkProfile nodeLink)
    : ThreadComm(group, rank, std::move(options), std::move(link), std::move(nodeLink),
                 std::make_shared<RankContext>(RankContext{worldAccounting(*group, rank)})) {}

ThreadComm::~ThreadComm() {
  m_staging.release();
  if (m_stream) kernels::reduce_stream_destroy(m_stream);
}

void* ThreadComm::stream() {
  if (!m_stream) m_stream = kernels::reduce_stream_create();
  return m_stream;
}

static bool sameCall(const ThreadGroup::Slot& a, const ThreadGroup::Slot& b) {
  return a.op == b.op && a.count == b.count && a.root == b.root && a.reduceOp == b.reduceOp &&
         a.algo == b.algo && a.device == b.device;
}

uint64_t ThreadComm::enter(const CallSignature& sig, const float* send, float* recv,
                           Device device, const int64_t* sendCounts, const int64_t* recvCounts) {
  const uint64_t call = m_calls++;
  const int n = size(), me = rank();
  ThreadGroup::Slot& s = m_g->slot(me, call);
  s.op = static_cast<int>(sig.op);
  s.count = sig.count;
  s.root = sig.root;
  s.reduceOp = sig.reduceOp;
  s.algo = sig.algo;
  s.device = device;
  s.send = send;
  s.recv = recv;
  s.sendCounts = sendCounts;
  s.recvCounts = recvCounts;
  sync();

  // Every rank reads every slot and reaches the same verdict, so all throw or none does.
  bool same = true;
  for (int q = 0; q < n; ++q) same = same && sameCall(m_g->slot(q, call), s);
  if (same && sendCounts)  // all-to-all-v: what q sends to p is what p expects from q
    for (int q = 0; q < n; ++q)
      for (int p = 0; p < n; ++p)
        same = same && m_g->slot(q, call).sendCounts[p] == m_g->slot(p, call).recvCounts[q];
  if (same) return call;

  std::string msg = std::string(commOpName(sig.op)) + " on group '" + group() +
                    "': ranks disagree on the call:";
  for (int q = 0; q < n && q < 8; ++q) {
    const ThreadGroup::Slot& o = m_g->slot(q, call);
    if (o.op < 0) {
      msg += " rank " + std::to_string(q) + ": " + (o.op == -2 ? "split" : "gatherToRoot") + ";";
      continue;
    }
    CallSignature os{static_cast<CommOp>(o.op), o.count, o.root, o.reduceOp, o.algo};
    msg += " rank " + std::to_string(q) + ": " + describe(os) +
           (o.device == Device::Cuda ? " on the GPU" : "") + ";";
    if (o.sendCounts) {
      msg += " sends";
      for (int p = 0; p < n; ++p) msg.append(" ").append(std::to_string(o.sendCounts[p]));
      msg += ", expects";
      for (int p = 0; p < n; ++p) msg.append(" ").append(std::to_string(o.recvCounts[p]));
      msg += ";";
    }
  }
  if (n > 8) msg += " ...";
  // The others may still be reading our slot and the counts it points to: leave together.
  m_cleanExit = true;
  m_g->setBusy(me, false);
  m_g->barrier(me, currentLabel(), deadlineNs());
  throw CommError(msg);
}

void ThreadComm::agreeOn(const CallSignature& sig, const char* label) {
  Busy busy(*this);
  armDeadline(label);
  enter(sig, nullptr, nullptr, Device::Cpu);
}

ThreadComm::Busy::Busy(ThreadComm& c) : m_c(c), m_exceptions(std::uncaught_exceptions()) {
  c.m_cleanExit = false;
}

ThreadComm::Busy::~Busy() {
  m_c.m_g->setBusy(m_c.rank(), false);
  if (std::uncaught_exceptions() > m_exceptions && !m_c.m_cleanExit) {
    // Left mid-call: the others must not wait for us, nor read our buffers once they are gone.
    m_c.m_g->world().abort("rank " + std::to_string(m_c.worldRank()) + " left " +
                           m_c.currentLabel() + " on group '" + m_c.group() + "' with an error");
    m_c.m_g->waitUntilNobodyBusy();
  }
}

void ThreadComm::sync() {
  if (m_stream) kernels::reduce_stream_sync(m_stream);
  m_g->setBusy(rank(), false);  // waiting reads nobody's buffers
  m_g->barrier(rank(), currentLabel(), deadlineNs());
  m_g->setBusy(rank(), true);
  if (m_g->world().aborted.load()) {
    m_g->setBusy(rank(), false);
    throw CommAborted(m_g->world().message());
  }
}

void ThreadComm::foldSent() {
  for (int q = 0; q < size(); ++q) {
    if (q == rank()) continue;
    const int64_t v = m_g->pulled(q, rank()).load(std::memory_order_relaxed);
    if (v != m_seenPulled[q]) countSent(q, v - m_seenPulled[q]);
    m_seenPulled[q] = v;
  }
}

void ThreadComm::countPulled(int from, int64_t count) {
  if (from == rank() || count == 0) return;
  auto& c = m_g->pulled(rank(), from);
  c.store(c.load(std::memory_order_relaxed) + count * 4, std::memory_order_relaxed);
  countRecv(from, count * 4);
}

void ThreadComm::pull(float* dst, const float* src, int64_t count, int from, Device device) {
  if (count > 0 && dst != src) {
    if (device == Device::Cuda)
      kernels::reduce_device_copy(dst, src, count * 4, stream());
    else
      std::memcpy(dst, src, static_cast<size_t>(count) * 4);
  }
  countPulled(from, count);
}

void ThreadComm::combine(float* dst, const float* const* srcs, int nsrc, int64_t count,
                         ReduceOp op, bool last, Device device) {
  if (count <= 0) return;
  const float divisor = op == ReduceOp::Avg && last ? static_cast<float>(size()) : 1.0f;
  if (device == Device::Cuda)
    kernels::reduce_device(dst, srcs, nsrc, count,
                           op == ReduceOp::Max ? kernels::DeviceReduce::Max
                                               : kernels::DeviceReduce::Sum,
                           divisor, stream());
  else
    reduceHost(dst, srcs, nsrc, count, op, divisor);
}

void ThreadComm::addLoad(TierLoad& load, int q, int64_t out, int64_t in) const {
  if (q != rank()) load.add(sameNodeAs(q) ? LinkTier::Intra : LinkTier::Inter, out, in);
}

TierLoad ThreadComm::everyPeer(int64_t outPerPeer, int64_t inPerPeer) const {
  TierLoad load;
  for (int q = 0; q < size(); ++q) addLoad(load, q, outPerPeer, inPerPeer);
  return load;
}

void ThreadComm::pace(int64_t stepStartNs, const TierLoad& load) {
  if (!emulated()) return;
  if (m_stream) kernels::reduce_stream_sync(m_stream);  // the real transfer comes first
  const int64_t until = stepStartNs + tieredStepNs(m_link, m_nodeLink, load);
  // Sleep through long waits (other ranks may need the core); spin the last 50 us.
  for (int64_t now = nowNs(); now < until; now = nowNs()) {
    if (until - now > 100'000)
      std::this_thread::sleep_for(std::chrono::nanoseconds(until - now - 50'000));
    else
      std::this_thread::yield();
  }
}

// [SECTION] Collectives other than all-reduce: one "direct" step each, every rank pulling
// what it needs straight from the others' buffers.

static int reduceOpCode(ReduceOp op) { return static_cast<int>(op); }

void ThreadComm::doReduceScatter(const float* send, float* recv, int64_t b, ReduceOp op,
                                 Device device) {
  Busy busy(*this);
  const int n = size(), me = rank();
  const uint64_t call = enter({CommOp::ReduceScatter, b, -1, reduceOpCode(op)}, send, recv, device);
  const int64_t t0 = nowNs();
  // step 1 of 1: reduce block `me` of every rank's send buffer, in rank order.
  m_srcs.resize(n);
  for (int q = 0; q < n; ++q) {
    m_srcs[q] = m_g->slot(q, call).send + me * b;
    countPulled(q, b);
  }
  combine(recv, m_srcs.data(), n, b, op, true, device);
  pace(t0, everyPeer(b * 4, b * 4));
  sync();  // the others may still read this rank's send buffer
  foldSent();
}

void ThreadComm::doAllGather(const float* send, float* recv, int64_t b, Device device) {
  Busy busy(*this);
  const int n = size();
  const uint64_t call = enter({CommOp::AllGather, b}, send, recv, device);
  const int64_t t0 = nowNs();
  // step 1 of 1: copy block q from rank q, for every q.
  for (int q = 0; q < n; ++q) pull(recv + q * b, m_g->slot(q, call).send, b, q, device);
  pace(t0, everyPeer(b * 4, b * 4));
  sync();
  foldSent();
}

void ThreadComm::doBroadcast(float* buf, int64_t count, int root, Device device) {
  Busy busy(*this);
  const int me = rank();
  const uint64_t call = enter({CommOp::Broadcast, count, root}, buf, buf, device);
  const int64_t t0 = nowNs();
  // step 1 of 1: every other rank copies the root's buffer (the root's link carries n-1 copies).
  if (me != root) pull(buf, m_g->slot(root, call).recv, count, root, device);
  if (me == root) {  // the root's port carries n-1 copies, each other rank's one
    pace(t0, everyPeer(count * 4, 0));
  } else {
    TierLoad load;
    addLoad(load, root, 0, count * 4);
    pace(t0, load);
  }
  sync();
  foldSent();
}

void ThreadComm::doReduce(const float* send, float* recv, int64_t count, int root, ReduceOp op,
                          Device device) {
  Busy busy(*this);
  const int n = size(), me = rank();
  const uint64_t call =
      enter({CommOp::Reduce, count, root, reduceOpCode(op)}, send, recv, device);
  const int64_t t0 = nowNs();
  // step 1 of 1: the root reads every rank's buffer and combines them in rank order.
  if (me == root) {
    m_srcs.resize(n);
    for (int q = 0; q < n; ++q) {
      m_srcs[q] = m_g->slot(q, call).send;
      countPulled(q, count);
    }
    combine(recv, m_srcs.data(), n, count, op, true, device);
  }
  if (me == root) {
    pace(t0, everyPeer(0, count * 4));
  } else {
    TierLoad load;
    addLoad(load, root, count * 4, 0);
    pace(t0, load);
  }
  sync();
  foldSent();
}

void ThreadComm::doAllToAll(const float* send, float* recv, int64_t b, Device device) {
  Busy busy(*this);
  const int n = size(), me = rank();
  if (send == recv && b > 0) throw CommError("alltoall: send and recv must be different buffers");
  const uint64_t call = enter({CommOp::AllToAll, b}, send, recv, device);
  const int64_t t0 = nowNs();
  // step 1 of 1: block q of my receive buffer is block `me` of rank q's send buffer.
  for (int q = 0; q < n; ++q) pull(recv + q * b, m_g->slot(q, call).send + me * b, b, q, device);
  pace(t0, everyPeer(b * 4, b * 4));
  sync();
  foldSent();
}

void ThreadComm::doAllToAllv(const float* send, const int64_t* sendCounts, float* recv,
                             const int64_t* recvCounts, Device device) {
  Busy busy(*this);
  const int n = size(), me = rank();
  if (send == recv) throw CommError("alltoallv: send and recv must be different buffers");
  const uint64_t call =
      enter({CommOp::AllToAllV, 0}, send, recv, device, sendCounts, recvCounts);
  const int64_t t0 = nowNs();
  // step 1 of 1: from each rank q, the block it packed for me (after its blocks for ranks < me).
  TierLoad load;
  int64_t at = 0;
  for (int q = 0; q < n; ++q) {
    const ThreadGroup::Slot& s = m_g->slot(q, call);
    int64_t offset = 0;
    for (int p = 0; p < me; ++p) offset += s.sendCounts[p];
    pull(recv + at, s.send + offset, recvCounts[q], q, device);
    at += recvCounts[q];
    addLoad(load, q, sendCounts[q] * 4, recvCounts[q] * 4);
  }
  pace(t0, load);
  sync();
  foldSent();
}

void ThreadComm::doBarrier() {
  Busy busy(*this);
  enter({CommOp::Barrier, 0}, nullptr, nullptr, Device::Cpu);
}

// [SECTION] Point to point: the sender copies the message into a queue and goes on; the
// receiver takes it (no earlier than the link model says it arrives).

void ThreadComm::doSend(const float* buf, int64_t count, int peer, Device device) {
  ThreadGroup::Message m;
  m.count = count;
  m.device = device;
  m.tracker = memoryTracker();
  if (count > 0) {
    if (device == Device::Cuda) {
      m.data = static_cast<float*>(kernels::reduce_device_alloc(count * 4));
      kernels::reduce_device_copy(m.data, buf, count * 4, stream());
      kernels::reduce_stream_sync(stream());
    } else {
      m.data = new float[count];
      std::memcpy(m.data, buf, static_cast<size_t>(count) * 4);
    }
    if (m.tracker) m.tracker->add(MemCategory::Comm, count * 4);
  }
  const LinkProfile& link = linkTo(peer);  // on the tier between the two ranks
  m.arriveNs = link.emulated() ? nowNs() + link.stepNs(count * 4, 0) : 0;
  countSent(peer, count * 4);
  m_g->post(rank(), peer, m);
}

void ThreadComm::doRecv(float* buf, int64_t count, int peer, Device device) {
  ThreadGroup::Message m = m_g->take(peer, rank(), currentLabel(), deadlineNs());
  struct Free {
    ThreadGroup::Message& m;
    ~Free() { ThreadGroup::freeMessage(m); }
  } free{m};
  if (m.count != count || m.device != device)
    throw CommError("recv on group '" + group() + "': rank " + std::to_string(rank()) +
                    " expected " + std::to_string(count) + " floats from rank " +
                    std::to_string(peer) + ", which sent " + std::to_string(m.count) +
                    (m.device != device ? " (one side on the GPU, the other not)" : ""));
  if (count > 0) {
    if (device == Device::Cuda) {
      kernels::reduce_device_copy(buf, m.data, count * 4, stream());
      kernels::reduce_stream_sync(stream());
    } else {
      std::memcpy(buf, m.data, static_cast<size_t>(count) * 4);
    }
  }
  if (m.arriveNs > 0)
    while (nowNs() < m.arriveNs)
      std::this_thread::sleep_for(std::chrono::nanoseconds(m.arriveNs - nowNs()));
  countRecv(peer, count * 4);
}

// [SECTION] Sub-groups, gather of strings, abort

std::unique_ptr<Communicator> ThreadComm::doSplit(int color, int key, const std::string& name) {
  const int n = size(), me = rank();
  const uint64_t call = m_calls++;
  ThreadGroup::Slot& s = m_g->slot(me, call);
  s.op = -2;  // split: not a data call
  s.color = color;
  s.key = key;
  s.made.reset();
  m_g->barrier(me, "split", deadlineNs());
  // Members of my color, ordered by (key, rank here), as MPI_Comm_split orders them.
  std::vector<int> members;
  for (int q = 0; q < n; ++q) {
    if (m_g->slot(q, call).op != -2) {
      m_g->barrier(me, "split", deadlineNs());  // as the other call does before it throws
      throw CommError("split on group '" + group() + "': rank " + std::to_string(q) +
                      " called another collective");
    }
    if (color >= 0 && m_g->slot(q, call).color == color) members.push_back(q);
  }
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
    return m_g->slot(a, call).key < m_g->slot(b, call).key;
  });
  if (color >= 0 && members.front() == me) {  // the leader makes the group
    std::vector<int> world;
    for (int q : members) world.push_back(worldRankOf(q));
    s.made = std::make_shared<ThreadGroup>(m_g->worldPtr(), name, world);
  }
  m_g->barrier(me, "split", deadlineNs());
  std::unique_ptr<Communicator> child;
  if (color >= 0) {
    const int at = static_cast<int>(std::find(members.begin(), members.end(), me) - members.begin());
    child = std::make_unique<ThreadComm>(m_g->slot(members.front(), call).made, at, m_options,
                                         m_link, m_nodeLink, context());
  }
  m_g->barrier(me, "split", deadlineNs());  // everyone holds its group: the leader lets go
  s.made.reset();
  return child;
}

std::vector<std::string> ThreadComm::gatherToRoot(const std::string& mine, int root) {
  armDeadline("gather");
  Busy busy(*this);
  const uint64_t call = m_calls++;
  ThreadGroup::Slot& s = m_g->slot(rank(), call);
  s.op = -3;
  s.text = &mine;
  sync();
  for (int q = 0; q < size(); ++q)
    if (m_g->slot(q, call).op != -3) {
      m_cleanExit = true;
      m_g->setBusy(rank(), false);
      m_g->barrier(rank(), "gather", deadlineNs());  // as the other call does before it throws
      throw CommError("gatherToRoot on group '" + group() + "': rank " + std::to_string(q) +
                      " called another collective");
    }
  std::vector<std::string> all;
  if (rank() == root)
    for (int q = 0; q < size(); ++q) all.push_back(*m_g->slot(q, call).text);
  sync();  // the strings stay alive until root copied them
  return all;
}

bool ThreadComm::aborted() const { return m_g->world().aborted.load(); }

void ThreadComm::abort(const std::string& why) {
  m_g->world().abort("rank " + std::to_string(worldRank()) + " aborted: " + why);
}

// [SECTION] ThreadWorld

ThreadWorld::ThreadWorld(int ranks, CommOptions options) {
  if (ranks < 1) throw CommError("ranks: must be >= 1, got " + std::to_string(ranks));
  LinkProfile link = loadLinkProfile(options.link);
  LinkProfile nodeLink = loadLinkProfile(options.nodeLink);
  m_shared = std::make_shared<Shared>(ranks);
  std::vector<int> world(ranks);
  for (int r = 0; r < ranks; ++r) world[r] = r;
  auto group = std::make_shared<ThreadGroup>(m_shared, "world", world);
  for (int r = 0; r < ranks; ++r)
    m_comms.push_back(std::make_unique<ThreadComm>(group, r, options, link, nodeLink));
}

ThreadWorld::~ThreadWorld() = default;

bool ThreadWorld::aborted() const { return m_shared->aborted.load(); }

void ThreadWorld::abort(const std::string& why) { m_shared->abort(why); }

void ThreadWorld::run(const std::function<void(Communicator&)>& rankMain) {
  std::mutex mutex;
  std::string firstError;
  auto body = [&](int r) {
    try {
      rankMain(*m_comms[r]);
    } catch (const CommAborted&) {
      // a consequence: the cause is in the shared message
    } catch (const std::exception& e) {
      const std::string msg = "rank " + std::to_string(r) + ": " + e.what();
      {
        std::lock_guard lock(mutex);
        if (firstError.empty()) firstError = msg;
      }
      m_shared->abort(msg);
    } catch (...) {
      const std::string msg = "rank " + std::to_string(r) + ": unknown exception";
      {
        std::lock_guard lock(mutex);
        if (firstError.empty()) firstError = msg;
      }
      m_shared->abort(msg);
    }
  };
  std::vector<std::thread> threads;
  for (int r = 1; r < size(); ++r) threads.emplace_back(body, r);
  body(0);  // rank 0 on the calling thread
  for (std::thread& t : threads) t.join();
  if (!firstError.empty()) throw CommError(firstError);
  if (aborted()) throw CommAborted(m_shared->message());
}

}  // namespace paralab
