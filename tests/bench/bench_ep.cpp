// `paralab-bench ep`: expert parallelism (--model moe --ep G, thread ranks) against the serial
// MoE on the same global batch, under emulated NVLink and Ethernet links: step time and each
// rank's compute / comm / idle, with the all-to-all traffic per rank. The serial MoE (one rank,
// every expert) is the reference measured in the same run. Try: paralab-bench ep [--json]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench_common.h"
#include "comm/link_model.h"
#include "cpu/gemm.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

struct EpRow {
  std::string link;
  int ep = 1;
  double stepMs = 0, computeMs = 0, commMs = 0, idleMs = 0, mbSent = 0;
  double maxComputeMs = 0;      // the busiest rank's compute: what the others wait for
  double a2aMs = 0, a2aMb = 0;  // the all-to-alls alone (dispatch and combine, both passes)
  double a2aRefMs = 0;          // reference: the link model's time for the same calls and bytes
  int64_t dropped = 0;
};

// Medians over `steps` steps after `warmup` steps; per-rank figures averaged over ranks.
EpRow measure(const RunConfig& c, int steps, int warmup) {
  Trainer t(c);
  for (int i = 0; i < warmup; ++i) t.step();
  std::vector<double> step, compute, comm, idle, mb, a2a, a2aMb, a2aRef, busiest;
  EpRow row{c.link, c.ep};
  const LinkProfile link = loadLinkProfile(c.link);
  for (int i = 0; i < steps; ++i) {
    const StepMetrics m = t.step();
    double cp = 0, cm = 0, id = 0, sent = 0, am = 0, ab = 0, ar = 0, mx = 0;
    for (const RankMetrics& r : m.ranks) {
      cp += r.computeMs, cm += r.commMs, id += r.idleMs, sent += double(r.bytesSent);
      mx = std::max(mx, r.computeMs);
      for (const OpTraffic& o : r.ops)
        if (o.op == "alltoallv") {
          am += o.ms, ab += double(o.bytesSent);
          // alpha-beta: a latency per call, the larger direction over the port's bandwidth
          if (link.emulated())
            ar += o.calls * link.latencyUs * 1e-3 +
                  double(std::max(o.bytesSent, o.bytesRecv)) / (link.bandwidthGBps * 1e6);
        }
    }
    const double n = double(m.ranks.size());
    step.push_back(m.stepMs);
    compute.push_back(cp / n), comm.push_back(cm / n), idle.push_back(id / n),
        mb.push_back(sent / n / 1e6);
    a2a.push_back(am / n), a2aMb.push_back(ab / n / 1e6), a2aRef.push_back(ar / n),
        busiest.push_back(mx);
    row.dropped += m.droppedTokens.value_or(0);
  }
  row.stepMs = bench::median(step), row.computeMs = bench::median(compute);
  row.commMs = bench::median(comm), row.idleMs = bench::median(idle),
  row.mbSent = bench::median(mb);
  row.a2aMs = bench::median(a2a), row.a2aMb = bench::median(a2aMb),
  row.a2aRefMs = bench::median(a2aRef);
  row.maxComputeMs = bench::median(busiest);
  row.dropped /= steps;
  return row;
}

}  // namespace

