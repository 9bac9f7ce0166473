// A recorded run's lines, written and read (see run_record.h).
#include "metrics/run_record.h"

#include "emulated_parts.h"
#include <istream>
#include <nlohmann/json.hpp>

namespace paralab {

void RunSummary::add(const StepMetrics& m) {
  ++steps;
  totalStepMs += m.stepMs;
  samples += m.samplesPerS * m.stepMs * 1e-3;  // samples/s is the global batch over the step
  if (m.modelGflops) modelGflop += *m.modelGflops * m.stepMs * 1e-3;
  finalLoss = m.loss;
  if (m.testAccuracy) testAccuracy = m.testAccuracy;
  if (m.testLoss) testLoss = m.testLoss;
  for (const RankMetrics& r : m.ranks)
    if (r.overlap && r.rank >= 0) {
      if (size_t(r.rank) >= overlap.size()) overlap.resize(size_t(r.rank) + 1);
      overlap[size_t(r.rank)] += *r.overlap;
    }
}

nlohmann::json toJson(const RunSummary& s, const RunConfig& config) {
  nlohmann::json j = {{"schema", kMetricsSchema},
                      {"summary", true},
                      {"steps", s.steps},
                      {"final_loss", s.finalLoss},
                      {"mean_step_ms", s.meanStepMs()},
                      {"samples_per_s", s.samplesPerS()},
                      {"config", config.toJson()}};
  if (s.modelGflop > 0) j["model_gflops"] = s.modelGflops();
  if (s.testAccuracy) j["test_accuracy"] = *s.testAccuracy;
  if (s.testLoss) j["test_loss"] = *s.testLoss;
  if (const std::string e = emulatedBriefs(config); !e.empty()) j["emulated"] = e;
  if (config.straggler != "none") j["emulated_straggler"] = config.straggler;
  if (config.serialMs > 0) j["emulated_serial_ms"] = config.serialMs;
  for (size_t r = 0; r < s.overlap.size(); ++r) {  // each rank's meter over the run
    nlohmann::json o = toJson(s.overlap[r]);
    o["rank"] = int(r);
    j["overlap"].push_back(std::move(o));
  }
  return j;
}

namespace {

// Whether `line` is JSON that stops before its end: a parse error past its last character (an
// object, string or literal left open), not a wrong character inside it.
bool endsEarly(const std::string& line) {
  const size_t end = line.find_last_not_of(" \t\r") + 1;
  try {
    [[maybe_unused]] const nlohmann::json parsed = nlohmann::json::parse(line.substr(0, end));
  } catch (const nlohmann::json::parse_error& e) {
    return e.byte > end;
  }
  return false;
}

// A line's object: a step to `onStep`, or the summary's settings into `config`.
std::string readObject(const nlohmann::json& j, const std::function<void(const StepMetrics&)>& onStep,
                       RunConfig* config, bool* isSummary) {
  *isSummary = false;
  try {
    if (j.value("summary", false)) {
      if (!j.contains("config")) return "the summary has no \"config\"";
      // The summary says its schema as every step does; one this build does not know could
      // mean other settings than these names.
      if (const int schema = j.value("schema", kMetricsSchema);
          schema < 1 || schema > kMetricsSchema)
        return schemaRefusal(schema);
      RunConfig c;
      applyJson(c, j.at("config"));
      *config = c;
      *isSummary = true;
    } else {
      onStep(stepMetricsFromJson(j));
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

}  // namespace

std::string readRecordedLine(const std::string& line,
                             const std::function<void(const StepMetrics&)>& onStep,
                             RunConfig* config, bool* isSummary) {
  *isSummary = false;
  if (line.find_first_not_of(" \t\r") == std::string::npos) return {};
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return "not a JSON object (allowed: the lines paralab-run --json prints)";
  return readObject(j, onStep, config, isSummary);
}

std::string readRecordedRun(std::istream& in, const std::function<void(const StepMetrics&)>& onStep,
                            RunConfig* config, bool* hasSettings, int64_t* incompleteLine) {
  *hasSettings = false;
  if (incompleteLine) *incompleteLine = 0;
  int64_t steps = 0;
  int64_t cut = 0;  // a line that ended early: fine only if nothing but blank lines follow
  const auto notAnObject = [](int64_t n) {
    return "line " + std::to_string(n) +
           ": not a JSON object (allowed: the lines paralab-run --json prints)";
  };
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (cut > 0) return notAnObject(cut);
    const std::string where = "line " + std::to_string(n) + ": ";
    if (*hasSettings) return where + "a line after the summary (allowed: the summary last)";
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) {
      if (incompleteLine && endsEarly(line)) {
        cut = n;
        continue;
      }
      return notAnObject(n);
    }
    bool summary = false;
    if (const std::string err = readObject(j, onStep, config, &summary); !err.empty())
      return where + err;
    if (summary)
      *hasSettings = true;
    else
      ++steps;
  }
  if (in.bad()) return "the file could not be read";
  if (cut > 0 && steps == 0)
    return "line " + std::to_string(cut) + ": incomplete (the file ends inside it), no step before it";
  if (steps == 0) return "no step in it (allowed: the lines paralab-run --json prints)";
  if (incompleteLine) *incompleteLine = cut;
  return {};
}

}  // namespace paralab
