// What a GPU profiler counts, counted while the host executes the kernel source: lanes active at
// a warp's branch, 128-byte lines and 32-byte sectors per warp load of global memory, wavefronts
// per warp access of shared memory (bank conflicts). See tests/kernels/tst_cuda_count.cpp and
// `paralab-bench teach`.
//
// Why marks in the kernel, and proxies for shared memory: the host runs each CUDA thread as a
// fibre, one whole thread at a time between barriers (grid.h), so a plain pointer load or an
// `if` is a native host instruction the executor never sees, and the lanes of a warp never meet
// at an instruction. So every counted operation is recorded per lane as it executes: global loads
// and branches the kernel marks (PARALAB_COUNTED_LOAD, PARALAB_COUNTED_BRANCH in
// cuda/counted.h; on a GPU the marks are the plain load and the plain condition), shared-memory
// accesses through the proxies every __shared__ array already goes through (shared.h). At the end
// of each block the records are regrouped by warp: the k-th time each lane of a warp passes one
// site is one warp instruction, as on the GPU when the warp's lanes run the same code (true of
// the counted kernels: their lanes part only at the counted branch, whose two paths hold no
// counted operation). The per-lane values come from running the source; only the grouping is
// the GPU's rule (CUDA C++ Programming Guide, "SIMT Architecture", "Device Memory Accesses").
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda/host/block.h"

namespace paralab::cuda_host {

// Totals over the blocks run while a CountScope was open. Each "warp instruction" is one warp
// reaching one counted site once.
struct WarpCounts {
  long branchWarps = 0;     // warp instructions at a counted branch
  long pathsIssued = 0;     // paths those warps ran: 1 when the lanes agree, 2 when they diverge
  long divergentWarps = 0;  // of branchWarps, those whose lanes took both paths
  long activeLanes = 0;     // lanes active summed over the paths issued
  long loadRequests = 0;    // warp instructions that load global memory
  long threadLoads = 0;     // the lanes' loads, each one element
  long lines = 0;           // distinct 128-byte lines each warp load touched, summed
  long sectors = 0;         // distinct 32-byte sectors each warp load touched, summed
  long sharedRequests = 0;  // warp instructions that read or write shared memory
  long sharedWavefronts = 0;  // passes they took: the most distinct words any one bank serves
  long worstWavefronts = 0;   // the most passes one of them took (32: a 32-way bank conflict)
};

enum class CountKind : uint8_t { Branch, GlobalLoad, SharedRead, SharedWrite };

class Counter {
 public:
  struct Record {
    uint64_t site;      // the kind in the top byte, then the line or the shared array
    uint32_t occurrence;  // how many times this lane had passed the site before
    uint32_t warp, lane;
    uint64_t value;  // the address, or 1 / 0 for a branch taken / not taken
    uint32_t bytes;
  };

  void record(CountKind kind, uint64_t site, uint64_t value, uint32_t bytes) {
    const Thread& t = self();
    site |= uint64_t(kind) << 56;
    uint32_t& seen = m_seen[{t.id, site}];
    m_records.push_back({site, seen++, t.warp(), t.lane(), value, bytes});
  }

  // A block has ended: its records, regrouped by warp instruction, join the totals.
  void endBlock() {
    std::sort(m_records.begin(), m_records.end(), [](const Record& a, const Record& b) {
      return std::tie(a.site, a.occurrence, a.warp) < std::tie(b.site, b.occurrence, b.warp);
    });
    for (size_t begin = 0, end = 0; begin < m_records.size(); begin = end) {
      const Record& r = m_records[begin];
      for (end = begin; end < m_records.size() && m_records[end].site == r.site &&
                        m_records[end].occurrence == r.occurrence && m_records[end].warp == r.warp;
           ++end) {
      }
      warpInstruction(CountKind(r.site >> 56), begin, end);
    }
    m_records.clear();
    m_seen.clear();
  }

  const WarpCounts& totals() const { return m_totals; }

