// MpiComm: one rank per process under OpenMPI (`mpirun -np 4 paralab-run --backend mpi`).
// Default collectives are MPI's own (their link bytes are the modelled ones); the naive and
// ring all-reduce are ParaLab's, over MPI point-to-point, and counted as they are sent.
// See tests/engine/tst_comm_mpi.cpp (run by CTest through mpirun) and
// `mpirun -np 2 paralab-bench comm --backend mpi`.
#include "comm/communicator.h"

#include <cstdlib>
#include <initializer_list>
#include <string>

#ifdef PARALAB_HAVE_MPI
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <thread>
#include <vector>

#include "comm/flight_recorder.h"
#include "comm/reduce_host.h"
#include "metrics/span_recorder.h"
#endif

namespace paralab {

// The first of `vars` the launcher set, as a number; `fallback` when none is set.
static int launcherValue(std::initializer_list<const char*> vars, int fallback) {
  for (const char* var : vars)
    if (const char* v = std::getenv(var); v && *v) return std::atoi(v);
  return fallback;
}

int mpiLaunchSize() { return launcherValue({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}, 0); }
int mpiLocalLaunchSize() {
  return launcherValue({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}, 0);
}
int mpiLocalRank(int fallback) {
  return launcherValue({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"},
                       fallback);
}

#ifndef PARALAB_HAVE_MPI

bool mpiCallsFromAnyThread() { return false; }
bool mpiAvailable() { return false; }
std::unique_ptr<Communicator> makeMpiWorld(CommOptions) {
  throw CommError("backend: ParaLab was built without MPI (install libopenmpi-dev and rebuild)");
}
std::string mpiBroadcastText(const std::string&) {
  throw CommError("backend: ParaLab was built without MPI (install libopenmpi-dev and rebuild)");
}

#else

bool mpiAvailable() { return true; }

namespace {

bool g_serialized = false;  // MPI_Init_thread gave MPI_THREAD_SERIALIZED or better

// [SECTION] Watchdog: MPI calls cannot be interrupted, so a thread watches the call in flight
// and ends the process when it overruns its deadline; mpirun then ends the job.
struct Watch {
  std::atomic<int64_t> deadlineNs{0};  // 0: no call in flight
  std::atomic<const char*> label{""};
  std::atomic<const std::string*> group{nullptr};
  std::atomic<double> timeoutS{0};
  std::atomic<const FlightRecorder*> recorder{nullptr};  // the rank's, printed when it fires
  int worldRank = 0, worldSize = 1;
};
Watch g_watch;

void watchdog() {
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const int64_t d = g_watch.deadlineNs.load();
    if (d == 0 || nowNs() < d) continue;
    const std::string* group = g_watch.group.load();
    std::fprintf(stderr,
                 "paralab: %s on group '%s' timed out after %g s on world rank %d of %d: some "
                 "ranks never arrived (MPI cannot tell which: those that print no such line); "
                 "ending the job\n",
                 g_watch.label.load(), group ? group->c_str() : "?", g_watch.timeoutS.load(),
                 g_watch.worldRank, g_watch.worldSize);
    if (const FlightRecorder* fr = g_watch.recorder.load())
      std::fprintf(stderr, "%s\n", fr->dumpLine().c_str());
    std::fflush(stderr);
    std::_Exit(3);
  }
}

struct Watched {
  Watched(const char* label, const std::string& group, int64_t deadlineNs, double timeoutS,
          const FlightRecorder* recorder) {
    g_watch.recorder = recorder;
    g_watch.label = label;
    g_watch.group = &group;
    g_watch.timeoutS = timeoutS;
    g_watch.deadlineNs = deadlineNs;
  }
  ~Watched() { g_watch.deadlineNs = 0; }
};

void finalizeMpi() {
  int done = 0;
  MPI_Finalized(&done);
  if (!done) MPI_Finalize();
}

int icount(int64_t n, const char* what) {
  if (n > INT_MAX)
    throw CommError(std::string(what) + ": " + std::to_string(n) +
                    " floats is more than one MPI call takes (INT_MAX)");
  return static_cast<int>(n);
}

MPI_Op mpiOp(ReduceOp op) { return op == ReduceOp::Max ? MPI_MAX : MPI_SUM; }

void divide(float* p, int64_t count, int n) {
  const float d = static_cast<float>(n);
  for (int64_t i = 0; i < count; ++i) p[i] /= d;
}

}  // namespace

class MpiComm final : public Communicator {
 public:
  MpiComm(MPI_Comm comm, bool owns, std::string name, std::vector<int> worldRanks,
          CommOptions options, std::shared_ptr<RankContext> ctx, int rank, int size)
      : Communicator(rank, size, std::move(name), std::move(worldRanks), std::move(options),
                     LinkProfile{}, std::move(ctx)),
        m_comm(comm), m_owns(owns) {}

