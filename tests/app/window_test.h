// What the window's test suites share: a fresh learner's settings, a quick run's settings, a
// named child widget, the lines of an exported text file, which charts a run draws, where
// screenshots go and whether an SVG parses.
#pragma once
#include <QApplication>
#include <cstdlib>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QPainter>
#include <QObject>
#include <QStandardPaths>
#include <QStringList>
#include <QSvgRenderer>
#include <QXmlStreamReader>

#include "charts/bench_chart.h"
#include "charts/chart_hub.h"
#include "charts/flight_recorder_chart.h"
#include "charts/goodput_chart.h"
#include "charts/holdings_map.h"
#include "charts/loss_scale_chart.h"
#include "charts/speedup_chart.h"
#include "panels/config_panel.h"
#include "settings.h"
#include "theme.h"

namespace paralab::test {

// A window suite's start: settings in Qt's test location, never a learner's (Settings::open()
// checks this mode), no lesson progress left by an earlier run (a prediction locked there would
// stay locked), and the light Fusion look the screenshots are judged in.
inline void startAsANewLearner() {
  QStandardPaths::setTestModeEnabled(true);
  QFile::remove(Settings::open()->fileName());
  QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)).removeRecursively();
  QApplication::setStyle("Fusion");
  captureDesktopPalette();
  QApplication::setPalette(lightPalette());
}

// Small and in memory: a step takes well under a millisecond on one core.
inline RunConfig quickConfig(int steps, int ranks = 1) {
  RunConfig c = ConfigPanel::defaults();
  c.dataset = "synthetic";
  c.hidden = 32;
  c.layers = 2;
  c.batch = 64;
  c.steps = steps;
  c.evalEvery = 10;
  c.evalSamples = 256;
  c.ranks = ranks;
  return c;
}

template <class W>
W* child(QObject* parent, const char* name) {
  return parent->findChild<W*>(name);
}

// The non-empty lines of a text file (a CSV, a JSON-lines run file); none if it cannot be read.
inline QStringList readLines(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly | QIODevice::Text)) return {};
  return QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
}

// The holdings map is fed once snapshots carry the ranks' holdings (Snapshot::holdings).
inline constexpr bool kSnapshotsHaveHoldings = ShowsHoldings<HoldingsMap>;

// Charts a plain run does not draw: the speedup chart needs a sweep, the benchmark chart a
// lesson's benchmark, the flight recorder a hung run, the goodput chart a goodput sweep, the
// holdings map the session's holdings.
inline bool drawnByARun(const Chart* c) {
  if (qobject_cast<const SpeedupChart*>(c) || qobject_cast<const BenchChart*>(c)) return false;
  if (qobject_cast<const FlightRecorderChart*>(c)) return false;  // a hung run's recorders
  if (qobject_cast<const GoodputChart*>(c)) return false;  // a goodput sweep
  if (qobject_cast<const LossScaleChart*>(c)) return false;  // a 16-bit run (--precision)
  if (qobject_cast<const HoldingsMap*>(c)) return kSnapshotsHaveHoldings;
  return true;
}

inline QString screenshotDir() {
  const QString dir = QString(PARALAB_BINARY_DIR) + "/screenshots";
  QDir().mkpath(dir);
  return dir;
}

inline bool svgParses(const QString& path, QString* why) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return *why = "cannot open", false;
  QXmlStreamReader svg(&file);
  bool root = false;
  while (!svg.atEnd())
    if (svg.readNext() == QXmlStreamReader::StartElement && !root) root = svg.name() == u"svg";
  *why = svg.errorString();
  return !svg.hasError() && root;
}

// The SVG drawn by Qt's own renderer (SVG Tiny 1.2: the least any renderer draws) beside the
// PNG export of the same chart, both averaged over blocks of 6 x 6 pixels: the fraction of
// blocks whose colour differs by more than 40 of 255 in some channel. Anti-aliasing and the
// phase of a hatching differ by less; a fill the renderer cannot draw (a hatching turned black)
// or a title it loses differs by more, over many blocks.
inline double svgDiffersFromPng(const QString& svgPath, const QString& pngPath,
                                const QString& drawnTo = QString()) {
  const QImage png = QImage(pngPath).convertToFormat(QImage::Format_RGB32);
  QImage drawn(png.size(), QImage::Format_RGB32);
  drawn.fill(Qt::white);
  QSvgRenderer svg(svgPath);
  if (!svg.isValid() || png.isNull()) return 1;
  QPainter painter(&drawn);
  svg.render(&painter, QRectF(QPointF(0, 0), QSizeF(png.size())));
  painter.end();
  if (!drawnTo.isEmpty()) drawn.save(drawnTo);
  const QSize blocks = png.size() / 6;
  const QImage a = png.scaled(blocks, Qt::IgnoreAspectRatio, Qt::SmoothTransformation);
  const QImage b = drawn.scaled(blocks, Qt::IgnoreAspectRatio, Qt::SmoothTransformation);
  int64_t differing = 0;
  for (int y = 0; y < a.height(); ++y)
    for (int x = 0; x < a.width(); ++x) {
      const QRgb p = a.pixel(x, y), q = b.pixel(x, y);
      if (std::abs(qRed(p) - qRed(q)) > 40 || std::abs(qGreen(p) - qGreen(q)) > 40 ||
          std::abs(qBlue(p) - qBlue(q)) > 40)
        ++differing;
    }
  return double(differing) / double(a.width() * a.height());
}

}  // namespace paralab::test
