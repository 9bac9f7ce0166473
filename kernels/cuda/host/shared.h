// __shared__ on the host: each declaration in a kernel gets its place in the running block's
// shared memory (the same bytes for every thread of the block, fresh for the next block), and
// is seen through small proxies (SharedView, SharedRef, SharedPtr) so that, with the checks on,
// every access is checked against a shadow of the memory, in the manner of compute-sanitizer:
//   racecheck  a read of a word another thread wrote, or a write of a word another thread read
//              or wrote, with no __syncthreads() between (nor a __syncwarp(), within a warp);
//   initcheck  a read of a word no thread of the block has written (reported at the next
//              barrier: a write by another thread before it makes the read a race instead);
//   bounds     an index outside the array's extent.
// With a CountScope open (count.h) each access is also counted for bank conflicts.
// The kernel source writes As[r][c] as usual; kernels/cuda/host/rewrite.cpp turns each
// `__shared__ T name[N]...;` into PARALAB_CUDA_HOST_SHARED(...). See tst_cuda_host.cpp.
#pragma once
#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

#include "cuda/host/block.h"
#include "cuda/host/count.h"

namespace paralab::cuda_host {

// [SECTION] The shadow: per 4-byte word, who wrote it last and who has read it since, with
// the barrier counts each access happened under (20 bytes a word).

inline constexpr uint16_t kNobody = 0xffff;

struct Cell {
  uint16_t writer = kNobody;       // thread id
  uint16_t writeWarpEpoch = 0;     // the writer's warp's __syncwarp() count then
  uint32_t writeEpoch = 0;         // the block's __syncthreads() count then (while no thread
                                   // has written it: 1 once one has read it, uninitialised)
  uint16_t reader = kNobody;       // the last reader since the write
  uint16_t otherReader = kNobody;  // another reader since the write, if any
  uint16_t readWarpEpoch = 0;      // the last reader's warp's __syncwarp() count then
  uint16_t readAcrossWarps = 0;    // the readers belong to more than one warp
  uint32_t readEpoch = 0;
};

// An access by thread `a` is ordered before thread t's when t made it, or a barrier of the block
// has completed since, or (a in t's warp, as every reader when not across warps) a __syncwarp().
inline bool ordered(uint16_t a, uint32_t epoch, uint16_t warpEpoch, const Thread& t,
                    bool acrossWarps = false) {
  if (a == kNobody || a == t.id) return true;
  const Block& b = *t.block;
  if (epoch != b.epoch) return true;
  return !acrossWarps && a / 32 == t.warp() && warpEpoch != b.warps[t.warp()].epoch;
}

// [SECTION] A __shared__ declaration: where it lies, and how to name an element of it.

struct SharedSite {
  const char* name;
  size_t bytes, elementSize, align;
  std::array<size_t, 4> dims{};  // extents, outermost first (0: the dynamic array's)
  int rank = 0;
  size_t offset = 0;  // in the block's shared memory
  KernelInfo* kernel = nullptr;
  std::atomic<bool> placed = false;

