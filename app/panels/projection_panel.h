// ProjectionPanel: "Project to a cluster" (Run > Project to a Cluster…), a window of its own
// beside the lab. From the laptop to the cluster: the model of the settings on the left (or a
// published shape: Megatron-LM's GPT 1.7B and 7.5B, GPT-3 175B, a 70B GPT of Llama-2-70B's
// shape) in the settings' layout (tp, pp, micro-batches editable here; dp follows from the
// count) on a cluster of one GPU kind of resources/gpus (nodes × GPUs per node), projected by
// engine/projection: memory per GPU against the GPU's (red with how much over when it does not
// fit), the step-time split, MFU, tokens/s and TFLOP/s per GPU as text, and one layout axis
// (tp or pp) swept as a chart. Every figure says "projected" and names the published runs the
// model is validated against. Its charts export like every chart (their context menu). "Check on
// this machine" projects the run shown from this machine's measured figures and sets it beside
// the step time the run measured: how far the model can be trusted, seen on the learner's own
// run.
// See tests/app/tst_window_projection.cpp.
#pragma once
#include <QWidget>
#include <functional>
#include <memory>
#include <optional>

#include "config.h"
#include "jobs/host_check_job.h"
#include "projection/projection.h"

class QComboBox;
class QLabel;
class QPushButton;
class QSpinBox;

namespace paralab {

class Chart;
class ProjectionChart;

class ProjectionPanel : public QWidget {
  Q_OBJECT
 public:
  // `runConfig` gives the settings whose model and layout are projected (read on each change).
  explicit ProjectionPanel(std::function<RunConfig()> runConfig, QWidget* parent = nullptr);

  // The named shapes offered besides the settings' model (index 0 of the model list).
  struct Shape {
    const char* label;
    int layers, hidden, heads, seq, vocab, batch;
  };
  static const std::vector<Shape>& shapes();

  // The inputs as the controls give them, and what was projected from them (nothing where
  // validate() refused them: refusal() says why).
  projection::ModelSpec model() const;
  projection::Layout layout() const;
  projection::Cluster cluster() const;
  const std::optional<projection::Projection>& projected() const { return m_projection; }
  QString refusal() const { return m_refusal; }
  QList<Chart*> charts() const;

  // Reads the settings' layout (tp, pp, micro-batches, ZeRO, recomputation, batch) into the
  // controls again, and projects.
  void useRunLayout();
  void refresh();  // projects the controls' inputs (every control's change calls it)

  // The check on this machine: the run the window shows, projected from this machine's measured
  // figures (projection/host_profile.h), beside the step time the run measured.
  struct MeasuredRun {
    RunConfig config;     // the run shown
    int64_t steps = 0;    // steps it has made (0: nothing measured yet)
    double stepMs = 0;    // its mean step time over the last steps
    bool running = false; // training while this machine is measured (the figures suffer)
  };
  void setMeasuredRun(std::function<MeasuredRun()> measured) {
    m_host.measured = std::move(measured);
  }
  // Measures this machine in an engine job (jobs/host_check_job.h) and shows the check when
  // done (hostChecked()).
  void checkOnThisMachine();
  const std::optional<projection::Projection>& hostProjection() const {
    return m_host.projection;
  }
  QString hostCheckText() const;

 signals:
  void hostChecked();

 private:
  void exportChart(Chart* chart);

  void showHostCheck(const MeasuredRun& run, const projection::HostProfile& host,
                     const projection::Projection& p);

  // The check on this machine: where the run shown comes from, the job measuring, what it
  // projected, its button and its text.
  struct HostCheckParts {
    std::function<MeasuredRun()> measured;
    std::unique_ptr<jobs::Job<jobs::HostCheck>> job;
    std::optional<projection::Projection> projection;
    QPushButton* button = nullptr;
    QLabel* text = nullptr;
  };

  std::function<RunConfig()> m_runConfig;
  HostCheckParts m_host;
  projection::GpuSpec m_gpu;  // of the kind chosen
  QComboBox *m_gpuKind, *m_model, *m_zero, *m_recompute, *m_sweepAxis;
  QSpinBox *m_nodes, *m_perNode, *m_tp, *m_pp, *m_micro, *m_batch;
  QLabel *m_gpuCount, *m_figures, *m_memoryNote, *m_refused, *m_validated;
  ProjectionChart *m_memoryChart, *m_stepChart, *m_sweepChart;
  std::optional<projection::Projection> m_projection;
  QString m_refusal;
  bool m_filling = false;  // controls being set from the settings: one refresh at the end
};

// Shows the window's projection panel (made on first use, a child window of `window`), in
// front. The test finds it as window->findChild<ProjectionPanel*>().
ProjectionPanel* openProjectionPanel(QWidget* window, std::function<RunConfig()> runConfig);

}  // namespace paralab
