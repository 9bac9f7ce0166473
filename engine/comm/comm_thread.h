// ThreadComm's insides (private to engine/comm): a group of ranks that are threads of one
// process and read each other's buffers directly. Waiting spins briefly on plain loads, then
// blocks on a condition variable, so 8 ranks on 2 cores stay cheap; every wait has the call's
// deadline and sees a world-wide abort. See tests/engine/tst_comm_thread.cpp.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "memory/memory_tracker.h"

namespace paralab {

class ThreadGroup;

// What all groups of one ThreadWorld share: the abort flag and its first reason.
struct ThreadWorld::Shared {
  explicit Shared(int worldSize);
  void abort(const std::string& why);  // first reason wins; wakes every waiting rank
  std::string message() const;

  std::atomic<bool> aborted{false};
  const int worldSize;
  const bool oversubscribed;  // more ranks than hardware threads: block almost at once
  mutable std::mutex mutex;
  std::string why;
  std::vector<ThreadGroup*> groups;  // registered while alive, to be woken on abort
};

// A host (or device) buffer that grows on demand, counted as MemCategory::Comm.
class StagingBuffer {
 public:
  ~StagingBuffer() { release(); }
  float* get(int64_t count, MemoryTracker* tracker, Device device);
  void release();

 private:
  float* m_data = nullptr;
  int64_t m_count = 0;
  Device m_device = Device::Cpu;
  MemoryTracker* m_tracker = nullptr;
};

class ThreadGroup {
 public:
  ThreadGroup(std::shared_ptr<ThreadWorld::Shared> world, std::string name,
              std::vector<int> worldRanks);
  ~ThreadGroup();
  int size() const { return m_n; }
  const std::string& name() const { return m_name; }
  const std::vector<int>& worldRanks() const { return m_worldRanks; }
  ThreadWorld::Shared& world() const { return *m_world; }
  const std::shared_ptr<ThreadWorld::Shared>& worldPtr() const { return m_world; }

  // What a member posted for one call. Two per member, by call parity, so a fast rank posting
  // its next call never overwrites what a slow rank is still reading.
  struct alignas(64) Slot {
    int op = -1, root = -1, reduceOp = -1, algo = -1;
    int64_t count = 0;
    Device device = Device::Cpu;
    const float* send = nullptr;
    float* recv = nullptr;
    const int64_t* sendCounts = nullptr;  // alltoallv
    const int64_t* recvCounts = nullptr;
    int color = 0, key = 0;                     // split
    std::shared_ptr<ThreadGroup> made;          // split: the leader's new group
    const std::string* text = nullptr;          // gatherToRoot
  };
  Slot& slot(int member, uint64_t call) { return m_slots[2 * member + (call & 1)]; }

  // All members arrive, then all go on. Throws CommAborted on abort or past the deadline
  // (the message names `label`, the group and the members that never arrived).
  void barrier(int member, const char* label, int64_t deadlineNs);

  // Set while a member is between two barriers of a collective, reading others' buffers. A
  // rank leaving a collective by an exception waits until nobody is busy before its buffers
  // go away (the others finish their step, then see the abort at the next barrier).
  void setBusy(int member, bool busy) { m_busy[member].v.store(busy, std::memory_order_seq_cst); }
  void waitUntilNobodyBusy() const;

  // Bytes member `dst` pulled from member `src`; written by dst only, read after a barrier.
  std::atomic<int64_t>& pulled(int dst, int src) { return m_pulled[dst * m_stride + src]; }

  // Point to point: a FIFO per (src, dst). post() never waits; take() waits for a message.
  struct Message {
    float* data = nullptr;  // host (new[]) or device memory owned by the message
    int64_t count = 0;
    Device device = Device::Cpu;
    int64_t arriveNs = 0;  // link emulation: not to be delivered before this
    MemoryTracker* tracker = nullptr;  // the sender's, counted as Comm while queued
  };
  void post(int src, int dst, Message m);
  Message take(int src, int dst, const char* label, int64_t deadlineNs);
  static void freeMessage(Message& m);

 private:
  template <class Ready, class Missing>
  void waitUntil(Ready ready, int64_t deadlineNs, const char* label, Missing missing);
  void wake();

  struct alignas(64) Counter {
    std::atomic<uint64_t> v{0};
  };
  struct Mailbox {
    std::mutex mutex;
    std::deque<Message> queue;
    std::atomic<uint64_t> posted{0};
    uint64_t taken = 0;  // by the receiver only
  };

  std::shared_ptr<ThreadWorld::Shared> m_world;
  const std::string m_name;
  const std::vector<int> m_worldRanks;
  const int m_n;
  const int64_t m_spinNs;
  std::vector<Slot> m_slots;
  // Barrier: a count of arrivals and a generation that moves when the last one arrives.
  alignas(64) std::atomic<int> m_count{0};
  alignas(64) std::atomic<uint64_t> m_gen{0};
  std::vector<Counter> m_arrivals;  // per member: barriers reached (for "never arrived")
  std::vector<Counter> m_busy;      // per member: 1 while reading others' buffers
  const int m_stride;
  std::unique_ptr<std::atomic<int64_t>[]> m_pulled;
  std::unique_ptr<Mailbox[]> m_mail;
  // Blocking: waiters sleep here; wakers notify only when someone sleeps.
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::atomic<int> m_sleepers{0};
  friend struct ThreadWorld::Shared;
};

class ThreadComm final : public Communicator {
 public:
  // Member `rank` of a world group: its own accounting, as world rank group->worldRanks()[rank].
  // `link` carries transfers inside a node, `nodeLink` those between nodes (link_model.h).
  ThreadComm(std::shared_ptr<ThreadGroup> group, int rank, CommOptions options, LinkProfile link,
             LinkProfile nodeLink);
  // A member of a group split off: shares the rank's accounting and instrumentation.
  ThreadComm(std::shared_ptr<ThreadGroup> group, int rank, CommOptions options, LinkProfile link,
             LinkProfile nodeLink, std::shared_ptr<RankContext> ctx);
  ~ThreadComm() override;
  Backend backend() const override { return Backend::Thread; }
  std::vector<std::string> gatherToRoot(const std::string& mine, int root) override;
  void abort(const std::string& why) override;
  bool aborted() const override;

