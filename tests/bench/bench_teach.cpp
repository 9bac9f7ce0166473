// `paralab-bench teach`: the teaching experiments, measured now. False sharing on the CPU
// (2 threads, counters in one cache line vs padded), and on the GPU warp divergence and
// coalesced vs strided loads. Try: paralab-bench teach [--json]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "cpu/teach.h"
#include "cuda/device.h"
#include "cuda/teach.h"

using namespace paralab;

int benchTeach(int argc, char** argv) {
  long increments = 20'000'000;
  int stride = 32;
  bool json = false;
  CLI::App app{"Teaching experiments: false sharing, warp divergence, coalescing"};
  app.add_option("--increments", increments, "Counter updates per thread (false sharing)")
      ->check(CLI::Range(1L, 1L << 40))
      ->capture_default_str();
  app.add_option("--stride", stride, "Floats between neighbouring threads' loads (coalescing)")
      ->check(CLI::Range(2, 4096))
      ->capture_default_str();
  app.add_flag("--json", json, "One JSON object per experiment");
  CLI11_PARSE(app, argc, argv);

  const kernels::FalseSharingResult fs = kernels::false_sharing_experiment(increments, 2);
  if (json)
    std::printf("%s\n", nlohmann::json{{"experiment", "false_sharing"}, {"device", "cpu"},
                                       {"threads", fs.threads}, {"increments", fs.increments},
                                       {"packed_ms", 1e3 * fs.packedSeconds},
                                       {"padded_ms", 1e3 * fs.paddedSeconds},
                                       {"slowdown", fs.slowdown()}}
                            .dump()
                            .c_str());
  else
    std::printf("False sharing (CPU, %d threads x %ld increments of their own counter)\n"
                "  counters in one 64-byte line : %8.1f ms\n"
                "  each on its own line (padded): %8.1f ms\n"
                "  sharing a line is %.1fx slower\n\n",
                fs.threads, fs.increments, 1e3 * fs.packedSeconds, 1e3 * fs.paddedSeconds,
                fs.slowdown());

  const kernels::GpuInfo gpu = kernels::cuda_query_devices();
  if (gpu.count == 0) {
    if (!json) std::printf("GPU experiments: not run (%s)\n", gpu.reason.c_str());
    return 0;
  }
  try {
    const kernels::WarpDivergenceResult d = kernels::warp_divergence_experiment();
    const kernels::CoalescingResult c = kernels::coalescing_experiment(1L << 25, stride);
    if (json) {
      std::printf("%s\n", nlohmann::json{{"experiment", "warp_divergence"}, {"device", "cuda"},
                                         {"elements", d.elements}, {"divergent_ms", d.divergentMs},
                                         {"uniform_ms", d.uniformMs}, {"slowdown", d.slowdown()}}
                              .dump()
                              .c_str());
      std::printf("%s\n", nlohmann::json{{"experiment", "coalescing"}, {"device", "cuda"},
                                         {"elements", c.elements}, {"stride", c.stride},
                                         {"coalesced_gbs", c.coalescedGBs},
                                         {"strided_gbs", c.stridedGBs}}
                              .dump()
                              .c_str());
    } else {
      std::printf("Warp divergence (%s, %ld threads, two paths of equal work)\n"
                  "  branch on threadIdx.x %% 2 (every warp splits): %8.3f ms\n"
                  "  branch on warp index (no warp splits)         : %8.3f ms\n"
                  "  divergence costs %.2fx\n\n",
                  gpu.firstName.c_str(), d.elements, d.divergentMs, d.uniformMs, d.slowdown());
      std::printf("Coalescing (%s, copy of %ld floats, read + write)\n"
                  "  neighbouring threads, neighbouring floats: %8.1f GB/s\n"
                  "  neighbouring threads %4d floats apart   : %8.1f GB/s\n",
                  gpu.firstName.c_str(), c.elements, c.coalescedGBs, c.stride, c.stridedGBs);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "paralab-bench teach: %s\n", e.what());
    return 1;
  }
  return 0;
}