int benchEp(int argc, char** argv) {
  RunConfig c;
  c.model = ModelKind::Moe;
  c.dataset = "synthetic";
  c.hidden = 256;
  c.layers = 2;
  c.batch = 1024;
  c.experts = 8;
  c.topk = 2;
  c.capacityFactor = 1.25;
  c.optimizer = "momentum";
  c.evalEvery = 0;
  int steps = 10, warmup = 3, repeats = 3;
  bool json = false;
  std::vector<std::string> links = {"nvlink", "ethernet"};
  std::vector<int> eps = {2, 4};
  CLI::App app{"Expert parallelism (MoE, thread ranks) vs the serial MoE, under emulated links"};
  app.add_option("--hidden", c.hidden)->capture_default_str();
  app.add_option("--batch", c.batch, "Global batch")->capture_default_str();
  app.add_option("--experts", c.experts)->capture_default_str();
  app.add_option("--topk", c.topk)->capture_default_str();
  app.add_option("--capacity-factor", c.capacityFactor)->capture_default_str();
  app.add_option("--aux-loss", c.auxLoss, "Load-balancing loss coefficient")->capture_default_str();
  app.add_option("--steps", steps)->capture_default_str();
  app.add_option("--repeats", repeats, "Alternating measurements of every run")
      ->capture_default_str();
  app.add_option("--warmup", warmup, "Steps before measuring (the router starts collapsed)")
      ->capture_default_str();
  app.add_option("--links", links, "Emulated links")->capture_default_str();
  app.add_option("--ep", eps, "Expert-parallel degrees (dp = ep)")->capture_default_str();
  app.add_flag("--json", json);
  CLI11_PARSE(app, argc, argv);

  std::vector<RunConfig> configs = {c};  // the serial MoE first
  for (const std::string& link : links)
    for (int ep : eps) {
      RunConfig p = c;
      p.ranks = ep, p.ep = ep, p.link = link;
      if (auto err = p.validate()) {
        std::fprintf(stderr, "paralab-bench ep: %s\n", err->c_str());
        return 2;
      }
      configs.push_back(p);
    }
  // Alternate the runs, so a change of load hits them all alike; keep each one's median repeat.
  std::vector<std::vector<EpRow>> runs(configs.size());
  for (int r = 0; r < repeats; ++r)
    for (size_t i = 0; i < configs.size(); ++i)
      runs[i].push_back(measure(configs[i], steps, warmup));
  std::vector<EpRow> rows;
  for (auto& v : runs) {
    std::sort(v.begin(), v.end(),
              [](const EpRow& a, const EpRow& b) { return a.stepMs < b.stepMs; });
    rows.push_back(v[v.size() / 2]);
  }
  const EpRow serial = rows.front();
  rows.erase(rows.begin());
  if (json) {
    nlohmann::json j = {{"bench", "ep"},
                        {"hidden", c.hidden},
                        {"batch", c.batch},
                        {"experts", c.experts},
                        {"topk", c.topk},
                        {"capacity_factor", c.capacityFactor},
                        {"aux_loss", c.auxLoss},
                        {"serial_step_ms", serial.stepMs},
                        {"rows", nlohmann::json::array()}};
    for (const EpRow& r : rows)
      j["rows"].push_back({{"link", r.link},
                           {"emulated", true},
                           {"ep", r.ep},
                           {"step_ms", r.stepMs},
                           {"speedup", serial.stepMs / r.stepMs},
                           {"compute_ms", r.computeMs},
                           {"comm_ms", r.commMs},
                           {"idle_ms", r.idleMs},
                           {"mb_sent_per_rank", r.mbSent},
                           {"alltoall_ms", r.a2aMs},
                           {"alltoall_mb_sent_per_rank", r.a2aMb},
                           {"alltoall_reference_ms", r.a2aRefMs},
                           {"max_compute_ms", r.maxComputeMs},
                           {"dropped_per_step", r.dropped}});
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf(
      "Expert parallelism, strong scaling: MoE H=%d L=%d, E=%d top-%d, capacity factor %.2f,\n"
      "aux loss %g, global batch %d, dp = ep, thread ranks, 1 BLAS thread each, %u cores.\n"
      "BLAS: %s.\nMedian of %d steps after %d, median of %d alternating repeats. Per rank, mean "
      "over\n"
      "ranks: compute, comm (all collectives), a2a (the all-to-alls alone), idle, MB sent;\n"
      "'max comp' is the busiest rank's compute. 'a2a ref' is the link model's time for the\n"
      "same all-to-all calls and bytes (reference): the rest of a2a ms is waiting for the\n"
      "rank with the busiest experts. Links are emulated. 'dropped': token choices over\n"
      "capacity per step.\n\n",
      c.hidden, c.layers, c.experts, c.topk, c.capacityFactor, c.auxLoss, c.batch,
      std::thread::hardware_concurrency(), kernels::vendor_blas_name(), steps, warmup, repeats);
  std::printf("%-22s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n", "run", "step ms", "speedup",
              "compute", "max comp", "comm ms", "a2a ms", "a2a ref", "idle ms", "MB/rank", "a2a MB",
              "dropped");
  auto line = [&](const std::string& name, const EpRow& r) {
    std::printf("%-22s %8.2f %7.2fx %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8lld\n",
                name.c_str(), r.stepMs, serial.stepMs / r.stepMs, r.computeMs, r.maxComputeMs,
                r.commMs, r.a2aMs, r.a2aRefMs, r.idleMs, r.mbSent, r.a2aMb, (long long)r.dropped);
  };
  line("serial MoE (reference)", serial);
  for (const EpRow& r : rows) line("ep=" + std::to_string(r.ep) + " " + r.link + " (emul.)", r);
  return 0;
}
