// The meeting place of ThreadComm's ranks: a ThreadGroup holds the slots where each member
// posts a call, the barrier they meet at (with a deadline that names who is missing), the
// queues of point-to-point messages, and the staging buffers collectives copy through.
// See comm_thread.cpp for the collectives and tests/engine/tst_comm_thread.cpp.
#include <algorithm>
#include <chrono>
#include <thread>

#include "comm/comm_thread.h"
#include "cuda/reduce.h"
#include "metrics/span_recorder.h"  // nowNs

namespace paralab {

// [SECTION] World and waiting

ThreadWorld::Shared::Shared(int n)
    : worldSize(n),
      oversubscribed(n > static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) {}

void ThreadWorld::Shared::abort(const std::string& reason) {
  std::lock_guard lock(mutex);
  if (!aborted.load()) {
    why = reason;
    aborted.store(true, std::memory_order_seq_cst);
  }
  // Lock each group's mutex before notifying: a waiter checks the flag under that mutex, so it
  // either sees the flag or is already waiting and gets the notification.
  for (ThreadGroup* g : groups) {
    std::lock_guard glock(g->m_mutex);
    g->m_cv.notify_all();
  }
}

std::string ThreadWorld::Shared::message() const {
  std::lock_guard lock(mutex);
  return why;
}

ThreadGroup::ThreadGroup(std::shared_ptr<ThreadWorld::Shared> world, std::string name,
                         std::vector<int> worldRanks)
    : m_world(std::move(world)), m_name(std::move(name)), m_worldRanks(std::move(worldRanks)),
      m_n(static_cast<int>(m_worldRanks.size())),
      // Spin while the others are likely running (a plain-load spin barrier costs ~0.1 us);
      // with more ranks than cores the one we wait for needs our core: block almost at once
      // (spinning with PAUSE at 8 threads on 2 cores measured milliseconds per barrier).
      m_spinNs(m_world->oversubscribed ? 0 : 20'000),
      m_slots(2 * m_n), m_arrivals(m_n), m_busy(m_n), m_stride((m_n + 7) / 8 * 8),
      m_pulled(new std::atomic<int64_t>[m_n * m_stride]), m_mail(new Mailbox[m_n * m_n]) {
  for (int i = 0; i < m_n * m_stride; ++i) m_pulled[i].store(0, std::memory_order_relaxed);
  std::lock_guard lock(m_world->mutex);
  m_world->groups.push_back(this);
}

ThreadGroup::~ThreadGroup() {
  {
    std::lock_guard lock(m_world->mutex);
    auto& g = m_world->groups;
    g.erase(std::remove(g.begin(), g.end(), this), g.end());
  }
  for (int i = 0; i < m_n * m_n; ++i)
    for (Message& m : m_mail[i].queue) freeMessage(m);
}

void ThreadGroup::wake() {
  // Pairs with the fence in waitUntil: either the waker sees a sleeper, or the sleeper sees
  // the new state before it sleeps.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (m_sleepers.load(std::memory_order_relaxed) > 0) {
    std::lock_guard lock(m_mutex);
    m_cv.notify_all();
  }
}

static std::string rankList(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

template <class Ready, class Missing>
void ThreadGroup::waitUntil(Ready ready, int64_t deadlineNs, const char* label, Missing missing) {
  // 1. Spin on plain loads (no PAUSE, no yield) for at most m_spinNs.
  const int64_t spinEnd = nowNs() + m_spinNs;
  for (int i = 1;; ++i) {
    if (ready()) return;
    if ((i & 63) == 0) {
      if (m_world->aborted.load(std::memory_order_relaxed)) throw CommAborted(m_world->message());
      if (nowNs() >= spinEnd) break;
    }
  }
  // 2. Block until woken, aborted, or past the deadline.
  m_sleepers.fetch_add(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  struct Leave {
    std::atomic<int>& s;
    ~Leave() { s.fetch_sub(1, std::memory_order_relaxed); }
  } leave{m_sleepers};
  std::unique_lock lock(m_mutex);
  while (!ready()) {
    if (m_world->aborted.load()) {
      lock.unlock();  // abort() takes the world's mutex, then ours: never the other way round
      throw CommAborted(m_world->message());
    }
    const int64_t now = nowNs();
    if (now >= deadlineNs) {
      lock.unlock();
      const std::string msg = std::string(label) + " on group '" + m_name + "' (" +
                              std::to_string(m_n) + " ranks) timed out: " + missing();
      m_world->abort(msg);
      throw CommTimeout(m_world->message());
    }
    m_cv.wait_until(lock, std::chrono::steady_clock::time_point(
                              std::chrono::nanoseconds(deadlineNs)));
  }
}

void ThreadGroup::barrier(int member, const char* label, int64_t deadlineNs) {
  if (m_n == 1) return;
  const uint64_t gen = m_gen.load(std::memory_order_acquire);
  const uint64_t arrival = m_arrivals[member].v.load(std::memory_order_relaxed) + 1;
  m_arrivals[member].v.store(arrival, std::memory_order_relaxed);
  if (m_count.fetch_add(1, std::memory_order_acq_rel) + 1 == m_n) {
    m_count.store(0, std::memory_order_relaxed);
    m_gen.store(gen + 1, std::memory_order_release);
    wake();
    return;
  }
  waitUntil([&] { return m_gen.load(std::memory_order_acquire) != gen; }, deadlineNs, label,
            [&] {
              std::vector<int> missing, missingWorld;
              for (int q = 0; q < m_n; ++q)
                if (m_arrivals[q].v.load() < arrival) {
                  missing.push_back(q);
                  missingWorld.push_back(m_worldRanks[q]);
                }
              std::string s = "rank(s) " + rankList(missing);
              if (missingWorld != missing) s += " (world " + rankList(missingWorld) + ")";
              return s + " never arrived";
            });
}

void ThreadGroup::waitUntilNobodyBusy() const {
  // Bounded: a busy rank is copying or adding (no waits) until its next barrier. The cap only
  // guards against a rank stuck in a device call.
  const int64_t giveUp = nowNs() + 10'000'000'000;
  for (int q = 0; q < m_n; ++q)
    while (m_busy[q].v.load(std::memory_order_seq_cst) && nowNs() < giveUp)
      std::this_thread::yield();
}

void ThreadGroup::post(int src, int dst, Message m) {
  Mailbox& box = m_mail[src * m_n + dst];
  {
    std::lock_guard lock(box.mutex);
    box.queue.push_back(m);
  }
  box.posted.fetch_add(1, std::memory_order_release);
  wake();
}

ThreadGroup::Message ThreadGroup::take(int src, int dst, const char* label, int64_t deadlineNs) {
  Mailbox& box = m_mail[src * m_n + dst];
  waitUntil([&] { return box.posted.load(std::memory_order_acquire) > box.taken; }, deadlineNs,
            label, [&] {
              return "rank " + std::to_string(dst) + " waited for a message that rank " +
                     std::to_string(src) + " never sent";
            });
  std::lock_guard lock(box.mutex);
  Message m = box.queue.front();
  box.queue.pop_front();
  ++box.taken;
  return m;
}

void ThreadGroup::freeMessage(Message& m) {
  if (!m.data) return;
  if (m.device == Device::Cuda)
    kernels::reduce_device_free(m.data);
  else
    delete[] m.data;
  if (m.tracker) m.tracker->sub(MemCategory::Comm, m.count * 4);
  m.data = nullptr;
}

float* StagingBuffer::get(int64_t count, MemoryTracker* tracker, Device device) {
  if (count <= m_count && device == m_device && tracker == m_tracker) return m_data;
  const int64_t want = std::max(count, device == m_device ? m_count : 0);
  release();
  m_data = device == Device::Cuda ? static_cast<float*>(kernels::reduce_device_alloc(want * 4))
                                  : new float[want];
  m_count = want;
  m_device = device;
  m_tracker = tracker;
  if (m_tracker) m_tracker->add(MemCategory::Comm, m_count * 4);
  return m_data;
}

void StagingBuffer::release() {
  if (!m_data) return;
  if (m_device == Device::Cuda)
    kernels::reduce_device_free(m_data);
  else
    delete[] m_data;
  if (m_tracker) m_tracker->sub(MemCategory::Comm, m_count * 4);
  m_data = nullptr;
  m_count = 0;
}

}  // namespace paralab
