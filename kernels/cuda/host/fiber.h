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

// AddressSanitizer must be told when a fibre switch changes stacks (its fake stacks for
// detect_stack_use_after_return live per stack): the switch is bracketed by
// __sanitizer_start_switch_fiber / __sanitizer_finish_switch_fiber, compiled only under ASan.
#if defined(__SANITIZE_ADDRESS__)
#define PARALAB_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PARALAB_FIBER_ASAN 1
#endif
#endif
#if defined(PARALAB_FIBER_ASAN)
// The sanitizer runtime's own entry points (compiler-rt's common_interface_defs.h and
// asan_interface.h declare the same), declared here so this header needs nothing but libc.
extern "C" {
void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, size_t size);
void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old,
                                     size_t* size_old);
void __asan_unpoison_memory_region(const volatile void* addr, size_t size);
}
#endif

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace paralab::cuda_host {

// A fibre's stack: mmap'd, with one inaccessible page below it so an overflow faults at once.
struct FiberStack {
  char* base = nullptr;  // lowest usable byte
  size_t size = 0;
  // Under ASan, the fake stack (detect_stack_use_after_return) of the fibres run on this stack:
  // made once and handed from a fibre that ends to the next, as the stack itself is.
  void* asanFake = nullptr;

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

// [SECTION] Sanitizer hooks (empty unless built with ASan).
struct Context;
inline void asanLeave(Context& save, const Context& load, void** keepFake);
inline void asanBack(Context& save);
inline void asanFresh(const FiberStack& stack);

#if defined(__x86_64__)

// A suspended fibre is its stack pointer; the saved registers sit on its stack. Its stack's
// extent (and, under ASan, its fake stack) are known to the sanitizer hooks below.
struct Context {
  void* sp = nullptr;
  const void* bottom = nullptr;  // the stack's lowest byte; the scheduler's is learnt (asanLanded)
  size_t size = 0;
  void* fake = nullptr;  // ASan's fake stack while suspended
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
  asanLeave(save, load, &save.fake);
  paralab_fiber_switch(&save.sp, load.sp);
  asanBack(save);
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
  c.bottom = stack.base, c.size = stack.size;
  asanFresh(stack);
}

#else  // elsewhere: POSIX ucontext, correct but slower (a system call per switch)

struct Context {
  ucontext_t uc;
  const void* bottom = nullptr;
  size_t size = 0;
  void* fake = nullptr;
};

inline void switchContext(Context& save, const Context& load) {
  asanLeave(save, load, &save.fake);
  swapcontext(&save.uc, const_cast<ucontext_t*>(&load.uc));
  asanBack(save);
}

inline void makeContext(Context& c, const FiberStack& stack, void (*fn)(void*), void* arg) {
  getcontext(&c.uc);
  c.bottom = stack.base, c.size = stack.size;
  asanFresh(stack);
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

// Leaving `save` for `load`: ASan keeps save's fake stack in *keepFake and moves to load's
// stack extent.
inline void asanLeave([[maybe_unused]] Context& save, [[maybe_unused]] const Context& load,
                      [[maybe_unused]] void** keepFake) {
#if defined(PARALAB_FIBER_ASAN)
  __sanitizer_start_switch_fiber(keepFake, load.bottom, load.size);
#endif
}
// Back on `save`'s stack: its fake stack is live again.
inline void asanBack([[maybe_unused]] Context& save) {
#if defined(PARALAB_FIBER_ASAN)
  __sanitizer_finish_switch_fiber(save.fake, nullptr, nullptr);
#endif
}
// A fibre's first instant on `stack`: it takes the stack's fake stack, and ASan learns the
// extent of the stack it came from (the scheduler's, an OS thread's), which the fibre's switches
// back then name.
inline void asanLanded([[maybe_unused]] const FiberStack& stack, [[maybe_unused]] Context& from) {
#if defined(PARALAB_FIBER_ASAN)
  __sanitizer_finish_switch_fiber(stack.asanFake, &from.bottom, &from.size);
#endif
}

// The last switch of a fibre that has ended: to `load`, for good. Its fake stack stays with
// `stack` for the next fibre (creating one per fibre costs more than the kernel it runs).
inline void endFibre(FiberStack& stack, const Context& load) {
  Context ended;
  asanLeave(ended, load, &stack.asanFake);
#if defined(__x86_64__)
  paralab_fiber_switch(&ended.sp, load.sp);
#else
  swapcontext(&ended.uc, const_cast<ucontext_t*>(&load.uc));
#endif
}
// A reused stack may hold the poisoned frames of a fibre that ended inside them.
inline void asanFresh([[maybe_unused]] const FiberStack& stack) {
#if defined(PARALAB_FIBER_ASAN)
  __asan_unpoison_memory_region(stack.base, stack.size);
#endif
}

}  // namespace paralab::cuda_host
