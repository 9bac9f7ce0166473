// RunConfig validation and its JSON form (see config.h). See tests/engine/tst_config.cpp.
#include "config.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "data/dataset.h"

namespace paralab {

std::optional<std::string> RunConfig::validate() const {
  auto oneOf = [](const std::string& v, std::initializer_list<const char*> allowed) {
    for (const char* a : allowed)
      if (v == a) return true;
    return false;
  };
  if (model != "mlp") return "model: '" + model + "' is not available (allowed: mlp)";
  if (layers < 1 || layers > 64) return "layers: " + std::to_string(layers) + " is out of range (allowed: 1..64)";
  if (hidden < 1 || hidden > 8192) return "hidden: " + std::to_string(hidden) + " is out of range (allowed: 1..8192)";
  if (!oneOf(dataset, {"fashion-mnist", "synthetic"}))
    return "dataset: '" + dataset + "' is not one of fashion-mnist, synthetic";
  if (batch < 1 || batch > 65536) return "batch: " + std::to_string(batch) + " is out of range (allowed: 1..65536)";
  if (steps < 0) return "steps: " + std::to_string(steps) + " is negative (allowed: 0 = until stopped, or more)";
  if (!(lr > 0 && lr <= 10)) return "lr: " + std::to_string(lr) + " is out of range (allowed: 0 < lr <= 10)";
  if (!oneOf(optimizer, {"sgd", "momentum", "adam"}))
    return "optimizer: '" + optimizer + "' is not one of sgd, momentum, adam";
  if (evalEvery < 0) return "eval-every: must be 0 (never) or a positive number of steps";
  if (evalSamples < 0) return "eval-samples: must be 0 (all) or a positive number of samples";
  if (dataset == "fashion-mnist")
    if (const std::string missing = missingFashionMnistFile(dataDir); !missing.empty())
      return "data-dir: " + missing + " not found (install dataset-fashion-mnist, or pass --data-dir DIR)";
  return std::nullopt;
}

nlohmann::json RunConfig::toJson() const {
  return {{"model", model},       {"layers", layers},     {"hidden", hidden},
          {"dataset", dataset},   {"data-dir", dataDir},  {"batch", batch},
          {"steps", steps},       {"lr", lr},             {"optimizer", optimizer},
          {"seed", seed},         {"eval-every", evalEvery}, {"eval-samples", evalSamples}};
}

template <typename T>
static void read(const nlohmann::json& j, const std::string& key, T& out, const char* kind) {
  try {
    out = j.get<T>();
  } catch (const nlohmann::json::exception&) {
    throw ConfigError(key + ": expected " + kind + ", got " + j.dump());
  }
}

void applyJson(RunConfig& c, const nlohmann::json& j) {
  if (!j.is_object()) throw ConfigError("config: expected a JSON object of flag names and values");
  for (const auto& [key, v] : j.items()) {
    if (key == "model") read(v, key, c.model, "a string");
    else if (key == "layers") read(v, key, c.layers, "an integer");
    else if (key == "hidden") read(v, key, c.hidden, "an integer");
    else if (key == "dataset") read(v, key, c.dataset, "a string");
    else if (key == "data-dir") read(v, key, c.dataDir, "a string");
    else if (key == "batch") read(v, key, c.batch, "an integer");
    else if (key == "steps") read(v, key, c.steps, "an integer");
    else if (key == "lr") read(v, key, c.lr, "a number");
    else if (key == "optimizer") read(v, key, c.optimizer, "a string");
    else if (key == "seed") read(v, key, c.seed, "a non-negative integer");
    else if (key == "eval-every") read(v, key, c.evalEvery, "an integer");
    else if (key == "eval-samples") read(v, key, c.evalSamples, "an integer");
    else throw ConfigError("config: unknown key '" + key + "' (keys are the flag names, see --help)");
    if (key == "seed" && v.is_number_integer() && !v.is_number_unsigned())
      throw ConfigError("seed: expected a non-negative integer, got " + v.dump());
    if (v.is_number_float() && key != "lr")
      throw ConfigError(key + ": expected an integer, got " + v.dump());
  }
}

void applyJsonFile(RunConfig& c, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("config: cannot open '" + path + "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError("config: '" + path + "' is not valid JSON (byte " + std::to_string(e.byte) + ")");
  }
  applyJson(c, j);
}

}  // namespace paralab
