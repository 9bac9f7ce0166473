// `paralab-bench mp`: tensor and pipeline parallelism at 2 and 4 thread ranks against the
// serial run on the same global batch and machine, on shared memory and on emulated NVLink
// and 10 GbE links: step time and each rank's compute / communication / idle, bytes sent and
// the pipeline bubble beside its reference. It shows why tensor parallelism (two exchanges of
// the activations per block) stays on fast links while a pipeline (one message per stage
// boundary) tolerates slow ones. Try: paralab-bench mp [--hidden 512] [--json]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench_common.h"
#include "cpu/gemm.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

struct Row {
  std::string name, link;
  int ranks = 1;
  double stepMs = 0, computeMs = 0, commMs = 0, idleMs = 0, sentMb = 0;
  double bubble = -1, bubbleRef = -1;
};

// Medians over `steps` steps after 2 warm-up steps; per-rank figures averaged over ranks.
Row measure(const std::string& name, const RunConfig& c, int steps) {
  Trainer t(c);
  for (int i = 0; i < 2; ++i) t.step();
  std::vector<double> step, compute, comm, idle, sent, bubble;
  for (int i = 0; i < steps; ++i) {
    const StepMetrics m = t.step();
    double cpt = 0, cm = 0, id = 0, sb = 0;
    for (const RankMetrics& r : m.ranks)
      cpt += r.computeMs, cm += r.commMs, id += r.idleMs, sb += double(r.bytesSent);
    const double n = double(m.ranks.size());
    step.push_back(m.stepMs);
    compute.push_back(cpt / n);
    comm.push_back(cm / n);
    idle.push_back(id / n);
    sent.push_back(sb / n / 1e6);
    if (m.bubble) bubble.push_back(*m.bubble);
  }
  Row r{name,
        c.link,
        c.ranks,
        bench::median(step),
        bench::median(compute),
        bench::median(comm),
        bench::median(idle),
        bench::median(sent)};
  if (!bubble.empty())
    r.bubble = bench::median(bubble), r.bubbleRef = double(c.pp - 1) / (c.microbatches + c.pp - 1);
  return r;
}

}  // namespace

int benchMp(int argc, char** argv) {
  RunConfig c;
  c.dataset = "synthetic";
  // Small enough that the links' cost shows beside a CPU's compute: TP's bytes per step grow
  // with H, its compute with H^2 (comm / compute ~ 1/H).
  c.hidden = 128;
  c.layers = 4;
  c.batch = 512;
  c.optimizer = "momentum";
  c.evalEvery = 0;
  int steps = 10, microbatches = 8;
  bool json = false;
  std::vector<std::string> links = {"none", "nvlink", "ethernet"};
  CLI::App app{"Tensor and pipeline parallelism vs serial, on shared memory and emulated links"};
  app.add_option("--hidden", c.hidden)->capture_default_str();
  app.add_option("--layers", c.layers)->capture_default_str();
  app.add_option("--batch", c.batch, "Global batch")->capture_default_str();
  app.add_option("--steps", steps, "Measured steps (median) after 2 warm-up steps")
      ->capture_default_str();
  app.add_option("--microbatches", microbatches, "Pipeline micro-batches")->capture_default_str();
  app.add_option("--links", links, "Links to emulate (none = shared memory)")
      ->capture_default_str();
  app.add_flag("--json", json);
  CLI11_PARSE(app, argc, argv);

  std::vector<Row> rows;
  rows.push_back(measure("serial", c, steps));
  for (const std::string& link : links)
    for (int n : {2, 4}) {
      RunConfig tp = c;
      tp.link = link, tp.ranks = n, tp.tp = n;
      rows.push_back(measure("tp " + std::to_string(n), tp, steps));
      RunConfig sp = tp;
      sp.sp = true;
      rows.push_back(measure("tp " + std::to_string(n) + " + sp", sp, steps));
      RunConfig pp = c;
      pp.link = link, pp.ranks = n, pp.pp = n, pp.microbatches = microbatches;
      rows.push_back(measure("pp " + std::to_string(n) + " 1f1b M=" + std::to_string(microbatches),
                             pp, steps));
    }
  const double serial = rows.front().stepMs;
  if (json) {
    nlohmann::json j = {{"bench", "mp"},
                        {"hidden", c.hidden},
                        {"layers", c.layers},
                        {"batch", c.batch},
                        {"rows", nlohmann::json::array()}};
    for (const Row& r : rows) {
      nlohmann::json x = {{"name", r.name},
                          {"ranks", r.ranks},
                          {"step_ms", r.stepMs},
                          {"speedup", serial / r.stepMs},
                          {"compute_ms", r.computeMs},
                          {"comm_ms", r.commMs},
                          {"idle_ms", r.idleMs},
                          {"sent_mb", r.sentMb}};
      if (r.link != "none") x["emulated"] = r.link;
      if (r.bubble >= 0) x["bubble"] = r.bubble, x["bubble_reference"] = r.bubbleRef;
      j["rows"].push_back(x);
    }
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf(
      "Model parallelism, strong scaling: MLP H=%d L=%d, global batch %d, thread ranks, 1 BLAS\n"
      "thread each (%s), %u cores (more ranks than cores take turns).\n"
      "Median of %d steps. Per-rank figures are means over ranks; comm ms includes waiting in\n"
      "send/recv (a pipeline's bubble shows there). Links other than shared memory are emulated\n"
      "(latency + bandwidth model). Bubble: measured, (reference).\n\n",
      c.hidden, c.layers, c.batch, kernels::vendor_blas_name(), std::thread::hardware_concurrency(),
      steps);
  std::printf("%-16s %-20s %5s %9s %8s %10s %8s %8s %9s %15s\n", "layout", "link", "ranks",
              "step ms", "speedup", "compute ms", "comm ms", "idle ms", "MB sent", "bubble (ref)");
  for (const Row& r : rows) {
    const std::string link = r.link == "none" ? "shared memory" : r.link + " (emulated)";
    char bubble[32] = "";
    if (r.bubble >= 0) std::snprintf(bubble, sizeof bubble, "%.2f (%.2f)", r.bubble, r.bubbleRef);
    std::printf("%-16s %-20s %5d %9.1f %7.2fx %10.1f %8.1f %8.1f %9.2f %15s\n", r.name.c_str(),
                link.c_str(), r.ranks, r.stepMs, serial / r.stepMs, r.computeMs, r.commMs, r.idleMs,
                r.sentMb, bubble);
  }
  return 0;
}
