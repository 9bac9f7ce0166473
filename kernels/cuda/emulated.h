// The emulated GPU: the CUDA side of ParaLab (cuda/device.h, runtime.h, reduce.h, gemm.h,
// layers.h) implemented on the host, so that the engine's GPU paths (every onGpu() branch, the
// waits before collectives, the copies between host and device) run and are tested on a machine
// without a GPU. Linked only into the test programs named *_emulated (tests/engine); the app
// and paralab-run use the real CUDA library or its "built without CUDA" stand-ins.
//
// Two rules make it strict rather than merely permissive:
//   * Device memory is host memory whose address carries bit 62 (kTag). On x86-64 such an
//     address is non-canonical: any host read or write through a device pointer faults at
//     once, as it would on a real GPU. Pointer arithmetic inside an allocation keeps the tag.
//   * Work on a stream (kernels, copies, memsets, event records) is queued and runs, in order,
//     only when the host waits: streamSync, eventSync, a device-wide wait (free). Work launched
//     but not waited for has not happened, so a missing wait before a collective reads stale
//     data and the test that compares trajectories fails.
// What it does not model: timing (spans collapse onto the wait), real concurrency between
// streams, TF32 rounding (tensor-core and vendor-tf32 compute in fp32), NCCL (refused).
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

}  // namespace paralab::kernels::emu
