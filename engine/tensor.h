// Tensor: a float32 array with a shape, contiguous row-major, on one device, owned (and
// counted by its rank's MemoryTracker under a category) or a view into another's memory.
// Host tensors come from aligned_alloc, device tensors from the rank's DeviceAllocator.
// See tests/engine/tst_tensor.cpp and tst_cuda_training.cpp.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "memory/memory_tracker.h"
#include "run_choices.h"  // Device

namespace paralab {

class DeviceAllocator;
using Shape = std::vector<int64_t>;

class Tensor {
 public:
  Tensor() = default;
  // Allocates numel(shape) floats, zero-filled, counted as `category` by `tracker` (may be null),
  // in host memory, or in device memory from `alloc` (zero-filled on its stream, in order with
  // everything else the rank enqueues there).
  Tensor(Shape shape, MemCategory category, MemoryTracker* tracker,
         DeviceAllocator* alloc = nullptr);
  // A non-owning view of memory that lives elsewhere (e.g. one weight inside a flat buffer).
  static Tensor view(float* data, Shape shape, Device device = Device::Cpu);

  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(Tensor&& other) noexcept;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  ~Tensor();

  float* data() { return m_data; }
  const float* data() const { return m_data; }
  const Shape& shape() const { return m_shape; }
  int64_t dim(int i) const { return m_shape.at(i); }
  int64_t numel() const { return m_numel; }
  int64_t bytes() const { return m_numel * static_cast<int64_t>(sizeof(float)); }
  Device device() const { return m_device; }
  bool owning() const { return m_owning; }
  bool empty() const { return m_numel == 0; }

  void zero();                      // a device tensor: enqueued on its allocator's stream
  std::string shapeString() const;  // "[256, 784]"

 private:
  void release();

  float* m_data = nullptr;
  Shape m_shape;
  int64_t m_numel = 0;
  Device m_device = Device::Cpu;
  bool m_owning = false;
  MemCategory m_category = MemCategory::Workspace;
  MemoryTracker* m_tracker = nullptr;
  int64_t m_counted = 0;  // bytes the tracker counted (its category's dtype: 4 or 2 a value)
  DeviceAllocator* m_gpu = nullptr;  // owning device tensors only
};

int64_t numelOf(const Shape& shape);

}  // namespace paralab
