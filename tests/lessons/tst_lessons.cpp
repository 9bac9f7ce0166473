// The lessons: each parses; each experiment validates and, where the engine offers what it needs,
// runs 3 steps on the CPU (sweeps 1 per point) with its comparison read from the result; formulas
// give the numbers the text states; metrics and glossary terms resolve; skips are named with the
// reason. Run: ctest -R 'tst_lessons$'.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QSet>
#include <QtTest>
#include <cmath>

#include "engine_bridge.h"
#include "formula.h"
#include "glossary.h"
#include "lesson.h"
#include "train/sweep.h"
#include "train/trainer.h"

using namespace paralab;
using namespace paralab::lessons;

namespace {

const QString kRoot = QStringLiteral(PARALAB_SOURCE_DIR "/lessons");

// The names metrics.md defines: the backticked names in the first column of its tables.
QSet<QString> definedMetrics() {
  QFile f(kRoot + "/reference/metrics.md");
  if (!f.open(QIODevice::ReadOnly)) return {};
  QSet<QString> names;
  static const QRegularExpression cell("^\\|\\s*([^|]*)\\|");
  static const QRegularExpression tick("`([^`]+)`");
  for (const QString& line : QString::fromUtf8(f.readAll()).split('\n')) {
    const auto m = cell.match(line);
    if (!m.hasMatch()) continue;
    for (auto it = tick.globalMatch(m.captured(1)); it.hasNext();) names << it.next().captured(1);
  }
  return names;
}

// "ranks[0].mem.params" -> "mem.params"; "points[ranks=8].speedup" -> "speedup".
QString metricName(const QString& path) {
  static const QRegularExpression brackets("\\[[^\\]]*\\]");
  QString p = QString(path).remove(brackets);
  for (const char* prefix : {"ranks.", "points."})
    if (p.startsWith(prefix)) p = p.mid(int(strlen(prefix)));
  return p;
}

// How the text writes a number it states: 5.9, 15.4, 20, 1572864 (as JSON gives it back).
QString asWritten(double v) { return QString::number(v, 'g', 15); }
// Half a unit of the last digit written: 5.9 -> 0.05, 20 -> 0.5.
double halfUnit(double v) {
  const QString s = asWritten(v);
  const int dot = int(s.indexOf('.'));
  const int decimals = dot < 0 || s.contains('e') ? 0 : int(s.size()) - dot - 1;
  return 0.5 * std::pow(10.0, -decimals);
}

}  // namespace

class TestLessons : public QObject {
  Q_OBJECT
  LibraryResult m_lib;
  Glossary m_glossary;
  QStringList m_glossaryErrors;
  QStringList m_caps;

  QStringList missingFor(const Lesson& l, const Step& s) const {
    QStringList needs = l.needs;
    needs << s.needs;
    return missingNeeds(needs, m_caps);
  }
  void stepRows(bool (*want)(const Step&)) {
    QTest::addColumn<int>("lesson");
    QTest::addColumn<int>("step");
    for (int i = 0; i < m_lib.lessons.size(); ++i)
      for (int j = 0; j < m_lib.lessons[i].steps.size(); ++j)
        if (want(m_lib.lessons[i].steps[j]))
          QTest::addRow("%s step %d", qPrintable(m_lib.lessons[i].slug), j + 1) << i << j;
  }

 private slots:
  void initTestCase() {
    m_lib = loadLessons(kRoot);
    m_glossary = Glossary::load(kRoot + "/glossary.md", &m_glossaryErrors);
    m_caps = engineCapabilities();
    qInfo("engine capabilities: %s", qPrintable(m_caps.join(", ")));
  }

