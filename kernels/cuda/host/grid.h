// How a grid runs on the host: blocks one after another on the calling OS thread; a block's
// threads are fibres (fiber.h) that take turns, each running until it waits at a barrier or a
// warp collective (block.h), or returns. A kernel's failure (a hazard, an out-of-bounds access,
// a deadlock) stops the grid as a KernelError naming the kernel, the block and the thread.
// Correctness only: no speed, no concurrency between blocks. See tests/kernels/tst_cuda_host.cpp.
#pragma once
#include <signal.h>
#include <ucontext.h>

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/host/block.h"
#include "cuda/host/shared.h"

namespace paralab::cuda_host {

// [SECTION] One OS thread's runner: its fibre stacks and shared memory, kept between launches.

struct Runner {
  static constexpr size_t kStack = 64 * 1024;
  static constexpr size_t kShared = kStaticSharedLimit + kDynamicSharedLimit;
  std::deque<FiberStack> all;  // every stack made (a deque: their addresses stay put)
  std::vector<FiberStack*> idle;
  char* shared = static_cast<char*>(std::aligned_alloc(128, kShared));
  std::unique_ptr<Cell[]> shadow;                             // made when the checks are first on
  std::vector<char> altStack = std::vector<char>(64 * 1024);  // for the fault handler
  Block block;
  std::vector<Thread*> resuming;
  sigjmp_buf jump;
  Thread* faultThread = nullptr;
  const void* faultAddress = nullptr;
  int faultWrite = -1;  // 1 write, 0 read, -1 unknown

  ~Runner() {
    for (FiberStack& s : all) s.release();
    std::free(shared);
  }
  FiberStack* takeStack() {
    if (idle.empty()) {
      all.push_back(FiberStack::make(kStack));
      return &all.back();
    }
    FiberStack* s = idle.back();
    idle.pop_back();
    return s;
  }
  void giveStack(FiberStack* s) { idle.push_back(s); }
  void reclaim(Block& b) {  // after a failure: every fibre's stack back, suspended or not
    for (unsigned id = 0; id < b.started; ++id)
      if (FiberStack*& s = b.threads[id].stack) giveStack(s), s = nullptr;
    t_self = nullptr;
  }
};

// Runners outlive the OS threads that used them (ranks are threads that come and go): a thread
// takes one from the pool on its first launch and gives it back when it ends.
inline std::mutex g_runnersMutex;
inline std::vector<std::unique_ptr<Runner>> g_runners;

class RunnerLease {
 public:
  RunnerLease() {
    {
      std::lock_guard lock(g_runnersMutex);
      if (!g_runners.empty()) m_runner = std::move(g_runners.back()), g_runners.pop_back();
    }
    if (!m_runner) m_runner = std::make_unique<Runner>();
    // The fault handler runs on a stack of its own: the faulting fibre's may be the problem.
    stack_t now{};
    sigaltstack(nullptr, &now);
    if (now.ss_flags & SS_DISABLE) {
      stack_t ss{m_runner->altStack.data(), 0, m_runner->altStack.size()};
      m_ownAltStack = sigaltstack(&ss, nullptr) == 0;
    }
  }
  ~RunnerLease() {
    if (m_ownAltStack) {
      stack_t off{nullptr, SS_DISABLE, 0};
      sigaltstack(&off, nullptr);
    }
    std::lock_guard lock(g_runnersMutex);
    g_runners.push_back(std::move(m_runner));
  }
  Runner& get() { return *m_runner; }

