// A block of CUDA threads on the host: its threads, their warps, the block's barrier and the
// warps' collectives, as the kernel code calls them (__syncthreads(), __shfl_*_sync). A thread
// that must wait hands the OS thread back to the block's scheduler (grid.h) and is resumed when
// the others have arrived: a barrier really blocks. See tests/kernels/tst_cuda_host.cpp.
#pragma once
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/host/fiber.h"
#include "cuda/host/types.h"

namespace paralab::cuda_host {

// [SECTION] What the device beneath provides (cuda/emulated.cpp)

void submit(cudaStream_t stream, std::function<void()> work);  // runs in stream order
void* hostAddress(const void* device);          // what a kernel on the host dereferences for it
bool isDeviceAddress(uint64_t word);            // a live device allocation's address, as handed out
// "4 bytes past the end of a 400-byte allocation". Weak: a program that runs kernels on host
// memory only (cuda_host::runNow) has no device allocations to describe, and no definition.
std::string describeAddress(const void* host) __attribute__((weak));

// [SECTION] Threads, warps, blocks

struct Block;

struct Thread {
  // Released: a barrier or a warp collective let it go; the scheduler resumes it.
  enum class State : uint8_t { New, Running, AtBarrier, AtWarp, Released, Done };
  uint3 idx{};      // threadIdx
  unsigned id = 0;  // x + y Dx + z Dx Dy: lane id % 32 of warp id / 32, as on the GPU
  State state = State::New;
  Block* block = nullptr;
  Context context;              // where it waits
  FiberStack* stack = nullptr;  // the stack of the fibre running it
  unsigned lane() const { return id % 32; }
  unsigned warp() const { return id / 32; }
};

enum class WarpOp : uint8_t { Syncwarp, Shfl, ShflUp, ShflDown, ShflXor, Mma };
inline const char* name(WarpOp op) {
  constexpr const char* names[] = {"__syncwarp",       "__shfl_sync",     "__shfl_up_sync",
                                   "__shfl_down_sync", "__shfl_xor_sync", "wmma::mma_sync"};
  return names[int(op)];
}

// A warp's collectives in flight: lanes that named the same mask wait together; lanes of
// disjoint masks (two half-warps, say) may wait in collectives of their own at the same time.
struct Warp {
  struct Group {
    unsigned mask = 0, waiting = 0;  // the mask named; the lanes of it that have arrived
    WarpOp op = WarpOp::Syncwarp;
  };
  unsigned present = 0;  // lanes that exist and have not returned
  Group groups[16];      // in flight: groups[0, busy)
  unsigned busy = 0;
  uint16_t epoch = 0;   // __syncwarp()s completed: orders the warp's shared-memory accesses
  uint64_t value[32];   // what each lane offers (a float, int or double, as bits)
  int source[32];       // the lane whose value each lane receives (-1: its own)
  uint64_t result[32];  // handed out when the last lane of the mask arrives

