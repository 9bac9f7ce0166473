// The lab report's text: what each step says (prediction, reference, measurement, comparison,
// run, chart), laid out once as blocks and written as Markdown and as a paginated PDF
// (QTextDocument on QPdfWriter, A4). See tests/app/tst_lab_report.cpp (pdfIsReadable).
#pragma once
#include <QDateTime>
#include <QList>
#include <QString>
#include <optional>

#include "export/lab_report.h"

namespace paralab {

// One step as the report tells it.
struct LabReportEntry {
  const lessons::Lesson* lesson = nullptr;
  int index = 0;                     // 0-based, among the lesson's steps
  lessons::LessonProgress progress;  // the learner's, of the step's lesson
  QString notHere;                   // why the step cannot run on this machine ("" it can)
  std::optional<LabStepRun> run;     // what the report's run of it measured and drew
  const lessons::Step& step() const { return lesson->steps[index]; }
};

struct LabReportDoc {
  QList<const lessons::Lesson*> lessons;
  QList<LabReportEntry> entries;  // every step of every lesson, in order
  LabMachine machine;
  QDateTime when;
  QString progressFrom;  // the progress file read, "" when there was none
  QString chartsDir;     // the charts' folder, relative to the report
};

// A block of the report: a heading, a paragraph, a labelled line or a figure.
struct LabBlock {
  enum Kind { Title, Lesson, Step, Para, Row, Figure } kind;
  QString text;           // the heading, paragraph, label, or the figure's caption
  QString value;          // a row's value; a figure's PNG (absolute path)
  bool markdown = false;  // `text`/`value` hold lesson Markdown (code spans, [[glossary]] links)
};

QList<LabBlock> labReportBlocks(const LabReportDoc& doc);
QString labReportMarkdown(const QList<LabBlock>& blocks, const QString& reportDir);
// Writes the PDF; "" or one line saying what failed.
QString writeLabReportPdf(const QList<LabBlock>& blocks, const QString& title, const QString& path);

}  // namespace paralab
