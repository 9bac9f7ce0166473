// Settings: what the window remembers between sessions (layout, last run settings, theme,
// export folder, how the learner chose to begin), in one QSettings file. Tests never touch a
// user's file: in Qt's test mode, or with `paralab --settings FILE`, another file is used.
// See tests/app/tst_window.cpp (settingsRoundTrip).
#pragma once
#include <QByteArray>
#include <QString>
#include <memory>
#include <optional>

#include "config.h"

class QSettings;

namespace paralab {

enum class Theme { System, Light, Dark };

class Settings {
 public:
  // Use `path` (INI format) instead of the desktop's settings store; "" goes back to it.
  static void useFile(const QString& path);
  // The store: the file set by useFile(); in QStandardPaths' test mode a file under its test
  // location (never the user's); else the desktop's store for this organisation and app.
  static std::unique_ptr<QSettings> open();

  static std::optional<RunConfig> lastConfig();  // nothing when absent or unreadable
  static void setLastConfig(const RunConfig& config);
  static Theme theme();
  static void setTheme(Theme theme);
  static QString exportDir();  // the folder exports were last written to (else Documents)
  // A settings file name as saved: "run" becomes "run.json" (a name with a suffix is kept).
  static QString withJsonSuffix(const QString& path);
  static void setExportDir(const QString& dir);
  // How the learner chose to begin on the welcome page ("lesson", "free"; "" not yet): the
  // window opens that way from then on.
  static QString startChoice();
  static void setStartChoice(const QString& choice);
  static QByteArray windowGeometry();
  static QByteArray windowState();
  static void setWindow(const QByteArray& geometry, const QByteArray& state);
};

}  // namespace paralab
