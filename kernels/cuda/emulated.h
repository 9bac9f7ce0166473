// The emulated GPU: the CUDA side of ParaLab (cuda/device.h, runtime.h, reduce.h, gemm.h,
// layers.h, teach.h) on the host, so that the engine's GPU paths (every onGpu() branch, the
// waits before collectives, the copies between host and device) and the kernels themselves run
// and are tested on a machine without a GPU. The kernels are the .cu files, compiled as host C++
// and executed by the host execution layer (cuda/host/): grid and block loops, shared memory,
// barriers, warp shuffles, WMMA fragments. Host execution of the kernel source: correctness
// only, no speed, no concurrency between blocks. cuBLAS is not there: the vendor rungs refuse.
// Linked only into the test programs (tst_cuda_kernels, tst_cuda_host, the engine's *_emulated);
// the app and paralab-run use the real CUDA library or its "built without CUDA" stand-ins.
//
// Three rules make it strict rather than merely permissive:
//   * Device memory is host memory whose address carries bit 62 (kTag). On x86-64 such an
//     address is non-canonical: any host read or write through a device pointer faults at
//     once, as it would on a real GPU. Pointer arithmetic inside an allocation keeps the tag.
//     A kernel sees the untagged address; a host pointer handed to a kernel faults there.
//   * Each allocation ends at an inaccessible page: a kernel's access past the end faults, and
//     the failure names the kernel, the block and the thread.
//   * Work on a stream (kernels, copies, memsets, event records) is queued and runs, in order,
//     only when the host waits: streamSync, eventSync, a device-wide wait (free). Work launched
//     but not waited for has not happened, so a missing wait before a collective reads stale
//     data and the test that compares trajectories fails.
// What it does not model: timing (spans collapse onto the wait; a kernel's time is the host's),
// real concurrency between streams, NCCL (refused).
#pragma once
#include <cstdint>
#include <functional>

namespace paralab::kernels::emu {

constexpr std::uintptr_t kTag = std::uintptr_t(1) << 62;

inline bool isDevice(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & kTag) != 0; }
// The host address behind a device pointer (a host pointer is returned as it is).
template <class T>
T* host(T* p) {
  return reinterpret_cast<T*>(reinterpret_cast<std::uintptr_t>(p) & ~kTag);
}

// Queues `work` on `stream` (nullptr: the default stream). It runs when the host waits.
void enqueue(void* stream, std::function<void()> work);
void synchronize();       // runs every stream's queue (cudaDeviceSynchronize)
bool idle(void* stream);  // nothing is queued on `stream` (cudaStreamQuery)

}  // namespace paralab::kernels::emu
