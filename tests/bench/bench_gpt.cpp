// `paralab-bench gpt`: the GPT's serial training step (the default size: L=2, C=128, 4 heads,
// context 64, batch 128 windows, Adam) in tokens/s and in model GFLOP/s (T(6P + 12LCT) per
// window, metrics.md) against the FMA peak of the threads it ran on, and PyTorch's CPU build on
// the same architecture, batch, context and optimizer (torch_gpt.py), measured in the same run
// at each thread count; with --precision fp32,bf16 the same model in each precision (bf16 on AMX
// also with its bf16 GEMM off), measured in turns. Try: paralab-bench gpt [--threads 1,2]
// [--precision fp32,bf16] [--json]
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_common.h"
#include "cli/run_options.h"
#include "cpu/gemm.h"
#include "data/dataset.h"
#include "model/layers.h"
#include "model/model.h"
#include "teach/gemm_ladder.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

struct Options {
  int steps = 5, repeats = 5;
  bool json = false, noTorch = false;
};

int fail(const std::string& what) { return badInput("paralab-bench gpt", what); }

// PyTorch's line for the same model at `threads`, or why there is none. `windows`: a file of the
// batch's windows of token ids, the text ParaLab trains on.
nlohmann::json runTorch(const RunConfig& c, int vocab, int threads, const std::string& windows,
                        const Options& o) {
  const std::string cmd = bench::torchCommand("torch_gpt.py") + " --vocab " +
                          std::to_string(vocab) + " --seq " + std::to_string(c.seq) +
                          " --hidden " + std::to_string(c.hidden) + " --layers " +
                          std::to_string(c.layers) + " --heads " + std::to_string(c.heads) +
                          " --batch " + std::to_string(c.batch) + " --lr " +
                          std::to_string(c.lr) + " --threads " + std::to_string(threads) +
                          " --steps " + std::to_string(o.steps) + " --repeats " +
                          std::to_string(o.repeats) + " --windows " + windows;
  const bench::ScriptRun r = bench::runScript(cmd);
  if (r.rc == -1) return {{"not_run", "cannot start python3"}};
  if (r.last.is_object() && (r.rc == 0 || r.last.contains("not_run"))) return r.last;
  return {{"not_run", "PyTorch reference unavailable (install python3-torch: make bench does)"}};
}

// One row of the table: the model in one precision, with the bf16 GEMM allowed or not
// (model/layers.h: forwardGemmInBf16; off: kernels::gemm_bf16_allow_amx(false)).
struct Variant {
  std::string name;  // "fp32", "bf16", "bf16 fp32-GEMM"
  Dtype precision = Dtype::Fp32;
  bool bf16Gemm = true;
  std::unique_ptr<Trainer> trainer;
  std::vector<double> stepMs;   // per repeat
  std::vector<double> sgemmMs;  // per repeat, a step's time inside OpenBLAS's sgemm
};

// The GEMM the variant's forward weight GEMMs ran: "bf16 amx" or "fp32 sgemm" (the vendor BLAS).
std::string gemmOf(const Variant& v) {
  return v.bf16Gemm && forwardGemmInBf16(v.precision, false, "vendor") ? "bf16 amx" : "fp32 sgemm";
}

// `repeats` repeats of `steps` steps (each step's own clock) of each variant in turn, so a noisy
// neighbour hits them alike; each repeat's ms a step, and its ms inside sgemm, appended to its
// variant.
void measure(std::vector<Variant>& variants, int steps, int repeats) {
  for (int r = 0; r < repeats; ++r)
    for (Variant& v : variants) {
      kernels::gemm_bf16_allow_amx(v.bf16Gemm);
      const bench::TimedSteps t =
          bench::timeSteps(steps, [&] { return v.trainer->step().stepMs; });
      v.stepMs.push_back(t.stepMs);
      v.sgemmMs.push_back(t.sgemmMs);
    }
  kernels::gemm_bf16_allow_amx(true);
}

}  // namespace

