// `paralab-bench cp`: context parallelism (ring attention, parallel/context/ring_attention.h) against
// the serial run of the same GPT, global batch and seed on the same machine, at a context long
// enough that attention dominates the step. Rows: serial, cp 2 zigzag, cp 2 contiguous, cp 4
// zigzag, cp 4 contiguous: step time, each rank's compute (the least and the most: zigzag
// balances the causal work, contiguous leaves the last rank the most), time in the ring's
// send/recv, bytes sent, and the ring's transfers (ringOverlap): the time a block a rank sent
// was in flight and the share of it the rank computed through ("hidden %"). With an emulated
// link (--link ethernet) a transfer takes time; a last row runs the ring ordered, as MPI does,
// where nothing hides. What differs besides the split: serial runs the whole-sequence
// attention kernel (cpu/attention.h, the [T, T] probabilities stored), cp the blockwise one
// (cpu/attention_blocks.h, lse kept, probabilities recomputed in the backward); the table's
// last lines time the two kernels alone on one thread at the same shape, so the reader can
// tell the kernels' difference from the split's.
// Try: paralab-bench cp [--seq 1024] [--link ethernet] [--json]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <functional>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <vector>

#include "bench_common.h"
#include "cpu/attention.h"
#include "cpu/attention_blocks.h"
#include "parallel/context/ring_attention.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

struct Row {
  std::string name;
  int ranks = 1;
  double stepMs = 0, computeMin = 0, computeMax = 0, commMs = 0, sentMb = 0;
  // The ring's transfers, mean per rank (ms), and the share of them hidden behind compute;
  // negative: no ring (serial).
  double ringMs = -1, hiddenMs = 0, exposedMs = 0;
  double hiddenPct() const { return ringMs > 0 ? 100 * hiddenMs / ringMs : 0; }
};

// Medians over `steps` steps after 1 warm-up step.
Row measure(const std::string& name, const RunConfig& c, int steps) {
  Trainer t(c);
  t.step();
  std::vector<double> step, lo, hi, comm, sent, ring, hidden, exposed;
  for (int i = 0; i < steps; ++i) {
    const StepMetrics m = t.step();
    double mn = std::numeric_limits<double>::max(), mx = 0, cm = 0, sb = 0, rg = 0, hd = 0, ex = 0;
    for (const RankMetrics& r : m.ranks) {
      mn = std::min(mn, r.computeMs), mx = std::max(mx, r.computeMs);
      cm += r.commMs, sb += double(r.bytesSent);
      rg += r.cpTransferMs.value_or(0), hd += r.cpHiddenMs.value_or(0);
      ex += r.cpExposedMs.value_or(0);
    }
    const double n = double(m.ranks.size());
    step.push_back(m.stepMs);
    lo.push_back(mn);
    hi.push_back(mx);
    comm.push_back(cm / n);
    sent.push_back(sb / n / 1e6);
    ring.push_back(rg / n), hidden.push_back(hd / n), exposed.push_back(ex / n);
  }
  Row row{name,
          c.ranks,
          bench::median(step),
          bench::median(lo),
          bench::median(hi),
          bench::median(comm),
          bench::median(sent)};
  if (c.cp > 1)
    row.ringMs = bench::median(ring), row.hiddenMs = bench::median(hidden),
    row.exposedMs = bench::median(exposed);
  return row;
}