  void everyLessonParses() {
    QVERIFY2(m_lib.errors.isEmpty(), qPrintable(m_lib.errors.join('\n')));
    QCOMPARE(m_lib.lessons.size(), 17);
    for (int i = 0; i < m_lib.lessons.size(); ++i) {
      const Lesson& l = m_lib.lessons[i];
      QCOMPARE(l.number, i + 1);
      QVERIFY2(l.steps.size() >= 3, qPrintable(l.slug + ": fewer than 3 steps"));
      QVERIFY2(l.retrieval.size() >= 3, qPrintable(l.slug + ": fewer than 3 retrieval questions"));
      QVERIFY2(l.cards.size() >= 4, qPrintable(l.slug + ": fewer than 4 flashcards"));
      bool measured = false;
      for (const Step& s : l.steps) measured = measured || (s.experiment && s.prediction && s.compare);
      QVERIFY2(measured, qPrintable(l.slug + ": no step with an experiment, a prediction and a comparison"));
    }
  }

  // Each step's key term has a flashcard in its lesson: the first term its text links as
  // [[term]] (the one its author chose to point at), else the glossary term its title names; a
  // card's question or answer uses it (as the glossary finds terms: a spelling, a plural).
  void everyStepsKeyTermHasACard() {
    QStringList missing;
    for (const Lesson& l : m_lib.lessons) {
      QSet<QString> carded;
      for (const Card& c : l.cards)
        for (const TermMatch& t : m_glossary.findIn(c.q + "\n" + c.a)) carded << t.term;
      for (const Step& s : l.steps) {
        QString key;
        for (const QString& ref : glossaryReferences(s.markdown))
          if (const GlossaryTerm* t = m_glossary.find(ref); key.isEmpty() && t) key = t->term;
        if (const QList<TermMatch> named = m_glossary.findIn(s.title);
            key.isEmpty() && !named.isEmpty())
          key = named.first().term;
        if (!key.isEmpty() && !carded.contains(key))
          missing << QString("%1, step \"%2\": no card uses \"%3\"").arg(l.slug, s.title, key);
      }
    }
    QVERIFY2(missing.isEmpty(), qPrintable(missing.join('\n')));
  }

  // Which lessons are "coming", and why — said, not silent.
  void comingLessonsSayWhy() {
    for (const Lesson& l : m_lib.lessons) {
      const QStringList missing = missingNeeds(l.needs, m_caps);
      QStringList why;
      for (const QString& n : missing) why << n + ": " + describeMissing(n);
      if (!missing.isEmpty()) qInfo("%s is coming — %s", qPrintable(l.slug), qPrintable(why.join("; ")));
      for (int j = 0; j < l.steps.size(); ++j) {
        const QStringList stepMissing = missingNeeds(l.steps[j].needs, m_caps);
        for (const QString& n : stepMissing)
          qInfo("%s step %d (%s) is not run here — %s", qPrintable(l.slug), j + 1,
                qPrintable(l.steps[j].title), qPrintable(describeMissing(n)));
      }
    }
  }

  void experimentsValidate_data() {
    stepRows([](const Step& s) { return s.experiment.has_value(); });
  }
  void experimentsValidate() {
    QFETCH(int, lesson);
    QFETCH(int, step);
    const Step& s = m_lib.lessons[lesson].steps[step];
    QString error;
    const auto config = configFromExperiment(*s.experiment, &error);
    QVERIFY2(config, qPrintable(QString("line %1: %2").arg(s.line).arg(error)));
    // Each sweep point trains its warm-up and timed steps: the settings the step shows say that
    // many, not a number the sweep does not run.
    if (s.sweep && s.experiment->contains("steps"))
      QVERIFY2(s.experiment->value("steps").toInt() == s.sweep->warmup + s.sweep->steps,
               qPrintable(QString("line %1: the experiment says %2 steps; each sweep point runs %3")
                              .arg(s.line)
                              .arg(s.experiment->value("steps").toInt())
                              .arg(s.sweep->warmup + s.sweep->steps)));
    if (s.sweep)
      for (int n : s.sweep->ranks) {
        RunConfig c = *config;
        c.ranks = n;
        if (c.dp > 0) c.dp = 0;
        const auto err = c.validate();
        QVERIFY2(!err, qPrintable(QString("sweep at %1 ranks: %2").arg(n).arg(QString::fromStdString(err.value_or("")))));
      }
  }