 private:
  std::unique_ptr<Runner> m_runner;
  bool m_ownAltStack = false;
};

inline thread_local Runner* t_runner = nullptr;  // set while the thread runs a grid
inline Runner& runner() {
  static thread_local RunnerLease lease;
  return lease.get();
}

// [SECTION] Faults: SIGSEGV or SIGBUS while a kernel runs stops the launch and names the
// thread. Anything else goes to the handler that was there before (the default: a crash).

inline struct sigaction g_previous[2];

inline void onFault(int sig, siginfo_t* info, void* context) {
  if (t_runner && t_self) {
    Runner& r = *t_runner;
    r.faultThread = t_self;
    r.faultAddress = info->si_code == SI_KERNEL ? nullptr : info->si_addr;
    r.faultWrite = -1;
#if defined(__x86_64__)  // a page fault's error code says whether it was a write
    if (r.faultAddress)
      r.faultWrite = static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_ERR] & 2 ? 1 : 0;
#endif
    siglongjmp(r.jump, 1);
  }
  const struct sigaction& p = g_previous[sig == SIGBUS];
  if ((p.sa_flags & SA_SIGINFO) && p.sa_sigaction) return p.sa_sigaction(sig, info, context);
  if (p.sa_handler != SIG_DFL && p.sa_handler != SIG_IGN) return p.sa_handler(sig);
  signal(sig, SIG_DFL);  // returning runs the access again, which now ends the process
}

inline void installFaultHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction a {};
    a.sa_sigaction = onFault;
    a.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&a.sa_mask);
    sigaction(SIGSEGV, &a, &g_previous[0]);
    sigaction(SIGBUS, &a, &g_previous[1]);
  });
}

inline std::string faultMessage(const Runner& r) {
  const char* access = r.faultWrite == 1 ? "write" : r.faultWrite == 0 ? "read" : "access";
  if (!r.faultAddress)
    return std::string("illegal memory ") + access +
           " at an address that is no device memory (a host pointer handed to a kernel?)";
  for (const FiberStack& s : r.all)
    if (s.guards(r.faultAddress)) return "stack overflow of the thread's fibre";
  char at[32];
  std::snprintf(at, sizeof at, "%p", r.faultAddress);
  return std::string("out-of-bounds global ") + access + " at " + at +
         (&describeAddress ? ": " + describeAddress(r.faultAddress) : std::string());
}

// [SECTION] A block: its threads take turns until every one has returned.

inline void finish(Thread& t) {  // t has returned
  Block& b = *t.block;
  t.state = Thread::State::Done;
  --b.live;
  Warp& w = b.warps[t.warp()];
  w.present &= ~(1u << t.lane());
  if (const Warp::Group* g = w.waitingFor(t.lane()); g && !b.error)
    b.error = std::make_exception_ptr(
        KernelError(where(t) + ": returned while lanes of its warp wait for it in " + name(g->op) +
                    " (a hang on a GPU)"));
  if (b.atBarrier && b.atBarrier == b.live) releaseBarrier(b);  // it counts as arrived
}

// The next thread not yet started, set up: threads start in the order of their ids.
inline Thread& start(Block& b) {
  Thread& t = b.threads[b.started];
  t.id = b.started++;
  t.idx = b.next;
  t.block = &b;
  t.state = Thread::State::Running;
  t.stack = nullptr;
  if (++b.next.x == b.dim.x && (b.next.x = 0, ++b.next.y == b.dim.y)) b.next.y = 0, ++b.next.z;
  return t;
}

// A fibre runs threads one after another: when its thread returns it starts the next one not
// yet started, so a block whose threads never wait runs on one fibre without a single switch.
// When its thread waits, the fibre waits with it and the scheduler starts another.
inline void fibreMain(void* stack) {
  Block& b = *self().block;
  asanLanded(*static_cast<FiberStack*>(stack), b.scheduler);
  for (;;) {
    Thread& t = *t_self;
    t.stack = static_cast<FiberStack*>(stack);
    t.state = Thread::State::Running;
    try {
      b.body(b.args);
      finish(t);
    } catch (...) {
      if (!b.error) b.error = std::current_exception();
    }
    t.stack = nullptr;
    if (b.error || b.started == b.threads.size()) break;
    t_self = &start(b);
  }
  b.endedStack = static_cast<FiberStack*>(stack);
  endFibre(*b.endedStack, b.scheduler);  // the scheduler takes the stack back
}

