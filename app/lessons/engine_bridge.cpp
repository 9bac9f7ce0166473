// Lessons <-> engine: capabilities, experiment configs, result JSON (see engine_bridge.h).
// See tests/lessons/tst_lessons.cpp.
#include "engine_bridge.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <nlohmann/json.hpp>

#include "cuda/device.h"
#include "parallel/strategy.h"

namespace paralab::lessons {

namespace {
QJsonObject fromNlohmann(const nlohmann::json& j) {
  return QJsonDocument::fromJson(QByteArray::fromStdString(j.dump())).object();
}
}  // namespace

QStringList engineCapabilities() {
  QStringList caps{"device:cpu"};
  for (const StrategyInfo& s : strategyTable()) caps << QString("strategy:%1").arg(s.name);
  if (kernels::cuda_query_devices().count > 0) caps << "device:cuda";
  return caps;
}

std::optional<RunConfig> configFromExperiment(const QJsonObject& experiment, QString* error) {
  RunConfig c;
  try {
    applyJson(c, nlohmann::json::parse(QJsonDocument(experiment).toJson(QJsonDocument::Compact).toStdString()));
    c.deriveRanks();
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return std::nullopt;
  }
  if (const auto err = c.validate()) {
    if (error) *error = QString::fromStdString(*err);
    return std::nullopt;
  }
  return c;
}

QJsonObject stepJson(const StepMetrics& m) { return fromNlohmann(toJson(m)); }

QJsonObject sweepJson(const SweepResult& r, const RunConfig& base) {
  QJsonArray points;
  for (const SweepPoint& p : r.points)
    points.append(QJsonObject{{"ranks", p.ranks},
                              {"step_ms", p.stepMs},
                              {"samples_per_s", p.samplesPerS},
                              {"speedup", p.speedup},
                              {"efficiency", p.efficiency}});
  QJsonObject o{{"sweep", true},
                {"scaling", QString::fromStdString(r.scaling)},
                {"amdahl_p", r.amdahl.p},
                {"amdahl_r2", r.amdahl.r2},
                {"gustafson_serial_fraction", r.gustafson.s},
                {"gustafson_r2", r.gustafson.r2},
                {"config", fromNlohmann(base.toJson())},
                {"points", points}};
  if (base.link != "none") o.insert("emulated", QString::fromStdString(base.link));
  return o;
}

}  // namespace paralab::lessons
