// Chart export to PNG, PDF, SVG and CSV (see chart_export.h).
// See tests/app/tst_app.cpp (exportFormats, scriptedExport).
#include "export/chart_export.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QPdfWriter>
#include <QSaveFile>
#include <QSvgGenerator>

#include "charts/chart.h"

namespace paralab {

std::optional<ExportFormat> exportFormatFromSuffix(const QString& suffix) {
  const QString s = suffix.toLower();
  if (s == "png") return ExportFormat::Png;
  if (s == "pdf") return ExportFormat::Pdf;
  if (s == "svg") return ExportFormat::Svg;
  if (s == "csv") return ExportFormat::Csv;
  return std::nullopt;
}

QString exportSuffix(ExportFormat format) {
  switch (format) {
    case ExportFormat::Png:
      return "png";
    case ExportFormat::Pdf:
      return "pdf";
    case ExportFormat::Svg:
      return "svg";
    case ExportFormat::Csv:
      return "csv";
  }
  return {};
}

namespace {

// Exports are drawn as the chart looks on screen at this width (logical px) and scaled up to
// the size asked, so text keeps its proportion to the figure: a 1200 px wide PNG dropped into
// a report at column width still has legible labels (about matplotlib's proportions).
constexpr double kLogicalWidth = 800;

QString cannotWrite(const QString& path, const QString& why = QString()) {
  return QObject::tr("cannot write '%1'%2").arg(path, why.isEmpty() ? QString() : ": " + why);
}

// Paints `chart` filling `deviceSize` (in the device's units) on an active painter, in the
// print look: a figure for a report is dark on white even when the screen is dark.
void paintChart(Chart& chart, QCPPainter& painter, QSizeF deviceSize, QSize size) {
  const double scale = std::max(1.0, size.width() / kLogicalWidth);
  const int w = qRound(size.width() / scale), h = qRound(size.height() / scale);
  painter.scale(deviceSize.width() / w, deviceSize.height() / h);
  chart.applyLook(Chart::printLook());
  chart.fitSubtitle(w);             // wrapped for the figure's width, not the dock's
  chart.toPainter(&painter, w, h);  // QCustomPlot draws the same primitives as on screen
  chart.applyLook(chart.palette());
  chart.fitSubtitle(chart.width());
}

QString savePng(Chart& chart, const QString& path, QSize size) {
  QImage image(size, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::white);
  const int dotsPerMeter = qRound(96 / 0.0254);  // 96 dpi, the screen's
  image.setDotsPerMeterX(dotsPerMeter);
  image.setDotsPerMeterY(dotsPerMeter);
  QCPPainter painter(&image);
  paintChart(chart, painter, size, size);
  painter.end();
  return image.save(path, "PNG") ? QString() : cannotWrite(path);
}

// A page exactly the figure's size (px at 96 dpi = 0.75 pt), no margins. The writer works at
// 96 dpi, the screen's, as the PNG and SVG do: fonts are sized in points against the device's
// resolution, so at QPdfWriter's default 1200 dpi every glyph came out 12.5 times too tall
// once the painter scaled the figure to the page.
QString savePdf(Chart& chart, const QString& path, QSize size) {
  QPdfWriter pdf(path);
  pdf.setResolution(96);
  pdf.setCreator("ParaLab");
  pdf.setTitle(chart.title());
  const QPageSize page(QSizeF(size) * 0.75, QPageSize::Point, QString(), QPageSize::ExactMatch);
  pdf.setPageLayout(QPageLayout(page, QPageLayout::Portrait, QMarginsF()));
  QCPPainter painter;
  if (!painter.begin(&pdf)) return cannotWrite(path);
  paintChart(chart, painter, QSizeF(pdf.width(), pdf.height()), size);
  painter.end();
  return QFileInfo(path).size() > 0 ? QString() : cannotWrite(path);
}

// QSvgGenerator paints through QPainter, so the chart stays vectors and its text stays text.
QString saveSvg(Chart& chart, const QString& path, QSize size) {
  QSvgGenerator svg;
  svg.setFileName(path);
  svg.setSize(size);
  svg.setViewBox(QRect(QPoint(0, 0), size));
  svg.setResolution(96);  // as the PNG: 1200 px wide is 12.5 inches in a drawing program
  svg.setTitle(chart.title());
  svg.setDescription(QObject::tr("ParaLab chart. %1").arg(chart.subtitle()));
  QCPPainter painter;
  if (!painter.begin(&svg)) return cannotWrite(path);
  paintChart(chart, painter, size, size);
  painter.end();
  return QFileInfo(path).size() > 0 ? QString() : cannotWrite(path);
}

QString saveCsv(const Chart& chart, const QString& path) {
  QSaveFile file(path);  // all or nothing: a failed export leaves no half file
  if (!file.open(QIODevice::WriteOnly | QIODevice::Text))
    return cannotWrite(path, file.errorString());
  QTextStream out(&file);
  for (const QString& label : chart.labels()) out << "# " << label << '\n';
  chart.writeCsv(out);
  out.flush();
  if (!chart.csvError().isEmpty()) {
    file.cancelWriting();
    return cannotWrite(path, chart.csvError());
  }
  if (!file.commit()) return cannotWrite(path, file.errorString());
  return {};
}

}  // namespace

QString exportChart(Chart& chart, const QString& path, ExportFormat format, QSize size) {
  // The first export of a new account goes to a Documents folder that may not exist yet.
  if (const QString dir = QFileInfo(path).absolutePath(); !QDir().mkpath(dir))
    return QObject::tr("export: cannot create folder '%1'").arg(dir);
  switch (format) {
    case ExportFormat::Png:
      return savePng(chart, path, size);
    case ExportFormat::Pdf:
      return savePdf(chart, path, size);
    case ExportFormat::Svg:
      return saveSvg(chart, path, size);
    case ExportFormat::Csv:
      return saveCsv(chart, path);
  }
  return cannotWrite(path);
}

QString exportAllCharts(const QList<Chart*>& charts, const QString& dir, QStringList* written,
                        QSize size, QStringList* skipped) {
  if (!QDir().mkpath(dir)) return QObject::tr("export: cannot create folder '%1'").arg(dir);
  for (Chart* chart : charts) {
    if (chart->showsNothing()) {
      if (skipped) skipped->push_back(chart->title());
      continue;
    }
    for (ExportFormat f :
         {ExportFormat::Png, ExportFormat::Pdf, ExportFormat::Svg, ExportFormat::Csv}) {
      const QString path = QDir(dir).filePath(chart->stem() + '.' + exportSuffix(f));
      if (QString err = exportChart(*chart, path, f, size); !err.isEmpty()) return err;
      if (written) written->push_back(path);
    }
  }
  return {};
}

QString writeExportFile(const QString& path, const QByteArray& data) {
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly) || file.write(data) < 0 || !file.commit())
    return cannotWrite(path, file.errorString());
  return {};
}

}  // namespace paralab