int benchGpt(int argc, char** argv) {
  RunConfig c;
  c.model = ModelKind::Gpt;
  c.dataset = "fortunes";
  c.optimizer = "adam";
  c.lr = 0.003;
  c.evalEvery = 0;
  std::vector<int> threads = {1, 2};
  std::vector<std::string> precisions = {"fp32"};
  Options o;
  CLI::App app{"The GPT's serial training step vs PyTorch on the CPU, per thread count"};
  app.add_option("--hidden", c.hidden)->capture_default_str();
  app.add_option("--layers", c.layers)->capture_default_str();
  app.add_option("--heads", c.heads)->capture_default_str();
  app.add_option("--seq", c.seq, "Context length (tokens per window)")->capture_default_str();
  app.add_option("--batch", c.batch, "Windows per step")->capture_default_str();
  app.add_option("--threads", threads, "Thread counts, 1..64: one, or a list (1,2)")
      ->check(CLI::Range(1, 64))
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--precision", precisions,
                 "Precisions, fp32|bf16|fp16: one, or a list (fp32,bf16), the same model in each; "
                 "a bf16 run on AMX is also measured with its bf16 GEMM off")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--steps", o.steps, "Steps per timed repeat")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--repeats", o.repeats, "Repeats (the median is reported)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_flag("--json", o.json, "One JSON object per thread count instead of the table");
  app.add_flag("--no-torch", o.noTorch, "Skip the PyTorch reference");
  if (const auto code = parseCommandLine(app, argc, argv, "paralab-bench gpt")) return *code;
  if (auto err = c.validate()) return fail("--" + *err);
  std::vector<Variant> variants;
  for (const std::string& p : precisions) {
    const std::optional<Dtype> d = fromName<Dtype>(p);
    if (!d || (*d != Dtype::Fp32 && *d != Dtype::Bf16 && *d != Dtype::Fp16))
      return fail("--precision: '" + p + "' is not fp32, bf16 or fp16");
    variants.push_back({.name = p, .precision = *d});
    if (forwardGemmInBf16(*d, false, "vendor"))
      variants.push_back({.name = p + " fp32-GEMM", .precision = *d, .bf16Gemm = false});
  }

  try {
    for (Variant& v : variants) {
      RunConfig vc = c;
      vc.precision = v.precision;
      if (auto err = vc.validate()) return fail("--" + *err);
      v.trainer = std::make_unique<Trainer>(vc);  // the same seed: the same model
    }
    Trainer& t = *variants.front().trainer;
    const int vocab = t.data().classes;  // the distinct characters of the text
    const double tokens = double(c.batch) * c.seq;
    const double flops = modelFlopsPerSample(c, t.data()) * c.batch;  // per step
    const double corePeak = teach::measuredFmaPeakGflops();
    // The same input for PyTorch: the first batch of the text's windows, as int32 ids.
    const std::string windows = (std::filesystem::temp_directory_path() /
                                 ("paralab-bench-gpt-" + std::to_string(getpid()) + ".ids"))
                                    .string();
    {
      std::vector<int32_t> ids(size_t(c.batch) * (c.seq + 1));
      const Dataset& d = t.data();
      for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(d.trainX[i % d.trainX.size()]);
      std::ofstream out(windows, std::ios::binary);
      out.write(reinterpret_cast<const char*>(ids.data()), std::streamsize(ids.size() * 4));
      if (!out) return fail("cannot write the windows for PyTorch to " + windows);
    }
    struct Removed {  // the file goes however this ends
      std::string path;
      ~Removed() {
        std::error_code ec;
        std::filesystem::remove(path, ec);
      }
    } removed{windows};
    if (!o.json) {
      std::printf(
          "Serial GPT training step: L=%d C=%d, %d heads, context %d, vocabulary %d (%lld "
          "params), batch %d windows (%.0f tokens), Adam, %s\n",
          c.layers, c.hidden, c.heads, c.seq, vocab, (long long)t.parameterCount(), c.batch,
          tokens, c.dataset.c_str());
      std::printf(
          "Model arithmetic per step: T(6P + 12LCT) x batch = %.2f GFLOP (metrics.md); %% of "
          "the FMA peak of the threads used (one core measured now, %d floats per FMA: %.1f "
          "GFLOP/s).\n",
          flops * 1e-9, teach::fmaPeakLanes(), corePeak);
      std::printf(
          "ParaLab's threads run OpenBLAS's GEMMs, attention's included, and its own kernels "
          "(softmax, LayerNorm, GELU, Adam) split by rows. PyTorch: torch.set_num_threads and "
          "OpenBLAS at the same count.\n");
      std::printf(
          "What differs: PyTorch's attention multiplies all T x T scores and masks the future "
          "(as written in torch_gpt.py), ParaLab's multiplies only the blocks of 32 rows on "
          "and below the diagonal, T(T + 32)/2 of the T x T; the count above is "
          "the same for both. PyTorch repeats the text's first batch of windows, ParaLab steps "
          "through the text.\n");
      std::printf(
          "BLAS: %s. bf16 GEMM: %s (a bf16 run's forward weight GEMMs use it on amx "
          "only; the rest fp32). Median of %d repeats x %d steps, precisions in turns.\n\n",
          kernels::vendor_blas_name(), kernels::gemm_bf16_isa(), o.repeats, o.steps);
      std::printf("%7s  %-26s %10s %10s %9s %11s  %s\n", "threads", "engine", "tokens/s", "ms/step",
                  "GFLOP/s", "% FMA peak", "GEMM");
    }
    for (int n : threads) {
      kernels::vendor_blas_set_threads(n);
      for (Variant& v : variants) {
        kernels::gemm_bf16_allow_amx(v.bf16Gemm);
        for (int i = 0; i < 3; ++i) v.trainer->step();  // warm-up: buffers, caches
        v.stepMs.clear();
        v.sgemmMs.clear();
      }
      // ParaLab's repeats before and after the reference's, so a noisy neighbour hits both alike.
      measure(variants, o.steps, o.repeats);
      const nlohmann::json ref = o.noTorch ? nlohmann::json{{"not_run", "--no-torch"}}
                                           : runTorch(c, vocab, n, windows, o);
      measure(variants, o.steps, o.repeats);
      const double peak = corePeak * n;
      const double torchMs = ref.value("step_ms", 0.0);
      const double torchGflops = torchMs > 0 ? flops / (torchMs * 1e-3) * 1e-9 : 0;
      const double firstMs = bench::median(variants.front().stepMs);
      for (const Variant& v : variants) {
        const double ours = bench::median(v.stepMs), gemmMs = bench::median(v.sgemmMs);
        const bool first = &v == &variants.front();
        if (o.json) {
          nlohmann::json j = {{"bench", "gpt"},
                              {"threads", n},
                              {"precision", v.name},
                              {"gemm", gemmOf(v)},
                              {"hidden", c.hidden},
                              {"layers", c.layers},
                              {"heads", c.heads},
                              {"seq", c.seq},
                              {"batch", c.batch},
                              {"vocab", vocab},
                              {"parameters", t.parameterCount()},
                              {"model_gflop_per_step", flops * 1e-9},
                              {"paralab_step_ms", ours},
                              {"paralab_tokens_per_s", tokens / (ours * 1e-3)},
                              {"paralab_gflops", flops / (ours * 1e-3) * 1e-9},
                              {"paralab_sgemm_ms_per_step", gemmMs},
                              {"fma_peak_gflops", peak},
                              {"fma_peak_lanes", teach::fmaPeakLanes()},
                              {"blas", kernels::vendor_blas_name()}};
          if (!first) j["tokens_per_s_vs_" + variants.front().name] = firstMs / ours;
          if (torchMs > 0) {
            j["pytorch"] = ref.value("engine", "");
            j["pytorch_step_ms"] = torchMs;
            j["pytorch_tokens_per_s"] = tokens / (torchMs * 1e-3);
            j["ratio"] = torchMs / ours;
            if (gemmMs > 0) j["ratio_ceiling_same_sgemm"] = torchMs / gemmMs;
            j["ratio_ceiling_fma_peak"] = bench::peakCeiling(torchGflops, peak);
          } else {
            j["pytorch_not_run"] = ref.value("not_run", "");
          }
          std::printf("%s\n", j.dump().c_str());
          continue;
        }
        auto row = [&](const std::string& name, double stepMs, const std::string& gemm) {
          const double g = flops / (stepMs * 1e-3) * 1e-9;
          std::printf("%7d  %-26s %10.0f %10.1f %9.1f %10.1f%%  %s\n", n, name.c_str(),
                      tokens / (stepMs * 1e-3), stepMs, g, 100 * g / peak, gemm.c_str());
        };
        row(variants.size() > 1 ? "ParaLab " + v.name : "ParaLab", ours, gemmOf(v));
        if (!first)
          std::printf("%7s  %s / %s: %.2fx tokens/s\n", "", v.name.c_str(),
                      variants.front().name.c_str(), firstMs / ours);
        if (!first) continue;
        if (torchMs > 0) {
          row(ref.value("engine", "PyTorch"), torchMs, "");
          std::printf("%7s  ParaLab / PyTorch: %.2fx tokens/s\n", "", torchMs / ours);
        } else {
          std::printf("%7s  PyTorch: %s\n", "", ref.value("not_run", "").c_str());
        }
        bench::printSgemmCeiling(std::string(9, ' '), gemmMs, ours, torchMs);
        bench::printPeakCeiling(std::string(9, ' '), torchGflops, peak);
      }
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return 0;
}
