// LessonDock, a step's tools: its prediction (a number typed, or one of its choices picked;
// locked before the run), its experiment (applied or run in the window) and the comparison of
// the prediction with the reference and the measurement. The dock's layout and pages are in
// lesson_dock.cpp.
// See tests/lessons/tst_lessons_dock.cpp and tst_lessons_typed_answer.cpp.
#include <QButtonGroup>
#include <QGridLayout>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QRadioButton>
#include <QProgressBar>
#include <QPushButton>
#include <QStackedWidget>
#include <cmath>

#include "describe.h"
#include "engine_bridge.h"
#include "lesson_score.h"
#include "panels/lesson_dock.h"
#include "typed_answer.h"

namespace paralab {

using namespace paralab::lessons;

namespace {
// Red that reads on the light and the dark palette alike (for what could not be read or saved).
QString warningColor(const QPalette& palette) {
  return palette.color(QPalette::Window).lightness() < 128 ? "#ff8a80" : "#c62828";
}

QString number(double v) {
  if (!std::isfinite(v)) return v > 0 ? "∞" : "—";
  if (std::abs(v) >= 1e5 && v == std::floor(v)) return QLocale().toString(qint64(v));
  return QLocale().toString(v, 'g', 4);
}
// "Ranks: 4 · Hidden width H: 256 · Batch: 256": the experiment's settings, each as the run's
// description words it (settingWords, engine/api/describe.h), so the step and the summary and
// charts of its run say the same. A line that wraps (compact JSON would hold the dock wide).
QString experimentText(const QJsonObject& experiment) {
  // An experiment this machine cannot run (a GPU's) still names its settings: their labels,
  // and the values as the lesson gives them.
  const std::optional<RunConfig> config = configFromExperiment(experiment);
  QStringList parts;
  for (auto it = experiment.begin(); it != experiment.end(); ++it) {
    const SettingWords w = settingWords(config.value_or(RunConfig{}), it.key().toStdString());
    QString shown = QString::fromStdString(w.words);
    if (!config) {
      const QJsonValue v = it.value();
      shown = v.isString()   ? v.toString()
              : v.isDouble() ? QString::number(v.toDouble(), 'g', 12)
              : v.isBool()   ? (v.toBool() ? "true" : "false")
                             : QString::fromUtf8(QJsonDocument(QJsonArray{v}).toJson(
                                                     QJsonDocument::Compact))
                                   .mid(1)
                                   .chopped(1);
    }
    parts << QString::fromStdString(w.label) + ": " + shown;
  }
  return parts.join(" · ");
}

// "  — swept over 1, 2, 4 ranks", and for a sweep sized to the machine how that came about.
QString sweptText(const Step& s) {
  if (!s.sweep) return {};
  QStringList r;
  for (int n : s.sweep->ranks) r << QString::number(n);
  const QString swept = QObject::tr("  — swept over %1 ranks").arg(r.join(", "));
  if (s.sweep->sizedTo.isEmpty()) return swept;
  // A 1-core machine still sweeps 1 and 2 ranks: a sweep of one point shows nothing.
  const QString cores =
      s.sweep->cores == 1 ? QObject::tr("1 core") : QObject::tr("%1 cores").arg(s.sweep->cores);
  if (s.sweep->sizedTo == "cores") return swept + QObject::tr(" (this machine's %1)").arg(cores);
  // A machine with more cores than the engine's largest world: the sweep stops at the engine's
  // limit, inside the cores, and cannot show what going past them does.
  if (!s.sweep->ranks.isEmpty() && s.sweep->ranks.last() <= s.sweep->cores)
    return swept + QObject::tr(" (the engine's largest run, %2 ranks, does not go past this "
                               "machine's %1: nothing past them to show here)")
                       .arg(cores)
                       .arg(s.sweep->ranks.last());
  return swept + QObject::tr(" (past this machine's %1)").arg(cores);
}

// What the compare row's value is: measured, or where the step's figure comes from the
// projection (a "layouts" benchmark, a "projected" figure) or a count of FLOPs and bytes, that.
QString compareLabel(const Step& s) {
  const QString metric = s.compare ? s.compare->metric : QString();
  if (s.bench && s.bench->kind == "gpu-counts") return QObject::tr("Counted");
  if ((s.bench && s.bench->kind == "layouts") || metric.contains("projected"))
    return QObject::tr("Projected");
  if (metric.contains("flops_per_byte") || metric.endsWith(".flops") || metric.endsWith(".bytes"))
    return QObject::tr("Counted");
  return QObject::tr("Measured");
}

// "GEMM ladder, n = 512, every core, median of 3 calls": what the step's benchmark measures.
QString benchText(const Bench& b) {
  const int threads = int(benchOption(b, "threads"));
  const QString on = threads > 0 ? QObject::tr("%n thread(s)", "", threads)
                                 : QObject::tr("every core");
  if (b.kind == "gemm-ladder")
    return QObject::tr("GEMM ladder: every rung and OpenBLAS at n = %1, on %2, median of %3 "
                       "calls")
        .arg(benchOption(b, "size"))
        .arg(on)
        .arg(benchOption(b, "repeats"));
  if (b.kind == "simd-width")
    return QObject::tr("SIMD width: one core's FMA rate at each width this CPU has (scalar, "
                       "SSE, AVX2, AVX-512), median of %1 runs")
        .arg(benchOption(b, "repeats"));
  if (b.kind == "false-sharing")
    return QObject::tr("False sharing: 1 thread up to %1, %L2 increments each")
        .arg(threads > 0 ? on : QObject::tr("one per core (at least 2)"))
        .arg(qint64(benchOption(b, "increments")));
  if (b.kind == "latency" && benchWord(b, "model") == "gpt")
    return QObject::tr("Latency vs throughput: GPT forward passes at batch 1, 2, 4, … %1 windows "
                       "of T = %2 characters (H = %3, L = %4, %5 heads), on the CPU and on a GPU "
                       "where there is one")
        .arg(benchOption(b, "max-batch"))
        .arg(benchOption(b, "seq"))
        .arg(benchOption(b, "hidden"))
        .arg(benchOption(b, "layers"))
        .arg(benchOption(b, "heads"));
  if (b.kind == "latency")
    return QObject::tr("Latency vs throughput: forward passes at batch 1, 2, 4, … %1 (H = %2, "
                       "L = %3), on the CPU and on a GPU where there is one")
        .arg(benchOption(b, "max-batch"))
        .arg(benchOption(b, "hidden"))
        .arg(benchOption(b, "layers"));
  if (b.kind == "gpu-counts")
    return QObject::tr("GPU kernels (%1) counted by executing the kernel source on this CPU, not "
                       "timed: what a GPU profiler reports, lane by lane and warp by warp")
        .arg(benchWord(b, "experiment"));
  if (b.kind == "gil")
    return QObject::tr("The GIL: a pure-Python loop on 1, 2, 4, … %1 threads and as many "
                       "processes (%L2 steps in all), Debian's python3, median of %3 runs")
        .arg(benchOption(b, "max-workers"))
        .arg(qint64(benchOption(b, "iterations")))
        .arg(benchOption(b, "repeats"));
  if (b.kind == "roofline")
    return QObject::tr("CPU against GPU, layer by layer: the MLP's forward + backward measured on "
                       "this CPU at batch 1 and %1, each layer projected for NVIDIA H100 SXM and "
                       "A100 80GB (%2) by the roofline")
        .arg(benchOption(b, "max-batch"))
        .arg(benchWord(b, "precision"));
  if (b.kind == "layouts")
    return QObject::tr("Layouts projected (not run): a GPT of %1 blocks, H = %2, on %3 × %4, "
                       "pp %5, tp %6 to %7")
        .arg(benchOption(b, "layers"))
        .arg(benchOption(b, "hidden"))
        .arg(benchOption(b, "gpus"))
        .arg(benchWord(b, "gpu"))
        .arg(benchOption(b, "pp"))
        .arg(benchOption(b, "min-tp"))
        .arg(benchOption(b, "max-tp"));
  return b.kind;
}

// A row of the comparison's table: label, the value in bold, then in smaller lines under the
// value what it comes from (a formula or metric, as code) and a note.
QString tableRow(const QString& label, const QString& value, const QString& source,
                 const QString& note = QString()) {
  return QString("<tr><td style='padding-right:12px'>%1</td><td><b>%2</b>%3%4</td></tr>")
      .arg(label, value,
           source.isEmpty() ? QString()
                            : "<br><small><code>" + source.toHtmlEscaped() + "</code></small>",
           note.isEmpty()
               ? QString()
               : "<br><small>" + note.toHtmlEscaped().replace('\n', "<br>") + "</small>");
}

}  // namespace

void LessonDock::showBenchProgress(int done, int total) {
  m_benchRunning = true;
  m_step->benchProgress->setRange(0, total);
  m_step->benchProgress->setValue(done);
  m_step->benchProgress->show();
  m_step->benchCancel->show();
  updateRunButtons();
}

void LessonDock::showBenchFinished(const QString& message) {
  m_benchRunning = false;
  m_attempt.benchStatus = message;
  m_step->benchProgress->hide();
  m_step->benchCancel->hide();
  if (const Step* s = currentStep()) showStepTools(*s);
}

void LessonDock::showStepTools(const Step& s) {
  const QStringList missing = missingFor(&s);
  m_tools->setCurrentWidget(m_step);
  m_step->experimentLabel->parentWidget()->setVisible(s.experiment || s.bench);
  m_step->experimentLabel->setVisible(s.experiment.has_value());
  if (s.experiment) m_step->experimentLabel->setText(experimentText(*s.experiment) + sweptText(s));
  QString why;
  for (const QString& n : missing) why += describeMissing(n) + "\n";
  const bool runsBench = s.bench && !s.bench->kind.isEmpty() && !s.experiment;
  m_step->apply->setVisible(s.experiment.has_value());
  m_step->run->setVisible(s.experiment.has_value() || runsBench);
  m_step->run->setText(s.sweep ? tr("Run sweep") : runsBench ? tr("Run benchmark") : tr("Run"));
  m_step->benchLabel->setVisible(s.bench.has_value());
  if (runsBench)
    m_step->benchLabel->setText(benchText(*s.bench).toHtmlEscaped() +
                          tr(": drawn in the Benchmark chart") +
                          (m_attempt.benchStatus.isEmpty() ? QString()
                                                   : "<br>" + m_attempt.benchStatus.toHtmlEscaped()) +
                          (missing.isEmpty() ? QString() : "<br>" + why.trimmed().toHtmlEscaped()));
  else if (s.bench)
    m_step->benchLabel->setText(
        tr("In a terminal: <code>paralab-bench %1 %2</code>%3")
            .arg(s.bench->program, s.bench->args.join(' ').toHtmlEscaped(),
                 missing.isEmpty() ? QString() : "<br>" + why.trimmed().toHtmlEscaped()));
  m_step->askLabel->parentWidget()->setVisible(s.prediction.has_value());
  const bool choice = s.prediction && s.prediction->isChoice();
  m_step->predictionEdit->setVisible(!choice);
  m_step->choiceBox->setVisible(choice);
  if (choice) {
    m_step->askLabel->setText(s.prediction->ask);
    showChoices(*s.prediction);
  } else if (s.prediction) {
    m_step->askLabel->setText(s.prediction->ask +
                        (s.prediction->unit.isEmpty() ? "" : " [" + s.prediction->unit + "]"));
    m_step->predictionEdit->setPlaceholderText(predictionHint(s.prediction->unit));
  }
  updateRunButtons();
  refreshComparison();
}

bool LessonDock::predictionLocked() const {
  const Step* s = currentStep();
  if (!s || !s->prediction) return true;
  const LessonProgress p = m_course.progress.lesson(m_course.lessons[m_lesson].slug);
  return !m_attempt.retrying && !(s->prediction->isChoice() ? p.choices.value(s->title).isEmpty()
                                                    : p.predictions.value(s->title).isEmpty());
}

// One radio button per choice, in the block's order, two to a line; none checked until the
// learner picks.
void LessonDock::showChoices(const Prediction& p) {
  for (QAbstractButton* b : m_step->choiceGroup->buttons()) {
    m_step->choiceGroup->removeButton(b);
    delete b;
  }
  for (int i = 0; i < p.choices.size(); ++i) {
    auto* b = new QRadioButton(p.choices[i].label, m_step->choiceBox);
    b->setObjectName(QString("lessonChoice%1").arg(i));
    m_step->choiceGroup->addButton(b, i);
    static_cast<QGridLayout*>(m_step->choiceBox->layout())->addWidget(b, i / 2, i % 2);
    b->show();  // a child made after its parent was shown stays hidden until told
  }
}

// A locked prediction stays as it was locked (read-only; "Try again" adds an attempt and keeps
// this one); the experiment runs only once one is locked.
void LessonDock::updateRunButtons() {
  const Step* s = currentStep();
  if (!s) return;
  const QList<double> attempts =
      m_course.progress.lesson(m_course.lessons[m_lesson].slug).predictions.value(s->title);
  const bool locked = predictionLocked();
  if (s->prediction && s->prediction->isChoice()) {
    // The last pick, checked and fixed once locked; a fresh choice while trying again.
    const QStringList picks = m_course.progress.lesson(m_course.lessons[m_lesson].slug).choices.value(s->title);
    int last = -1;
    for (int i = 0; locked && !picks.isEmpty() && i < s->prediction->choices.size(); ++i)
      if (s->prediction->choices[i].label == picks.last()) last = i;
    m_step->choiceGroup->setExclusive(false);  // so that no button may be checked
    for (QAbstractButton* b : m_step->choiceGroup->buttons()) {
      if (locked || m_attempt.retrying) b->setChecked(m_step->choiceGroup->id(b) == last);
      b->setEnabled(!locked);
    }
    m_step->choiceGroup->setExclusive(true);
  }
  m_step->predictionEdit->setReadOnly(locked && s->prediction);
  if (s->prediction && locked && !attempts.isEmpty())
    m_step->predictionEdit->setText(QString::number(attempts.last(), 'g', 10));
  if (s->prediction && m_attempt.retrying && attempts.size() > 0 && !m_step->predictionEdit->hasFocus())
    m_step->predictionEdit->setFocus();
  m_step->lock->setText(locked ? tr("Try again") : tr("Lock in"));
  m_step->lock->setToolTip(locked ? tr("Predict again: this prediction is kept beside the new one")
                            : tr("Lock in your prediction: it cannot be changed afterwards"));
  const QStringList missing = missingFor(s);
  QString why;
  for (const QString& n : missing) why += describeMissing(n) + "\n";
  if (missing.isEmpty() && !locked)
    why = tr("Lock in your prediction first: the experiment is there to test it");
  for (QPushButton* b : {m_step->apply, m_step->run}) {
    b->setEnabled(missing.isEmpty() && locked && !m_benchRunning);
    b->setToolTip(why.trimmed());
  }
}

void LessonDock::lockPrediction() {
  const Step* s = currentStep();
  if (!s || !s->prediction) return;
  const QString slug = m_course.lessons[m_lesson].slug;
  if (predictionLocked()) {  // "Try again"
    m_attempt.retrying = true;
    m_step->predictionEdit->clear();
  } else if (s->prediction->isChoice()) {
    const int picked = m_step->choiceGroup->checkedId();
    m_attempt.typingError = picked < 0 ? tr("Pick one of the answers first") : QString();
    if (picked >= 0) {
      m_course.progress.lockChoice(slug, s->title, s->prediction->choices[picked].label);
      m_attempt.retrying = false;
      showProblems();
    }
  } else if (const auto v =
                 readTypedAnswer(m_step->predictionEdit->text(), s->prediction->unit, &m_attempt.typingError)) {
    m_course.progress.lockPrediction(slug, s->title, *v);
    m_attempt.retrying = false;
    showProblems();
  }
  updateRunButtons();
  refreshComparison();
}

QStringList LessonDock::problems() const {
  QStringList all = m_course.errors;
  for (const QString& e : {m_course.progress.error(), m_course.deck.error()})
    if (!e.isEmpty()) all << e;
  return all;
}

void LessonDock::showProblems() {
  const QStringList all = problems();
  m_problems->setStyleSheet("color: " + warningColor(palette()));
  m_problems->setText(all.join('\n'));
  const bool shown = m_problems->isVisibleTo(this);
  // Where the buttons are before the line comes or goes (showing it lays the dock out).
  const QWidget* anchor = buttonsAnchor();
  const int buttonsAt = anchor ? anchor->mapTo(this, QPoint()).y() : 0;
  m_problems->setVisible(!all.isEmpty());
  if (shown != all.isEmpty()) return;
  fitWrappedLabels(buttonsAt);  // the page's view lost (or got back) the line's height
}

void LessonDock::refreshComparison() {
  m_step->comparison->setText(comparisonText());
  fitWrappedLabels();  // the comparison grows when the measurement arrives
}

QString LessonDock::comparisonText() const {
  const Step* s = currentStep();
  // The last step (Carry forward) ends the lesson with the score over its predictions.
  if (s && !s->prediction && m_page == m_course.lessons[m_lesson].steps.size()) {
    const Lesson& l = m_course.lessons[m_lesson];
    const auto runnable = [this](const Step& step) { return missingFor(&step).isEmpty(); };
    return "<p><b>" + scoreLesson(l, m_course.progress.lesson(l.slug), runnable).text().toHtmlEscaped() +
           "</b></p>";
  }
  if (!s || !s->prediction) return {};
  const Prediction& p = *s->prediction;
  const QList<double> attempts =
      m_course.progress.lesson(m_course.lessons[m_lesson].slug).predictions.value(s->title);
  // Why the typed answer was not taken, in the warning's colour, above everything else here.
  const QString typing = m_attempt.typingError.isEmpty()
                             ? QString()
                             : "<p style='color:" + warningColor(palette()) + "'>" +
                                   m_attempt.typingError.toHtmlEscaped() + "</p>";
  // Trying again: the reference and the measurement wait until the new guess is locked in, so
  // that it is a guess and not a copy of the answer on screen.
  if (m_attempt.retrying) {
    const QStringList picks =
        m_course.progress.lesson(m_course.lessons[m_lesson].slug).choices.value(s->title);
    QStringList earlier = picks;
    if (!p.isChoice())
      for (double a : attempts) earlier << number(a) + (p.unit.isEmpty() ? "" : " " + p.unit);
    return typing + "<p>" +
           tr("Your earlier answers: %1.").arg(earlier.join(", ")).toHtmlEscaped() + "</p><p>" +
           tr("Lock in a new one: then the reference and the measurement show again.") + "</p>";
  }
  if (p.isChoice()) return typing + choiceComparisonText(*s);
  if (attempts.isEmpty())
    return typing + (p.worked ? tr("Lock in your answer below: then the worked solution shows.")
                              : tr("Lock in your prediction below: then the experiment runs and "
                                   "the reference shows."));
  const QString unit = p.unit.isEmpty() ? QString() : " " + p.unit;
  QString error;
  const auto ref = referenceValue(p, s->experiment.value_or(QJsonObject()), &error);
  // Three rows, the values lined up; what each value comes from (the formula, the metric) in
  // a smaller line under it, where a narrow dock can wrap it.
  const auto row = tableRow;
  QString html = typing + "<table cellspacing='0' cellpadding='2'>";
  // Every attempt, the first one first: a second guess never hides the first.
  QStringList earlier;
  for (int i = 0; i + 1 < attempts.size(); ++i) earlier << number(attempts[i]) + unit;
  html += row(attempts.size() == 1 ? tr("Your prediction") : tr("Your predictions"),
              number(attempts.last()) + unit, QString(),
              earlier.isEmpty() ? QString() : tr("before: %1").arg(earlier.join(", ")));
  // The miss in percent of what it is measured against: "12 % above", "3 % below".
  const auto miss = [](double value, double against) {
    if (against == 0 || !std::isfinite(value) || !std::isfinite(against)) return QString();
    const double percent = 100 * (value - against) / std::abs(against);
    if (std::abs(percent) < 0.5) return tr("the same");
    return (percent > 0 ? tr("%1 % above") : tr("%1 % below"))
        .arg(std::abs(percent), 0, 'f', std::abs(percent) < 10 ? 1 : 0);
  };
  const double guess = attempts.last();
  const QString guessVsRef = ref ? miss(guess, *ref) : QString();
  html += row(tr("Reference"), ref ? number(*ref) + unit : error.toHtmlEscaped(), p.formula,
              guessVsRef.isEmpty() ? QString() : tr("your prediction: %1").arg(guessVsRef));
  if (s->compare) {
    const QString cu = s->compare->unit.isEmpty() ? QString() : " " + s->compare->unit;
    const QString measured = m_attempt.measured                 ? number(*m_attempt.measured) + cu
                             : m_attempt.measureError.isEmpty() ? tr("— (run the experiment)")
                                                        : m_attempt.measureError.toHtmlEscaped();
    // Against the measurement only where both are in the same unit.
    QStringList misses;
    if (m_attempt.measured && s->compare->unit == p.unit) {
      if (const QString m = miss(guess, *m_attempt.measured); !m.isEmpty())
        misses << tr("your prediction: %1").arg(m);
      if (const QString m = ref ? miss(*ref, *m_attempt.measured) : QString(); !m.isEmpty())
        misses << tr("the reference: %1").arg(m);
    }
    // A fitted fraction says what it stands on, on a line of its own: the ranks and whether
    // they shared the cores.
    const QString basis = fitNote(*s);
    html += row(compareLabel(*s), measured, s->compare->metric,
                basis.isEmpty() || misses.isEmpty() ? basis + misses.join("; ")
                                                    : basis + "\n" + misses.join("; "));
  }
  html += "</table>";
  // A worked problem has nothing to run: its reasoning is the solution, worked step by step.
  if (!p.reasoning.isEmpty())
    html += (p.worked ? tr("<p><b>Worked solution:</b> %1</p>")
                      : tr("<p><b>Where the reference comes from:</b> %1</p>"))
                .arg(paragraphHtml(p.reasoning, &m_course.glossary));
  if (s->compare && m_attempt.measured)
    html += tr("<p><b>%1 against reference:</b> %2</p>")
                .arg(compareLabel(*s))
                .arg(paragraphHtml(s->compare->explain, &m_course.glossary));
  return html;
}

// After the lock: the pick, the reference answer (with its reasoning) and the measured answer,
// each choice's measured value under it so that the learner sees the margin.
QString LessonDock::choiceComparisonText(const Step& s) const {
  const Prediction& p = *s.prediction;
  const QStringList picks = m_course.progress.lesson(m_course.lessons[m_lesson].slug).choices.value(s.title);
  if (picks.isEmpty())
    return tr("Pick your answer below and lock it in: then the experiment runs and the "
              "reference shows.");
  const auto same = [](const QString& who, const QString& a, const QString& b) {
    return (a == b ? tr("%1: the same") : tr("%1: not the same")).arg(who);
  };
  const QString pick = picks.last();
  QString html = "<table cellspacing='0' cellpadding='2'>";
  html += tableRow(picks.size() == 1 ? tr("Your choice") : tr("Your choices"),
                   pick.toHtmlEscaped(), QString(),
                   picks.size() == 1 ? QString()
                                     : tr("before: %1").arg(picks.mid(0, picks.size() - 1).join(", ")));
  html += tableRow(tr("Reference"), p.expectChoice.toHtmlEscaped(), QString(),
                   same(tr("your choice"), pick, p.expectChoice));
  const ChoiceMeasurement* m = m_attempt.choiceMeasured ? &*m_attempt.choiceMeasured : nullptr;
  const QString measured = m && m->answer >= 0 ? p.choices[m->answer].label.toHtmlEscaped()
                           : m                 ? m->error.toHtmlEscaped()
                                               : tr("— (run the experiment)");
  QStringList notes;
  if (m && m->answer >= 0)
    notes << same(tr("your choice"), pick, p.choices[m->answer].label)
          << same(tr("the reference"), p.expectChoice, p.choices[m->answer].label);
  html += tableRow(tr("Measured"), measured, QString(), notes.join("; "));
  if (m) {
    // Each choice's value: the one the pick selects is the measured answer.
    const QString over = p.over == "first"  ? tr("first step")
                         : p.over == "last" ? tr("last step")
                         : p.over == "mean" ? tr("mean over the run")
                                            : tr("median over the run");
    html += "<tr><td colspan='2'><small>" +
            (p.pick == "max" ? tr("The largest value wins (%1):") : tr("The smallest value wins (%1):"))
                .arg(over) +
            "</small></td></tr>";
    const QString unit = p.unit.isEmpty() ? QString() : " " + p.unit;
    for (int i = 0; i < p.choices.size() && i < m->values.size(); ++i)
      html += tableRow("&nbsp;&nbsp;" + p.choices[i].label.toHtmlEscaped(),
                       std::isfinite(m->values[i]) ? number(m->values[i]) + unit : "—",
                       p.choices[i].metric);
  }
  html += "</table>";
  html += tr("<p><b>Where the reference comes from:</b> %1</p>")
              .arg(paragraphHtml(p.reasoning, &m_course.glossary));
  return html;
}

void LessonDock::showRunResult(const QList<QJsonObject>& steps) {
  const Step* s = currentStep();
  if (s && s->prediction && s->prediction->isChoice() && !s->sweep) {
    m_attempt.choiceMeasured = measuredChoice(*s->prediction, steps);
    keepMeasurement();
    refreshComparison();
    return;
  }
  if (!s || !s->compare || s->sweep) return;
  m_attempt.measured = measuredValue(*s->compare, steps, &m_attempt.measureError);
  keepMeasurement();
  refreshComparison();
}

void LessonDock::showSweepResult(const QJsonObject& sweep) {
  const Step* s = currentStep();
  if (s && s->sweep) measureFrom(sweep);
}

void LessonDock::showBenchResult(const QJsonObject& bench) {
  const Step* s = currentStep();
  if (s && s->bench && s->bench->kind == bench.value("kind").toString()) measureFrom(bench);
}

void LessonDock::measureFrom(const QJsonObject& result) {
  const Step* s = currentStep();
  if (s && s->prediction && s->prediction->isChoice()) {
    m_attempt.choiceMeasured = measuredChoice(*s->prediction, result);
    keepMeasurement();
    refreshComparison();
    return;
  }
  if (!s || !s->compare) return;
  m_attempt.measured = measuredValue(*s->compare, result, &m_attempt.measureError);
  keepMeasurement();
  refreshComparison();
}

// Kept with the progress: the comparison shows it when the step is opened again, and the
// lesson's score counts it.
void LessonDock::keepMeasurement() {
  const Step* s = currentStep();
  if (!s) return;
  if (m_attempt.measured && std::isfinite(*m_attempt.measured))
    m_course.progress.setMeasured(m_course.lessons[m_lesson].slug, s->title, *m_attempt.measured);
  if (m_attempt.choiceMeasured && m_attempt.choiceMeasured->answer >= 0 && s->prediction)
    m_course.progress.setMeasuredChoice(
        m_course.lessons[m_lesson].slug, s->title,
        {s->prediction->choices[m_attempt.choiceMeasured->answer].label, m_attempt.choiceMeasured->values});
}

}  // namespace paralab