  void experimentsRun_data() {
    stepRows([](const Step& s) { return s.experiment.has_value(); });
  }
  void experimentsRun() {
    QFETCH(int, lesson);
    QFETCH(int, step);
    const Lesson& l = m_lib.lessons[lesson];
    const Step& s = l.steps[step];
    const QStringList missing = missingFor(l, s);
    if (!missing.isEmpty())
      QSKIP(qPrintable(QString("'%1' needs %2 — %3").arg(s.title, missing.join(", "), describeMissing(missing.first()))));
    QString error;
    auto config = configFromExperiment(*s.experiment, &error);
    QVERIFY2(config, qPrintable(error));
    config->evalSamples = 200;
    QElapsedTimer clock;
    clock.start();
    if (s.sweep) {
      const SweepResult r = runSweep(*config, std::vector<int>(s.sweep->ranks.begin(), s.sweep->ranks.end()), 1, 0);
      QCOMPARE(int(r.points.size()), int(s.sweep->ranks.size() + (s.sweep->ranks.first() == 1 ? 0 : 1)));
      if (s.compare) {
        const auto v = measuredValue(*s.compare, sweepJson(r, *config), &error);
        // A fit outside 0..1 (one timed step on a busy machine) is said in words instead.
        QVERIFY2((v && std::isfinite(*v)) || error.startsWith("no fit:"),
                 qPrintable("compare '" + s.compare->metric + "': " + error));
      }
    } else {
      // 3 steps; more only where the compared metric first appears later (local SGD reports
      // its spread on averaging steps), up to the experiment's own length.
      const int most = std::max(3, std::min(s.experiment->value("steps").toInt(3), 32));
      config->steps = most;
      QList<QJsonObject> steps;
      std::optional<double> measured;
      ChoiceMeasurement choice;
      try {
        Trainer trainer(*config);
        while (steps.size() < most) {
          steps << stepJson(trainer.step());
          if (steps.size() < 3) continue;
          if (s.prediction && s.prediction->isChoice()) {
            choice = measuredChoice(*s.prediction, steps);
            if (choice.error.isEmpty() || choice.answer >= 0) break;
            continue;
          }
          if (!s.compare || (measured = measuredValue(*s.compare, steps, &error))) break;
        }
      } catch (const std::exception& e) {
        QFAIL(qPrintable(QString("line %1: the engine refused it (declare a need?): %2").arg(s.line).arg(e.what())));
      }
      for (const QJsonObject& o : steps) QVERIFY(std::isfinite(o.value("loss").toDouble()));
      // Every choice measured (which one wins after 3 steps is not checked: the lesson's own
      // run is longer).
      if (s.prediction && s.prediction->isChoice())
        QVERIFY2(choice.answer >= 0,
                 qPrintable(QString("line %1: choices after %2 steps: %3")
                                .arg(s.prediction->line).arg(steps.size()).arg(choice.error)));
      if (s.compare)
        QVERIFY2(measured && std::isfinite(*measured),
                 qPrintable(QString("compare '%1' after %2 steps: %3").arg(s.compare->metric).arg(steps.size()).arg(error)));
    }
    qInfo("%s step %d: %lld ms", qPrintable(l.slug), step + 1, (long long)clock.elapsed());
  }

