// The exported summary (app/export/summary_export.h) and the charts' run label say what the
// engine's description of the run says (engine/describe.h): a --device cuda run is named as one,
// and the layout's words are the same in every place. Run: ctest -R tst_summary
#include <QtTest>

#include "charts/loss_chart.h"
#include "describe.h"
#include "export/summary_export.h"

using namespace paralab;

namespace {

// The summary's row for `setting`: "| Execution | ... |".
QString rowOf(const QString& md, const QString& setting) {
  for (const QString& line : md.split('\n'))
    if (line.startsWith("| " + setting + " |")) return line;
  return {};
}

}  // namespace

class TstSummary : public QObject {
  Q_OBJECT

 private slots:
  void cudaRunIsNamedCuda() {
    RunReport r;
    r.config.device = Device::Cuda;
    r.config.kernel = "vendor";
    r.state = "finished";
    const QString md = summaryMarkdown(r);
    const QString execution = rowOf(md, "Execution");
    QVERIFY2(execution.contains("cuda") && execution.contains("GPU (CUDA)"), qPrintable(execution));
    QVERIFY2(!execution.contains("CPU"), qPrintable(execution));
    QVERIFY2(execution.contains("cuBLAS"), qPrintable(execution));
    // And a CPU run is named as one.
    r.config = RunConfig{};
    const QString cpu = rowOf(summaryMarkdown(r), "Execution");
    QVERIFY2(cpu.contains("cpu — CPU") && !cpu.contains("cuda"), qPrintable(cpu));
  }

  void everyPlaceSaysTheSameLayout() {
    RunReport r;
    RunConfig& c = r.config;
    c.model = ModelKind::Gpt;
    c.dataset = "synthetic";
    c.ranks = 8;
    c.tp = 2;
    c.sp = true;
    c.pp = 2;
    c.microbatches = 4;
    c.zero = 1;
    c.device = Device::Cuda;
    const RunDescription d = describeRun(c);
    const QString md = summaryMarkdown(r), label = LossChart::runLabel(c);
    for (const std::string& part : d.layout) {
      const QString words = QString::fromStdString(part);
      QVERIFY2(rowOf(md, "Layout").contains(words), qPrintable(words + " in " + md));
      QVERIFY2(label.contains(words), qPrintable(words + " in " + label));
    }
    QVERIFY2(label.contains("cuda"), qPrintable(label));
    QVERIFY2(rowOf(md, "Strategy").startsWith("| Strategy | model-parallel — "),
             qPrintable(rowOf(md, "Strategy")));
  }

  // A sweep measured on other settings than the run's says so, beside its table and its fit; a
  // sweep of the run's own settings (its ranks aside) needs no such line.
  void sweepOfOtherSettingsIsSaid() {
    RunReport r;
    r.config.ranks = 4;
    r.state = "finished";
    r.sweep = analyseSweep(Scaling::Strong, {1, 2, 4}, {100, 60, 40}, 64);
    r.sweepConfig = r.config;
    r.sweepConfig->ranks = 1;
    QString md = summaryMarkdown(r);
    QVERIFY2(md.contains("Swept: ") && !md.contains("Other settings than the run"), qPrintable(md));
    QVERIFY(!md.contains("not this run's"));
    r.sweepConfig->hidden = 2 * r.config.hidden;
    md = summaryMarkdown(r);
    QVERIFY2(md.contains("**Other settings than the run above**"), qPrintable(md));
    QVERIFY2(md.contains("fitted to the sweep: p = ") && md.contains("(on the sweep's settings, not this run's)"),
             qPrintable(md));
  }
};

QTEST_MAIN(TstSummary)
#include "tst_summary.moc"
