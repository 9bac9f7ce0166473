// Communicator: one rank's handle on a group of ranks and the collectives every parallelism axis is
// made of, on float buffers, every call accounted in one place (comm_accounting.h). Backends
// (docs/architecture.md §3): ThreadComm (ranks as threads: ThreadWorld below), MpiComm (a rank per
// process: makeMpiWorld), NcclComm (a rank per GPU: ThreadWorld::nccl, makeNcclMpiWorld). See
// tests/engine/tst_comm_thread.cpp, tst_comm_mpi.cpp and `paralab-bench comm`.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/comm_accounting.h"
#include "comm/link_model.h"
#include "run_choices.h"
#include "tensor.h"  // Device

namespace paralab {

class SpanRecorder;
class MemoryTracker;
class FlightRecorder;

// Avg is Sum followed by a division by the group size, on every backend (so exact inputs give
// the same bits on every rank and every algorithm).
enum class ReduceOp { Sum, Avg, Max };

// All-reduce algorithms a lesson compares (lessons/reference/comm.md):
//   Naive  every rank receives every other rank's whole buffer and sums it all: (N-1)m sent.
//   Ring   reduce-scatter then all-gather around a ring, 2(N-1) steps: 2(N-1)/N m sent.
//   Default the backend's fast one: ThreadComm "direct" (each rank reduces its 1/N slice
//          reading every buffer, then copies the others' slices), MPI_Allreduce, ncclAllReduce.
//   Hierarchical  over two tiers (hierarchical_allreduce.cpp): reduce-scatter inside each node,
//          all-reduce across nodes among the ranks of one local index, all-gather inside:
//          2(L-1)/L m inside a node and 2(M-1)/M m/L between nodes per rank (L ranks per node,
//          M nodes).
//   Configured (per call only): whatever CommOptions::algorithm says.
enum class AllReduceAlgo { Configured, Default, Naive, Ring, Hierarchical };
// "configured", "default", "naive", "ring", "hierarchical"
const char* allReduceAlgoName(AllReduceAlgo a);
// "naive" | "ring" | "default" | "hierarchical"; throws CommError naming the allowed values
// otherwise.
AllReduceAlgo parseAllReduceAlgo(const std::string& name);

struct CommOptions {
  AllReduceAlgo algorithm = AllReduceAlgo::Default;
  double timeoutSeconds = 60.0;  // a collective not done by then aborts the group
  std::string link = "none";     // emulated link profile (ThreadComm): resources/links/<link>.json
  // MpiComm: check before each collective that all ranks called the same one with the same
  // counts (one small MPI_Allreduce). ThreadComm always checks (it costs nothing there).
  bool checkArgs = true;
  // Two tiers (link_model.h): world ranks r and q share a node when r / G == q / G; 0: one node.
  // Ranks in different nodes talk over `nodeLink` (ThreadComm), and the accounting splits
  // every rank's bytes by tier.
  int gpusPerNode = 0;
  std::string nodeLink = "none";
};

// Misuse that every rank sees the same way (mismatched counts or ops across ranks, a bad root):
// thrown on every rank of the group, which stays usable.
struct CommError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The group was aborted (a timeout, or an exception in another rank); what() says why.
struct CommAborted : CommError {
  using CommError::CommError;
};
// The abort a rank's watchdog raised: its own call passed its deadline (ThreadComm).
struct CommTimeout : CommAborted {
  using CommAborted::CommAborted;
};

class Communicator {
 public:
  virtual ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return m_rank; }
  int size() const { return m_size; }
  const std::string& group() const { return m_group; }  // "world", or the name given to split
  int worldRank() const { return m_worldRanks[m_rank]; }
  int worldRankOf(int groupRank) const { return m_worldRanks.at(groupRank); }
  virtual Backend backend() const = 0;  // run_choices.h: thread | mpi | nccl
  const CommOptions& options() const { return m_options; }
  // Link emulation: everything measured under it is to be labelled "emulated (<title>)".
  bool emulated() const { return m_link.emulated() || m_nodeLink.emulated(); }
  const LinkProfile& link() const { return m_link; }  // inside this rank's node
  // Whether group rank q is in this rank's node, and the link a transfer to it takes.
  bool sameNodeAs(int groupRank) const {
    return sameNode(worldRank(), worldRankOf(groupRank), m_options.gpusPerNode);
  }
  const LinkProfile& linkTo(int groupRank) const {
    return sameNodeAs(groupRank) ? m_link : m_nodeLink;
  }

