// The lab report (see lab_report.h): the machine, the lessons named, each step run in turn,
// then the Markdown and PDF written. See tests/app/tst_lab_report.cpp and
// `paralab --report 01 --export DIR`.
#include "export/lab_report.h"

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QMessageBox>
#include <QProgressDialog>
#include <QSaveFile>
#include <QSysInfo>
#include <cstdio>

#include "capabilities.h"
#include "engine_bridge.h"
#include "export/chart_export.h"
#include "export/lab_report_text.h"
#include "train/sweep.h"

namespace paralab {

using namespace paralab::lessons;

namespace {

// The CPU's name as the kernel reports it (/proc/cpuinfo), else the architecture.
QString cpuName() {
  QFile f("/proc/cpuinfo");
  if (f.open(QIODevice::ReadOnly))
    for (const QByteArray& line : f.readAll().split('\n'))
      if (line.startsWith("model name"))
        if (const qsizetype colon = line.indexOf(':'); colon > 0)
          return QString::fromUtf8(line.mid(colon + 1)).simplified();
  return QSysInfo::currentCpuArchitecture();
}

}  // namespace

LabMachine LabMachine::here() {
  LabMachine m;
  m.cores = machineCores();
  m.cpu = cpuName();
  m.simd = QString::fromStdString(simdLevelName());
  const GpuAvailability gpu = gpuAvailability();
  m.gpu = gpu.count > 0 ? QString::fromStdString(gpu.name) +
                              (gpu.count > 1 ? QObject::tr(" (%1 GPUs)").arg(gpu.count) : QString())
                        : QObject::tr("none (%1)").arg(QString::fromStdString(gpu.reason));
  return m;
}

QString LabMachine::text() const {
  return QObject::tr("%1 cores, %2, vector level %3; GPU: %4").arg(cores).arg(cpu, simd, gpu);
}

QString labReportStem(const QList<Lesson>& lessons) {
  return lessons.size() == 1 ? "lab-report-" + lessons[0].slug : QString("lab-report-all");
}

QString writeLabReport(const LabReportRequest& request, const QString& dir, LabReportFiles* files) {
  const QString stem = labReportStem(request.lessons);
  const QString chartsDir = QDir(dir).filePath(stem + "-charts");
  if (!QDir().mkpath(chartsDir)) return QObject::tr("cannot create folder '%1'").arg(chartsDir);
  LabReportDoc doc;
  doc.machine = request.machine;
  doc.when = request.when;
  doc.chartsDir = chartsDir;
  if (request.progress && QFileInfo::exists(request.progress->path()))
    doc.progressFrom = request.progress->path();
  for (const Lesson& l : request.lessons) {
    doc.lessons << &l;
    const LessonProgress lp =
        request.progress ? request.progress->lesson(l.slug) : LessonProgress{};
    for (int i = 0; i < l.steps.size(); ++i) {
      LabReportEntry e{.lesson = &l, .index = i, .progress = lp, .notHere = {}, .run = {}};
      QStringList missing = missingNeeds(l.needs + l.steps[i].needs, request.capabilities);
      for (QString& m : missing) m = describeMissing(m);
      e.notHere = missing.join("; ");
      doc.entries << e;
    }
  }
  int total = 0, done = 0;
  for (const LabReportEntry& e : doc.entries) total += stepRuns(e.step()) && e.notHere.isEmpty();
  for (LabReportEntry& e : doc.entries) {
    if (!request.runSteps || !stepRuns(e.step()) || !e.notHere.isEmpty()) continue;
    const QString what = e.lesson->slug + ": " + e.step().title;
    const auto keepGoing = [&] {
      return !request.onProgress || request.onProgress(what, done, total);
    };
    if (!keepGoing()) return QObject::tr("cancelled");
    const QString png = QDir(chartsDir).filePath(
        QString("%1-step-%2.png").arg(e.lesson->slug).arg(e.index + 1, 2, 10, QChar('0')));
    e.run = runLabStep(e.step(), png, keepGoing);
    if (e.run->error == QObject::tr("cancelled")) return e.run->error;
    if (files && !e.run->chartPng.isEmpty()) files->charts << e.run->chartPng;
    ++done;
  }
  const QList<LabBlock> blocks = labReportBlocks(doc);
  const QString md = QDir(dir).filePath(stem + ".md"), pdf = QDir(dir).filePath(stem + ".pdf");
  if (const QString err = writeExportFile(md, labReportMarkdown(blocks, dir).toUtf8());
      !err.isEmpty())
    return err;
  if (const QString err = writeLabReportPdf(blocks, blocks.first().text, pdf); !err.isEmpty())
    return err;
  if (files) files->markdown = md, files->pdf = pdf;
  return {};
}

std::optional<QList<Lesson>> lessonsNamed(const QString& name, const QList<Lesson>& all,
                                          const Progress& progress, QString* error) {
  QList<Lesson> chosen;
  if (name == "all") {
    for (const Lesson& l : all)
      if (progress.lesson(l.slug).completed) chosen << l;
    if (chosen.isEmpty())
      *error = QObject::tr(
                   "report: 'all' reports the lessons completed, and none is yet "
                   "(allowed: a lesson's number 1..%1 or id, such as %2)")
                   .arg(all.size())
                   .arg(all.isEmpty() ? QString("01-serial-parallel") : all.first().slug);
    return chosen.isEmpty() ? std::nullopt : std::optional(chosen);
  }
  bool isNumber = false;
  const int number = name.toInt(&isNumber);
  for (const Lesson& l : all)
    if ((isNumber && l.number == number) || l.slug == name || l.slug.section('-', 1) == name)
      return QList<Lesson>{l};
  *error = QObject::tr(
               "report: '%1' is not a lesson (allowed: all, a number 1..%2, or an id "
               "such as %3)")
               .arg(name)
               .arg(all.size())
               .arg(all.isEmpty() ? QString("01-serial-parallel") : all.first().slug);
  return std::nullopt;
}

void exportLabReportDialog(QWidget* parent, const QList<Lesson>& lessons, int currentLesson) {
  Progress progress;
  QStringList items;
  for (const Lesson& l : lessons) items << QObject::tr("Lesson %1: %2").arg(l.number).arg(l.title);
  int completed = 0;
  for (const Lesson& l : lessons) completed += progress.lesson(l.slug).completed;
  if (completed > 0) items << QObject::tr("Every lesson completed (%1)").arg(completed);
  bool ok = false;
  const QString item = QInputDialog::getItem(
      parent, QObject::tr("Export Lab Report"),
      QObject::tr("The report of which lesson? Each step that runs is run again for its chart."),
      items, std::max(0, currentLesson), false, &ok);
  if (!ok) return;
  const qsizetype chosen = items.indexOf(item);
  QString error;
  const auto named = lessonsNamed(chosen < lessons.size() ? lessons[chosen].slug : QString("all"),
                                  lessons, progress, &error);
  if (!named) return void(QMessageBox::warning(parent, QObject::tr("Export Lab Report"), error));
  const QString dir =
      QFileDialog::getExistingDirectory(parent, QObject::tr("Write the lab report into"));
  if (dir.isEmpty()) return;
  QProgressDialog wait(QObject::tr("Running the lesson's steps…"), QObject::tr("Cancel"), 0, 1,
                       parent);
  wait.setWindowModality(Qt::WindowModal);
  wait.setMinimumDuration(0);
  LabReportRequest request;
  request.lessons = *named;
  request.progress = &progress;
  request.capabilities = engineCapabilities();
  request.onProgress = [&](const QString& what, int done, int total) {
    wait.setMaximum(std::max(1, total));
    wait.setValue(done);
    wait.setLabelText(QObject::tr("Running %1 of %2: %3").arg(done + 1).arg(total).arg(what));
    QApplication::processEvents();
    return !wait.wasCanceled();
  };
  LabReportFiles files;
  const QString err = writeLabReport(request, dir, &files);
  wait.reset();
  if (!err.isEmpty())
    return void(QMessageBox::warning(parent, QObject::tr("Export Lab Report"),
                                     QObject::tr("The lab report was not written: %1").arg(err)));
  QMessageBox::information(
      parent, QObject::tr("Export Lab Report"),
      QObject::tr("Wrote %1 and %2, with %3 charts.")
          .arg(QDir::toNativeSeparators(files.pdf), QDir::toNativeSeparators(files.markdown))
          .arg(files.charts.size()));
}

int runLabReportCommand(const QString& name, const QString& dir) {
  const auto say = [](FILE* stream, const QString& line) {
    std::fprintf(stream, "paralab: %s\n", line.toLocal8Bit().constData());
    std::fflush(stream);
  };
  const LibraryResult library = loadLessons(lessonsRoot());
  for (const QString& e : library.errors) say(stderr, e);
  Progress progress;
  if (!progress.error().isEmpty()) say(stderr, progress.error());
  QString error;
  const std::optional<QList<Lesson>> lessons =
      lessonsNamed(name, library.lessons, progress, &error);
  if (!lessons) {
    std::fprintf(stderr, "paralab: %s\n", error.toLocal8Bit().constData());
    return 2;
  }
  LabReportRequest request;
  request.lessons = *lessons;
  request.progress = &progress;
  request.capabilities = engineCapabilities();
  QString last;
  request.onProgress = [&](const QString& what, int done, int total) {
    if (what != last)
      say(stdout, QObject::tr("running %1 of %2: %3").arg(done + 1).arg(total).arg(last = what));
    return true;
  };
  LabReportFiles files;
  if (const QString err = writeLabReport(request, dir, &files); !err.isEmpty()) {
    say(stderr, err);
    return 1;
  }
  say(stdout, QObject::tr("wrote %1 and %2 (%3 charts)")
                  .arg(files.pdf, files.markdown)
                  .arg(files.charts.size()));
  return 0;
}

}  // namespace paralab
