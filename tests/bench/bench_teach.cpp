// `paralab-bench teach`: the teaching experiments, measured now. On the CPU, one core's FMA rate
// at each SIMD width (teach/simd_width.h) and false sharing (1..N threads, counters in one cache
// line vs padded: teach/false_sharing.h), as the lesson's bench steps draw them; the GPU kernels
// counted on the host (teach/gpu_counts.h); on a GPU warp divergence and coalesced vs strided
// loads, timed. Try: paralab-bench teach [--threads 4] [--json]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "cuda/device.h"
#include "cuda/teach.h"
#include "teach/false_sharing.h"
#include "teach/gpu_counts.h"
#include "teach/simd_width.h"

using namespace paralab;

int benchTeach(int argc, char** argv) {
  teach::FalseSharingOptions fso{.maxThreads = 2, .increments = 20'000'000};
  int stride = 32;
  bool json = false;
  CLI::App app{"Teaching experiments: SIMD width, false sharing, warp divergence, coalescing"};
  app.add_option("--increments", fso.increments, "Counter updates per thread (false sharing)")
      ->check(CLI::Range(1L, 1L << 40))
      ->capture_default_str();
  app.add_option("--threads", fso.maxThreads, "False sharing at 1, 2, ..., this many threads")
      ->check(CLI::Range(1, 8))
      ->capture_default_str();
  app.add_option("--stride", stride, "Floats between neighbouring threads' loads (coalescing)")
      ->check(CLI::Range(2, 4096))
      ->capture_default_str();
  app.add_flag("--json", json, "One JSON object per experiment");
  CLI11_PARSE(app, argc, argv);

  const teach::SimdWidthResult simd = teach::runSimdWidth();
  if (!json)
    std::printf("SIMD width (CPU, one core, 12 independent FMA chains)\n%8s %8s %10s %12s\n",
                "isa", "lanes", "GFLOP/s", "x scalar");
  for (const teach::SimdWidthPoint& p : simd.points)
    if (json)
      std::printf("%s\n", nlohmann::json{{"experiment", "simd_width"}, {"device", "cpu"},
                                         {"isa", p.isa}, {"lanes", p.lanes}, {"gflops", p.gflops},
                                         {"skipped", p.skipped}}
                              .dump()
                              .c_str());
    else if (!p.skipped.empty())
      std::printf("%8s %8d   %s\n", p.isa.c_str(), p.lanes, p.skipped.c_str());
    else
      std::printf("%8s %8d %10.1f %11.1fx\n", p.isa.c_str(), p.lanes, p.gflops,
                  p.gflops / simd.gflopsAt(1));
  if (!json) std::printf("\n");

  const teach::FalseSharingSweep fs = teach::runFalseSharing(fso);
  if (!json)
    std::printf("False sharing (CPU, %ld increments of its own counter per thread, %d hardware "
                "threads)\n%8s %22s %22s %10s\n",
                fs.increments, fs.cores, "threads", "one line: ns/increment",
                "padded: ns/increment", "slowdown");
  for (const teach::FalseSharingPoint& p : fs.points)
    if (json)
      std::printf("%s\n", nlohmann::json{{"experiment", "false_sharing"}, {"device", "cpu"},
                                         {"threads", p.threads}, {"increments", fs.increments},
                                         {"shared_ns_per_increment", p.sharedNs},
                                         {"padded_ns_per_increment", p.paddedNs},
                                         {"slowdown", p.slowdown()}}
                              .dump()
                              .c_str());
    else
      std::printf("%8d %22.2f %22.2f %9.1fx\n", p.threads, p.sharedNs, p.paddedNs, p.slowdown());
  if (!json) std::printf("\n");

  // The GPU kernels counted on the host: any machine, GPU or none.
  for (const std::string& e : teach::gpuCountExperiments()) {
    const teach::GpuCountsResult r = teach::runGpuCounts(e);
    if (!json)
      std::printf("GPU counts: %s (counted by executing the kernel source, not timed)\n%-36s "
                  "%8s %8s %8s %8s %10s %8s\n",
                  e.c_str(), "kernel", "lanes%", "lines", "sectors", "loads/C", "conflicts",
                  "passes");
    for (const teach::GpuCountRow& k : r.rows)
      if (json)
        std::printf("%s\n", nlohmann::json{{"experiment", "gpu_counts"}, {"counted", e},
                                           {"kernel", k.key},
                                           {"active_lane_percent", k.activeLanePercent},
                                           {"lines_per_load", k.linesPerLoad},
                                           {"sectors_per_load", k.sectorsPerLoad},
                                           {"global_loads", k.globalLoads},
                                           {"bank_conflicts", k.bankConflicts},
                                           {"worst_passes", k.worstPasses}}
                                .dump()
                                .c_str());
      else
        std::printf("%-36s %8.1f %8.1f %8.1f %8.1f %10ld %8ld\n", k.kernel.c_str(),
                    k.activeLanePercent, k.linesPerLoad, k.sectorsPerLoad, k.loadsPerOutput,
                    k.bankConflicts, k.worstPasses);
    if (!json) std::printf("\n");
  }

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
