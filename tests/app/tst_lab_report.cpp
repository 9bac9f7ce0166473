// The lab report a learner hands in (app/export/lab_report.h): `paralab --report 01 --export DIR`
// from saved progress, read as rendered (every word 8-16 pt, each step's heading and chart found
// on the pages), its Markdown, the steps not done said so, worked solutions shown, bad LESSON.
// Run: ctest -R tst_lab_report
#include <QMenuBar>
#include <QtTest>

#include "engine_bridge.h"
#include "export/lab_report.h"
#include "main_window.h"
#include "rendered_text.h"

using namespace paralab;
using namespace paralab::lessons;

namespace {

struct Ran {
  int code = -1;
  QString out, err;
};

Ran runApp(const QStringList& args, const QProcessEnvironment& env, int timeoutMs = 280000) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(PARALAB_APP_EXE, args);
  Ran r;
  if (!p.waitForFinished(timeoutMs)) {
    p.kill();
    p.waitForFinished();
    r.err = "timed out";
    return r;
  }
  r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = QString::fromLocal8Bit(p.readAllStandardOutput());
  r.err = QString::fromLocal8Bit(p.readAllStandardError());
  return r;
}

int pageCount(const QString& pdf) {
  QProcess p;
  p.start("pdfinfo", {pdf});
  p.waitForFinished(20000);
  const QRegularExpression pages(R"(Pages:\s+(\d+))");
  return pages.match(QString::fromLocal8Bit(p.readAllStandardOutput())).captured(1).toInt();
}

// The images of `pdf` as `pdfimages -list` lists them: {page, width in px}.
QList<QPair<int, int>> pdfImages(const QString& pdf) {
  QProcess p;
  p.start("pdfimages", {"-list", pdf});
  p.waitForFinished(20000);
  QList<QPair<int, int>> out;
  for (const QString& line : QString::fromLocal8Bit(p.readAllStandardOutput()).split('\n')) {
    const QStringList f = line.simplified().split(' ');
    if (f.size() > 4 && f[2] == "image") out.push_back({f[0].toInt(), f[3].toInt()});
  }
  return out;
}

Lesson lessonOne() {
  const ParseResult r = loadLesson(QDir(lessonsRoot()).filePath("01-serial-parallel"));
  if (!r.lesson) qFatal("lesson 01 does not load: %s", qPrintable(r.errors.join("; ")));
  return *r.lesson;
}

}  // namespace