  static std::unique_ptr<MpiComm> world(CommOptions options) {
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::vector<int> ranks(size);
    for (int r = 0; r < size; ++r) ranks[r] = r;
    auto ctx = std::make_shared<RankContext>(RankContext{std::make_shared<CommAccounting>(rank, size)});
    return std::make_unique<MpiComm>(MPI_COMM_WORLD, false, "world", ranks, std::move(options),
                                     ctx, rank, size);
  }

  ~MpiComm() override {
    int done = 0;
    MPI_Finalized(&done);
    if (m_owns && !done) MPI_Comm_free(&m_comm);
    if (m_staging && memoryTracker()) memoryTracker()->sub(MemCategory::Comm, m_stagingCount * 4);
  }

  Backend backend() const override { return Backend::Mpi; }

  std::vector<std::string> gatherToRoot(const std::string& mine, int root) override {
    armDeadline("gather");
    Watched w = watch();
    const int len = icount(static_cast<int64_t>(mine.size()), "gather");
    std::vector<int> lens(size()), displs(size());
    MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, root, m_comm);
    std::string all;
    if (rank() == root) {
      int64_t total = 0;
      for (int q = 0; q < size(); ++q) displs[q] = static_cast<int>(total), total += lens[q];
      all.resize(static_cast<size_t>(icount(total, "gather")));
    }
    MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR,
                root, m_comm);
    std::vector<std::string> out;
    if (rank() == root)
      for (int q = 0; q < size(); ++q) out.push_back(all.substr(displs[q], lens[q]));
    return out;
  }

  void abort(const std::string& why) override {
    std::fprintf(stderr, "paralab: world rank %d aborted the job: %s\n", worldRank(), why.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

 protected:
  CommAlgo defaultAlgo() const override { return CommAlgo::Mpi; }

  // Every rank called the same collective with the same counts: one small MPI_Allreduce of a
  // hash h and -h under MAX gives max(h) and -min(h), equal only when all h are equal.
  void agreeOn(const CallSignature& s, const char* label) override {
    (void)label;
    agree(s, false);
  }

  void doAllReduce(const float* send, float* recv, int64_t count, ReduceOp op, CommAlgo algo,
                   Device device) override {
    hostOnly(device);
    const int n = size();
    agree({CommOp::AllReduce, count, -1, static_cast<int>(op), static_cast<int>(algo)});
    Watched w = watch();
    if (algo == CommAlgo::Naive) return naive(send, recv, count, op);
    if (algo == CommAlgo::Ring) return ring(send, recv, count, op);
    MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, icount(count, "allreduce"), MPI_FLOAT,
                  mpiOp(op), m_comm);
    if (op == ReduceOp::Avg) divide(recv, count, n);
    countModelled(CommOp::AllReduce, count * 4);
  }

  void doReduceScatter(const float* send, float* recv, int64_t b, ReduceOp op,
                       Device device) override {
    hostOnly(device);
    agree({CommOp::ReduceScatter, b, -1, static_cast<int>(op)});
    Watched w = watch();
    // MPI forbids overlapping send and receive buffers (and its MPI_IN_PLACE means something
    // else here), so an in-place call reduces into staging first.
    const bool overlap = recv >= send && recv < send + b * size();
    float* out = overlap ? staging(b) : recv;
    MPI_Reduce_scatter_block(send, out, icount(b, "reducescatter"), MPI_FLOAT, mpiOp(op), m_comm);
    if (overlap) std::copy(out, out + b, recv);
    if (op == ReduceOp::Avg) divide(recv, b, size());
    countModelled(CommOp::ReduceScatter, b * size() * 4);
  }

  void doAllGather(const float* send, float* recv, int64_t b, Device device) override {
    hostOnly(device);
    agree({CommOp::AllGather, b});
    Watched w = watch();
    // In place (send == recv + rank * b) is exactly MPI_IN_PLACE's meaning for allgather.
    const bool inPlace = send == recv + rank() * b;
    MPI_Allgather(inPlace ? MPI_IN_PLACE : send, icount(b, "allgather"), MPI_FLOAT, recv,
                  icount(b, "allgather"), MPI_FLOAT, m_comm);
    countModelled(CommOp::AllGather, b * size() * 4);
  }

  void doBroadcast(float* buf, int64_t count, int root, Device device) override {
    hostOnly(device);
    agree({CommOp::Broadcast, count, root});
    Watched w = watch();
    MPI_Bcast(buf, icount(count, "broadcast"), MPI_FLOAT, root, m_comm);
    countModelled(CommOp::Broadcast, count * 4, root);
  }

  void doReduce(const float* send, float* recv, int64_t count, int root, ReduceOp op,
                Device device) override {
    hostOnly(device);
    agree({CommOp::Reduce, count, root, static_cast<int>(op)});
    Watched w = watch();
    const bool inPlace = rank() == root && send == recv;
    MPI_Reduce(inPlace ? MPI_IN_PLACE : send, recv, icount(count, "reduce"), MPI_FLOAT, mpiOp(op),
               root, m_comm);
    if (op == ReduceOp::Avg && rank() == root) divide(recv, count, size());
    countModelled(CommOp::Reduce, count * 4, root);
  }

  void doAllToAll(const float* send, float* recv, int64_t b, Device device) override {
    hostOnly(device);
    if (send == recv && b > 0) throw CommError("alltoall: send and recv must be different buffers");
    agree({CommOp::AllToAll, b});
    Watched w = watch();
    MPI_Alltoall(send, icount(b, "alltoall"), MPI_FLOAT, recv, icount(b, "alltoall"), MPI_FLOAT,
                 m_comm);
    countModelled(CommOp::AllToAll, b * size() * 4);
  }

  void doAllToAllv(const float* send, const int64_t* sendCounts, float* recv,
                   const int64_t* recvCounts, Device device) override {
    hostOnly(device);
    if (send == recv) throw CommError("alltoallv: send and recv must be different buffers");
    const int n = size();
    std::vector<int64_t> expect(n);
    bool ok = true;
    if (m_options.checkArgs) {  // what each rank sends me is what I expect from it
      Watched w = watch();
      MPI_Alltoall(sendCounts, 1, MPI_INT64_T, expect.data(), 1, MPI_INT64_T, m_comm);
      for (int q = 0; q < n; ++q) ok = ok && expect[q] == recvCounts[q];
    }
    agree({CommOp::AllToAllV, 0}, !ok);
    Watched w = watch();
    std::vector<int> sc(n), sd(n), rc(n), rd(n);
    int64_t so = 0, ro = 0;
    for (int q = 0; q < n; ++q) {
      sc[q] = icount(sendCounts[q], "alltoallv");
      rc[q] = icount(recvCounts[q], "alltoallv");
      sd[q] = icount(so, "alltoallv");
      rd[q] = icount(ro, "alltoallv");
      so += sendCounts[q];
      ro += recvCounts[q];
    }
    MPI_Alltoallv(send, sc.data(), sd.data(), MPI_FLOAT, recv, rc.data(), rd.data(), MPI_FLOAT,
                  m_comm);
    const std::vector<int64_t> s(sendCounts, sendCounts + n), r(recvCounts, recvCounts + n);
    countModelled(CommOp::AllToAllV, so * 4, -1, &s, &r);
  }

  void doSend(const float* buf, int64_t count, int peer, Device device) override {
    hostOnly(device);
    Watched w = watch();
    MPI_Send(buf, icount(count, "send"), MPI_FLOAT, peer, kP2pTag, m_comm);
    countSent(peer, count * 4);
  }

  void doRecv(float* buf, int64_t count, int peer, Device device) override {
    hostOnly(device);
    Watched w = watch();
    // Probe first: a message of another size is an error here, not a truncation.
    MPI_Status st;
    MPI_Probe(peer, kP2pTag, m_comm, &st);
    int got = 0;
    MPI_Get_count(&st, MPI_FLOAT, &got);
    if (got != count) {
      std::vector<float> sink(static_cast<size_t>(got));
      MPI_Recv(sink.data(), got, MPI_FLOAT, peer, kP2pTag, m_comm, MPI_STATUS_IGNORE);
      throw CommError("recv on group '" + group() + "': rank " + std::to_string(rank()) +
                      " expected " + std::to_string(count) + " floats from rank " +
                      std::to_string(peer) + ", which sent " + std::to_string(got));
    }
    MPI_Recv(buf, got, MPI_FLOAT, peer, kP2pTag, m_comm, MPI_STATUS_IGNORE);
    countRecv(peer, count * 4);
  }

  void doBarrier() override {
    agree({CommOp::Barrier, 0});
    Watched w = watch();
    MPI_Barrier(m_comm);
  }

  std::unique_ptr<Communicator> doSplit(int color, int key, const std::string& name) override {
    Watched w = watch();
    MPI_Comm child;
    MPI_Comm_split(m_comm, color < 0 ? MPI_UNDEFINED : color, key, &child);
    if (child == MPI_COMM_NULL) return nullptr;
    int r = 0, n = 1;
    MPI_Comm_rank(child, &r);
    MPI_Comm_size(child, &n);
    // World ranks of the members, for the per-link accounting.
    MPI_Group worldGroup, childGroup;
    MPI_Comm_group(MPI_COMM_WORLD, &worldGroup);
    MPI_Comm_group(child, &childGroup);
    std::vector<int> members(n), world(n);
    for (int q = 0; q < n; ++q) members[q] = q;
    MPI_Group_translate_ranks(childGroup, n, members.data(), worldGroup, world.data());
    MPI_Group_free(&worldGroup);
    MPI_Group_free(&childGroup);
    return std::make_unique<MpiComm>(child, true, name, world, m_options, context(), r, n);
  }

 private:
  static constexpr int kP2pTag = 17, kNaiveTag = 18, kRingTag = 19;

  Watched watch() const {
    return Watched(currentLabel(), group(), deadlineNs(), m_options.timeoutSeconds,
                   context()->recorder);
  }

  void hostOnly(Device device) const {
    if (device != Device::Cpu)
      throw CommError("mpi: device buffers are not served (this OpenMPI is not CUDA-aware); "
                      "use the nccl backend for GPU buffers");
  }

  void agree(const CallSignature& s, bool localBad = false) {
    if (!m_options.checkArgs || size() == 1) {
      if (localBad) throw CommError(std::string(commOpName(s.op)) + ": counts do not match");
      return;
    }
    Watched w = watch();
    // FNV-1a over the fields every rank must share.
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : {static_cast<int64_t>(s.op), s.count, static_cast<int64_t>(s.root),
                      static_cast<int64_t>(s.reduceOp), static_cast<int64_t>(s.algo)})
      h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    const int64_t hs = static_cast<int64_t>(h >> 2);  // keep -h representable
    int64_t v[3] = {hs, -hs, localBad ? 1 : 0};
    MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_INT64_T, MPI_MAX, m_comm);
    if (v[0] == -v[1] && v[2] == 0) return;
    // Disagreement: every rank learns every rank's call, and all throw the same message.
    int64_t mine[6] = {static_cast<int64_t>(s.op), s.count, s.root, s.reduceOp, s.algo,
                       localBad ? 1 : 0};
    std::vector<int64_t> all(6 * size());
    MPI_Allgather(mine, 6, MPI_INT64_T, all.data(), 6, MPI_INT64_T, m_comm);
    std::string msg = std::string(commOpName(s.op)) + " on group '" + group() +
                      "': ranks disagree on the call:";
    for (int q = 0; q < size() && q < 8; ++q) {
      const int64_t* o = &all[6 * q];
      msg += " rank " + std::to_string(q) + ": " +
             describe({static_cast<CommOp>(o[0]), o[1], static_cast<int>(o[2]),
                       static_cast<int>(o[3]), static_cast<int>(o[4])}) +
             (o[5] ? " (its receive counts do not match what the others send)" : "") + ";";
    }
    throw CommError(msg);
  }

  float* staging(int64_t count) {
    if (count > m_stagingCount) {
      if (memoryTracker()) memoryTracker()->sub(MemCategory::Comm, m_stagingCount * 4);
      m_staging.reset(new float[count]);
      m_stagingCount = count;
      if (memoryTracker()) memoryTracker()->add(MemCategory::Comm, m_stagingCount * 4);
    }
    return m_staging.get();
  }

  // Naive: send our whole buffer to every other rank, receive all of theirs, sum all N in rank
  // order. Per rank (N-1)·m bytes each way.
  void naive(const float* send, float* recv, int64_t count, ReduceOp op) {
    const int n = size(), me = rank();
    const int c = icount(count, "allreduce");
    float* others = staging((n - 1) * count);
    std::vector<MPI_Request> req;
    std::vector<const float*> srcs(n);
    for (int q = 0, slot = 0; q < n; ++q) {
      if (q == me) {
        srcs[q] = send;
        continue;
      }
      float* into = others + slot++ * count;
      srcs[q] = into;
      req.emplace_back();
      MPI_Irecv(into, c, MPI_FLOAT, q, kNaiveTag, m_comm, &req.back());
      req.emplace_back();
      MPI_Isend(send, c, MPI_FLOAT, q, kNaiveTag, m_comm, &req.back());
      countSent(q, count * 4);
      countRecv(q, count * 4);
    }
    MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
    reduceHost(recv, srcs.data(), n, count, op, op == ReduceOp::Avg ? float(n) : 1.0f);
  }

  // Ring: reduce-scatter steps 1..N-1 (send chunk r - s right, add chunk r - 1 - s from the
  // left), then all-gather steps N..2(N-1) (pass finished chunks on). 2(N-1)/N·m per rank.
  void ring(const float* send, float* recv, int64_t count, ReduceOp op) {
    const int n = size(), me = rank();
    if (n == 1) {
      if (send != recv) std::copy(send, send + count, recv);
      return;
    }
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    auto mod = [n](int c) { return ((c % n) + n) % n; };
    auto at = [&](int c) { return mod(c) * count / n; };
    auto len = [&](int c) { return (mod(c) + 1) * count / n - mod(c) * count / n; };
    float* incoming = staging(count / n + 1);
    for (int s = 0; s < n - 1; ++s) {
      // step s+1 of 2(N-1): send chunk (r - s) to the right, add chunk (r - 1 - s) from the left.
      // Each chunk is written once in these steps: our own part is still in `send`, and the
      // chunk we pass on is the partial sum of the step before (our own at the first step).
      const int out = me - s, in = me - 1 - s;
      MPI_Sendrecv((s == 0 ? send : recv) + at(out), icount(len(out), "allreduce"), MPI_FLOAT,
                   right, kRingTag, incoming, icount(len(in), "allreduce"), MPI_FLOAT, left,
                   kRingTag, m_comm, MPI_STATUS_IGNORE);
      const float* srcs[2] = {send + at(in), incoming};
      reduceHost(recv + at(in), srcs, 2, len(in), op,
                 op == ReduceOp::Avg && s == n - 2 ? float(n) : 1.0f);
      countSent(right, len(out) * 4);
      countRecv(left, len(in) * 4);
    }
    for (int s = 0; s < n - 1; ++s) {
      // step N+s of 2(N-1): send finished chunk (r + 1 - s) right, keep chunk (r - s) from left.
      const int out = me + 1 - s, in = me - s;
      MPI_Sendrecv(recv + at(out), icount(len(out), "allreduce"), MPI_FLOAT, right, kRingTag,
                   recv + at(in), icount(len(in), "allreduce"), MPI_FLOAT, left, kRingTag, m_comm,
                   MPI_STATUS_IGNORE);
      countSent(right, len(out) * 4);
      countRecv(left, len(in) * 4);
    }
  }

  MPI_Comm m_comm;
  bool m_owns;
  std::unique_ptr<float[]> m_staging;
  int64_t m_stagingCount = 0;
};