// One layer's attention forward and backward on one thread, ms (median of 3), over the whole
// sequence: serial's whole-sequence kernels, and the ring's blockwise kernels with the
// sequence cut into chunks of `chunk` positions (cp 2 zigzag's: T / 4), every query chunk
// folding in every key chunk as the ring does, so the two do the same work with each kernel.
std::pair<double, double> attentionKernelsMs(int B, int T, int C, int NH, int chunk) {
  std::mt19937 gen(1);
  std::normal_distribution<float> d(0, 1);
  const size_t stats = size_t(B) * NH * T;
  std::vector<float> qkv(size_t(B) * T * 3 * C), dout(size_t(B) * T * C), out(size_t(B) * T * C),
      dqkv(qkv.size()), att(size_t(B) * NH * T * T), scratch(stats), lse(stats), l(stats),
      D(stats), row(static_cast<size_t>(T));
  for (float& x : qkv) x = d(gen);
  for (float& x : dout) x = d(gen);
  const int hs = C / NH, chunks = T / chunk;
  const double whole = bench::timeMedian(
      [&] {
        kernels::attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
        kernels::attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(),
                                    att.data(), B, T, C, NH);
      },
      3);
  // Per window b and query chunk i: rows (b T + i chunk), statistics [heads, chunk] at row x NH.
  auto eachPair = [&](const std::function<void(int64_t, int, int)>& run) {
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < chunks; ++i)
        for (int j = 0; j < chunks; ++j) run(int64_t(b) * T + int64_t(i) * chunk, i, j + b * chunks);
  };
  const double blocks = bench::timeMedian(
      [&] {
        kernels::attention_blocks_init(out.data(), lse.data(), l.data(), 1, B * T, NH, hs);
        eachPair([&](int64_t q, int i, int kb) {
          const float* k = qkv.data() + int64_t(kb) * chunk * 3 * C + C;
          kernels::attention_block_forward(out.data() + q * C, lse.data() + q * NH,
                                           l.data() + q * NH, row.data(), qkv.data() + q * 3 * C,
                                           3 * C, k, k + C, 3 * C, 1, NH, hs, i * chunk, chunk,
                                           (kb % chunks) * chunk, chunk);
        });
        for (int64_t q = 0; q < int64_t(B) * T; q += chunk) {
          kernels::attention_blocks_finish(out.data() + q * C, lse.data() + q * NH,
                                           out.data() + q * C, lse.data() + q * NH,
                                           l.data() + q * NH, 1, chunk, NH, hs);
          kernels::attention_blocks_delta(D.data() + q * NH, out.data() + q * C,
                                          dout.data() + q * C, 1, chunk, NH, hs);
        }
        std::fill(dqkv.begin(), dqkv.end(), 0.0f);
        eachPair([&](int64_t q, int i, int kb) {
          const int64_t k = int64_t(kb) * chunk * 3 * C + C;
          kernels::attention_block_backward(
              dqkv.data() + q * 3 * C, dqkv.data() + k, dqkv.data() + k + C, dout.data() + q * C,
              lse.data() + q * NH, D.data() + q * NH, qkv.data() + q * 3 * C, 3 * C,
              qkv.data() + k, qkv.data() + k + C, 3 * C, 1, NH, hs, i * chunk, chunk,
              (kb % chunks) * chunk, chunk);
        });
      },
      3);
  return {whole * 1e3, blocks * 1e3};
}

}  // namespace

