// `paralab-bench project`: the projection model (projection/projection.h) checked against what
// it can be checked against on any machine, this one. For the layouts of lessons 5 (data
// parallelism), 7 (ZeRO), 10 (tensor parallelism) and 11 (the pipeline) it trains the run on
// thread ranks, measures the median step, then measures this machine's figures for that run
// (projection/host_profile.h: GEMM rate at the run's shapes, elementwise and attention rates, the ranks'
// all-reduce) and projects the same step from them. The table sets projected beside measured,
// step and split, and the ratio. Try: paralab-bench project [--steps 20] [--layout '{"ranks": 2}'] [--json]
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "bench_common.h"
#include "config.h"
#include "projection/host_profile.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

struct Row {
  std::string name;
  double measuredMs = 0, measuredComputeMs = 0, measuredCommMs = 0;
  projection::Projection projected;
  projection::HostProfile host;
};

}  // namespace

int benchProject(int argc, char** argv) {
  int steps = 20;
  bool json = false;
  CLI::App app{"Projected beside measured on this machine, the lessons' layouts"};
  app.add_option("--steps", steps, "Measured steps per layout (after 2 warm-up steps)")
      ->check(CLI::Range(3, 1000))
      ->capture_default_str();
  app.add_flag("--json", json, "One JSON object instead of the table");
  std::string only;
  app.add_option("--layout", only,
                 "Instead of the lessons' layouts, this one: run settings as a JSON object");
  CLI11_PARSE(app, argc, argv);

  std::vector<projection::CheckedLayout> layouts = projection::lessonLayouts();
  if (!only.empty()) layouts = {{"--layout", only.c_str()}};
  std::vector<Row> rows;
  for (const projection::CheckedLayout& layout : layouts) {
    RunConfig c;
    try {
      applyJson(c, nlohmann::json::parse(layout.settings));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "paralab-bench project: --layout: %s\n", e.what());
      return 2;
    }
    c.evalEvery = 0;
    Row row;
    row.name = layout.name;
    {
      Trainer t(c);
      t.step();
      t.step();
      std::vector<double> step, compute, comm;
      for (int i = 0; i < steps; ++i) {
        const StepMetrics m = t.step();
        double cm = 0, cp = 0;
        for (const RankMetrics& r : m.ranks) cp = std::max(cp, r.computeMs), cm += r.commMs;
        step.push_back(m.stepMs);
        compute.push_back(cp);
        comm.push_back(cm / double(m.ranks.size()));
      }
      row.measuredMs = bench::median(step);
      row.measuredComputeMs = bench::median(compute);
      row.measuredCommMs = bench::median(comm);
      const int vocab = t.data().text() ? t.data().classes : projection::kEngineVocab;
      row.host = projection::measureHost(c);
      row.projected = projection::projectOnHost(c, row.host, vocab);
    }
    rows.push_back(row);
    if (!json) std::fprintf(stderr, "measured %s\n", layout.name);
  }

  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const Row& r : rows)
      out.push_back({{"layout", r.name},
                     {"measured_step_ms", r.measuredMs},
                     {"projected_step_ms", r.projected.stepSeconds * 1e3},
                     {"ratio", r.projected.stepSeconds * 1e3 / r.measuredMs},
                     {"host_gemm_gflops", r.host.gemmFlops / 1e9},
                     {"host_elementwise_GBps", r.host.bytesPerS / 1e9},
                     {"link_alpha_us", r.host.link.alphaS * 1e6},
                     {"link_GBps", r.host.link.bytesPerS / 1e9},
                     {"projection", projection::toJson(r.projected)}});
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("Projected beside measured on this machine (%s)\n", rows.front().host.title.c_str());
  std::printf("%-44s %9s %9s %7s | %8s %8s %8s %8s %8s %8s\n", "layout", "measured",
              "projected", "ratio", "compute", "comm", "bubble", "dp-exp", "optim", "data");
  for (const Row& r : rows) {
    const auto& s = r.projected.split;
    std::printf("%-44s %7.2f ms %7.2f ms %6.2fx | %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f\n",
                r.name.c_str(), r.measuredMs, r.projected.stepSeconds * 1e3,
                r.projected.stepSeconds * 1e3 / r.measuredMs, s.compute * 1e3,
                (s.tpComm + s.cpComm + s.epComm + s.ppComm) * 1e3, s.ppBubble * 1e3,
                s.dpCommExposed * 1e3, s.optimizer * 1e3, s.data * 1e3);
    std::printf("%-44s measured compute %.2f ms (slowest rank), comm %.2f ms (mean)\n", "",
                r.measuredComputeMs, r.measuredCommMs);
    std::printf("%-44s host: GEMM %.2f GFLOP/s/core, elementwise %.2f GB/s/core, attention %.2f GFLOP/s/core, %d ranks on %d "
                "cores, link alpha %.1f us, %.2f GB/s (fit %.0f%%), batch copy %.2f GB/s/core, optimizer %.2f GB/s/core\n",
                "", r.host.gemmFlops / 1e9, r.host.bytesPerS / 1e9, r.host.attentionFlops / 1e9, r.host.ranks, r.host.cores,
                r.host.link.alphaS * 1e6, r.host.link.bytesPerS / 1e9, r.host.linkFitError * 100,
                r.host.dataBytesPerS / 1e9, r.host.optimizerBytesPerS / 1e9);
  }
  return 0;
}
