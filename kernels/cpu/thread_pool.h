// A small fork-join thread pool for the multicore GEMM rungs (gemm_threaded, gemm_tiled):
// run(tasks, f) calls f(0..tasks-1) on the pool's threads and the caller, and returns when all
// are done. See tests/kernels/tst_gemm.cpp (threaded and tiled rows with 1 and 2 threads).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace paralab::kernels {

class ThreadPool {
 public:
  // `threads` counts the caller: ThreadPool(2) starts one worker thread.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(m_workers.size()) + 1; }

  // Calls f(t) for every t in [0, tasks), in any order, on any of the threads; the caller takes
  // tasks too. Tasks are handed out one at a time (an atomic counter), so a thread slowed by
  // another process simply takes fewer. One job at a time: while another thread is inside
  // run() (two ranks calling a GEMM at once, or f itself calling run), this call does its tasks
  // serially on the calling thread instead of waiting: never a deadlock, never oversubscribed.
  void run(int tasks, const std::function<void(int)>& f);

 private:
  void workerLoop();
  void takeTasks();

  std::vector<std::thread> m_workers;
  std::atomic<bool> m_busy{false};   // a job is in flight
  std::mutex m_mutex;                // guards everything below except m_next
  std::condition_variable m_wake;    // workers: a new generation (or stop)
  std::condition_variable m_done;    // caller: every worker has finished the job
  const std::function<void(int)>* m_job = nullptr;
  int m_tasks = 0;
  std::atomic<int> m_next{0};        // next task to hand out
  int m_pending = 0;                 // workers still inside the current job
  uint64_t m_generation = 0;         // bumped once per job
  bool m_stop = false;
};

// The pool the GEMM rungs share, sized by gemm_set_threads (cpu/gemm.h). Held by shared_ptr so
// resizing never destroys a pool that a running GEMM still uses.
std::shared_ptr<ThreadPool> gemm_pool();

}  // namespace paralab::kernels
