// Device-side pieces of the communicators for ranks that share one GPU (ThreadComm's device
// path): an elementwise reduction over several source buffers, copies, streams, allocations.
// Built as reduce.cu with CUDA, else reduce_stub.cpp (every call throws "built without CUDA").
// See tests/engine/tst_comm_thread.cpp (deviceAllReduce, skipped without a GPU).
#pragma once
#include <cstdint>

namespace paralab::kernels {

enum class DeviceReduce : int { Sum, Max };

// dst[i] = srcs[0][i] op srcs[1][i] op ... op srcs[nsrc-1][i], combined in that order, then
// divided by `divisor` when it is not 1 (an average is a sum / n). dst may alias a source:
// each element is read from every source before it is written. The pointers are device
// memory of the current device (ranks in one process may read each other's buffers).
// Enqueued on `stream` (a cudaStream_t), returns without waiting.
void reduce_device(float* dst, const float* const* srcs, int nsrc, int64_t count,
                   DeviceReduce op, float divisor, void* stream);
// Copy of `bytes` bytes in any direction (host or device, cudaMemcpyDefault), enqueued.
void reduce_device_copy(void* dst, const void* src, int64_t bytes, void* stream);

void* reduce_stream_create();  // a non-blocking stream on the current device
void reduce_stream_destroy(void* stream);
void reduce_stream_sync(void* stream);  // throws std::runtime_error with CUDA's message
// True when the work on `stream` is done; false while it runs (throws on a CUDA error).
bool reduce_stream_query(void* stream);
void* reduce_device_alloc(int64_t bytes);
void reduce_device_free(void* p);
int reduce_current_device();
void reduce_set_device(int device);

}  // namespace paralab::kernels
