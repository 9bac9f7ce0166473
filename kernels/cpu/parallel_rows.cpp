// The rank's threads for its own kernels (see parallel_rows.h): one fork-join pool (cpu/
// thread_pool.h), sized by rank_threads_set. See tests/kernels/tst_parallel_rows.cpp.
#include "cpu/parallel_rows.h"

#include <algorithm>
#include <memory>
#include <mutex>

#include "cpu/thread_pool.h"

namespace paralab::kernels {

namespace {
std::mutex g_mutex;
std::shared_ptr<ThreadPool> g_pool;  // null while the rank has one thread
int g_threads = 1;

std::shared_ptr<ThreadPool> rankPool() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_threads > 1 && !g_pool) g_pool = std::make_shared<ThreadPool>(g_threads);
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
  const std::shared_ptr<ThreadPool> pool = n >= 2 * minPiece ? rankPool() : nullptr;
  if (!pool) return f(0, n);
  // A few pieces a thread, so a thread slowed by another process takes fewer (thread_pool.h).
  const long units = (n + grain - 1) / grain;
  const long wanted = std::min<long>(4L * pool->size(), std::max(1L, n / std::max(1L, minPiece)));
  const long pieces = std::max(1L, std::min(units, wanted));
  const long per = (units + pieces - 1) / pieces;  // in grains
  const int tasks = int((units + per - 1) / per);
  pool->run(tasks, [&](int t) {
    const long begin = long(t) * per * grain;
    f(begin, std::min(n, begin + per * grain));
  });
}

}  // namespace paralab::kernels
