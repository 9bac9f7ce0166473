// False sharing, measured (see teach.h): the MESI protocol moves ownership of a whole 64-byte
// line to the core that writes, so two cores writing different counters in one line take turns
// owning it. See tests/kernels/tst_teach.cpp and `paralab-bench teach`.
#include "cpu/teach.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace paralab::kernels {

namespace {

constexpr int kMaxThreads = 8;
constexpr int kLine = 64;  // bytes in an x86-64 cache line

struct alignas(kLine) PackedCounters {  // 8 counters x 8 bytes: one line
  std::atomic<long> c[kMaxThreads];
};
struct alignas(kLine) PaddedCounter {  // one counter per line
  std::atomic<long> c;
};
static_assert(sizeof(PackedCounters) == kLine && sizeof(PaddedCounter) == kLine);

// Seconds from releasing the threads until the last one is done (thread start-up excluded).
double timeCounters(int threads, long increments, std::atomic<long>* const* counters) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::atomic<long>& c = *counters[t];
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (long i = 0; i < increments; ++i) c.fetch_add(1, std::memory_order_relaxed);
    });
  while (ready.load() < threads) std::this_thread::yield();
  const auto t0 = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  for (std::thread& th : pool) th.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

FalseSharingResult false_sharing_experiment(long increments, int threads, int repeats) {
  threads = std::clamp(threads, 1, kMaxThreads);  // 1: the baseline, nothing shared
  repeats = std::max(1, repeats);
  FalseSharingResult r;
  r.threads = threads;
  r.increments = increments;
  PackedCounters packed{};
  std::vector<PaddedCounter> padded(threads);
  std::atomic<long>* packedPtrs[kMaxThreads];
  std::atomic<long>* paddedPtrs[kMaxThreads];
  for (int t = 0; t < threads; ++t) {
    packedPtrs[t] = &packed.c[t];
    paddedPtrs[t] = &padded[t].c;
  }
  // Alternate the two layouts so a change in machine load hits both alike.
  std::vector<double> tPacked, tPadded;
  for (int i = 0; i < repeats; ++i) {
    tPacked.push_back(timeCounters(threads, increments, packedPtrs));
    tPadded.push_back(timeCounters(threads, increments, paddedPtrs));
  }
  r.packedSeconds = median(tPacked);
  r.paddedSeconds = median(tPadded);
  return r;
}

}  // namespace paralab::kernels