class TstLabReport : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  // What a learner did in lesson 01 (two predictions locked, one measured in the window), then
  // the report written headless: every step's heading on the pages, every step that runs with
  // its chart on the page of its heading or the next, and every word between 8 and 16 pt.
  void headlessReportOfSavedProgress() {
    QTemporaryDir home, out;
    const QString progressPath = home.filePath("ParaLab/ParaLab/progress.json");
    {
      Progress p(progressPath);
      QVERIFY(p.lockPrediction("01-serial-parallel", "One worker", 2.25));
      QVERIFY(p.setMeasured("01-serial-parallel", "One worker", 2.2987));
      QVERIFY(p.lockPrediction("01-serial-parallel", "Independent work and the chain", 2000));
      QVERIFY(p.setAnswer("01-serial-parallel", 0, "Steps form a chain: step t needs t - 1."));
      QVERIFY2(QFileInfo::exists(progressPath), qPrintable(p.error()));
    }
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("XDG_DATA_HOME", home.path());
    const Ran r = runApp({"--report", "01", "--export", out.path()}, env);
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    const QString pdf = out.filePath("lab-report-01-serial-parallel.pdf");
    const QString mdPath = out.filePath("lab-report-01-serial-parallel.md");
    QVERIFY2(QFileInfo::exists(pdf) && QFileInfo::exists(mdPath), qPrintable(r.out));

    const Lesson lesson = lessonOne();
    QList<int> running;  // the steps that run: each has a chart
    for (int i = 0; i < lesson.steps.size(); ++i)
      if (stepRuns(lesson.steps[i])) running << i;
    QVERIFY(running.size() >= 2);

    // The Markdown: each step under its heading, the learner's locks as they locked them, the
    // steps not done said so, each chart a file beside it.
    QFile mdFile(mdPath);
    QVERIFY(mdFile.open(QIODevice::ReadOnly));
    const QString md = QString::fromUtf8(mdFile.readAll());
    for (int i = 0; i < lesson.steps.size(); ++i)
      QVERIFY2(md.contains(QString("### Step %1: %2").arg(i + 1).arg(lesson.steps[i].title)),
               qPrintable(lesson.steps[i].title));
    QVERIFY2(md.contains("**Your prediction:** 2.25 nats"), qPrintable(md.left(2000)));
    QVERIFY(md.contains("**Measured when you ran it:** 2.299 nats"));
    QVERIFY(md.contains("**Measured for this report:**"));
    QVERIFY(md.contains("**Your prediction:** 2,000 ms"));
    // The written answers of retrieval practice, as written; the others said unanswered.
    QVERIFY(md.contains("**Your answer:** Steps form a chain: step t needs t - 1."));
    QCOMPARE(md.count("**Your answer:** not answered"), lesson.retrieval.size() - 1);
    QVERIFY(md.contains("**Worked solution:**"));
    QVERIFY(md.contains("not done: no prediction locked"));
    QVERIFY(md.contains(QString("**Machine:** %1 cores").arg(LabMachine::here().cores)));
    QVERIFY(md.contains("GPU: "));
    QVERIFY(md.contains("**Date:** " + QDate::currentDate().toString("yyyy-MM-dd")) ||
            md.contains("**Date:** " + QDate::currentDate().addDays(-1).toString("yyyy-MM-dd")));
    QVERIFY(md.contains("**The run:** MLP"));
    const QRegularExpression figure(R"(!\[[^\]]*\]\(([^)]+\.png)\))");
    int figures = 0;
    for (auto it = figure.globalMatch(md); it.hasNext(); ++figures) {
      const QString png = out.filePath(it.next().captured(1));
      QVERIFY2(QImage(png).width() >= 1000, qPrintable(png));
    }
    QCOMPARE(figures, running.size());

    // The PDF as rendered: the pages' words, measured.
    const int pages = pageCount(pdf);
    QVERIFY2(pages >= 2, qPrintable(pdf));
    QList<QString> pageText;
    for (int n = 1; n <= pages; ++n) {
      const test::RenderedPage page = test::renderPdfWords(pdf, n);
      QVERIFY2(page.error.isEmpty(), qPrintable(page.error));
      QStringList words;
      for (const test::RenderedWord& w : page.words) {
        words << w.text;
        // A word's box is its font's ascent to descent, about 1.17 times its size in points.
        const double pt = w.letterHeight() / 1.17;
        QVERIFY2(
            pt >= 7.9 && pt <= 16.5,
            qPrintable(QString("page %1: '%2' is %3 pt").arg(n).arg(w.text).arg(pt, 0, 'f', 1)));
        QVERIFY2(QRectF(QPointF(0, 0), page.size).contains(w.box), qPrintable(w.text));
      }
      pageText << words.join(' ');
    }
    // Each step's heading on a page; each chart on its step's page or the next one.
    QList<int> headingPage;
    for (int i = 0; i < lesson.steps.size(); ++i) {
      const QString heading =
          QString("Step %1: %2").arg(i + 1).arg(lesson.steps[i].title).simplified();
      int found = -1;
      for (int n = 0; n < pages && found < 0; ++n)
        if (pageText[n].contains(heading)) found = n + 1;
      QVERIFY2(found > 0, qPrintable(heading + " is on no page"));
      headingPage << found;
    }
    const QList<QPair<int, int>> images = pdfImages(pdf);
    QCOMPARE(images.size(), running.size());
    for (int k = 0; k < running.size(); ++k) {
      const int from = headingPage[running[k]];
      QVERIFY2(images[k].first == from || images[k].first == from + 1,
               qPrintable(QString("the chart of step %1 is on page %2, its heading on %3")
                              .arg(running[k] + 1)
                              .arg(images[k].first)
                              .arg(from)));
      QVERIFY(images[k].second >= 1000);
    }
  }

  // Without saved progress and without running: every prediction says it was not locked, every
  // worked problem shows its solution, every step that runs says its chart was not drawn.
  void stepsNotDoneSaySo() {
    const Lesson lesson = lessonOne();
    QTemporaryDir dir;
    LabReportRequest request;
    request.lessons = {lesson};
    request.runSteps = false;
    request.capabilities = engineCapabilities();
    LabReportFiles files;
    QCOMPARE(writeLabReport(request, dir.path(), &files), QString());
    QFile f(files.markdown);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString md = QString::fromUtf8(f.readAll());
    int predictions = 0, worked = 0, runs = 0;
    for (const Step& s : lesson.steps) {
      predictions += s.prediction.has_value();
      worked += s.prediction && s.prediction->worked;
      runs += stepRuns(s);
    }
    QVERIFY(worked > 0);
    QCOMPARE(md.count("not done: no prediction locked"), predictions);
    QCOMPARE(md.count("**Worked solution:**"), worked);
    QCOMPARE(md.count("not drawn: the report was made without running the steps"), runs);
    QVERIFY(md.contains("no saved progress: no prediction was locked"));
    QVERIFY(QFileInfo(files.pdf).size() > 0);
  }

  // LESSON: a number, an id, an id without its number, or all (the lessons completed).
  void lessonsAreNamed() {
    const LibraryResult library = loadLessons(lessonsRoot());
    QVERIFY(library.lessons.size() > 2);
    QTemporaryDir dir;
    Progress progress(dir.filePath("progress.json"));
    QString error;
    for (const QString& name : {"2", "02", "02-amdahl", "amdahl"}) {
      const auto l = lessonsNamed(name, library.lessons, progress, &error);
      QVERIFY2(l && l->size() == 1 && l->first().slug == "02-amdahl", qPrintable(name));
    }
    QVERIFY(!lessonsNamed("all", library.lessons, progress, &error));
    QVERIFY2(error.contains("allowed"), qPrintable(error));
    QVERIFY(progress.complete("03-gustafson"));
    const auto done = lessonsNamed("all", library.lessons, progress, &error);
    QVERIFY(done && done->size() == 1 && done->first().slug == "03-gustafson");
    QVERIFY(!lessonsNamed("0", library.lessons, progress, &error));
    QVERIFY(!lessonsNamed("pipelines", library.lessons, progress, &error));
  }

  // The window offers it in the File menu, beside Export All.
  void fileMenuOffersIt() {
    MainWindow w;
    auto* action = w.findChild<QAction*>("exportLabReportAction");
    QVERIFY(action);
    QVERIFY(action->text().contains("Lab"));
    bool inFileMenu = false;
    for (QAction* top : w.menuBar()->actions())
      if (top->menu() && top->menu()->actions().contains(action))
        inFileMenu = top->text() == "&File";
    QVERIFY(inFileMenu);
  }

  // Bad LESSON, or --report without --export: one line naming what is allowed, exit 2.
  void badLessonExits2() {
    QTemporaryDir out;
    const QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    Ran r = runApp({"--report", "99", "--export", out.path()}, env, 60000);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("report: '99' is not a lesson (allowed: all, a number"),
             qPrintable(r.err));
    r = runApp({"--report", "01"}, env, 60000);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("report:") && r.err.contains("allowed"), qPrintable(r.err));
    QVERIFY(QDir(out.path()).entryList(QDir::Files).isEmpty());
  }
};

QTEST_MAIN(TstLabReport)
#include "tst_lab_report.moc"