  const Group* waitingFor(unsigned lane) const {  // the collective awaiting `lane`, if any
    for (unsigned g = 0; g < busy; ++g)
      if (groups[g].mask >> lane & 1) return &groups[g];
    return nullptr;
  }
};

// One per kernel (per template instance): its name and where its __shared__ variables lie.
struct KernelInfo {
  explicit KernelInfo(std::string n) : name(std::move(n)) {}
  std::string name;  // "gemm_tiled_kernel<false, true>"
  std::mutex mutex;
  std::atomic<size_t> staticShared = 0;  // bytes of __shared__ variables placed so far (shared.h)
};

struct Cell;  // shared.h: one 4-byte word of shared memory as the racecheck sees it

inline constexpr size_t kStaticSharedLimit = 48 * 1024;    // per block, as ptxas enforces
inline constexpr size_t kDynamicSharedLimit = 227 * 1024;  // with the opt-in (H100, sm_90)

struct Block {
  KernelInfo* kernel = nullptr;
  uint3 idx{};
  dim3 dim, grid;
  size_t dynamicShared = 0;
  std::vector<Thread> threads;
  std::vector<Warp> warps;
  unsigned live = 0, atBarrier = 0;  // threads not returned; of them, waiting at __syncthreads()
  unsigned started = 0;              // threads[0, started) have been started (and set up)
  uint3 next{};                      // threadIdx of threads[started]
  std::vector<Thread*> released;     // let go by a barrier or a warp, to be resumed
  FiberStack* endedStack = nullptr;  // of a fibre that has run out of threads
  uint32_t epoch = 0;                // __syncthreads() completed
  char* shared = nullptr;            // static variables from 0, the dynamic part from 48 KiB
  Cell* shadow = nullptr;            // one Cell per 4 bytes of `shared` (checks on)
  size_t shadowReady = 0;            // bytes of static shared memory whose shadow is reset
  std::exception_ptr error;          // the first failure of a thread; the block stops
  // Reads of shared words no thread had written yet (checks on). Reported at the next barrier
  // or the block's end unless another thread's write to the word is reported first, as a race.
  std::vector<std::pair<unsigned, std::string>> uninitialised;  // reader, what it read
  Context scheduler;                    // where a waiting or finished thread returns to
  void (*body)(const void*) = nullptr;  // calls the kernel with the launch's arguments
  const void* args = nullptr;
};

inline thread_local constinit Thread* t_self = nullptr;  // the CUDA thread running now
inline Thread& self() { return *t_self; }

// [SECTION] Checks: racecheck and initcheck of shared memory, bounds of shared arrays (the
// bounds of global memory are checked by guard pages at the end of every device allocation,
// always). On with PARALAB_CUDA_HOST_CHECKS=1 or setChecks(true): every shared access then
// consults its shadow (shared.h), a few times slower.
inline std::atomic<bool> g_checks{[] {
  const char* v = std::getenv("PARALAB_CUDA_HOST_CHECKS");
  return v && *v && std::strcmp(v, "0") != 0;
}()};
inline bool checking() { return g_checks.load(std::memory_order_relaxed); }
inline void setChecks(bool on) { g_checks = on; }

// A kernel's failure as compute-sanitizer words it: the kernel, the block, the thread.
class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline std::string str(uint3 v) {  // "(3,1,0)"
  char text[40];
  std::snprintf(text, sizeof text, "(%u,%u,%u)", v.x, v.y, v.z);
  return text;
}
inline std::string hex(unsigned mask) {  // "0xffffffff"
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", mask);
  return text;
}
inline uint3 threadIndex(const Block& b, unsigned id) {
  return {id % b.dim.x, id / b.dim.x % b.dim.y, id / (b.dim.x * b.dim.y)};
}
inline std::string where(const Thread& t) {
  return t.block->kernel->name + " block " + str(t.block->idx) + " thread " + str(t.idx);
}
[[noreturn]] inline void fail(const std::string& what) {
  throw KernelError(where(self()) + ": " + what);
}

// [SECTION] Waiting: a thread that must wait hands the OS thread back to its block's scheduler.

inline void reportUninitialised(const Block& b) {
  if (b.uninitialised.empty()) return;
  const auto& [reader, what] = b.uninitialised.front();
  Thread t;
  t.block = const_cast<Block*>(&b);
  t.idx = threadIndex(b, reader);
  throw KernelError(where(t) + ": read of shared " + what +
                    ", which no thread of this block had written (uninitialised)");
}

inline void suspend(Thread& t, Thread::State why) {
  t.state = why;
  switchContext(t.context, t.block->scheduler);
  t.state = Thread::State::Running;
}

inline void release(Block& b, Thread& t) {
  t.state = Thread::State::Released;
  b.released.push_back(&t);
}

inline void releaseBarrier(Block& b) {
  reportUninitialised(b);
  for (unsigned id = 0; id < b.started; ++id)
    if (b.threads[id].state == Thread::State::AtBarrier) release(b, b.threads[id]);
  b.atBarrier = 0;
  ++b.epoch;
}

// __syncthreads(): the last live thread to arrive releases the others and goes on. A thread
// that has returned counts as arrived, as on GPUs since Volta.
inline void syncthreads() {
  Thread& t = self();
  Block& b = *t.block;
  if (++b.atBarrier == b.live) return releaseBarrier(b);
  suspend(t, Thread::State::AtBarrier);
}

// A warp collective: every lane of `mask` offers `value` and receives the value of lane
// `source` (its own where `source` is -1). The last lane to arrive hands out every result,
// after doing the collective's work for the whole warp where there is some (`complete`).
inline uint64_t warpExchange(WarpOp op, unsigned mask, uint64_t value, int source,
                             void (*complete)(const uint64_t (&values)[32]) = nullptr) {
  Thread& t = self();
  Block& b = *t.block;
  Warp& w = b.warps[t.warp()];
  const unsigned lane = t.lane(), bit = 1u << lane;
  if (!(mask & bit))
    fail(std::string(name(op)) + " with mask " + hex(mask) +
         ", which leaves out the calling lane " + std::to_string(lane));
  if (mask & ~w.present)  // they would never arrive: a hang on a GPU
    fail(std::string(name(op)) + " with mask " + hex(mask) + " names lanes that " +
         "do not exist or have returned (" + hex(mask & ~w.present) + ")");
  Warp::Group* g = nullptr;
  for (unsigned k = 0; k < w.busy && !g; ++k)
    if (w.groups[k].mask & mask) g = &w.groups[k];
  if (g && (g->mask != mask || g->op != op))
    fail(std::string(name(op)) + " (mask " + hex(mask) + ") while lanes of its warp wait in " +
         name(g->op) + " (mask " + hex(g->mask) + "): the warp has diverged");
  if (!g) g = &(w.groups[w.busy++] = {mask, 0, op});
  w.value[lane] = value;
  w.source[lane] = source;
  g->waiting |= bit;
  if (g->waiting != mask) {
    suspend(t, Thread::State::AtWarp);
    return w.result[lane];
  }
  *g = w.groups[--w.busy];  // the last to arrive: the collective is done
  if (complete) complete(w.value);
  const unsigned first = t.warp() * 32;  // hand out, release, go on
  for (unsigned l = 0; l < 32; ++l) {
    if (!(mask >> l & 1)) continue;
    const int s = w.source[l];
    if (s >= 0 && !(mask >> s & 1))
      fail(std::string(name(op)) + ": lane " + std::to_string(l) + " reads lane " +
           std::to_string(s) + ", which is not in the mask (undefined on a GPU)");
    w.result[l] = w.value[s < 0 ? l : s];
    if (l != lane) release(b, b.threads[first + l]);
  }
  if (op == WarpOp::Syncwarp) ++w.epoch;
  return w.result[lane];
}

}  // namespace paralab::cuda_host
