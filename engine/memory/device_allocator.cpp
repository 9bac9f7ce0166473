// The caching device allocator (see device_allocator.h).
#include "memory/device_allocator.h"

#include <stdexcept>
#include <string>

#include "cuda/runtime.h"

namespace paralab {

DeviceAllocator::DeviceAllocator(int gpu, void* stream) : m_gpu(gpu), m_stream(stream) {}

DeviceAllocator::~DeviceAllocator() {
  try {
    gpu::setDevice(m_gpu);  // the owner may be destroyed on another thread than the rank's
    gpu::streamSync(m_stream);
    emptyCache();
  } catch (...) {  // teardown after a CUDA failure: the context is gone with what it held
  }
}

int64_t DeviceAllocator::blockSize(int64_t bytes) { return (bytes + 511) / 512 * 512; }

float* DeviceAllocator::allocate(int64_t bytes) {
  const int64_t size = blockSize(bytes);
  std::lock_guard lock(m_mutex);
  // Exact size only: a step allocates the same sizes every time (a unit's gather, a batch's
  // activations), so exact reuse is what the steady state needs and never wastes a byte.
  if (auto it = m_cached.find(size); it != m_cached.end()) {
    float* p = it->second;
    m_cached.erase(it);
    return p;
  }
  void* p = gpu::malloc(size);
  if (!p && !m_cached.empty()) {  // out of memory: give the cache back and try once more
    gpu::streamSync(m_stream);    // cached blocks may still be in use by queued work
    for (auto& [s, q] : m_cached) gpu::free(q), m_reserved -= s;
    m_cached.clear();
    p = gpu::malloc(size);
  }
  if (!p)
    throw std::runtime_error("GPU " + std::to_string(m_gpu) + " is out of memory allocating " +
                             std::to_string(size) + " bytes (" + std::to_string(m_reserved) +
                             " held by this rank)");
  m_reserved += size;
  return static_cast<float*>(p);
}

void DeviceAllocator::release(float* p, int64_t bytes) {
  if (!p) return;
  std::lock_guard lock(m_mutex);
  m_cached.emplace(blockSize(bytes), p);
}

void DeviceAllocator::emptyCache() {
  std::lock_guard lock(m_mutex);
  gpu::streamSync(m_stream);
  for (auto& [s, q] : m_cached) gpu::free(q), m_reserved -= s;
  m_cached.clear();
}

int64_t DeviceAllocator::reservedBytes() const {
  std::lock_guard lock(m_mutex);
  return m_reserved;
}

}  // namespace paralab