  // [SECTION] Collectives. Every rank of the group calls the same one, in the same order, with
  // the same counts (else CommError on every rank). Blocking: when one returns, this rank's
  // buffers may be reused. Counts are elements (floats). Buffers are host memory, or device
  // memory with Device::Cuda where the backend serves it (NcclComm; ThreadComm for ranks
  // sharing one GPU); MpiComm is host only. send == recv means in place.

  // recv[i] = op over ranks of send[i], on every rank.
  void allReduce(const float* send, float* recv, int64_t count, ReduceOp op = ReduceOp::Sum,
                 AllReduceAlgo algo = AllReduceAlgo::Configured, Device device = Device::Cpu);
  // send holds size() blocks of recvCount; rank r gets block r reduced over ranks.
  // In place when recv == send + rank() * recvCount.
  void reduceScatter(const float* send, float* recv, int64_t recvCount,
                     ReduceOp op = ReduceOp::Sum, Device device = Device::Cpu);
  // recv gets size() blocks of sendCount, block q from rank q. In place when
  // send == recv + rank() * sendCount.
  void allGather(const float* send, float* recv, int64_t sendCount, Device device = Device::Cpu);
  void broadcast(float* buf, int64_t count, int root, Device device = Device::Cpu);
  // recv (used on root only) = op over ranks of send.
  void reduce(const float* send, float* recv, int64_t count, int root,
              ReduceOp op = ReduceOp::Sum, Device device = Device::Cpu);
  // Block q of send (countPerPeer floats) goes to rank q; block q of recv comes from rank q.
  void allToAll(const float* send, float* recv, int64_t countPerPeer, Device device = Device::Cpu);
  // Per-peer sizes: sendCounts[q] floats to rank q, recvCounts[q] from rank q, blocks packed
  // in rank order. sendCounts[q] on rank r must equal recvCounts[r] on rank q.
  void allToAllv(const float* send, const std::vector<int64_t>& sendCounts, float* recv,
                 const std::vector<int64_t>& recvCounts, Device device = Device::Cpu);
  // Point to point, for pipelines: messages from one rank to another arrive in order.
  // ThreadComm's send returns at once (the message is copied); MpiComm's and NcclComm's may
  // wait for the matching recv, so order sends and recvs so that no cycle waits (as in MPI).
  void send(const float* buf, int64_t count, int peer, Device device = Device::Cpu);
  void recv(float* buf, int64_t count, int peer, Device device = Device::Cpu);
  void barrier();

  // Collective: ranks giving the same color form a new group, ordered by (key, rank here).
  // color < 0: this rank joins none and gets nullptr. `name` labels the group in accounting
  // and messages (default "<group>:<color>"). The child shares this rank's accounting, span
  // recorder, step and memory tracker.
  std::unique_ptr<Communicator> split(int color, int key, const std::string& name = {});

  // Collective, not accounted (it carries measurements, not training traffic): root gets
  // every rank's string in rank order (e.g. per-rank JSON figures); others get an empty vector.
  virtual std::vector<std::string> gatherToRoot(const std::string& mine, int root = 0) = 0;

  // Ends the whole run from this rank: the others' pending and later collectives throw
  // CommAborted with `why` (ThreadComm), or the job ends (MPI_Abort under mpirun).
  virtual void abort(const std::string& why) = 0;
  // True once the group was aborted (ThreadComm; an aborted MPI job is gone).
  virtual bool aborted() const { return false; }

  // [SECTION] Accounting and instrumentation (shared with communicators split from this one).
  CommAccounting& accounting() { return *m_ctx->accounting; }
  const CommAccounting& accounting() const { return *m_ctx->accounting; }
  void setSpanRecorder(SpanRecorder* spans) { m_ctx->spans = spans; }  // null: no spans
  void setStep(int64_t step) { m_ctx->step = step; }
  // Staging buffers the backend allocates are counted here as MemCategory::Comm.
  void setMemoryTracker(MemoryTracker* tracker) { m_ctx->memory = tracker; }
  // Each call issued and done goes into it (null: none); --hang's stop is read from it.
  void setFlightRecorder(FlightRecorder* recorder) { m_ctx->recorder = recorder; }