  // "As[1][31]" for the element at p.
  std::string element(const void* p, const Block& b) const {
    size_t flat = size_t(static_cast<const char*>(p) - (b.shared + offset)) / elementSize;
    size_t index[4] = {};
    for (int d = rank - 1; d >= 0; --d) {
      const size_t n = dims[size_t(d)] ? dims[size_t(d)] : flat + 1;
      index[d] = flat % n;
      flat /= n;
    }
    std::string text = name;
    for (int d = 0; d < rank; ++d) text.append("[").append(std::to_string(index[d])).append("]");
    return text;
  }
};

[[noreturn]] inline void hazard(const char* access, const void* p, const SharedSite& s,
                                uint16_t other, const char* otherAccess, const char* kind) {
  const Thread& t = self();
  const bool sameWarp = other / 32 == t.warp();
  fail(std::string(access) + " of shared " + s.element(p, *t.block) + " " + otherAccess +
       " by thread " + str(threadIndex(*t.block, other)) + " with no " +
       (sameWarp ? "__syncwarp() or __syncthreads()" : "__syncthreads()") + " between (" + kind +
       " hazard)");
}

inline Cell& cellOf(const Block& b, const void* p) {
  return b.shadow[size_t(static_cast<const char*>(p) - b.shared) / 4];
}

__attribute__((noinline)) inline void onRead(const void* p, const SharedSite& s) {
  const Thread& t = self();
  Block& b = *t.block;
  Cell& c = cellOf(b, p);
  if (c.writer == kNobody) {  // a race if another thread writes it before the next barrier
    if (c.writeEpoch == 0) b.uninitialised.emplace_back(t.id, s.element(p, b));
    c.writeEpoch = 1;
  } else if (!ordered(c.writer, c.writeEpoch, c.writeWarpEpoch, t)) {
    hazard("read", p, s, c.writer, "written", "read-after-write");
  }
  if (c.reader == kNobody || c.readEpoch != b.epoch) {  // the first read since the barrier
    c.reader = uint16_t(t.id);
    c.otherReader = kNobody;
    c.readAcrossWarps = 0;
  } else if (c.reader != t.id) {
    c.readAcrossWarps |= c.reader / 32 != t.warp();
    c.otherReader = c.reader;
    c.reader = uint16_t(t.id);
  }
  c.readEpoch = b.epoch;
  c.readWarpEpoch = b.warps[t.warp()].epoch;
}

__attribute__((noinline)) inline void onWrite(const void* p, const SharedSite& s) {
  const Thread& t = self();
  Block& b = *t.block;
  Cell& c = cellOf(b, p);
  if (!ordered(c.writer, c.writeEpoch, c.writeWarpEpoch, t))
    hazard("write", p, s, c.writer, "written", "write-after-write");
  const uint16_t witness = c.reader != t.id ? c.reader : c.otherReader;  // a reader other than t
  if (!ordered(witness, c.readEpoch, c.readWarpEpoch, t, c.readAcrossWarps))
    hazard("write", p, s, witness, "read", "write-after-read");
  if (c.writer == kNobody && c.writeEpoch == 1) reportUninitialised(b);  // t read it first
  c.writer = uint16_t(t.id);
  c.writeWarpEpoch = b.warps[t.warp()].epoch;
  c.writeEpoch = b.epoch;
  c.reader = kNobody;
}

// [SECTION] The proxies. With the checks off each is a pointer and compiles to plain accesses;
// the checks and their messages stay out of line.

#define PARALAB_CUDA_HOST_INLINE inline __attribute__((always_inline))

[[noreturn]] __attribute__((noinline, cold)) inline void outOfBounds(const SharedSite& s,
                                                                     long long i, size_t n) {
  fail("shared index out of bounds: " + std::string(s.name) + "[..." + std::to_string(i) +
       "...] where the extent is " + std::to_string(n));
}

template <class T>
class SharedPtr;

template <class T>
class SharedRef {  // one element
 public:
  SharedRef(T* p, const SharedSite* s) : m_p(p), m_s(s) {}
  SharedRef(const SharedRef&) = default;
  PARALAB_CUDA_HOST_INLINE operator T() const {
    if (checking()) [[unlikely]]
      onRead(m_p, *m_s);
    if (t_counter) [[unlikely]]
      countShared(false, m_p, m_s);
    return *m_p;
  }
  PARALAB_CUDA_HOST_INLINE const SharedRef& operator=(T v) const {
    if (checking()) [[unlikely]]
      onWrite(m_p, *m_s);
    if (t_counter) [[unlikely]]
      countShared(true, m_p, m_s);
    *m_p = v;
    return *this;
  }
  const SharedRef& operator=(const SharedRef& o) const { return *this = T(o); }
  template <class U>
  const SharedRef& operator+=(U v) const {
    return *this = T(T(*this) + v);
  }
  template <class U>
  const SharedRef& operator-=(U v) const {
    return *this = T(T(*this) - v);
  }
  template <class U>
  const SharedRef& operator*=(U v) const {
    return *this = T(T(*this) * v);
  }
  SharedPtr<T> operator&() const { return SharedPtr<T>(m_p, m_s); }

 private:
  T* m_p;
  const SharedSite* m_s;
};

template <class T>
class SharedPtr {  // &As[r][c], or an array row decayed to a pointer
 public:
  SharedPtr(T* p, const SharedSite* s) : m_p(p), m_s(s) {
    const Block& b = *self().block;
    m_first = reinterpret_cast<const T*>(b.shared + s->offset);
    m_count = (s->bytes ? s->bytes : b.dynamicShared) / sizeof(T);
  }
  PARALAB_CUDA_HOST_INLINE SharedRef<T> operator[](ptrdiff_t i) const {
    const ptrdiff_t k = m_p + i - m_first;
    if (checking() && (k < 0 || size_t(k) >= m_count)) [[unlikely]]
      outOfBounds(*m_s, k, m_count);
    return SharedRef<T>(m_p + i, m_s);
  }
  SharedRef<T> operator*() const { return (*this)[0]; }
  SharedPtr operator+(ptrdiff_t i) const { return SharedPtr(m_p + i, m_s); }
  T* get() const { return m_p; }

 private:
  T* m_p;
  const SharedSite* m_s;
  const T* m_first;  // the array's first element and count, for the bounds check
  size_t m_count;
};

template <class A>  // A is an array type: T[N] or T[N][M]...; T[] for the dynamic array
class SharedView {
  using Element = std::remove_extent_t<A>;
  using T = std::remove_all_extents_t<A>;

