// The emulated GPU (see emulated.h): device memory behind tagged addresses and guard pages,
// streams as queues that run when the host waits. The kernels are the .cu files themselves,
// compiled as host C++ and run by the host execution layer (cuda/host/); this file gives that
// layer its device. Built into paralab_kernels_emulated only.
#include "cuda/emulated.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/device.h"
#include "cuda/gemm.h"
#include "cuda/host/block.h"
#include "cuda/runtime.h"

namespace paralab::kernels::emu {

namespace {

// How many emulated GPUs there are: $PARALAB_EMULATED_GPUS, default 1.
int gpuCount() {
  const char* v = std::getenv("PARALAB_EMULATED_GPUS");
  const int n = v ? std::atoi(v) : 1;
  return n > 0 ? n : 1;
}

// A stream: work in launch order, run by whoever waits for it, under the stream's lock (two
// threads waiting at once take turns; a launch waits while the queue is being run).
struct Stream {
  std::mutex mutex;
  std::deque<std::function<void()>> queue;
};

// Recorded on one thread, waited for on another (a bucket's mark): the fields are atomic.
struct Event {
  std::atomic<Stream*> stream{nullptr};  // the stream it was last recorded on
  std::atomic<int64_t> ns{0};            // when the record ran
  std::atomic<bool> done{true};          // never recorded: complete (as in CUDA)
};

std::mutex g_registry;
std::set<Stream*> g_streams;  // every live stream, for device-wide waits
Stream g_default;             // stream nullptr
thread_local int t_device = 0;

Stream* asStream(void* s) { return s ? static_cast<Stream*>(s) : &g_default; }

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Runs the stream's queue until it is empty, holding its lock (work never launches work, and a
// launch from another thread waits its turn). An exception from the work propagates to the
// waiting host, as a CUDA error would.
void drain(Stream* s) {
  std::lock_guard lock(s->mutex);
  while (!s->queue.empty()) {
    std::function<void()> work = std::move(s->queue.front());
    s->queue.pop_front();
    work();
  }
}

// What cudaFree and cudaDeviceSynchronize do: wait for every stream. The registry stays locked
// throughout, so no stream is destroyed while it is being drained here.
void drainAll() {
  std::lock_guard lock(g_registry);
  for (Stream* s : g_streams) drain(s);
  drain(&g_default);
}

void* tag(void* p) { return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(p) | kTag); }

// Device memory: each allocation ends where an inaccessible page begins, so a kernel that reads
// or writes past its end faults at the first byte (cuda/host/grid.h names the thread). The
// start is aligned as far as the size allows (to 256 bytes, as cudaMalloc's, when the size is
// a multiple of 256), never more, so that the end can touch the guard page.
struct Allocation {
  char* mapping;  // the pages: data, then the guard
  size_t pages;   // bytes mapped, guard included
  size_t bytes;   // as asked for
};
constexpr size_t kPage = 4096;
constexpr size_t kKeptBytes = size_t(256) << 20;  // freed mappings kept for reuse, at most
std::mutex g_memory;
std::map<std::uintptr_t, Allocation> g_allocations;  // by (untagged) start address
std::multimap<size_t, char*> g_kept;                 // freed mappings by size, guard in place
size_t g_keptBytes = 0;

void* allocate(size_t bytes) {
  const size_t data = (bytes + kPage - 1) / kPage * kPage, pages = data + kPage;
  const size_t align = std::min<size_t>(256, bytes & (~bytes + 1));  // lowest set bit
  std::lock_guard lock(g_memory);
  char* mapping = nullptr;
  if (const auto kept = g_kept.find(pages); kept != g_kept.end()) {  // no system call
    mapping = kept->second;
    g_keptBytes -= pages;
    g_kept.erase(kept);
  } else {
    void* m = mmap(nullptr, pages, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    mapping = static_cast<char*>(m);
    mprotect(mapping + data, kPage, PROT_NONE);
  }
  char* start = mapping + (data - bytes) / align * align;
  g_allocations[reinterpret_cast<std::uintptr_t>(start)] = {mapping, pages, bytes};
  return start;
}

void release(void* start) {
  std::lock_guard lock(g_memory);
  const auto it = g_allocations.find(reinterpret_cast<std::uintptr_t>(start));
  if (it == g_allocations.end())
    throw std::runtime_error("emulated GPU: free of an address that no allocation starts at");
  const Allocation a = it->second;
  g_allocations.erase(it);
  if (g_keptBytes + a.pages <= kKeptBytes) {
    g_kept.emplace(a.pages, a.mapping);
    g_keptBytes += a.pages;
  } else {
    munmap(a.mapping, a.pages);
  }
}

// The allocation whose mapping holds `a` (its guard page included); g_memory held.
const std::pair<const std::uintptr_t, Allocation>* allocationAround(std::uintptr_t a) {
  auto it = g_allocations.upper_bound(a);
  if (it == g_allocations.begin()) return nullptr;
  --it;
  const auto* m =
      reinterpret_cast<std::uintptr_t>(it->second.mapping) <= a &&
              a < reinterpret_cast<std::uintptr_t>(it->second.mapping) + it->second.pages
          ? &*it
          : nullptr;
  return m;
}

}  // namespace

void enqueue(void* stream, std::function<void()> work) {
  Stream* s = asStream(stream);
  std::lock_guard lock(s->mutex);
  s->queue.push_back(std::move(work));
}

void synchronize() { drainAll(); }

bool idle(void* stream) {
  Stream* s = asStream(stream);
  std::lock_guard lock(s->mutex);
  return s->queue.empty();
}

}  // namespace paralab::kernels::emu