 protected:
  // What a rank's communicators share: one accounting, one span recorder, one step counter.
  struct RankContext {
    std::shared_ptr<CommAccounting> accounting;
    SpanRecorder* spans = nullptr;
    MemoryTracker* memory = nullptr;
    FlightRecorder* recorder = nullptr;
    int64_t step = 0;
  };
  // What every rank must agree on for one call (checked by the backend before moving data).
  struct CallSignature {
    CommOp op = CommOp::Barrier;
    int64_t count = 0;  // elements as passed
    int root = -1;
    int reduceOp = -1;
    int algo = -1;
  };

  Communicator(int rank, int size, std::string group, std::vector<int> worldRanks,
               CommOptions options, LinkProfile link, std::shared_ptr<RankContext> ctx);

  // Backend hooks: the public calls above validate arguments, resolve the algorithm, open the
  // call record, call one of these, and close the record (span + bytes) when it returns.
  virtual CommAlgo defaultAlgo() const = 0;
  virtual void doAllReduce(const float* send, float* recv, int64_t count, ReduceOp op,
                           CommAlgo algo, Device device) = 0;
  virtual void doReduceScatter(const float* send, float* recv, int64_t recvCount, ReduceOp op,
                               Device device) = 0;
  virtual void doAllGather(const float* send, float* recv, int64_t sendCount, Device device) = 0;
  virtual void doBroadcast(float* buf, int64_t count, int root, Device device) = 0;
  virtual void doReduce(const float* send, float* recv, int64_t count, int root, ReduceOp op,
                        Device device) = 0;
  virtual void doAllToAll(const float* send, float* recv, int64_t countPerPeer,
                          Device device) = 0;
  virtual void doAllToAllv(const float* send, const int64_t* sendCounts, float* recv,
                           const int64_t* recvCounts, Device device) = 0;
  virtual void doSend(const float* buf, int64_t count, int peer, Device device) = 0;
  virtual void doRecv(float* buf, int64_t count, int peer, Device device) = 0;
  virtual void doBarrier() = 0;
  virtual std::unique_ptr<Communicator> doSplit(int color, int key, const std::string& name) = 0;

  // Before moving data: every rank called the same thing (CommError on every rank if not).
  // ThreadComm and MpiComm implement it; NcclComm asks its host communicator through agreeVia.
  virtual void agreeOn(const CallSignature& sig, const char* label) {
    (void)sig;
    (void)label;
  }
  static void agreeVia(Communicator& host, const CallSignature& sig, const char* label) {
    host.agreeOn(sig, label);
  }
  // A barrier on another communicator of this rank, outside its accounting (NcclComm's host).
  static void barrierVia(Communicator& host) {
    host.armDeadline("barrier");
    host.doBarrier();
  }

  // For backends, while a call is open: bytes this rank moved over the link to / from a peer
  // (group rank), counted as the transfers happen.
  void countSent(int peer, int64_t bytes);
  void countRecv(int peer, int64_t bytes);
  // For library collectives whose transfers we cannot see: the link bytes of the ring model
  // behind busbw (all-to-all: direct to every peer), marked modelled.
  void countModelled(CommOp op, int64_t bytes, int root = -1,
                     const std::vector<int64_t>* sendCounts = nullptr,
                     const std::vector<int64_t>* recvCounts = nullptr);
  // Per-call deadline (steady clock, ns) of the call now open: start + timeout.
  int64_t deadlineNs() const { return m_deadlineNs; }
  // For calls outside the accounting (split, gatherToRoot): start the clock and name the call.
  void armDeadline(const char* label);
  const char* currentLabel() const { return m_label; }
  std::shared_ptr<RankContext> context() const { return m_ctx; }
  MemoryTracker* memoryTracker() const { return m_ctx->memory; }
  static std::string describe(const CallSignature& s);  // "allreduce of 7 floats (sum)"

  CommOptions m_options;
  LinkProfile m_link;      // inside a node
  LinkProfile m_nodeLink;  // between nodes (ThreadComm; none elsewhere)

 private:
  class CallScope;
  friend class CallScope;

