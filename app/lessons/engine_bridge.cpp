// Lessons <-> engine: capabilities, experiment configs, result JSON (see engine_bridge.h).
// See tests/lessons/tst_lessons.cpp.
#include "engine_bridge.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <nlohmann/json.hpp>

#include "capabilities.h"
#include "schema.h"

namespace paralab::lessons {

namespace {
QJsonObject fromNlohmann(const nlohmann::json& j) {
  return QJsonDocument::fromJson(QByteArray::fromStdString(j.dump())).object();
}
}  // namespace

QStringList engineCapabilities() {
  QStringList caps{"device:cpu"};
  for (const std::string& s : strategyNames())
    caps << QString("strategy:%1").arg(QString::fromStdString(s));
  if (gpuAvailability().count > 0) caps << "device:cuda";
  return caps;
}

std::optional<RunConfig> configFromExperiment(const QJsonObject& experiment, QString* error) {
  RunConfig c;
  try {
    applyJson(c, nlohmann::json::parse(QJsonDocument(experiment).toJson(QJsonDocument::Compact).toStdString()));
    if (!experiment.contains("dataset")) datasetFollowsModel(c);
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
  return fromNlohmann(toJson(r, base));
}

}  // namespace paralab::lessons