bool mpiCallsFromAnyThread() { return g_serialized; }

// [SECTION] Control messages (paralab-run --control): not training traffic, so outside the
// accounting. A process waits for rank 0 with non-blocking calls and sleeps between polls: a
// paused job idles instead of spinning, and no deadline applies (a pause may last hours; a
// process that dies ends the job through mpirun).
namespace {

void waitAsleep(MPI_Request* request) {
  for (int polls = 0;; ++polls) {
    int done = 0;
    MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    // The first ~100 polls spin (a step boundary costs microseconds); then 1 ms naps.
    if (polls >= 100) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

std::string mpiBroadcastText(const std::string& text) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int len = rank == 0 ? icount(static_cast<int64_t>(text.size()), "control") : 0;
  MPI_Request request;
  MPI_Ibcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD, &request);
  waitAsleep(&request);
  if (len == 0) return {};
  std::string out = rank == 0 ? text : std::string(static_cast<size_t>(len), '\0');
  MPI_Ibcast(out.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD, &request);
  waitAsleep(&request);
  return out;
}

std::unique_ptr<Communicator> makeMpiWorld(CommOptions options) {
  if (options.link != "none")
    throw CommError("link: emulation ('" + options.link +
                    "') is offered by the thread backend only; MPI runs on the real network");
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    // SERIALIZED: calls may come from any thread, one at a time — the bucketed data-parallel
    // strategy's communication thread all-reduces gradients while the rank's own thread
    // computes (and makes no MPI call meanwhile). The watchdog thread never calls MPI.
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    g_serialized = provided >= MPI_THREAD_SERIALIZED;
    std::atexit(finalizeMpi);
  } else {
    int provided = 0;
    MPI_Query_thread(&provided);
    g_serialized = provided >= MPI_THREAD_SERIALIZED;
  }
  auto comm = MpiComm::world(std::move(options));
  static std::once_flag started;
  std::call_once(started, [&] {
    g_watch.worldRank = comm->rank();
    g_watch.worldSize = comm->size();
    std::thread(watchdog).detach();
  });
  return comm;
}

#endif  // PARALAB_HAVE_MPI

}  // namespace paralab