inline std::string deadlock(const Block& b) {
  unsigned atBarrier = 0, atWarp = 0;
  const Thread* some = nullptr;
  std::string ops;
  for (unsigned id = 0; id < b.started; ++id) {
    const Thread& t = b.threads[id];
    if (t.state == Thread::State::AtBarrier) ++atBarrier, some = some ? some : &t;
    if (t.state == Thread::State::AtWarp) {
      ++atWarp;
      const std::string op = name(b.warps[t.warp()].waitingFor(t.lane())->op);
      if (ops.find(op) == std::string::npos) ops += (ops.empty() ? "" : ", ") + op;
    }
  }
  return where(*some) + ": deadlock: " + std::to_string(atBarrier) +
         " threads wait at __syncthreads() while " + std::to_string(atWarp) + " lanes wait in " +
         ops + " (a hang on a GPU)";
}

// Runs `t` (started: a fresh fibre) until it waits or its fibre runs out of threads.
inline void resume(Runner& r, Block& b, Thread& t, bool start) {
  t_self = &t;
  if (start) {
    FiberStack* s = r.takeStack();
    makeContext(t.context, *s, &fibreMain, s);
  }
  switchContext(b.scheduler, t.context);
  t_self = nullptr;
  if (b.endedStack) r.giveStack(b.endedStack), b.endedStack = nullptr;
  if (b.error) {
    r.reclaim(b);
    std::rethrow_exception(b.error);
  }
}

inline void runBlock(Runner& r, Block& b) {
  const unsigned n = b.dim.x * b.dim.y * b.dim.z;
  b.threads.resize(n);  // each is set up when it starts (start())
  b.next = {0, 0, 0};
  b.warps.resize((n + 31) / 32);
  for (unsigned w = 0; w < b.warps.size(); ++w) {
    const unsigned lanes = std::min(32u, n - 32 * w);
    b.warps[w].present = lanes == 32 ? ~0u : (1u << lanes) - 1;
    b.warps[w].busy = 0;
    b.warps[w].epoch = 0;
  }
  b.live = n;
  b.atBarrier = b.started = 0;
  b.released.clear();
  b.epoch = 0;
  b.shadowReady = 0;
  b.error = nullptr;
  b.uninitialised.clear();
  if (checking() && b.dynamicShared)
    resetShadow(b.shadow + kStaticSharedLimit / 4, b.dynamicShared / 4);
  std::vector<Thread*>& now = r.resuming;
  while (b.live) {
    if (!b.released.empty()) {  // threads a barrier or a warp collective let go, in that order
      now.swap(b.released);
      for (Thread* t : now) resume(r, b, *t, false);
      now.clear();
    } else if (b.started < n) {  // else the next thread not yet started, on a new fibre
      resume(r, b, start(b), true);
    } else {
      const std::string why = deadlock(b);
      r.reclaim(b);
      throw KernelError(why);
    }
  }
  reportUninitialised(b);
  if (t_counter) t_counter->endBlock();  // count.h: the block's warps counted
}

// The whole grid, blocks in x, then y, then z order, on the calling OS thread.
inline void runGrid(KernelInfo& kernel, dim3 grid, dim3 block, size_t dynamicShared,
                    void (*body)(const void*), const void* args) {
  installFaultHandler();
  Runner& r = runner();
  Block& b = r.block;
  b.kernel = &kernel;
  b.grid = grid;
  b.dim = block;
  b.dynamicShared = dynamicShared;
  b.body = body;
  b.args = args;
  b.shared = r.shared;
  if (checking() && !r.shadow) r.shadow = std::make_unique<Cell[]>(Runner::kShared / 4);
  b.shadow = r.shadow.get();
  if (sigsetjmp(r.jump, 0)) {  // back from onFault: the fibre that faulted is abandoned
    t_runner = nullptr;
    const std::string why = where(*r.faultThread) + ": " + faultMessage(r);
    r.reclaim(b);
    throw KernelError(why);
  }
  t_runner = &r;
  try {
    for (unsigned z = 0; z < grid.z; ++z)
      for (unsigned y = 0; y < grid.y; ++y)
        for (unsigned x = 0; x < grid.x; ++x) {
          b.idx = {x, y, z};
          runBlock(r, b);
        }
  } catch (...) {
    t_runner = nullptr;
    throw;
  }
  t_runner = nullptr;
}

}  // namespace paralab::cuda_host