 private:
  void warpInstruction(CountKind kind, size_t begin, size_t end) {
    WarpCounts& c = m_totals;
    if (kind == CountKind::Branch) {
      uint32_t taken = 0, other = 0;
      for (size_t i = begin; i < end; ++i)
        (m_records[i].value ? taken : other) |= 1u << m_records[i].lane;
      ++c.branchWarps;
      c.pathsIssued += (taken != 0) + (other != 0);
      c.divergentWarps += taken && other;
      c.activeLanes += std::popcount(taken) + std::popcount(other);
      return;
    }
    if (kind == CountKind::GlobalLoad) {
      std::vector<uint64_t> lines, sectors;
      for (size_t i = begin; i < end; ++i) {
        const Record& r = m_records[i];
        for (uint64_t a = r.value / 32; a <= (r.value + r.bytes - 1) / 32; ++a) sectors.push_back(a);
        for (uint64_t a = r.value / 128; a <= (r.value + r.bytes - 1) / 128; ++a) lines.push_back(a);
      }
      ++c.loadRequests;
      c.threadLoads += long(end - begin);
      c.lines += distinct(lines);
      c.sectors += distinct(sectors);
      return;
    }
    // Shared memory: 32 banks of 4-byte words; lanes reading the same word share one access
    // (a broadcast), distinct words in one bank are served one after another.
    std::vector<std::pair<uint64_t, uint64_t>> words;  // (bank, word)
    for (size_t i = begin; i < end; ++i) {
      const uint64_t word = m_records[i].value / 4;
      words.emplace_back(word % 32, word);
    }
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
    long most = 0;
    for (size_t i = 0, j = 0; i < words.size(); i = j) {
      for (j = i; j < words.size() && words[j].first == words[i].first; ++j) {
      }
      most = std::max(most, long(j - i));
    }
    ++c.sharedRequests;
    c.sharedWavefronts += most;
    c.worstWavefronts = std::max(c.worstWavefronts, most);
  }

  static long distinct(std::vector<uint64_t>& v) {
    std::sort(v.begin(), v.end());
    return long(std::unique(v.begin(), v.end()) - v.begin());
  }

  std::vector<Record> m_records;  // the running block's
  std::map<std::pair<unsigned, uint64_t>, uint32_t> m_seen;  // (thread, site) -> passes so far
  WarpCounts m_totals;
};

// The counter of the grids this OS thread runs (grid.h runs a grid on the thread that waits).
inline thread_local Counter* t_counter = nullptr;

// Counts every kernel this thread runs while it lives.
class CountScope {
 public:
  CountScope() : m_previous(t_counter) { t_counter = &m_counter; }
  ~CountScope() { t_counter = m_previous; }
  CountScope(const CountScope&) = delete;
  CountScope& operator=(const CountScope&) = delete;
  const WarpCounts& totals() const { return m_counter.totals(); }

 private:
  Counter m_counter;
  Counter* m_previous;
};

// The marks (cuda/counted.h): each returns what the unmarked code would.
inline bool countBranch(unsigned line, bool taken) {
  if (t_counter) [[unlikely]]
    t_counter->record(CountKind::Branch, line, taken, 0);
  return taken;
}

template <class T>
T countLoad(unsigned line, const T* p) {
  if (t_counter) [[unlikely]]
    t_counter->record(CountKind::GlobalLoad, line, reinterpret_cast<uint64_t>(p), sizeof(T));
  return *p;
}

// shared.h: an access of `bytes` at `p` (an address in the block's shared memory) through the
// array `site`. Banks are counted from the start of the block's shared memory.
inline void countShared(bool write, const void* p, const void* site) {
  const Block& b = *self().block;
  t_counter->record(write ? CountKind::SharedWrite : CountKind::SharedRead,
                    reinterpret_cast<uint64_t>(site) & ((uint64_t(1) << 56) - 1),
                    uint64_t(static_cast<const char*>(p) - b.shared), 4);
}

}  // namespace paralab::cuda_host
