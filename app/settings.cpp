// Settings: one QSettings store for the window (see settings.h).
// See tests/app/tst_window.cpp (settingsRoundTrip).
#include "settings.h"

#include <QDir>
#include <QFileInfo>
#include <QSettings>
#include <QStandardPaths>
#include <nlohmann/json.hpp>

namespace paralab {

namespace {

QString& fileOverride() {
  static QString path;
  return path;
}

}  // namespace

void Settings::useFile(const QString& path) { fileOverride() = path; }

std::unique_ptr<QSettings> Settings::open() {
  QString path = fileOverride();
  if (path.isEmpty() && QStandardPaths::isTestModeEnabled()) {
    // Test mode moves writableLocation() under ~/.qttest; say so explicitly rather than rely
    // on QSettings honouring it, so a test can never read or change a learner's settings.
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppConfigLocation);
    QDir().mkpath(dir);
    path = QDir(dir).filePath("paralab-test.ini");
  }
  if (!path.isEmpty()) return std::make_unique<QSettings>(path, QSettings::IniFormat);
  return std::make_unique<QSettings>();
}

std::optional<RunConfig> Settings::lastConfig() {
  const QByteArray text = open()->value("run/config").toByteArray();
  if (text.isEmpty()) return std::nullopt;
  RunConfig c;
  try {
    applyJson(c, nlohmann::json::parse(text.toStdString()));
  } catch (const std::exception&) {
    return std::nullopt;  // an older or hand-edited file: start from the defaults instead
  }
  return c;
}

void Settings::setLastConfig(const RunConfig& config) {
  open()->setValue("run/config", QByteArray::fromStdString(config.toJson().dump()));
}

Theme Settings::theme() {
  const QString t = open()->value("view/theme", "system").toString();
  return t == "light" ? Theme::Light : t == "dark" ? Theme::Dark : Theme::System;
}

void Settings::setTheme(Theme theme) {
  open()->setValue("view/theme", theme == Theme::Light  ? "light"
                                 : theme == Theme::Dark ? "dark"
                                                        : "system");
}

QString Settings::exportDir() {
  return open()
      ->value("export/dir", QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation))
      .toString();
}

QString Settings::withJsonSuffix(const QString& path) {
  return QFileInfo(path).suffix().isEmpty() ? path + ".json" : path;
}

void Settings::setExportDir(const QString& dir) { open()->setValue("export/dir", dir); }

QString Settings::startChoice() { return open()->value("welcome/choice").toString(); }
void Settings::setStartChoice(const QString& choice) { open()->setValue("welcome/choice", choice); }

QByteArray Settings::windowGeometry() { return open()->value("window/geometry").toByteArray(); }
QByteArray Settings::windowState() { return open()->value("window/state").toByteArray(); }

void Settings::setWindow(const QByteArray& geometry, const QByteArray& state) {
  auto s = open();
  s->setValue("window/geometry", geometry);
  s->setValue("window/state", state);
}

}  // namespace paralab
