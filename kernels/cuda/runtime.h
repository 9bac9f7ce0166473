// The few CUDA runtime calls the engine makes itself (device, stream, memory, events), each
// checked: a failure throws std::runtime_error naming the call and CUDA's message. Built
// without CUDA, every call throws "built without CUDA" (how many GPUs there are is
// kernels::cuda_query_devices()'s to say).
// See tests/engine/tst_cuda_training.cpp (skipped without a GPU).
#pragma once
#include <cstdint>

namespace paralab::gpu {

void setDevice(int gpu);  // makes `gpu` current on the calling thread
int currentDevice();
// Lets kernels on the current device read and write `peer`'s memory (ranks on two GPUs of one
// process sharing ThreadComm's device path); throws when the hardware cannot.
void enablePeerAccess(int peer);

void* streamCreate();  // a non-blocking stream on the current device
void streamDestroy(void* stream);
void streamSync(void* stream);

// nullptr when the device is out of memory (the error is cleared); throws on other errors.
void* malloc(int64_t bytes);
void free(void* p);
// Enqueued on `stream`; copies go in any direction (cudaMemcpyDefault). A copy from pageable
// host memory has read its source when it returns; one to host memory is complete only after
// streamSync (CUDA's "API synchronization behavior").
void memsetAsync(void* p, int64_t bytes, void* stream);
void copyAsync(void* dst, const void* src, int64_t bytes, void* stream);

// Events: `timing` false makes one only to wait on (cheaper).
void* eventCreate(bool timing);
void eventDestroy(void* event);
void eventRecord(void* event, void* stream);
void eventSync(void* event);                 // the host waits for it
float eventElapsedMs(void* from, void* to);  // both recorded and complete

}  // namespace paralab::gpu