 protected:
  // For NcclComm in one process: every rank posted the same call (one barrier).
  void agreeOn(const CallSignature& sig, const char* label) override;
  CommAlgo defaultAlgo() const override { return CommAlgo::Direct; }
  void doAllReduce(const float* send, float* recv, int64_t count, ReduceOp op, CommAlgo algo,
                   Device device) override;
  void doReduceScatter(const float* send, float* recv, int64_t recvCount, ReduceOp op,
                       Device device) override;
  void doAllGather(const float* send, float* recv, int64_t sendCount, Device device) override;
  void doBroadcast(float* buf, int64_t count, int root, Device device) override;
  void doReduce(const float* send, float* recv, int64_t count, int root, ReduceOp op,
                Device device) override;
  void doAllToAll(const float* send, float* recv, int64_t countPerPeer, Device device) override;
  void doAllToAllv(const float* send, const int64_t* sendCounts, float* recv,
                   const int64_t* recvCounts, Device device) override;
  void doSend(const float* buf, int64_t count, int peer, Device device) override;
  void doRecv(float* buf, int64_t count, int peer, Device device) override;
  void doBarrier() override;
  std::unique_ptr<Communicator> doSplit(int color, int key, const std::string& name) override;

 private:
  // [SECTION] Steps (comm_thread.cpp)
  // Lives for one collective. Leaving by an exception other than a mismatch every rank saw
  // (m_cleanExit) aborts the world, then waits until no rank is busy reading our buffers.
  class Busy {
   public:
    explicit Busy(ThreadComm& c);
    ~Busy();

   private:
    ThreadComm& m_c;
    int m_exceptions;
  };
  // Posts this rank's call, waits for all, and checks they all posted the same call
  // (CommError on every rank if not). Returns the call number (for slot()).
  uint64_t enter(const CallSignature& sig, const float* send, float* recv, Device device,
                 const int64_t* sendCounts = nullptr, const int64_t* recvCounts = nullptr);
  // Ends a step: waits for this rank's device work, then for every rank. Marks this rank busy
  // again after the barrier and then checks for an abort: with the flag set first, a rank
  // that aborts either sees us busy and waits, or we see its abort and read nothing.
  void sync();
  // Folds what the others pulled from this rank during the call into its record. Call after
  // a barrier that follows the last transfer.
  void foldSent();
  // Copies `count` floats from member `from`'s buffer (or this rank's, not counted) into dst.
  void pull(float* dst, const float* src, int64_t count, int from, Device device);
  // Counts `count` floats this rank read from member `from` without copying (a reduction).
  void countPulled(int from, int64_t count);
  // dst = srcs[0] op srcs[1] op ... (in order), / divisor; on the host or on the device.
  void combine(float* dst, const float* const* srcs, int nsrc, int64_t count, ReduceOp op,
               bool last, Device device);
  // Link emulation: returns no earlier than stepStartNs + the modelled time of the step, each
  // tier's bytes on its own link (tieredStepNs).
  void pace(int64_t stepStartNs, const TierLoad& load);
  // A step's load: `out` bytes to and `in` bytes from member q, on q's tier.
  void addLoad(TierLoad& load, int q, int64_t out, int64_t in) const;
  // A step in which this rank sends `outPerPeer` to and receives `inPerPeer` from every other.
  TierLoad everyPeer(int64_t outPerPeer, int64_t inPerPeer) const;
  void* stream();  // this rank's CUDA stream (device path), made on first use

  // [SECTION] All-reduce algorithms (thread_allreduce.cpp)
  void allReduceNaive(const float* send, float* recv, int64_t count, ReduceOp op, Device dev);
  void allReduceRing(const float* send, float* recv, int64_t count, ReduceOp op, Device dev);
  void allReduceDirect(const float* send, float* recv, int64_t count, ReduceOp op, Device dev);

  std::shared_ptr<ThreadGroup> m_g;
  uint64_t m_calls = 0;                 // collectives entered in this group
  std::vector<int64_t> m_seenPulled;    // per member: pulled(q, me) already folded
  std::vector<const float*> m_srcs;     // scratch: source pointers of a reduction
  std::vector<float*> m_dsts;           // scratch: where the direct all-reduce writes a slice
  StagingBuffer m_staging;              // naive in place: the sum before it is copied back
  bool m_cleanExit = false;             // the call failed the same way on every rank
  void* m_stream = nullptr;
};

// Elementwise chunk q of n over `count` floats: [begin, begin + len). Balanced: lengths differ
// by at most one.
inline int64_t chunkBegin(int q, int n, int64_t count) { return q * count / n; }
inline int64_t chunkLen(int q, int n, int64_t count) {
  return chunkBegin(q + 1, n, count) - chunkBegin(q, n, count);
}

}  // namespace paralab
