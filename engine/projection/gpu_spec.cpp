// GPU kinds from resources/gpus (gpu_spec.h). See tests/engine/tst_projection.cpp.
#include "projection/gpu_spec.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "config.h"    // ConfigError
#include "platform.h"  // dataDir

namespace paralab::projection {

namespace fs = std::filesystem;

Precision parsePrecision(const std::string& name) {
  if (name == "bf16") return Precision::Bf16Mixed;
  if (name == "fp8") return Precision::Fp8Mixed;
  if (name == "tf32") return Precision::Tf32;
  if (name == "fp32") return Precision::Fp32;
  throw ConfigError("precision: '" + name +
                    "' is not a precision a projection runs (allowed: bf16, fp8, tf32, fp32)");
}

const char* precisionName(Precision p) {
  switch (p) {
    case Precision::Bf16Mixed:
      return "bf16";
    case Precision::Fp8Mixed:
      return "fp8";
    case Precision::Tf32:
      return "tf32";
    default:
      return "fp32";
  }
}

bool keepsMaster(Precision p) { return p == Precision::Bf16Mixed || p == Precision::Fp8Mixed; }

int elementBytes(Precision p) { return keepsMaster(p) ? 2 : 4; }

int gemmOperandBytes(Precision p) { return p == Precision::Fp8Mixed ? 1 : elementBytes(p); }

double GpuSpec::peakFlops(Precision p) const {
  switch (p) {
    case Precision::Bf16Mixed:
      return bf16Tflops * 1e12;
    case Precision::Fp8Mixed:
      return fp8Tflops * 1e12;
    case Precision::Tf32:
      return tf32Tflops * 1e12;
    default:
      return fp32Tflops * 1e12;
  }
}

std::vector<std::string> gpuNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(dataDir("resources")) / "gpus", ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string gpuNamesText() {
  std::string text;
  for (const std::string& n : gpuNames()) text += (text.empty() ? "" : ", ") + n;
  return text.empty() ? "none found in " + (fs::path(dataDir("resources")) / "gpus").string()
                      : text;
}

std::string fp8GpuNamesText() {
  std::string text;
  for (const std::string& n : gpuNames()) {
    try {
      if (loadGpu(n).hasFp8()) text += (text.empty() ? "" : ", ") + n;
    } catch (const ConfigError&) {  // a malformed datasheet: named when it is chosen
    }
  }
  return text.empty() ? "none of " + gpuNamesText() : text;
}

namespace {

// Where x falls on an ascending grid, in log2: the lower index and the weight of the upper one
// (clamped to the ends).
std::pair<size_t, double> place(const std::vector<double>& grid, double x) {
  if (grid.size() < 2 || x <= grid.front()) return {0, 0};
  if (x >= grid.back()) return {grid.size() - 2, 1};
  size_t i = 0;
  while (grid[i + 1] < x) ++i;
  return {i, std::log2(x / grid[i]) / std::log2(grid[i + 1] / grid[i])};
}

std::vector<double> ascending(const nlohmann::json& o, const char* key) {
  std::vector<double> v = o.at(key).get<std::vector<double>>();
  if (v.size() < 2 || !std::is_sorted(v.begin(), v.end()) || !(v.front() > 0))
    throw std::invalid_argument(key);
  return v;
}

}  // namespace

double GemmRates::rate(double mm, double nn, double kk) const {
  const auto [i, wi] = place(m, mm);
  const auto [j, wj] = place(n, nn);
  const auto [l, wl] = place(k, kk);
  const auto at = [&](size_t a, size_t b, size_t c) {
    return tflops[(a * n.size() + b) * k.size() + c];
  };
  double r = 0;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 2; ++c)
        r += (a ? wi : 1 - wi) * (b ? wj : 1 - wj) * (c ? wl : 1 - wl) * at(i + a, j + b, l + c);
  return r;
}

namespace {
double interpolate(const std::vector<double>& x, const std::vector<double>& y, double at) {
  const auto [i, w] = place(x, at);
  return (1 - w) * y[i] + w * y[i + 1];
}
}  // namespace

double FusedAttentionRates::forward(double h) const { return interpolate(heads, fwdTflops, h); }
double FusedAttentionRates::backward(double h) const { return interpolate(heads, bwdTflops, h); }