int benchCp(int argc, char** argv) {
  RunConfig c;
  c.model = ModelKind::Gpt;
  c.dataset = "synthetic";
  c.seq = 1024;
  c.hidden = 64;
  c.layers = 2;
  c.heads = 4;
  c.batch = 4;
  c.optimizer = "adam";
  c.lr = 0.001;
  c.evalEvery = 0;
  int steps = 5;
  bool json = false;
  CLI::App app{"Context parallelism (ring attention) vs serial, at a long context"};
  app.add_option("--seq", c.seq, "Context (tokens per window)")->capture_default_str();
  app.add_option("--hidden", c.hidden)->capture_default_str();
  app.add_option("--layers", c.layers)->capture_default_str();
  app.add_option("--heads", c.heads)->capture_default_str();
  app.add_option("--batch", c.batch, "Global batch (windows)")->capture_default_str();
  app.add_option("--steps", steps, "Measured steps (median) after 1 warm-up step")
      ->capture_default_str();
  app.add_option("--link", c.link, "Emulated link between the ranks (resources/links)")
      ->capture_default_str();
  app.add_flag("--json", json);
  CLI11_PARSE(app, argc, argv);
  if (auto why = c.validate()) {
    std::fprintf(stderr, "paralab-bench cp: %s\n", why->c_str());
    return 2;
  }

  std::vector<Row> rows;
  rows.push_back(measure("serial", c, steps));
  for (int n : {2, 4})
    for (const char* order : {"zigzag", "contiguous"}) {
      RunConfig p = c;
      p.ranks = n, p.cp = n, p.cpOrder = *fromName<CpOrder>(order);
      if (auto why = p.validate()) {
        std::fprintf(stderr, "paralab-bench cp: %s\n", why->c_str());
        return 2;
      }
      rows.push_back(measure("cp " + std::to_string(n) + " " + order, p, steps));
    }
  {  // the ring as MPI orders it: send and recv together, before the block's compute
    RunConfig p = c;
    p.ranks = p.cp = 2;
    RingAttention::orderEveryRing(true);
    rows.push_back(measure("cp 2 ordered (MPI)", p, steps));
    RingAttention::orderEveryRing(false);
  }
  const int chunk = c.seq / 4;  // cp 2 zigzag's chunk
  const auto [wholeMs, blocksMs] = attentionKernelsMs(c.batch, c.seq, c.hidden, c.heads, chunk);
  const double serial = rows.front().stepMs;
  if (json) {
    nlohmann::json j = {{"bench", "cp"},
                        {"seq", c.seq},
                        {"hidden", c.hidden},
                        {"layers", c.layers},
                        {"heads", c.heads},
                        {"batch", c.batch},
                        {"link", c.link},
                        {"cores", std::thread::hardware_concurrency()},
                        {"attention_whole_ms", wholeMs},
                        {"attention_blocks_ms", blocksMs},
                        {"attention_blocks_chunk", chunk},
                        {"rows", nlohmann::json::array()}};
    for (const Row& r : rows) {
      nlohmann::json row = {{"name", r.name},
                            {"ranks", r.ranks},
                            {"step_ms", r.stepMs},
                            {"speedup", serial / r.stepMs},
                            {"compute_ms_min", r.computeMin},
                            {"compute_ms_max", r.computeMax},
                            {"comm_ms", r.commMs},
                            {"sent_mb", r.sentMb}};
      if (r.ringMs >= 0)
        row.update({{"cp_transfer_ms", r.ringMs},
                    {"cp_hidden_ms", r.hiddenMs},
                    {"cp_exposed_ms", r.exposedMs},
                    {"hidden_pct", r.hiddenPct()}});
      j["rows"].push_back(row);
    }
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  const std::string link =
      c.link == "none" ? "no emulated link" : "link " + c.link + " (emulated)";
  std::printf(
      "Context parallelism, GPT T=%d H=%d L=%d heads=%d, global batch %d windows, thread ranks,\n"
      "%s, %u cores (more ranks than cores take turns). Median of %d steps.\n"
      "Compute: the least and the most of any rank; comm: mean per rank, waiting in the ring's\n"
      "send/recv included. Ring ms: mean per rank, the time a K/V block it sent was in flight;\n"
      "hidden %%: the share of that time the rank was computing, exposed %%: in a send or recv\n"
      "call (measured from its spans; the rest: its thread was off the core, or between calls).\n\n",
      c.seq, c.hidden, c.layers, c.heads, c.batch, link.c_str(),
      std::thread::hardware_concurrency(), steps);
  std::printf("%-18s %5s %9s %8s %16s %8s %8s %8s %8s %9s\n", "layout", "ranks", "step ms",
              "speedup", "compute ms min-max", "comm ms", "MB sent", "ring ms", "hidden %",
              "exposed %");
  for (const Row& r : rows) {
    std::printf("%-18s %5d %9.1f %7.2fx %7.1f - %-8.1f %8.1f %8.2f", r.name.c_str(), r.ranks,
                r.stepMs, serial / r.stepMs, r.computeMin, r.computeMax, r.commMs, r.sentMb);
    if (r.ringMs > 0)
      std::printf(" %8.2f %7.0f%% %8.0f%%\n", r.ringMs, r.hiddenPct(),
                  100 * r.exposedMs / r.ringMs);
    else
      std::printf(" %8s %8s %9s\n", "-", "-", "-");
  }
  std::printf(
      "\nThe kernels differ: serial runs the whole-sequence attention (probabilities stored), cp\n"
      "the blockwise one (log-sum-exp kept, probabilities recomputed). One layer's attention,\n"
      "forward + backward, one thread, this shape: whole-sequence %.1f ms, blockwise %.1f ms\n"
      "(in chunks of %d positions, cp 2 zigzag's).\n",
      wholeMs, blocksMs, chunk);
  return 0;
}