  void predictionsGiveTheStatedNumbers_data() {
    stepRows([](const Step& s) { return s.prediction && !s.prediction->isChoice(); });
  }
  void predictionsGiveTheStatedNumbers() {
    QFETCH(int, lesson);
    QFETCH(int, step);
    const Step& s = m_lib.lessons[lesson].steps[step];
    const Prediction& p = *s.prediction;
    QString error;
    const auto v = referenceValue(p, s.experiment.value_or(QJsonObject()), &error);
    QVERIFY2(v && std::isfinite(*v), qPrintable(QString("line %1: %2").arg(p.line).arg(error)));
    if (!p.expect) return;
    QVERIFY2(std::abs(*v - *p.expect) <= halfUnit(*p.expect) * (1 + 1e-9),
             qPrintable(QString("line %1: '%2' gives %3, the text states %4")
                            .arg(p.line)
                            .arg(p.formula)
                            .arg(*v, 0, 'g', 10)
                            .arg(asWritten(*p.expect))));
    // Predict, then see: the number is stated where the learner reads it after locking in (the
    // reasoning), never in the step's heading, text or question read before (thousands may be
    // grouped: 1 572 864), nor as a setting of its experiment — inputs included: a prediction
    // whose answer is one of its own inputs asks nothing.
    const auto plain = [](QString t) {
      return t.remove(QChar(0x202F)).remove(QChar(0x2009)).remove(',');
    };
    const QString value = asWritten(*p.expect);
    QVERIFY2(plain(p.reasoning).contains(value),
             qPrintable(QString("line %1: the reasoning never states %2").arg(p.line).arg(value)));
    const QRegularExpression stated("(?<![0-9.])" + QRegularExpression::escape(value) +
                                    "(?![0-9]|\\.[0-9])");
    QVERIFY2(!plain(s.title + "\n" + s.markdown + "\n" + p.ask).contains(stated),
             qPrintable(QString("line %1: the answer %2 is in the text read before the prediction")
                            .arg(p.line)
                            .arg(value)));
    const QJsonObject settings = s.experiment.value_or(QJsonObject());
    for (auto it = settings.begin(); it != settings.end(); ++it)
      QVERIFY2(!(it.value().isDouble() && asWritten(it.value().toDouble()) == value),
               qPrintable(QString("line %1: the answer %2 is the experiment's setting '%3'")
                              .arg(p.line)
                              .arg(value, it.key())));
    // A fit is predicted as what it measures, not as a number the question hands over.
    QVERIFY2(!p.inputs.contains(p.formula.trimmed()),
             qPrintable(QString("line %1: the formula '%2' is one of its own inputs")
                            .arg(p.line)
                            .arg(p.formula)));
  }

  // A prediction in a step with nothing to run (no experiment, sweep or benchmark) is a worked
  // problem, its reasoning the worked solution the window shows once the answer is locked; a
  // step that runs something is no worked problem.
  void predictionsWithNothingToRunAreWorked() {
    for (const Lesson& l : m_lib.lessons)
      for (const Step& s : l.steps) {
        if (!s.prediction) continue;
        const bool runs = s.experiment || s.sweep || s.bench;
        QVERIFY2(s.prediction->worked != runs,
                 qPrintable(
                     QString("%1 line %2 '%3': %4")
                         .arg(l.slug)
                         .arg(s.prediction->line)
                         .arg(s.title,
                              runs ? "runs something, so it is no worked problem"
                                   : "has nothing to run: mark its prediction \"worked\": true")));
        if (s.prediction->worked)
          QVERIFY2(!s.compare && !s.prediction->isChoice() && !s.prediction->reasoning.isEmpty(),
                   qPrintable(QString("%1 line %2: a worked problem is a number with its worked "
                                      "solution and no measurement")
                                  .arg(l.slug)
                                  .arg(s.prediction->line)));
      }
  }

