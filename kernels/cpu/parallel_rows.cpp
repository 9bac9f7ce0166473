// The rank's threads for its own kernels (see parallel_rows.h): a fork-join pool whose caller
// waits for the pieces, never for a worker: on a machine shared with other processes a worker
// may wake late, and then finds every piece taken and goes back to sleep.
// See tests/kernels/tst_parallel_rows.cpp.
#include "cpu/parallel_rows.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace paralab::kernels {

namespace {

// One split: pieces handed out by `next`, counted back in `done`. Held by shared_ptr, so a
// worker that wakes after the caller returned still reads live counters (and calls nothing).
struct Split {
  const std::function<void(int)>* piece = nullptr;
  int pieces = 0;
  std::atomic<int> next{0}, done{0};
};

class RankPool {
 public:
  explicit RankPool(int threads) {
    for (int i = 1; i < threads; ++i) m_workers.emplace_back([this] { workerLoop(); });
  }
  ~RankPool() {
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_stop = true;
    }
    m_wake.notify_all();
    for (std::thread& t : m_workers) t.join();
  }
  int size() const { return int(m_workers.size()) + 1; }

  // f(0..pieces-1) on the workers and the caller; one split at a time (another caller, or a
  // split inside a piece, runs its pieces alone, as ThreadPool::run does).
  void run(int pieces, const std::function<void(int)>& f) {
    if (m_busy.exchange(true, std::memory_order_acquire)) {
      for (int p = 0; p < pieces; ++p) f(p);
      return;
    }
    auto split = std::make_shared<Split>();
    split->piece = &f;
    split->pieces = pieces;
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_split = split;
      ++m_generation;
    }
    m_wake.notify_all();
    take(*split);
    // The pieces a worker took are running now: wait for them briefly by yielding, then sleep.
    for (int spin = 0; split->done.load(std::memory_order_acquire) < pieces; ++spin) {
      if (spin < 64) {
        std::this_thread::yield();
        continue;
      }
      std::unique_lock<std::mutex> lock(m_mutex);
      m_finished.wait(lock, [&] { return split->done.load(std::memory_order_acquire) >= pieces; });
    }
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_split.reset();
    }
    m_busy.store(false, std::memory_order_release);
  }

 private:
  // Takes pieces until none is left; returns true when it finished the last one.
  static bool take(Split& s) {
    bool last = false;
    for (int p = s.next.fetch_add(1, std::memory_order_relaxed); p < s.pieces;
         p = s.next.fetch_add(1, std::memory_order_relaxed)) {
      (*s.piece)(p);
      last = s.done.fetch_add(1, std::memory_order_acq_rel) + 1 == s.pieces;
    }
    return last;
  }

  void workerLoop() {
    uint64_t seen = 0;
    for (;;) {
      std::shared_ptr<Split> split;
      {
        std::unique_lock<std::mutex> lock(m_mutex);
        m_wake.wait(lock, [&] { return m_stop || m_generation != seen; });
        if (m_stop) return;
        seen = m_generation;
        split = m_split;
      }
      if (split && take(*split)) {
        std::lock_guard<std::mutex> lock(m_mutex);  // the caller may be between check and wait
        m_finished.notify_all();
      }
    }
  }

  std::vector<std::thread> m_workers;
  std::atomic<bool> m_busy{false};
  std::mutex m_mutex;  // guards m_split, m_generation, m_stop
  std::condition_variable m_wake, m_finished;
  std::shared_ptr<Split> m_split;
  uint64_t m_generation = 0;
  bool m_stop = false;
};

std::mutex g_mutex;
std::shared_ptr<RankPool> g_pool;  // null while the rank has one thread
int g_threads = 1;

std::shared_ptr<RankPool> rankPool() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_threads > 1 && !g_pool) g_pool = std::make_shared<RankPool>(g_threads);
  return g_pool;
}

}  // namespace

int rank_threads() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_threads;
}

void rank_threads_set(int n) {
  std::lock_guard<std::mutex> lock(g_mutex);
  n = std::max(1, n);
  if (n == g_threads) return;
  g_threads = n;
  g_pool.reset();  // the next split builds a pool of n; a running one keeps its own
}

void parallel_for(long n, long grain, long minPiece, const std::function<void(long, long)>& f) {
  if (n <= 0) return;
  grain = std::max(1L, grain);
  const std::shared_ptr<RankPool> pool = n >= 2 * minPiece ? rankPool() : nullptr;
  if (!pool) return f(0, n);
  // A few pieces a thread, so a thread slowed by another process takes fewer.
  const long units = (n + grain - 1) / grain;
  const long wanted = std::min<long>(4L * pool->size(), std::max(1L, n / std::max(1L, minPiece)));
  const long pieces = std::max(1L, std::min(units, wanted));
  const long per = (units + pieces - 1) / pieces;  // in grains
  const int tasks = int((units + per - 1) / per);
  if (tasks == 1) return f(0, n);
  pool->run(tasks, [&](int t) {
    const long begin = long(t) * per * grain;
    f(begin, std::min(n, begin + per * grain));
  });
}

}  // namespace paralab::kernels
