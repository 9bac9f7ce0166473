// `paralab-bench roofline`: the MLP's layers, forward + backward, measured on this CPU (and on a
// GPU where one answers) beside their roofline projection for an H100 SXM and an A100 80GB
// (engine/teach/roofline.h), each marked compute- or memory-bound. `paralab-bench layouts`: one
// GPT projected on a cluster at each tensor-parallel degree (engine/teach/layout_projection.h).
// Try: paralab-bench roofline [--hidden 128 --layers 2 --batches 1,4096 --precision fp32]
//      paralab-bench layouts [--gpus 512 --tp 8,16 --node-link infiniband]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "teach/layout_projection.h"
#include "teach/roofline.h"

using namespace paralab;

int benchRoofline(int argc, char** argv) {
  CLI::App app{"CPU against GPU, layer by layer: measured here, projected for real GPUs"};
  teach::RooflineOptions o;
  std::string precision = "fp32";
  bool json = false;
  app.add_option("--hidden", o.hidden, "the MLP's width H")->check(CLI::Range(1, 4096));
  app.add_option("--layers", o.layers, "its blocks L")->check(CLI::Range(1, 64));
  app.add_option("--batches", o.batches, "batch sizes")->delimiter(',');
  app.add_option("--kernel", o.kernel, "the CPU GEMM rung");
  app.add_option("--precision", precision, "the projection's: fp32 or tf32")
      ->check(CLI::IsMember({"fp32", "tf32"}));
  app.add_option("--repeats", o.repeats, "timed passes per layer (median)")->check(CLI::Range(1, 50));
  app.add_flag("--json", json, "one JSON object");
  CLI11_PARSE(app, argc, argv);
  o.precision = projection::parsePrecision(precision);
  teach::RooflineResult r;
  try {
    r = teach::runRoofline(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "paralab-bench roofline: %s\n", e.what());
    return 2;
  }
  if (json) {
    nlohmann::json j{{"hidden", r.hidden}, {"layers", r.layers}, {"precision", r.precision},
                     {"kernel", r.kernel}, {"measured_gpu", r.measuredGpu},
                     {"gpu_not_run", r.gpuNotRun}};
    for (const teach::RooflineBatch& b : r.batches)
      for (const teach::RooflineLayer& l : b.layers) {
        nlohmann::json row{{"batch", b.batch}, {"layer", l.key}, {"count", l.count},
                           {"cpu_us", l.cpuSeconds * 1e6}};
        if (l.gpuSeconds > 0) row["gpu_us"] = l.gpuSeconds * 1e6;
        for (size_t g = 0; g < r.gpus.size(); ++g)
          row["projected"][r.gpus[g].name] = {{"us", l.projected[g].seconds * 1e6},
                                              {"compute_bound", l.projected[g].computeBound}};
        j["rows"].push_back(row);
      }
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("MLP H=%d, L=%d: forward + backward per layer; CPU measured (%s GEMM, %d thread), "
              "GPUs projected by the roofline in %s%s\n",
              r.hidden, r.layers, r.kernel.c_str(), r.threads, r.precision.c_str(),
              r.measuredGpu.empty() ? (", no GPU here: " + r.gpuNotRun).c_str()
                                    : (", also measured on " + r.measuredGpu).c_str());
  for (const teach::RooflineGpu& g : r.gpus)
    std::printf("  %s: GEMM %.1f TFLOP/s, memory %.0f GB/s, ridge %.1f FLOP/byte (projected)\n",
                g.title.c_str(), g.gemmTflops, g.memoryGBps, g.ridge);
  for (const teach::RooflineBatch& b : r.batches) {
    std::printf("\nbatch %d\n%-24s %5s %12s %12s", b.batch, "layer", "count", "CPU us",
                r.measuredGpu.empty() ? "" : "GPU us");
    for (const teach::RooflineGpu& g : r.gpus) std::printf(" %22s", (g.name + " us (bound)").c_str());
    std::printf("\n");
    for (const teach::RooflineLayer& l : b.layers) {
      std::printf("%-24s %5d %12.2f %12s", l.title.c_str(), l.count, l.cpuSeconds * 1e6,
                  l.gpuSeconds > 0 ? std::to_string(l.gpuSeconds * 1e6).c_str() : "");
      for (const teach::ProjectedLayer& p : l.projected)
        std::printf(" %13.3f (%s)", p.seconds * 1e6, p.computeBound ? "compute" : "memory ");
      std::printf("\n");
    }
    std::printf("%-24s %5s %12.2f %12s", "step", "", b.cpuStepSeconds() * 1e6, "");
    for (size_t g = 0; g < r.gpus.size(); ++g)
      std::printf(" %13.3f %8s", b.projectedStepSeconds(g) * 1e6, "");
    std::printf("\n");
  }
  return 0;
}

int benchLayouts(int argc, char** argv) {
  CLI::App app{"One GPT projected on a cluster at each tensor-parallel degree"};
  teach::LayoutProjectionOptions o;
  bool json = false;
  app.add_option("--gpu", o.gpu, "resources/gpus name");
  app.add_option("--gpus", o.gpus, "GPUs")->check(CLI::Range(1, 1 << 20));
  app.add_option("--node-link", o.nodeLink, "infiniband or ethernet");
  app.add_option("--layers", o.layers, "blocks");
  app.add_option("--hidden", o.hidden, "width");
  app.add_option("--heads", o.heads, "heads");
  app.add_option("--seq", o.seq, "context");
  app.add_option("--vocab", o.vocab, "vocabulary");
  app.add_option("--batch", o.batch, "sequences per step");
  app.add_option("--pp", o.pp, "pipeline stages");
  app.add_option("--tp", o.tps, "tensor-parallel degrees")->delimiter(',');
  app.add_option("--recompute", o.recompute, "none, selective or full");
  app.add_flag("--json", json, "one JSON object");
  CLI11_PARSE(app, argc, argv);
  teach::LayoutProjection p;
  try {
    p = teach::runLayoutProjection(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "paralab-bench layouts: %s\n", e.what());
    return 2;
  }
  nlohmann::json j;
  std::printf("%s", json ? "" : "Projected, not measured\n");
  for (const teach::LayoutPoint& pt : p.points) {
    if (!pt.projected) {
      if (json) j["layouts"].push_back({{"tp", pt.tp}, {"refused", pt.refused}});
      else std::printf("tp %d: refused: %s\n", pt.tp, pt.refused.c_str());
      continue;
    }
    if (json) {
      nlohmann::json row = projection::toJson(pt.projection);
      row["tp_share"] = pt.tpShare();
      row["tp_allreduce_ms"] = pt.tpAllReduceSeconds * 1e3;
      j["layouts"].push_back(row);
    } else {
      std::printf("\ntp %d (TP group over %d node(s)), TP communication %.1f%% of the step, one "
                  "all-reduce of a micro-batch %.3f ms\n%s",
                  pt.tp, pt.tpNodes, 100 * pt.tpShare(), pt.tpAllReduceSeconds * 1e3,
                  projection::toText(pt.projection).c_str());
    }
  }
  if (json) std::printf("%s\n", j.dump().c_str());
  return 0;
}
