// The fork-join pool behind the multicore GEMM rungs (see thread_pool.h).
// See tests/kernels/tst_gemm.cpp and `paralab-bench gemm --threads 2`.
#include "cpu/thread_pool.h"

#include <algorithm>

#include "cpu/gemm.h"

namespace paralab::kernels {

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(1, threads); ++i) m_workers.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_stop = true;
  }
  m_wake.notify_all();
  for (std::thread& t : m_workers) t.join();
}

void ThreadPool::takeTasks() {
  for (int t = m_next.fetch_add(1, std::memory_order_relaxed); t < m_tasks;
       t = m_next.fetch_add(1, std::memory_order_relaxed))
    (*m_job)(t);
}

void ThreadPool::run(int tasks, const std::function<void(int)>& f) {
  if (tasks <= 0) return;
  if (m_workers.empty() || tasks == 1 || m_busy.exchange(true, std::memory_order_acquire)) {
    for (int t = 0; t < tasks; ++t) f(t);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_job = &f;
    m_tasks = tasks;
    m_next.store(0, std::memory_order_relaxed);
    m_pending = int(m_workers.size());
    ++m_generation;
  }
  m_wake.notify_all();
  takeTasks();
  {
    // Every worker checks in, even one that woke after the tasks ran out: then no worker can
    // still be reading m_job when the next run() replaces it.
    std::unique_lock<std::mutex> lock(m_mutex);
    m_done.wait(lock, [this] { return m_pending == 0; });
    m_job = nullptr;
  }
  m_busy.store(false, std::memory_order_release);
}

void ThreadPool::workerLoop() {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(m_mutex);
  for (;;) {
    m_wake.wait(lock, [&] { return m_stop || m_generation != seen; });
    if (m_stop) return;
    seen = m_generation;
    lock.unlock();
    takeTasks();
    lock.lock();
    if (--m_pending == 0) m_done.notify_one();
  }
}

// [SECTION] The GEMM rungs' shared pool and its size.
namespace {
std::mutex g_poolMutex;
std::shared_ptr<ThreadPool> g_pool;
int g_threads = 0;  // 0: not chosen yet, use the hardware's threads
}  // namespace

std::shared_ptr<ThreadPool> gemm_pool() {
  std::lock_guard<std::mutex> lock(g_poolMutex);
  if (!g_pool) {
    if (g_threads <= 0) g_threads = std::max(1u, std::thread::hardware_concurrency());
    g_pool = std::make_shared<ThreadPool>(g_threads);
  }
  return g_pool;
}

void gemm_set_threads(int n) {
  std::lock_guard<std::mutex> lock(g_poolMutex);
  if (n <= 0) n = int(std::max(1u, std::thread::hardware_concurrency()));
  if (n == g_threads && g_pool) return;
  g_threads = n;
  g_pool.reset();  // the next GEMM builds a pool of n; a running one keeps its own
}

int gemm_threads() {
  std::lock_guard<std::mutex> lock(g_poolMutex);
  return g_threads > 0 ? g_threads : int(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace paralab::kernels