// [SECTION] The runtime (cuda/runtime.h)

namespace paralab::gpu {

using namespace paralab::kernels::emu;

void setDevice(int gpu) {
  if (gpu < 0 || gpu >= gpuCount())
    throw std::runtime_error("emulated GPU: no device " + std::to_string(gpu));
  t_device = gpu;
}
int currentDevice() { return t_device; }
void enablePeerAccess(int) {}  // one host memory: every emulated GPU reaches every other's

void* streamCreate() {
  auto* s = new Stream;
  std::lock_guard lock(g_registry);
  g_streams.insert(s);
  return s;
}

void streamDestroy(void* stream) {
  if (!stream) return;
  auto* s = static_cast<Stream*>(stream);
  {
    std::lock_guard lock(g_registry);  // after this no device-wide wait can reach it
    g_streams.erase(s);
  }
  drain(s);  // CUDA lets queued work finish
  delete s;
}

void streamSync(void* stream) { drain(asStream(stream)); }

void* malloc(int64_t bytes) {
  void* p = allocate(static_cast<size_t>(std::max<int64_t>(bytes, 1)));
  return p ? tag(p) : nullptr;
}

void free(void* p) {
  if (!p) return;
  drainAll();  // cudaFree waits for the device: no queued work may still touch the block
  release(host(p));
}

void memsetAsync(void* p, int64_t bytes, void* stream) {
  if (bytes <= 0) return;
  enqueue(stream, [p, bytes] { std::memset(host(p), 0, static_cast<size_t>(bytes)); });
}

void copyAsync(void* dst, const void* src, int64_t bytes, void* stream) {
  if (bytes <= 0 || dst == src) return;
  if (!isDevice(src)) {  // from pageable host memory: read now (CUDA stages it), land in order
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src),
                                                      static_cast<const char*>(src) + bytes);
    enqueue(stream, [dst, staged] { std::memcpy(host(dst), staged->data(), staged->size()); });
    return;
  }
  enqueue(stream,
          [dst, src, bytes] { std::memcpy(host(dst), host(src), static_cast<size_t>(bytes)); });
}

void* eventCreate(bool) { return new Event; }
void eventDestroy(void* event) { delete static_cast<Event*>(event); }

void eventRecord(void* event, void* stream) {
  auto* e = static_cast<Event*>(event);
  e->stream = asStream(stream);
  e->done = false;
  enqueue(stream, [e] {
    e->ns = nowNs();
    e->done = true;
  });
}

void eventSync(void* event) {
  auto* e = static_cast<Event*>(event);
  if (Stream* s = e->stream.load(); !e->done && s) drain(s);
}

float eventElapsedMs(void* from, void* to) {
  auto *a = static_cast<Event*>(from), *b = static_cast<Event*>(to);
  if (!a->done || !b->done) throw std::runtime_error("emulated GPU: event not complete");
  return float(double(b->ns - a->ns) / 1e6);
}

}  // namespace paralab::gpu

// [SECTION] The device of the host execution layer (cuda/host/block.h)

namespace paralab::cuda_host {

using namespace paralab::kernels::emu;

void submit(cudaStream_t stream, std::function<void()> work) { enqueue(stream, std::move(work)); }

// A device pointer loses its tag; a host pointer, which a GPU could not read either, gets one
// that no host access survives (bit 63: a non-canonical address on x86-64).
void* hostAddress(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  if (!p) return nullptr;
  return reinterpret_cast<void*>(isDevice(p) ? a & ~kTag : a | std::uintptr_t(1) << 63);
}

bool isDeviceAddress(uint64_t word) {
  if (!(word & kTag) || (word & ~kTag) >> 47) return false;
  std::lock_guard lock(g_memory);
  const auto* a = allocationAround(word & ~kTag);
  return a && (word & ~kTag) <= a->first + a->second.bytes;
}

std::string describeAddress(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard lock(g_memory);
  const auto* m = allocationAround(a);
  if (!m) return "not in any device allocation";
  const std::string size = "a " + std::to_string(m->second.bytes) + "-byte device allocation";
  const std::uintptr_t end = m->first + m->second.bytes;
  if (a >= end) return std::to_string(a - end) + " bytes past the end of " + size;
  return std::to_string(m->first - a) + " bytes before the start of " + size;
}

}  // namespace paralab::cuda_host

namespace paralab::kernels {

GpuInfo cuda_query_devices() {
  GpuInfo g;
  g.count = emu::gpuCount();
  g.firstName = "emulated GPU (the CUDA kernels executed on the host: correctness only, no speed)";
  g.emulated = true;
  // Its memory is the host's, shared by the emulated GPUs.
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  g.memoryBytes = pages > 0 && page > 0 ? (long long)pages * page / g.count : 0;
  return g;
}

// [SECTION] The vendor rung: cuBLAS is a library for real GPUs; the emulated one has none, and
// says so rather than computing something else under its name.
void gemm_cuda_vendor(bool, bool, int, int, int, float, const float*, int, const float*, int, float,
                      float*, int, void*) {
  throw std::runtime_error(
      "gemm_cuda_vendor: cuBLAS needs a real GPU; the emulated GPU runs the ladder's own kernels "
      "(naive, coalesced, tiled, tensor-core)");
}
void gemm_cuda_vendor_tf32(bool, bool, int, int, int, float, const float*, int, const float*, int,
                           float, float*, int, void*) {
  throw std::runtime_error(
      "gemm_cuda_vendor_tf32: cuBLAS needs a real GPU; the emulated GPU runs the ladder's own "
      "kernels (naive, coalesced, tiled, tensor-core)");
}

}  // namespace paralab::kernels