  // The lessons as machines with other core counts load them: sweeps sized to the cores change
  // their rank counts, and every prediction and comparison must still hold. Each sweep's
  // comparison is evaluated on a sweep analysed from modelled step times (10 % serial).
  void lessonsHoldOnAnyCoreCount() {
    for (int cores : {1, 2, 3, 6, 16}) {
      const LibraryResult lib = loadLessons(kRoot, cores);
      QVERIFY2(lib.errors.isEmpty(), qPrintable(lib.errors.join('\n')));
      for (const Lesson& l : lib.lessons)
        for (const Step& s : l.steps) {
          const QString where = QString("%1 line %2, %3 cores").arg(l.slug).arg(s.line).arg(cores);
          QString error;
          if (s.prediction && !s.prediction->isChoice()) {
            const auto v =
                referenceValue(*s.prediction, s.experiment.value_or(QJsonObject()), &error);
            QVERIFY2(v && std::isfinite(*v), qPrintable(where + ": " + error));
            if (s.prediction->expect)
              QVERIFY2(std::abs(*v - *s.prediction->expect) <=
                           halfUnit(*s.prediction->expect) * (1 + 1e-9),
                       qPrintable(QString("%1: '%2' gives %3, the text states %4")
                                      .arg(where, s.prediction->formula)
                                      .arg(*v)
                                      .arg(asWritten(*s.prediction->expect))));
          }
          if (!s.sweep || !s.compare || !s.experiment) continue;
          std::vector<int> ranks(s.sweep->ranks.begin(), s.sweep->ranks.end());
          if (ranks.front() != 1) ranks.insert(ranks.begin(), 1);
          const auto config = configFromExperiment(*s.experiment, &error);
          QVERIFY2(config, qPrintable(where + ": " + error));
          // Strong: T(N) = T1 (0.1 + 0.9 / N); weak: S(N) = N - 0.1 (N - 1).
          std::vector<double> ms;
          for (int n : ranks)
            ms.push_back(config->scaling == Scaling::Weak ? 10.0 * n / (n - 0.1 * (n - 1))
                                                   : 10.0 * (0.1 + 0.9 / n));
          SweepResult r = analyseSweep(config->scaling, ranks, ms, config->batch);
          r.cores = cores;
          const auto m = measuredValue(*s.compare, sweepJson(r, *config), &error);
          QVERIFY2(m && std::isfinite(*m),
                   qPrintable(where + ": compare '" + s.compare->metric + "': " + error));
        }
    }
  }

  // A prediction with choices: the reasoning gives the reference answer, and nothing read before
  // the lock names it — not "rank 2 idles least", and not "the straggler is rank 2" either.
  void choicesKeepTheirAnswer_data() {
    stepRows([](const Step& s) { return s.prediction && s.prediction->isChoice(); });
  }
  void choicesKeepTheirAnswer() {
    QFETCH(int, lesson);
    QFETCH(int, step);
    const Step& s = m_lib.lessons[lesson].steps[step];
    const Prediction& p = *s.prediction;
    const QRegularExpression label(
        "(?<![\\w])" + QRegularExpression::escape(p.expectChoice) + "(?![\\w])",
        QRegularExpression::CaseInsensitiveOption);
    QVERIFY2(
        p.reasoning.contains(label),
        qPrintable(
            QString("line %1: the reasoning never names '%2'").arg(p.line).arg(p.expectChoice)));
    // The label itself is nowhere in the step's heading, text or question: what is read before
    // the lock names the choices only by what they are.
    QVERIFY2(!(s.title + "\n" + s.markdown + "\n" + p.ask).contains(label),
             qPrintable(QString("line %1: '%2' is in the text read before the prediction")
                            .arg(p.line)
                            .arg(p.expectChoice)));
  }

