// ConfigPanel: the run's settings (model, data, training) as grouped controls, each with a
// tooltip saying what it does. Reads and writes a RunConfig; shows what validate() says.
// See tests/app/tst_app.cpp (controlsChangeConfig).
#pragma once
#include <QWidget>

#include "config.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSpinBox;

namespace paralab {

class ConfigPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ConfigPanel(QWidget* parent = nullptr);

  // The settings a new window starts with: RunConfig's, with a run long enough to watch.
  static RunConfig defaults();

  // The controls' values over the fields they do not show (data dir, eval samples, ...).
  RunConfig config() const;
  void setConfig(const RunConfig& config);
  // A note under the controls, e.g. that changes apply to the next run ("" hides it).
  void setNote(const QString& note);

 signals:
  void configChanged();

 private:
  void onChanged();
  void showValidation();

  RunConfig m_base;  // fields without a control come from here
  QSpinBox* m_hidden;
  QSpinBox* m_layers;
  QComboBox* m_dataset;
  QSpinBox* m_batch;
  QDoubleSpinBox* m_lr;
  QComboBox* m_optimizer;
  QSpinBox* m_steps;
  QSpinBox* m_evalEvery;
  QSpinBox* m_seed;
  QLabel* m_problem;  // validate()'s message, when there is one
  QLabel* m_note;
};

}  // namespace paralab