GpuSpec loadGpu(const std::string& name) {
  const std::vector<std::string> names = gpuNames();
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw ConfigError("project: unknown GPU '" + name + "' (allowed: " + gpuNamesText() + ")");
  const fs::path path = fs::path(dataDir("resources")) / "gpus" / (name + ".json");
  std::ifstream in(path);
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception&) {
    throw ConfigError("project: " + path.string() + " is not valid JSON");
  }
  GpuSpec g;
  g.name = name;
  std::string field;
  try {
    const auto number = [&](const nlohmann::json& o, const char* key) {
      field = key;
      const double v = o.at(key).get<double>();
      if (!(v > 0)) throw std::invalid_argument(key);
      return v;
    };
    const auto text = [&](const nlohmann::json& o, const char* key) {
      field = key;
      return o.at(key).get<std::string>();
    };
    g.title = text(j, "title");
    g.source = text(j, "source");
    const nlohmann::json& peak = (field = "peak_tflops", j.at("peak_tflops"));
    g.bf16Tflops = number(peak, "bf16");
    g.tf32Tflops = number(peak, "tf32");
    g.fp32Tflops = number(peak, "fp32");
    if (peak.contains("fp8")) g.fp8Tflops = number(peak, "fp8");  // absent: no FP8 tensor cores
    g.matmulTflopsBf16 = number(j, "matmul_tflops_bf16");
    g.hbmGB = number(j, "hbm_GB");
    g.hbmGBps = number(j, "hbm_GBps");
    g.nvlinkGBps = number(j, "nvlink_GBps_per_direction");
    g.sms = int(number(j, "sms"));
    const nlohmann::json& node = (field = "node", j.at("node"));
    g.nodeTitle = text(node, "title");
    g.nodeGpus = int(number(node, "gpus"));
    g.nodeNics = int(number(node, "nics"));
    g.nicGBps = number(node, "nic_GBps");
    g.nicTitle = text(node, "nic_title");
    if (j.contains("matmul_by_shape")) {
      const nlohmann::json& t = (field = "matmul_by_shape", j.at("matmul_by_shape"));
      auto rates = std::make_shared<GemmRates>();
      rates->m = ascending(t, "m"), rates->n = ascending(t, "n"), rates->k = ascending(t, "k");
      rates->source = text(t, "source");
      field = "matmul_by_shape.tflops";
      for (const auto& plane : t.at("tflops"))
        for (const auto& row : plane)
          for (const auto& v : row) rates->tflops.push_back(v.get<double>());
      if (rates->tflops.size() != rates->m.size() * rates->n.size() * rates->k.size())
        throw std::invalid_argument("tflops");
      for (double v : rates->tflops)
        if (!(v > 0) || v > g.bf16Tflops) throw std::invalid_argument("tflops");
      g.gemmRates = rates;
    }
    if (j.contains("fused_attention"))
      for (const auto& [kernel, a] : j.at("fused_attention").items()) {
        field = "fused_attention." + kernel;
        auto rates = std::make_shared<FusedAttentionRates>();
        rates->seq = int(number(a, "seq"));
        rates->headDim = int(number(a, "head_dim"));
        rates->source = text(a, "source");
        field = "fused_attention." + kernel + ".heads";
        rates->heads = ascending(a, "heads");
        rates->fwdTflops = a.at("fwd_tflops").get<std::vector<double>>();
        rates->bwdTflops = a.at("bwd_tflops").get<std::vector<double>>();
        if (rates->fwdTflops.size() != rates->heads.size() ||
            rates->bwdTflops.size() != rates->heads.size())
          throw std::invalid_argument("fwd_tflops");
        g.fusedAttention[kernel] = rates;
      }
  } catch (const std::exception&) {
    throw ConfigError("project: " + path.string() + ": '" + field +
                      "' is missing or not a positive number/text");
  }
  if (g.matmulTflopsBf16 > g.bf16Tflops)
    throw ConfigError("project: " + path.string() +
                      ": matmul_tflops_bf16 exceeds the bf16 peak (a measured rate cannot)");
  return g;
}

}  // namespace paralab::projection
