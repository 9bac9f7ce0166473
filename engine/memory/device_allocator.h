// DeviceAllocator: one rank's GPU memory, a caching allocator over cudaMalloc in the manner of
// PyTorch's CUDA caching allocator: a freed block is kept by size and handed out again, so a
// training step in its steady state makes no cudaMalloc / cudaFree (each of which may
// synchronise the whole device). What the tensors hold is counted, per category, by the rank's
// MemoryTracker (tensor.cpp) exactly as on the CPU; reservedBytes() adds what the cache keeps.
// See tests/engine/tst_cuda_training.cpp (skipped without a GPU).
#pragma once
#include <cstdint>
#include <map>
#include <mutex>

namespace paralab {

class DeviceAllocator {
 public:
  // The rank's GPU and its one stream. Every kernel and copy touching the rank's tensors runs
  // on that stream (collectives wait for it before they start), so a block freed with work
  // still queued can be handed out at once: the next user's work queues behind it.
  DeviceAllocator(int gpu, void* stream);
  ~DeviceAllocator();  // waits for the stream, returns every block to the device
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  // At least `bytes` of device memory (contents undefined); throws std::runtime_error naming
  // the size when the GPU has no more, even after the cache was emptied.
  float* allocate(int64_t bytes);
  void release(float* p, int64_t bytes);  // bytes as allocated
  void emptyCache();                      // returns the cached blocks to the device

  int gpu() const { return m_gpu; }
  void* stream() const { return m_stream; }
  int64_t reservedBytes() const;  // held from the device: in use plus cached

 private:
  static int64_t blockSize(int64_t bytes);  // rounded up to 512 bytes (cudaMalloc aligns to 256)

  const int m_gpu;
  void* const m_stream;
  mutable std::mutex m_mutex;
  std::multimap<int64_t, float*> m_cached;  // block size -> free blocks of that size
  int64_t m_reserved = 0;
};

}  // namespace paralab
