// `paralab-bench simd`: each dispatched kernel (cpu/dispatch.h) at the GPT's default shape, at
// every vector level this CPU has, against its reference loops as the build compiles them (for
// baseline x86-64); thread CPU time, medians, so another process's load slows neither side.
// Try: paralab-bench simd [--repeats 9] [--json]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <ctime>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "bench_common.h"
#include "cpu/attention.h"
#include "cpu/dispatch.h"
#include "cpu/layers.h"
#include "cpu/optim.h"

using namespace paralab;
using namespace paralab::kernels;

namespace {

double threadSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Median thread CPU seconds of `repeats` calls after one unmeasured call.
double cpuMedian(const std::function<void()>& f, int repeats) {
  f();
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    const double t0 = threadSeconds();
    f();
    t.push_back(threadSeconds() - t0);
  }
  return bench::median(t);
}

struct Row {
  const char* name;
  std::function<void()> reference;   // the reference loops
  std::function<void()> dispatched;  // runs at simdLevel()
};

}  // namespace

int benchSimd(int argc, char** argv) {
  int B = 128, T = 64, C = 128, NH = 4, repeats = 7;
  bool json = false;
  CLI::App app{"The dispatched CPU kernels at every vector level vs their reference loops"};
  app.add_option("--batch", B, "Windows (the GPT's default shape)")->capture_default_str();
  app.add_option("--seq", T)->capture_default_str();
  app.add_option("--hidden", C)->capture_default_str();
  app.add_option("--heads", NH)->capture_default_str();
  app.add_option("--repeats", repeats, "Timed calls per cell (the median is shown)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_flag("--json", json, "One JSON object per kernel instead of the table");
  CLI11_PARSE(app, argc, argv);
  if (B < 1 || T < 1 || NH < 1 || C < NH || C % NH) {
    std::fprintf(stderr, "paralab-bench simd: --hidden must be a positive multiple of --heads\n");
    return 2;
  }

  std::mt19937 gen(1);
  std::normal_distribution<float> d(0.f, 1.f);
  auto randoms = [&](size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = d(gen);
    return v;
  };
  const long rows = long(B) * T, hidden4 = rows * 4 * C, params = 12L * C * C * 2;
  std::vector<float> qkv = randoms(size_t(rows) * 3 * C), dout = randoms(size_t(rows) * C);
  std::vector<float> out(dout.size()), att(size_t(B) * NH * T * T), dqkv(qkv.size()), scratch(T);
  std::vector<float> x = randoms(size_t(rows) * C), y(x.size()), dx(x.size()), g = randoms(C);
  std::vector<float> be = randoms(C), mean(rows), rstd(rows), dg(C), db(C);
  std::vector<float> h = randoms(size_t(hidden4)), hy(h.size());
  std::vector<float> p = randoms(size_t(params)), gr = randoms(size_t(params)), m(params),
                     v(params);
  std::vector<float> sa = randoms(size_t(1) << 22), sb = randoms(sa.size()), sum(sa.size());
  reference::attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);

  const std::vector<Row> table = {
      {.name = "attention forward",
       .reference =
           [&] { reference::attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH); },
       .dispatched = [&] { attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH); }},
      {.name = "attention backward",
       .reference =
           [&] {
             reference::attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(),
                                           att.data(), B, T, C, NH);
           },
       .dispatched =
           [&] {
             attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B,
                                T, C, NH);
           }},
      {.name = "LayerNorm fwd+bwd",
       .reference =
           [&] {
             reference::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), g.data(),
                                          be.data(), int(rows), C);
             reference::layernorm_backward(dx.data(), dg.data(), db.data(), dout.data(), x.data(),
                                           mean.data(), rstd.data(), g.data(), int(rows), C);
           },
       .dispatched =
           [&] {
             layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), g.data(), be.data(),
                               int(rows), C);
             layernorm_backward(dx.data(), dg.data(), db.data(), dout.data(), x.data(), mean.data(),
                                rstd.data(), g.data(), int(rows), C);
           }},
      {.name = "GELU fwd+bwd [B*T, 4C]",
       .reference =
           [&] {
             reference::gelu_forward(hy.data(), h.data(), hidden4);
             reference::gelu_backward(hy.data(), h.data(), hy.data(), hidden4);
           },
       .dispatched =
           [&] {
             gelu_forward(hy.data(), h.data(), hidden4);
             gelu_backward(hy.data(), h.data(), hy.data(), hidden4);
           }},
      {.name = "Adam (24 C^2 params)",
       .reference =
           [&] {
             reference::adam_update(p.data(), m.data(), v.data(), gr.data(), params, 1e-3f, 0.9f,
                                    0.999f, 1e-8f, 1);
           },
       .dispatched =
           [&] {
             adam_update(p.data(), m.data(), v.data(), gr.data(), params, 1e-3f, 0.9f, 0.999f,
                         1e-8f, 1);
           }},
      {.name = "all-reduce sum, 16 MiB",
       .reference =
           [&] {
             for (size_t i = 0; i < sum.size(); ++i) sum[i] = sa[i] + sb[i];
           },
       .dispatched = [&] { vec().addArrays(sum.data(), sa.data(), sb.data(), long(sum.size())); }},
  };

  const SimdLevel start = simdLevel();
  if (!json)
    std::printf(
        "Thread CPU time per call, median of %d; speed-up over the reference loops in "
        "brackets. B=%d T=%d C=%d, %d heads.\n%-24s %12s",
        repeats, B, T, C, NH, "kernel", "reference ms");
  if (!json)
    for (int l = 0; l <= int(simdLevelCpu()); ++l)
      std::printf(" %18s", simdLevelName(SimdLevel(l)));
  if (!json) std::printf("\n");
  for (const Row& row : table) {
    const double ref = cpuMedian(row.reference, repeats);
    nlohmann::json j = {{"kernel", row.name}, {"reference_ms", ref * 1e3}};
    if (!json) std::printf("%-24s %12.3f", row.name, ref * 1e3);
    for (int l = 0; l <= int(simdLevelCpu()); ++l) {
      setSimdLevel(SimdLevel(l));
      const double t = cpuMedian(row.dispatched, repeats);
      j[std::string(simdLevelName(SimdLevel(l))) + "_ms"] = t * 1e3;
      if (!json) std::printf(" %9.3f (%5.2fx)", t * 1e3, ref / t);
    }
    setSimdLevel(start);
    if (json)
      std::printf("%s\n", j.dump().c_str());
    else
      std::printf("\n");
  }
  return 0;
}
