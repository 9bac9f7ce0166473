// app/export: what leaves the window as files for a report (charts, summary, trace) and the
// scripted `--export` run that writes them. Below: one chart to a file.
//
// Chart export: PNG (raster), PDF and SVG (vector, through QSvgGenerator) and CSV (the points
// drawn). Used by File > Export and by `paralab --steps N --export DIR`.
// See tests/app/tst_app.cpp (exportFormats, scriptedExport).
#pragma once
#include <QList>
#include <QSize>
#include <QString>
#include <QStringList>
#include <optional>

namespace paralab {

class Chart;

enum class ExportFormat { Png, Pdf, Svg, Csv };

// From a file suffix ("png", "PDF", ...); nothing for others.
std::optional<ExportFormat> exportFormatFromSuffix(const QString& suffix);
QString exportSuffix(ExportFormat format);

// Size of an export in pixels (PNG) or points (PDF, SVG): a 16:10 figure that fits a page.
inline constexpr QSize kDefaultExportSize{1200, 750};

// Writes `chart` to `path` in `format`, creating its folder when needed; returns "" or one line
// saying what failed.
QString exportChart(Chart& chart, const QString& path, ExportFormat format,
                    QSize size = kDefaultExportSize);
// Writes every chart that shows something in every format into `dir` (<stem>.png, .pdf, .svg,
// .csv), creating the folder when needed; a chart with nothing measured (showsNothing) is left
// out and its title goes to `skipped`. Returns "" or the first failure; `written` receives the
// paths written.
QString exportAllCharts(const QList<Chart*>& charts, const QString& dir,
                        QStringList* written = nullptr, QSize size = kDefaultExportSize,
                        QStringList* skipped = nullptr);

// Writes `data` to `path` whole or not at all (QSaveFile); "" or one line saying what failed.
QString writeExportFile(const QString& path, const QByteArray& data);

}  // namespace paralab