 public:
  SharedView(T* p, const SharedSite* s, size_t n) : m_p(p), m_s(s), m_n(n) {}
  template <class I>
  PARALAB_CUDA_HOST_INLINE auto operator[](I i) const {
    if (checking() && (static_cast<long long>(i) < 0 || static_cast<size_t>(i) >= m_n)) [[unlikely]]
      outOfBounds(*m_s, static_cast<long long>(i), m_n);
    if constexpr (std::is_array_v<Element>)
      return SharedView<Element>(m_p + size_t(i) * (sizeof(Element) / sizeof(T)), m_s,
                                 std::extent_v<Element>);
    else
      return SharedRef<T>(m_p + i, m_s);
  }
  operator SharedPtr<T>() const { return SharedPtr<T>(m_p, m_s); }  // array-to-pointer decay
  T* get() const { return m_p; }

 private:
  T* m_p;
  const SharedSite* m_s;
  size_t m_n;
};

// [SECTION] The declaration itself: placed once per kernel, prepared once per block.

inline void resetShadow(Cell* first, size_t count) { std::fill(first, first + count, Cell{}); }

// Resets the shadow of the block's static shared memory up to `end` (checks on): what an
// earlier block left there says nothing about this one.
inline void prepareShadow(Block& b, size_t end) {
  if (!checking() || end <= b.shadowReady) return;
  resetShadow(b.shadow + b.shadowReady / 4, (end - b.shadowReady) / 4);
  b.shadowReady = end;
}

template <class A>
class SharedVariable {
  using T = std::remove_all_extents_t<A>;
  static constexpr bool kDynamic = std::is_array_v<A> && std::extent_v<A> == 0;
  static constexpr size_t kBytes = [] {
    if constexpr (kDynamic)
      return size_t(0);
    else
      return sizeof(A);
  }();
  static_assert(kBytes <= kStaticSharedLimit,
                "more than 48 KiB of static shared memory (ptxas refuses it too)");
  // The checks track shared memory in 4-byte words; a 16-bit element shares its word's cell
  // with its neighbour, so two threads writing the two halves of one word between barriers are
  // reported (a kernel writes 16-bit tiles two values to a thread: gemm_tensor_core_16.cu).
  static_assert(sizeof(T) % 4 == 0 || sizeof(T) == 2,
                "the checks track shared memory in 4-byte words (or 16-bit pairs)");

 public:
  SharedVariable(const char* name, size_t align) {
    m_site.name = name;
    m_site.bytes = kBytes;
    m_site.elementSize = sizeof(T);
    m_site.align = std::max(align, std::max<size_t>(alignof(T), 16));
    m_site.rank = int(std::rank_v<A>);
    [this]<size_t... d>(std::index_sequence<d...>) {
      ((m_site.dims[d] = std::extent_v<A, d>), ...);
    }
    (std::make_index_sequence<std::rank_v<A>>());
  }

  auto view() {
    Block& b = *self().block;
    if constexpr (kDynamic) {
      m_site.offset = kStaticSharedLimit;  // the dynamic part has its own region
      return SharedView<A>(reinterpret_cast<T*>(b.shared + m_site.offset), &m_site,
                           b.dynamicShared / sizeof(T));
    } else {
      if (!m_site.placed.load(std::memory_order_acquire)) {  // the kernel's first block
        std::lock_guard lock(b.kernel->mutex);
        if (!m_site.placed.load(std::memory_order_relaxed)) {
          m_site.kernel = b.kernel;
          m_site.offset = (b.kernel->staticShared + m_site.align - 1) / m_site.align * m_site.align;
          b.kernel->staticShared = m_site.offset + kBytes;
          m_site.placed.store(true, std::memory_order_release);
        }
      }
      if (m_site.kernel != b.kernel)
        fail(std::string("__shared__ ") + m_site.name + " of a __device__ function used by " +
             m_site.kernel->name + " too: the host layer places it for one kernel only");
      if (b.kernel->staticShared > kStaticSharedLimit)
        fail("the kernel's __shared__ variables take " + std::to_string(b.kernel->staticShared) +
             " bytes; a block may have 48 KiB (ptxas refuses more)");
      prepareShadow(b, m_site.offset + kBytes);
      T* p = reinterpret_cast<T*>(b.shared + m_site.offset);
      if constexpr (std::is_array_v<A>)
        return SharedView<A>(p, &m_site, std::extent_v<A>);
      else
        return SharedRef<T>(p, &m_site);
    }
  }

 private:
  SharedSite m_site;
};

}  // namespace paralab::cuda_host

// What rewrite.cpp puts in place of `__shared__ __align__(align) type name dims;` (align 0: none).
#define PARALAB_CUDA_HOST_SHARED(align, type, name, dims)                                     \
  static ::paralab::cuda_host::SharedVariable<type dims> name##SharedVariable_(#name, align); \
  const auto name = name##SharedVariable_.view()
