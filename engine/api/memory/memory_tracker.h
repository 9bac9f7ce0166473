// Per-rank memory accounting: every tensor allocation is counted under one category, at the
// bytes its dtype stores (fp32: 4 a value; a 16-bit category under mixed precision: 2).
// These are the exact numbers the per-rank memory plot shows. See tests/engine/tst_tensor.cpp
// and tst_precision_memory.cpp.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

namespace paralab {

// Master: the fp32 copy of the parameters mixed precision's optimizer updates
// (train/precision.h); empty in an fp32 run.
enum class MemCategory : int { Params, Grads, Optimizer, Activations, Comm, Workspace, Master };
inline constexpr int kMemCategories = 7;
std::string_view memCategoryName(MemCategory c);  // "params", "grads", ...
// The dtype a category's values are stored in: "fp32", or "bf16"/"fp16" where a tracker counts
// it at 2 bytes a value.
std::string_view memDtypeName(int bytesPerValue, std::string_view halfName);

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
  // Bytes a value of category c is counted at from now on (4 by default; 2 for a category
  // stored in 16 bits). A tensor keeps the count it was allocated with (tensor.h).
  void setValueBytes(MemCategory c, int bytes) { m_valueBytes[static_cast<int>(c)] = bytes; }
  int valueBytes(MemCategory c) const { return m_valueBytes[static_cast<int>(c)]; }

 private:
  std::array<std::atomic<int64_t>, kMemCategories> m_current{};
  std::array<std::atomic<int64_t>, kMemCategories> m_peak{};
  std::atomic<int64_t> m_total{0};
  std::atomic<int64_t> m_peakTotal{0};
  std::array<int, kMemCategories> m_valueBytes{4, 4, 4, 4, 4, 4, 4};
};

// While alive, `tracker`'s categories count 4 bytes a value: the fp32 tensors a 16-bit model
// keeps beside its 16-bit ones (LayerNorm statistics, the logits the loss reads). Null: nothing.
class Fp32Allocations {
 public:
  explicit Fp32Allocations(MemoryTracker* tracker);
  ~Fp32Allocations();
  Fp32Allocations(const Fp32Allocations&) = delete;
  Fp32Allocations& operator=(const Fp32Allocations&) = delete;

 private:
  MemoryTracker* m_tracker;
  std::array<int, kMemCategories> m_saved{};
};

}  // namespace paralab
