// GPU kinds from resources/gpus (gpu_spec.h). See tests/engine/tst_projection.cpp.
#include "projection/gpu_spec.h"

#include <algorithm>
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
