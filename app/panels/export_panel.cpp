// ExportPanel: one chart's export dialog (see export_panel.h).
// See tests/app/tst_window.cpp (exportPanelWritesPngAtDpi).
#include "panels/export_panel.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <cmath>

#include "charts/chart.h"

namespace paralab {

ExportPanel::ExportPanel(Chart* chart, const QString& dir, QWidget* parent)
    : QDialog(parent), m_chart(chart) {
  setWindowTitle(tr("Export “%1” Chart").arg(chart->title()));
  m_path = new QLineEdit(QDir(dir).filePath(chart->stem() + ".png"));
  m_path->setObjectName("exportPath");
  m_path->setMinimumWidth(fontMetrics().averageCharWidth() * 48);  // a whole path, usually
  auto* browse = new QPushButton(tr("Browse…"));
  m_format = new QComboBox;
  m_format->setObjectName("exportFormat");
  m_format->addItem(tr("PNG image"), int(ExportFormat::Png));
  m_format->addItem(tr("PDF document (vector)"), int(ExportFormat::Pdf));
  m_format->addItem(tr("SVG image (vector)"), int(ExportFormat::Svg));
  m_format->addItem(tr("CSV data (the points drawn)"), int(ExportFormat::Csv));
  m_format->setToolTip(
      tr("PNG for slides and web pages; PDF and SVG stay sharp at any size "
         "(text stays text); CSV is the data, for a spreadsheet or a script"));
  m_width = new QSpinBox;
  m_width->setObjectName("exportWidth");
  m_height = new QSpinBox;
  m_height->setObjectName("exportHeight");
  for (QSpinBox* s : {m_width, m_height}) {
    s->setRange(200, 10000);
    s->setSuffix(tr(" px"));
    s->setSingleStep(50);
  }
  m_width->setValue(kDefaultExportSize.width());
  m_height->setValue(kDefaultExportSize.height());
  m_width->setToolTip(
      tr("Width of the figure: pixels for PNG, 1/96 inch for PDF and SVG. Text "
         "grows with it, so it keeps its size relative to the figure"));
  m_height->setToolTip(tr("Height of the figure (pixels for PNG, 1/96 inch for PDF and SVG)"));
  m_dpi = new QSpinBox;
  m_dpi->setObjectName("exportDpi");
  m_dpi->setRange(72, 1200);
  m_dpi->setValue(96);
  m_dpi->setSuffix(tr(" dpi"));
  m_dpi->setToolTip(
      tr("The PNG's resolution: the print size a word processor gives it "
         "(width ÷ dpi inches). 300 dpi at 1950 px is a 6.5-inch column"));
  m_hint = new QLabel;
  m_hint->setForegroundRole(QPalette::PlaceholderText);

  auto* pathRow = new QHBoxLayout;
  pathRow->addWidget(m_path, 1);
  pathRow->addWidget(browse);
  auto* form = new QFormLayout;
  form->addRow(tr("File"), pathRow);
  form->addRow(tr("Format"), m_format);
  form->addRow(tr("Width"), m_width);
  form->addRow(tr("Height"), m_height);
  form->addRow(tr("Resolution"), m_dpi);
  form->addRow(QString(), m_hint);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(buttons);

  connect(browse, &QPushButton::clicked, this, &ExportPanel::browse);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(m_format, &QComboBox::currentIndexChanged, this, [this] {
    // The file's suffix follows the format chosen.
    QFileInfo f(m_path->text());
    m_path->setText(QDir(f.path()).filePath(f.completeBaseName() + '.' + exportSuffix(format())));
    updateHint();
  });
  connect(m_path, &QLineEdit::textEdited, this, [this] {
    if (auto f = exportFormatFromSuffix(QFileInfo(m_path->text()).suffix())) {
      QSignalBlocker block(m_format);
      m_format->setCurrentIndex(m_format->findData(int(*f)));
      updateHint();
    }
  });
  for (QSpinBox* s : {m_width, m_height, m_dpi})
    connect(s, &QSpinBox::valueChanged, this, &ExportPanel::updateHint);
  updateHint();
}

QString ExportPanel::path() const { return m_path->text(); }
ExportFormat ExportPanel::format() const { return ExportFormat(m_format->currentData().toInt()); }
QSize ExportPanel::size() const { return {m_width->value(), m_height->value()}; }
int ExportPanel::dpi() const { return m_dpi->value(); }

void ExportPanel::setPath(const QString& path) {
  m_path->setText(path);
  emit m_path->textEdited(path);
}

void ExportPanel::setSize(QSize size, int dpi) {
  m_width->setValue(size.width());
  m_height->setValue(size.height());
  m_dpi->setValue(dpi);
}

void ExportPanel::updateHint() {
  const ExportFormat f = format();
  m_dpi->setEnabled(f == ExportFormat::Png);
  m_width->setEnabled(f != ExportFormat::Csv);
  m_height->setEnabled(f != ExportFormat::Csv);
  if (f == ExportFormat::Csv)
    m_hint->setText(tr("The data only: one row per step"));
  else if (f == ExportFormat::Png)
    m_hint->setText(tr("Prints at %1 × %2 in")
                        .arg(m_width->value() / double(dpi()), 0, 'f', 2)
                        .arg(m_height->value() / double(dpi()), 0, 'f', 2));
  else
    m_hint->setText(tr("A %1 × %2 in page (vector: sharp at any zoom)")
                        .arg(m_width->value() / 96.0, 0, 'f', 2)
                        .arg(m_height->value() / 96.0, 0, 'f', 2));
}

void ExportPanel::browse() {
  const QString p = QFileDialog::getSaveFileName(
      this, windowTitle(), m_path->text(),
      tr("PNG image (*.png);;PDF document (*.pdf);;SVG image (*.svg);;CSV data (*.csv)"));
  if (!p.isEmpty()) setPath(p);
}

QString ExportPanel::exportNow() {
  QString p = path();
  if (!exportFormatFromSuffix(QFileInfo(p).suffix())) p += '.' + exportSuffix(format());
  return exportChartAt(*m_chart, p, format(), size(), dpi());
}

QString ExportPanel::exportChartAt(Chart& chart, const QString& path, ExportFormat format,
                                   QSize size, int dpi) {
  if (QString err = exportChart(chart, path, format, size); !err.isEmpty()) return err;
  if (format != ExportFormat::Png || dpi == 96) return {};
  // exportChart stamps 96 dpi, the screen's; restamp the resolution asked for.
  QImage image(path);
  if (image.isNull()) return tr("cannot read back '%1'").arg(path);
  const int dotsPerMeter = qRound(dpi / 0.0254);
  image.setDotsPerMeterX(dotsPerMeter);
  image.setDotsPerMeterY(dotsPerMeter);
  return image.save(path, "PNG") ? QString() : tr("cannot write '%1'").arg(path);
}

}  // namespace paralab
