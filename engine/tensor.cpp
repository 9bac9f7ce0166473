// Tensor storage and its accounting (see tensor.h).
#include "tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>

#include "cuda/runtime.h"
#include "memory/device_allocator.h"

namespace paralab {

int64_t numelOf(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("tensor shape has a negative dimension");
    n *= d;
  }
  return n;
}

Tensor::Tensor(Shape shape, MemCategory category, MemoryTracker* tracker, DeviceAllocator* alloc)
    : m_shape(std::move(shape)),
      m_device(alloc ? Device::Cuda : Device::Cpu),
      m_owning(true),
      m_category(category),
      m_tracker(tracker),
      m_gpu(alloc) {
  m_numel = numelOf(m_shape);
  if (alloc && m_numel > 0) {
    m_data = alloc->allocate(bytes());
    try {
      gpu::memsetAsync(m_data, bytes(), alloc->stream());
    } catch (...) {
      alloc->release(m_data, bytes());  // not yet ours: the destructor will not run
      throw;
    }
  } else if (m_numel > 0) {
    // 64-byte alignment: one cache line, and what AVX-512 loads like best.
    const size_t bytes = (static_cast<size_t>(m_numel) * sizeof(float) + 63) / 64 * 64;
    m_data = static_cast<float*>(std::aligned_alloc(64, bytes));
    if (!m_data) throw std::bad_alloc();
    std::memset(m_data, 0, bytes);
  }
  if (m_tracker) {
    m_counted = m_numel * m_tracker->valueBytes(m_category);
    m_tracker->add(m_category, m_counted);
  }
}

Tensor Tensor::view(float* data, Shape shape, Device device) {
  Tensor t;
  t.m_data = data;
  t.m_shape = std::move(shape);
  t.m_numel = numelOf(t.m_shape);
  t.m_device = device;
  t.m_owning = false;
  return t;
}

Tensor::Tensor(Tensor&& o) noexcept { *this = std::move(o); }

Tensor& Tensor::operator=(Tensor&& o) noexcept {
  if (this != &o) {
    release();
    m_data = std::exchange(o.m_data, nullptr);
    m_shape = std::move(o.m_shape);
    m_numel = std::exchange(o.m_numel, 0);
    m_device = o.m_device;
    m_owning = std::exchange(o.m_owning, false);
    m_category = o.m_category;
    m_tracker = std::exchange(o.m_tracker, nullptr);
    m_counted = std::exchange(o.m_counted, 0);
    m_gpu = std::exchange(o.m_gpu, nullptr);
  }
  return *this;
}

Tensor::~Tensor() { release(); }

void Tensor::release() {
  if (m_owning) {
    if (m_gpu)
      m_gpu->release(m_data, bytes());
    else
      std::free(m_data);
    if (m_tracker) m_tracker->sub(m_category, m_counted);
  }
  m_counted = 0;
  m_data = nullptr;
  m_owning = false;
  m_tracker = nullptr;
  m_gpu = nullptr;
  m_numel = 0;
  m_shape.clear();
}

void Tensor::zero() {
  if (m_numel == 0) return;
  if (m_device == Device::Cuda) {
    if (!m_gpu) throw std::logic_error("Tensor::zero on a device view (zero through its owner)");
    gpu::memsetAsync(m_data, bytes(), m_gpu->stream());
  } else {
    std::memset(m_data, 0, static_cast<size_t>(bytes()));
  }
}

std::string Tensor::shapeString() const {
  std::string s = "[";
  for (size_t i = 0; i < m_shape.size(); ++i) s += (i ? ", " : "") + std::to_string(m_shape[i]);
  return s + "]";
}

}  // namespace paralab