  void comparedMetricsAreDefined() {
    const QSet<QString> defined = definedMetrics();
    QVERIFY2(defined.contains("samples_per_s") && defined.contains("mem.optimizer"),
             "lessons/reference/metrics.md: its tables were not found");
    for (const Lesson& l : m_lib.lessons)
      for (const Step& s : l.steps) {
        if (s.prediction)
          for (const Choice& c : s.prediction->choices)
            for (const QString& path : Formula(c.metric).variables())
              QVERIFY2(defined.contains(metricName(path)),
                       qPrintable(QString("%1 line %2: '%3' is not defined in lessons/reference/metrics.md")
                                      .arg(l.slug).arg(s.prediction->line).arg(path)));
        if (!s.compare) continue;
        // A metric of a feature still being built is defined in metrics.md when it lands.
        if (const QStringList missing = missingFor(l, s); !missing.isEmpty()) {
          for (const QString& path : Formula(s.compare->metric).variables())
            if (!defined.contains(metricName(path)))
              qInfo("%s line %d: '%s' is not in metrics.md yet; not checked while %s is coming", qPrintable(l.slug),
                    s.compare->line, qPrintable(path), qPrintable(missing.join(", ")));
          continue;
        }
        for (const QString& path : Formula(s.compare->metric).variables())
          QVERIFY2(defined.contains(metricName(path)),
                   qPrintable(QString("%1 line %2: '%3' is not defined in lessons/reference/metrics.md")
                                  .arg(l.slug).arg(s.compare->line).arg(path)));
      }
  }

  void glossaryTermsResolve() {
    QVERIFY2(m_glossaryErrors.isEmpty(), qPrintable(m_glossaryErrors.join('\n')));
    for (const char* t : {"all-reduce", "bubble", "ZeRO", "micro-batch", "NVLink", "MFU", "algbw", "busbw",
                          "staleness", "rank", "speedup", "tensor parallelism", "pipeline parallelism"})
      QVERIFY2(m_glossary.find(t), qPrintable(QString("glossary.md: '%1' is not defined").arg(t)));
    QSet<QString> used;
    for (const Lesson& l : m_lib.lessons) {
      QString all = l.intro;
      for (const Step& s : l.steps) all += "\n" + s.markdown;
      for (const Card& c : l.retrieval + l.cards) all += "\n" + c.q + "\n" + c.a;
      for (const QString& ref : glossaryReferences(all)) {
        QVERIFY2(m_glossary.find(ref), qPrintable(QString("%1: [[%2]] is not in lessons/glossary.md").arg(l.slug, ref)));
        used << m_glossary.find(ref)->term;
      }
      for (const TermMatch& m : m_glossary.findIn(all)) used << m.term;
    }
    for (const GlossaryTerm& t : m_glossary.terms())
      QVERIFY2(used.contains(t.term), qPrintable(QString("glossary.md:%1: '%2' is used by no lesson").arg(t.line).arg(t.term)));
  }

  // No step sends the learner to a terminal: a benchmark runs in the window (a ```bench block
  // with a "kind").
  void noStepNeedsATerminal() {
    static const QRegularExpression terminal("paralab-bench|terminal",
                                             QRegularExpression::CaseInsensitiveOption);
    for (const Lesson& l : m_lib.lessons)
      for (const Step& s : l.steps)
        QVERIFY2(!s.markdown.contains(terminal) && !(s.bench && !s.bench->program.isEmpty()),
                 qPrintable(l.slug + ": " + s.title + ": sends the learner to a terminal"));
  }

  // Each benchmark a step names exists in paralab-bench and takes the flags the step gives it.
  void benchesExist() {
    QList<Bench> benches;
    for (const Lesson& l : m_lib.lessons)
      for (const Step& s : l.steps)
        if (s.bench && !s.bench->program.isEmpty()) benches << *s.bench;
#ifndef PARALAB_BENCH
    QSKIP(qPrintable(QString("paralab-bench is not built here; %1 benchmark steps not checked").arg(benches.size())));
#else
    for (const Bench& b : benches) {
      QProcess proc;
      proc.start(PARALAB_BENCH, {b.program, "--help"});
      QVERIFY(proc.waitForFinished(30000));
      const QString help = proc.readAllStandardOutput();
      QVERIFY2(proc.exitCode() == 0, qPrintable("paralab-bench " + b.program + " --help: " + proc.readAllStandardError()));
      for (const QString& a : b.args)
        if (a.startsWith("--")) QVERIFY2(help.contains(a), qPrintable("paralab-bench " + b.program + " has no " + a));
    }
#endif
  }
};

QTEST_GUILESS_MAIN(TestLessons)
#include "tst_lessons.moc"
