// Fibres: the CUDA threads of a block, each with a stack of its own, taking turns on one OS
// thread. A switch saves the registers a called function must preserve (the x86-64 System V
// ABI's rbx, rbp, r12-r15) on the current stack, swaps stack pointers and restores the other
// fibre's: about ten instructions and no system call (ucontext's swapcontext also saves the
// signal mask with one, which costs microseconds). See tests/kernels/tst_cuda_host.cpp.
#pragma once
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace paralab::cuda_host {

// A fibre's stack: mmap'd, with one inaccessible page below it so an overflow faults at once.
struct FiberStack {
  char* base = nullptr;  // lowest usable byte
  size_t size = 0;

  static FiberStack make(size_t size) {
    const size_t page = 4096;
    void* p = mmap(nullptr, size + page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    mprotect(p, page, PROT_NONE);
    return {static_cast<char*>(p) + page, size};
  }
  void release() { munmap(base - 4096, size + 4096); }
  bool guards(const void* addr) const {  // addr lies in the guard page
    const char* a = static_cast<const char*>(addr);
    return a >= base - 4096 && a < base;
  }
};

#if defined(__x86_64__)

// A suspended fibre is its stack pointer; the saved registers sit on its stack.
struct Context {
  void* sp = nullptr;
};

extern "C" void paralab_fiber_switch(void** save, void* load);
extern "C" void paralab_fiber_entry();

// Weak: this header is included by several files, the linker keeps one copy.
asm(R"(
  .text
  .weak paralab_fiber_switch
  .type paralab_fiber_switch, @function
paralab_fiber_switch:          # (void** save = rdi, void* load = rsi)
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)            # *save = this fibre's stack pointer
  movq %rsi, %rsp              # now on the other fibre's stack
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret                          # to where the other fibre called its switch (or to the entry)
  .size paralab_fiber_switch, .-paralab_fiber_switch

  .weak paralab_fiber_entry
  .type paralab_fiber_entry, @function
paralab_fiber_entry:           # a new fibre's first instruction: fn = r12, arg = rbx
  movq %rbx, %rdi
  callq *%r12                  # fn never returns: it switches away for good
  ud2
  .size paralab_fiber_entry, .-paralab_fiber_entry
)");

inline void switchContext(Context& save, const Context& load) {
  paralab_fiber_switch(&save.sp, load.sp);
}

// A context that, switched to, calls fn(arg) on `stack`: the stack holds what the switch pops.
inline void makeContext(Context& c, const FiberStack& stack, void (*fn)(void*), void* arg) {
  auto top = reinterpret_cast<uintptr_t>(stack.base + stack.size) & ~uintptr_t(15);
  auto* s = reinterpret_cast<uint64_t*>(top);
  *--s = reinterpret_cast<uint64_t>(&paralab_fiber_entry);  // `ret` lands here, rsp 16-aligned
  *--s = 0;                                                 // rbp
  *--s = reinterpret_cast<uint64_t>(arg);                   // rbx
  *--s = reinterpret_cast<uint64_t>(fn);                    // r12
  *--s = 0;                                                 // r13
  *--s = 0;                                                 // r14
  *--s = 0;                                                 // r15
  c.sp = s;
}

#else  // elsewhere: POSIX ucontext, correct but slower (a system call per switch)

struct Context {
  ucontext_t uc;
};

inline void switchContext(Context& save, const Context& load) {
  swapcontext(&save.uc, const_cast<ucontext_t*>(&load.uc));
}

inline void makeContext(Context& c, const FiberStack& stack, void (*fn)(void*), void* arg) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack.base;
  c.uc.uc_stack.ss_size = stack.size;
  c.uc.uc_link = nullptr;
  // makecontext passes ints only: the pointer travels in two halves.
  const auto bits = reinterpret_cast<uintptr_t>(arg);
  static thread_local void (*t_fn)(void*);
  t_fn = fn;
  makecontext(&c.uc, reinterpret_cast<void (*)()>(+[](unsigned lo, unsigned hi) {
    t_fn(reinterpret_cast<void*>(uintptr_t(hi) << 32 | lo));
  }),
              2, unsigned(bits), unsigned(uint64_t(bits) >> 32));
}

#endif

}  // namespace paralab::cuda_host