  int m_rank, m_size;
  std::string m_group;
  std::vector<int> m_worldRanks;
  std::shared_ptr<RankContext> m_ctx;
  CommCall m_call;  // the open call; its vectors are reused from call to call
  bool m_open = false;
  int64_t m_deadlineNs = 0;
  const char* m_label = "";
  int64_t m_seq = 0;  // collectives issued on this communicator (the flight recorder's #)
  // --hang (emulated): this rank does not issue the call; it waits until the run is aborted.
  [[noreturn]] void stopHere(CommOp op);
  // AllReduceAlgo::Hierarchical (hierarchical_allreduce.cpp): its node and across-node groups,
  // split from this one on first use, and its staging buffer.
  struct Hierarchy;
  std::unique_ptr<Hierarchy> m_hierarchy;
  void allReduceHierarchical(const float* send, float* recv, int64_t count, ReduceOp op,
                             Device device);
};

// [SECTION] Ranks as threads in this process (the embedded default, the GUI's).
//
// ThreadWorld world(4, options);
// world.run([&](Communicator& comm) { ... comm.allReduce(g, g, n, ReduceOp::Avg); ... });
//
// run() starts size() threads, rank r running rankMain with communicator(r), and returns when
// all have returned. An exception escaping one rank aborts the world: the other ranks' pending
// and later collectives throw CommAborted, and run() rethrows the first original error as
// CommError("rank r: <what>"). A timeout surfaces the same way with the timeout's message.
// Or run the ranks on threads of your own: communicator(r) belongs to the thread that runs rank
// r; call abort() when one of them fails. An aborted world stays aborted: make a new one.
class ThreadWorld {
 public:
  // Host ranks (ThreadComm). Throws CommError for a bad option (an unknown link profile).
  ThreadWorld(int ranks, CommOptions options = {});
  // One rank per GPU through NCCL in this process (ncclCommInitAll over devices 0..ranks-1).
  // Collectives take device buffers; of host buffers only an all-reduce is served (staged
  // through the GPU). A ThreadComm beside each rank carries barriers, splits, gatherToRoot and
  // the argument checks. Throws CommError when NCCL is not built in or there are fewer GPUs
  // than ranks.
  static std::unique_ptr<ThreadWorld> nccl(int ranks, CommOptions options = {});
  ~ThreadWorld();
  ThreadWorld(const ThreadWorld&) = delete;
  ThreadWorld& operator=(const ThreadWorld&) = delete;

  int size() const { return static_cast<int>(m_comms.size()); }
  Communicator& communicator(int rank) { return *m_comms.at(rank); }
  void run(const std::function<void(Communicator&)>& rankMain);
  void abort(const std::string& why);
  bool aborted() const;

  struct Shared;  // the world-wide abort state (comm_thread.cpp)

 private:
  ThreadWorld() = default;
  std::shared_ptr<Shared> m_shared;
  std::vector<std::unique_ptr<Communicator>> m_comms;
};

// [SECTION] Ranks as processes under OpenMPI: `mpirun -np 4 paralab-run --backend mpi ...`.
bool mpiAvailable();  // built with MPI
// MPI was initialised for calls from any thread, one at a time (MPI_THREAD_SERIALIZED).
bool mpiCallsFromAnyThread();
// Ranks in the job that launched this process (OMPI_COMM_WORLD_SIZE / PMI_SIZE), 0 if none.
int mpiLaunchSize();
// Of those, the ones on this machine (OMPI_COMM_WORLD_LOCAL_SIZE / MPI_LOCALNRANKS), 0 if not
// said; and this process's number among them (`fallback` if not said). A process per GPU uses
// GPU (local rank mod G).
int mpiLocalLaunchSize();
int mpiLocalRank(int fallback);
// MPI_COMM_WORLD as a Communicator. Initialises MPI if needed (and finalises it at exit).
// Throws CommError without MPI or with a link profile (emulation is ThreadComm's).
std::unique_ptr<Communicator> makeMpiWorld(CommOptions options = {});
// Collective over the MPI job (MPI_COMM_WORLD, after makeMpiWorld): world rank 0's `text` on
// every process, outside any accounting (a control message, not training traffic: paralab-run
// --control). Costs one 4-byte broadcast when `text` is empty, a second one with the text when
// not. Waiting processes sleep between polls, with no deadline. Throws CommError without MPI.
std::string mpiBroadcastText(const std::string& text);

// [SECTION] One rank per GPU, one process each, under mpirun: rank r uses local GPU
// (local rank) and the NCCL unique id travels by MPI_Bcast. Host buffers go through MpiComm.
bool ncclAvailable();  // built with NCCL
std::unique_ptr<Communicator> makeNcclMpiWorld(CommOptions options = {});

}  // namespace paralab
