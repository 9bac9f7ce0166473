// kernel<<<grid, block, shared, stream>>>(args) on the host. rewrite.cpp turns the chevrons into
// launch<kernel>(grid, block, shared, stream)(args), which checks the configuration as the CUDA
// runtime does (a bad one is reported by cudaGetLastError(), nothing runs), copies the
// arguments (device pointers translated to the addresses the host uses) and queues the grid on
// the stream; it runs (grid.h) when the host waits for the stream, and a failure in it surfaces
// as a KernelError from that wait. runNow<kernel>(grid, block)(args) runs a grid on host memory
// at once. See tests/kernels/tst_cuda_host.cpp.
#pragma once
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>

#include "cuda/host/grid.h"

namespace paralab::cuda_host {

// [SECTION] The launch

// "gemm_tiled_kernel<false, true>": the kernel's name as the compiler spells the template
// argument, without its namespaces.
template <auto K>
std::string kernelName() {
  // "... [with auto K = ns::{anonymous}::name<false, true>; std::string = ...]"
  const std::string s = __PRETTY_FUNCTION__;
  size_t begin = s.find("K = ") + 4, end = begin;
  if (s[begin] == '&') ++begin;
  for (int depth = 0; end < s.size(); ++end) {
    depth += s[end] == '<' ? 1 : s[end] == '>' ? -1 : 0;
    if (depth == 0 && (s[end] == ';' || s[end] == ']')) break;
    if (depth == 0 && s.compare(end, 2, "::") == 0) begin = end + 2;  // drop the namespaces
  }
  return s.substr(begin, end - begin);
}

template <auto K>
KernelInfo& kernelInfo() {
  static KernelInfo info{kernelName<K>()};
  return info;
}

// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes): the opt-in.
inline std::mutex g_attributesMutex;
inline std::map<const void*, size_t> g_maxDynamicShared;
inline size_t maxDynamicShared(const void* kernel) {
  std::lock_guard lock(g_attributesMutex);
  const auto it = g_maxDynamicShared.find(kernel);
  return it == g_maxDynamicShared.end() ? kStaticSharedLimit : it->second;
}

inline thread_local cudaError_t t_lastError = cudaSuccess;  // cudaGetLastError()

// What the CUDA runtime refuses at launch (compute capability 8.0 and 9.0 limits).
inline cudaError_t checkLaunch(dim3 g, dim3 b, size_t shared, size_t staticShared,
                               size_t maxDynamic) {
  const unsigned long long threads = 1ull * b.x * b.y * b.z;
  if (!g.x || !g.y || !g.z || !threads) return cudaErrorInvalidConfiguration;
  if (b.x > 1024 || b.y > 1024 || b.z > 64 || threads > 1024) return cudaErrorInvalidConfiguration;
  if (g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535) return cudaErrorInvalidConfiguration;
  if (shared > maxDynamic || staticShared + shared > std::max(maxDynamic, kStaticSharedLimit))
    return cudaErrorInvalidValue;
  return cudaSuccess;
}

// A kernel argument as the host kernel sees it: device pointers become host addresses. A
// struct passed by value may carry device pointers too (reduce.cu's array of sources): each of
// its 8-byte words that is a live device allocation's address is translated the same way.
template <class T>
void toHost(T& v) {
  if constexpr (std::is_pointer_v<T>) {
    v = static_cast<T>(hostAddress(v));
  } else if constexpr (std::is_class_v<T> && std::is_trivially_copyable_v<T>) {
    for (size_t at = 0; at + 8 <= sizeof(T); at += 8) {
      uint64_t word;
      std::memcpy(&word, reinterpret_cast<char*>(&v) + at, 8);
      if (!isDeviceAddress(word)) continue;
      word = reinterpret_cast<uint64_t>(hostAddress(reinterpret_cast<const void*>(word)));
      std::memcpy(reinterpret_cast<char*>(&v) + at, &word, 8);
    }
  }
}

template <class F>
struct Parameters;
template <class... P>
struct Parameters<void (*)(P...)> {
  using Tuple = std::tuple<std::decay_t<P>...>;
};

template <auto K>
class Launch {
  using Args = typename Parameters<decltype(K)>::Tuple;

 public:
  Launch(dim3 grid, dim3 block, size_t shared = 0, cudaStream_t stream = nullptr)
      : m_grid(grid), m_block(block), m_shared(shared), m_stream(stream) {}

  template <class... A>
  void operator()(A&&... args) const {
    KernelInfo& info = kernelInfo<K>();
    const cudaError_t err = checkLaunch(m_grid, m_block, m_shared, info.staticShared,
                                        maxDynamicShared(reinterpret_cast<const void*>(K)));
    if (err != cudaSuccess) {
      t_lastError = err;  // as CUDA: the launch returns, cudaGetLastError() tells
      return;
    }
    auto copy = std::make_shared<Args>(std::forward<A>(args)...);
    std::apply([](auto&... a) { (toHost(a), ...); }, *copy);
    submit(m_stream, [copy, &info, g = m_grid, b = m_block, s = m_shared] {
      runGrid(
          info, g, b, s, [](const void* a) { std::apply(K, *static_cast<const Args*>(a)); },
          copy.get());
    });
  }

 private:
  dim3 m_grid, m_block;
  size_t m_shared;
  cudaStream_t m_stream;
};

template <auto K>
Launch<K> launch(dim3 grid, dim3 block, size_t shared = 0, cudaStream_t stream = nullptr) {
  return Launch<K>(grid, block, shared, stream);
}

// The grid run at once on the calling thread, on host memory (no device, no stream): how the
// counted teaching experiments (cuda/teach_count.cu) run a kernel in a program without the
// emulated GPU. A configuration the CUDA runtime refuses is a KernelError here.
template <auto K>
class RunNow {
  using Args = typename Parameters<decltype(K)>::Tuple;

 public:
  RunNow(dim3 grid, dim3 block, size_t shared) : m_grid(grid), m_block(block), m_shared(shared) {}

  template <class... A>
  void operator()(A&&... args) const {
    KernelInfo& info = kernelInfo<K>();
    if (checkLaunch(m_grid, m_block, m_shared, info.staticShared,
                    maxDynamicShared(reinterpret_cast<const void*>(K))) != cudaSuccess)
      throw KernelError(info.name + ": a launch configuration the CUDA runtime refuses");
    const Args copy(std::forward<A>(args)...);
    runGrid(
        info, m_grid, m_block, m_shared,
        [](const void* a) { std::apply(K, *static_cast<const Args*>(a)); }, &copy);
  }

 private:
  dim3 m_grid, m_block;
  size_t m_shared;
};

template <auto K>
RunNow<K> runNow(dim3 grid, dim3 block, size_t shared = 0) {
  return RunNow<K>(grid, block, shared);
}

}  // namespace paralab::cuda_host
