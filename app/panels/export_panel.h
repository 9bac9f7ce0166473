// ExportPanel: the small dialog behind File > Export Chart: where, which format (PNG, PDF,
// SVG, CSV), and the figure's size in pixels with the PNG's resolution (dpi), so a figure can
// be made for a slide or for print. See tests/app/tst_window.cpp (exportPanelWritesPngAtDpi).
#pragma once
#include <QDialog>
#include <QSize>

#include "export/chart_export.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace paralab {

class Chart;

class ExportPanel : public QDialog {
  Q_OBJECT
 public:
  ExportPanel(Chart* chart, const QString& dir, QWidget* parent = nullptr);

  QString path() const;
  ExportFormat format() const;
  QSize size() const;
  int dpi() const;
  void setPath(const QString& path);
  void setSize(QSize size, int dpi);

  // Writes the chart as chosen; "" or one line saying what failed.
  QString exportNow();
  // `chart` to `path` in `format` at `size`, a PNG stamped with `dpi` (QImage keeps it as
  // dots per metre, which image viewers and word processors read as the print size).
  static QString exportChartAt(Chart& chart, const QString& path, ExportFormat format, QSize size,
                               int dpi);

 private:
  void browse();
  void updateHint();

  Chart* m_chart;
  QLineEdit* m_path;
  QComboBox* m_format;
  QSpinBox* m_width;
  QSpinBox* m_height;
  QSpinBox* m_dpi;
  QLabel* m_hint;
};

}  // namespace paralab
