// Per-rank memory accounting: every tensor allocation is counted under one category.
// These are the exact numbers the per-rank memory plot shows. See tests/engine/tst_tensor.cpp.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

namespace paralab {

enum class MemCategory : int { Params, Grads, Optimizer, Activations, Comm, Workspace };
inline constexpr int kMemCategories = 6;
std::string_view memCategoryName(MemCategory c);  // "params", "grads", ...

// A value copy of a tracker: current and peak bytes per category, and the peak of the total.
struct MemorySnapshot {
  std::array<int64_t, kMemCategories> current{};  // bytes
  std::array<int64_t, kMemCategories> peak{};     // bytes, per category
  int64_t peakTotal = 0;                          // bytes, the high-water mark of the sum
  int64_t total() const;
  int64_t operator[](MemCategory c) const { return current[static_cast<int>(c)]; }
};

// Counts bytes; owns no memory. Written by its rank's thread, read by any (snapshots).
class MemoryTracker {
 public:
  void add(MemCategory c, int64_t bytes);
  void sub(MemCategory c, int64_t bytes);
  MemorySnapshot snapshot() const;
  void resetPeaks();  // peaks restart from the current values (e.g. per step)

 private:
  std::array<std::atomic<int64_t>, kMemCategories> m_current{};
  std::array<std::atomic<int64_t>, kMemCategories> m_peak{};
  std::atomic<int64_t> m_total{0};
  std::atomic<int64_t> m_peakTotal{0};
};

}  // namespace paralab
