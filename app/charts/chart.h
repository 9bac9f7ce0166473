// app/charts: every chart of the window (one class a file, each filling a Chart), the hub that
// docks them and the bounded history they draw. Below: the base they all share.
//
// Chart: a QCustomPlot styled the ParaLab way (readable fonts, units on every axis, a legend,
// margins, colours from the palette) that knows its export file name and writes its data as
// CSV. LossChart and ThroughputChart fill it. See tests/app/tst_app.cpp (exportFormats).
#pragma once
#include <qcustomplot.h>

#include <QHash>
#include <QPair>
#include <QString>
#include <QStringList>
#include <QTextStream>
#include <functional>
#include <memory>

namespace paralab {

class ChangeMarkers;
class MetricHistory;

class Chart : public QCustomPlot {
  Q_OBJECT
 public:
  Chart(const QString& stem, const QString& title, QWidget* parent = nullptr);
  ~Chart() override;

  const QString& stem() const { return m_stem; }  // export file names: <stem>.png, ...
  const QString& title() const { return m_title; }
  // Nothing measured to draw: the chart shows its placeholder (what to do in the window to fill
  // it), which is no figure for a report.
  bool showsNothing() const;
  // The chart's name on its dock's tab: short, as a cell holds two or three tabs side by side
  // ("Memory" for "Memory per rank"); the title in the chart says it in full.
  const QString& tabTitle() const { return m_tabTitle.isEmpty() ? m_title : m_tabTitle; }
  // A second line under the title: what was run (model, data, batch, optimizer). Parts
  // separated by " · " wrap onto further lines where the chart is too narrow for one.
  void setSubtitle(const QString& text);
  QString subtitle() const { return m_subtitle; }
  // What the data is besides measured ("emulated: ...", "bytes modelled: ..."), one line each:
  // a CSV export opens with them as "# " comments, so a table carries its labels too.
  void setLabels(const QStringList& labels) { m_labels = labels; }
  const QStringList& labels() const { return m_labels; }
  // Lays the subtitle (and the empty plot's placeholder) out for a chart `width` px wide
  // (resizing does it; exports, drawn at their own width, call it before and after).
  void fitSubtitle(int width);
  // Who redraws the chart after its text changed (subtitle, placeholder, legend): by default a
  // replot queued for the next pass of the event loop. ChartHub redraws its charts one a frame,
  // so a new subtitle on every chart at once (a live change) is not ten replots in one frame.
  void setRedrawRequest(std::function<void()> request) { m_redrawRequest = std::move(request); }

  // Replaces the plotted data with `history` and schedules a repaint.
  virtual void showHistory(const MetricHistory& history) = 0;
  // Whether the chart draws the run shown (its history and snapshots) and so takes that run's
  // subtitle and is cleared with it. A chart of something else (a scaling sweep) keeps its
  // data and its own subtitle when runs start, change or are reset.
  virtual bool followsRun() const { return true; }
  // One row per x value of any series: "<key column>,<series columns...>", empty cells
  // where a series has no point. Exactly the points drawn. Charts that draw bars, maps or
  // spans write their own table.
  virtual void writeCsv(QTextStream& out) const;
  // What went wrong in the last writeCsv() ("" nothing): a CSV that could not be complete.
  const QString& csvError() const { return m_csvError; }
  virtual int pointCount() const;  // points over all series
  static constexpr int kLegendShare = 3;  // the legend takes at most 1/kLegendShare of the chart
  // A value in a CSV cell: 10 significant digits, NaN (no value) an empty cell.
  static QString csvNumber(double v);
  // The run's live changes drawn on a chart over steps (null on the others).
  const ChangeMarkers* changeMarkers() const { return m_markers.get(); }

  // Colours and fonts from `palette`; exports use printLook() whatever the screen shows,
  // then the chart goes back to its own palette().
  virtual void applyLook(const QPalette& palette);  // charts with more axes or labels extend it
  static QPalette printLook();                      // dark text on white, for figures in reports

 signals:
  void activated(paralab::Chart* chart);        // clicked: the chart File > Export uses
  void exportRequested(paralab::Chart* chart);  // from its context menu

 protected:
  // A series: its legend name, its CSV column (with units) and the axis it is drawn against.
  QCPGraph* addSeries(const QString& legendName, const QString& csvColumn, QCPAxis* valueAxis,
                      const QColor& color, double width);
  void setKeyColumn(const QString& column) { m_keyColumn = column; }
  void setCsvError(const QString& error) const { m_csvError = error; }
  void setTabTitle(const QString& text) { m_tabTitle = text; }
  // The label of `axis`, and a shorter one for a plot too short (or narrow) to hold it along
  // the axis ("memory per rank (KiB)", "memory (KiB)"): the one that fits is shown, chosen
  // after each layout. A label longer than its axis would run past the plot into the legend.
  void setAxisLabel(QCPAxis* axis, const QString& label, const QString& shortLabel = QString());
  // An axis of training steps: its ticks fall on whole steps (never "2.5"), however few the
  // steps drawn.
  static void useStepTicks(QCPAxis* axis);
  // Shown in the middle of the empty plot, hidden once there is data.
  void setPlaceholderVisible(bool visible);
  void setPlaceholderText(const QString& text);
  // Back to nothing shown (a per-rank chart's clear()): the placeholder with its first text
  // over an empty plot spanning `keys` by `values`, replotted.
  void showEmpty(QCPRange keys, QCPRange values);
  // Removes a graph made by addSeries, with its CSV column.
  void removeSeries(QCPGraph* graph);
  void finishUpdate();  // rescales the step axis to the data and queues a replot
  // Charts over steps: a marker with a legend entry at each live change of `history`'s run.
  void showChanges(const MetricHistory& history);
  // The legend in as many columns as fit the chart's width, at most `maxColumns` (0: no
  // limit): a narrow dock wraps it rather than cutting names off. Where it would still take
  // more than a sixth of the chart's height (a short chart at 1280×720), it is set compact:
  // a smaller font, shorter symbols, closer columns. Where even that takes more than a third
  // (kLegendShare), the entries of legendOptional() leave it, the first first (still drawn).
  // fitLegend() after adding or removing entries; resizing calls it.
  void setLegendColumns(int maxColumns);
  void fitLegend();
  // Series that may go unnamed where the legend has no room (earlier runs kept for comparison).
  virtual QList<QCPAbstractPlottable*> legendOptional() const { return {}; }
  void resizeEvent(QResizeEvent* event) override;

  void mousePressEvent(QMouseEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  void styleAxis(QCPAxis* axis);
  void fitAxisLabels();  // after each layout: each axis's label, or its short one
  void setLegendCompact(bool compact);
  void fitLegendColumns();  // the two passes of fitLegend: full size, then compact
  void requestRedraw();  // see setRedrawRequest

  QString m_stem, m_title, m_tabTitle, m_keyColumn = "step";
  QHash<QCPAxis*, QPair<QString, QString>> m_axisLabels;  // label, short label
  bool m_legendCompact = false;
  QStringList m_labels;       // setLabels
  QString m_subtitle;         // as set; m_subtitleElement shows it wrapped to the width
  QString m_placeholderText;  // as set; m_placeholder shows it wrapped
  int m_legendColumns = 0;
  QStringList m_columns;  // CSV column of graph(i)
  QCPTextElement* m_titleElement = nullptr;
  QCPTextElement* m_subtitleElement = nullptr;
  QCPItemText* m_placeholder = nullptr;
  std::unique_ptr<ChangeMarkers> m_markers;  // made by the first showChanges()
  std::function<void()> m_redrawRequest;
  mutable QString m_csvError;
};

}  // namespace paralab
