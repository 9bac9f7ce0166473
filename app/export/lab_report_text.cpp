// The lab report's text (see lab_report_text.h): one list of blocks, two renderings.
// See tests/app/tst_lab_report.cpp (pdfIsReadable, markdownSaysEachStep).
#include "export/lab_report_text.h"

#include <QAbstractTextDocumentLayout>
#include <QDir>
#include <QFileInfo>
#include <QGuiApplication>
#include <QImage>
#include <QLocale>
#include <QPageLayout>
#include <QPdfWriter>
#include <QRegularExpression>
#include <QScreen>
#include <QTextDocument>
#include <cmath>

#include "describe.h"
#include "engine_bridge.h"
#include "lesson_score.h"

namespace paralab {

using namespace paralab::lessons;

namespace {

// "1,580,544", "2.297": digits grouped as the lessons write them, four significant digits.
QString number(double v) {
  const QLocale english(QLocale::English);
  if (!std::isfinite(v)) return v > 0 ? "∞" : "—";
  if (std::abs(v) >= 1e4 && v == std::floor(v)) return english.toString(qint64(v));
  return english.toString(v, 'g', 4);
}

QString withUnit(double v, const QString& unit) {
  return number(v) + (unit.isEmpty() ? QString() : " " + unit);
}

// "12 % above", "3.1 % below", "the same" (within half a percent); "" where it means nothing.
QString miss(double value, double against) {
  if (against == 0 || !std::isfinite(value) || !std::isfinite(against)) return {};
  const double percent = 100 * (value - against) / std::abs(against);
  if (std::abs(percent) < 0.5) return QObject::tr("the same");
  return (percent > 0 ? QObject::tr("%1 % above") : QObject::tr("%1 % below"))
      .arg(std::abs(percent), 0, 'f', std::abs(percent) < 10 ? 1 : 0);
}

// "12 % above" stays; "the same" reads "the same as".
QString asAgainst(const QString& miss) {
  return miss == QObject::tr("the same") ? QObject::tr("the same as") : miss;
}

// [[term|shown words]] -> shown words, [[term]] -> term: a glossary link is a link only in the
// window.
QString unlinked(QString text) {
  static const QRegularExpression link(R"(\[\[([^\]|]*)\|([^\]]*)\]\])"),
      bare(R"(\[\[([^\]]*)\]\])");
  return text.replace(link, "\\2").replace(bare, "\\1").simplified();
}

// The experiment's settings in the run's words, for a step not run by the report.
QString experimentWords(const Step& s) {
  const std::optional<RunConfig> c = configFromExperiment(s.experiment.value_or(QJsonObject()));
  if (!c) return {};
  return QString::fromStdString(describeRun(*c).line());
}

void predictionBlocks(QList<LabBlock>& out, const LabReportEntry& e) {
  const Step& s = e.step();
  const Prediction& p = *s.prediction;
  const auto row = [&](const QString& label, const QString& value, bool md = false) {
    out << LabBlock{LabBlock::Row, label, value, md};
  };
  row(p.worked ? QObject::tr("Worked problem") : QObject::tr("Question"), p.ask, true);
  const std::optional<double> measuredByYou =
      e.progress.measured.contains(s.title) ? std::optional(e.progress.measured.value(s.title))
                                            : std::nullopt;
  const std::optional<double> measuredHere = e.run ? e.run->measured : std::nullopt;
  const QString cu = s.compare && !s.compare->unit.isEmpty() ? " " + s.compare->unit : QString();
  if (p.isChoice()) {
    const QStringList picks = e.progress.choices.value(s.title);
    row(QObject::tr("Your answer"),
        picks.isEmpty()
            ? QObject::tr("not done: no answer locked")
            : picks.first() + (picks.size() > 1
                                   ? QObject::tr(" (later tries: %1)").arg(picks.mid(1).join(", "))
                                   : QString()));
    row(QObject::tr("Reference answer"), p.expectChoice);
    const QString yours = e.progress.measuredChoices.value(s.title).answer;
    if (!yours.isEmpty()) row(QObject::tr("Measured when you ran it"), yours);
    if (e.run && e.run->choice && e.run->choice->answer >= 0) {
      const ChoiceMeasurement& m = *e.run->choice;
      QStringList values;
      for (int i = 0; i < p.choices.size() && i < m.values.size(); ++i)
        values << p.choices[i].label + " " + withUnit(m.values[i], p.unit);
      row(QObject::tr("Measured for this report"),
          p.choices[m.answer].label + " (" + values.join("; ") + ")");
    }
    const QString measured = !yours.isEmpty() ? yours
                             : e.run && e.run->choice && e.run->choice->answer >= 0
                                 ? p.choices[e.run->choice->answer].label
                                 : QString();
    if (!picks.isEmpty() && !measured.isEmpty())
      row(QObject::tr("Comparison"),
          (picks.first() == measured ? QObject::tr("your first answer is the measured one")
                                     : QObject::tr("your first answer is not the measured one")) +
              "; " +
              (p.expectChoice == measured
                   ? QObject::tr("the reference answer is the measured one")
                   : QObject::tr("the reference answer is not the measured one")));
  } else {
    const QList<double> attempts = e.progress.predictions.value(s.title);
    QStringList later;  // tries after the first, which is the one that counts
    for (int i = 1; i < attempts.size(); ++i) later << withUnit(attempts[i], p.unit);
    row(QObject::tr("Your prediction"),
        attempts.isEmpty() ? QObject::tr("not done: no prediction locked")
        : later.isEmpty()  ? withUnit(attempts.first(), p.unit)
                           : QObject::tr("%1 (later tries: %2)")
                                .arg(withUnit(attempts.first(), p.unit), later.join(", ")));
    QString error;
    const std::optional<double> ref =
        referenceValue(p, s.experiment.value_or(QJsonObject()), &error);
    row(QObject::tr("Reference"),
        (ref ? withUnit(*ref, p.unit) : error) +
            QObject::tr(", from %1").arg("`" + p.formula + "`"),
        true);
    if (measuredByYou) row(QObject::tr("Measured when you ran it"), number(*measuredByYou) + cu);
    if (measuredHere) row(QObject::tr("Measured for this report"), number(*measuredHere) + cu);
    const std::optional<double> against = measuredByYou ? measuredByYou : measuredHere;
    // "your prediction: 12 % above the reference and 3 % below the measurement; the reference:
    // ..." (against the measurement only where both are in the same unit).
    const bool sameUnit = against && s.compare && s.compare->unit == p.unit;
    QStringList yours, reference, misses;
    if (!attempts.isEmpty() && ref)
      if (const QString m = miss(attempts.first(), *ref); !m.isEmpty())
        yours << QObject::tr("%1 the reference").arg(asAgainst(m));
    if (sameUnit && !attempts.isEmpty())
      if (const QString m = miss(attempts.first(), *against); !m.isEmpty())
        yours << QObject::tr("%1 the measurement").arg(asAgainst(m));
    if (sameUnit && ref)
      if (const QString m = miss(*ref, *against); !m.isEmpty())
        reference << QObject::tr("%1 the measurement").arg(asAgainst(m));
    if (!yours.isEmpty())
      misses << QObject::tr("your prediction: %1").arg(yours.join(QObject::tr(" and ")));
    if (!reference.isEmpty()) misses << QObject::tr("the reference: %1").arg(reference.first());
    if (!misses.isEmpty()) row(QObject::tr("Comparison"), misses.join("; "));
  }
  if (!p.reasoning.isEmpty())
    row(p.worked ? QObject::tr("Worked solution") : QObject::tr("Where the reference comes from"),
        p.reasoning, true);
}

void stepBlocks(QList<LabBlock>& out, const LabReportEntry& e) {
  const Step& s = e.step();
  out << LabBlock{LabBlock::Step, QObject::tr("Step %1: %2").arg(e.index + 1).arg(s.title), {}};
  const bool runs = stepRuns(s);
  if (!s.prediction && !runs) {
    out << LabBlock{LabBlock::Para, QObject::tr("A reading step: nothing to predict or run."), {}};
    return;
  }
  if (s.prediction) predictionBlocks(out, e);
  if (s.compare && !s.compare->explain.isEmpty() &&
      (e.progress.measured.contains(s.title) || (e.run && e.run->measured)))
    out << LabBlock{LabBlock::Row, QObject::tr("Why they differ"), s.compare->explain, true};
  if (!runs) return;
  if (!e.notHere.isEmpty()) {
    out << LabBlock{LabBlock::Row, QObject::tr("Not run"),
                    QObject::tr("this machine cannot run it: %1").arg(e.notHere)};
    if (const QString w = experimentWords(s); !w.isEmpty())
      out << LabBlock{LabBlock::Row, QObject::tr("The run"), w};
    return;
  }
  if (!e.run) {
    if (const QString w = experimentWords(s); !w.isEmpty())
      out << LabBlock{LabBlock::Row, QObject::tr("The run"), w};
    out << LabBlock{LabBlock::Row, QObject::tr("Chart"),
                    QObject::tr("not drawn: the report was made without running the steps")};
    return;
  }
  out << LabBlock{LabBlock::Row, QObject::tr("The run"), e.run->run};
  if (!e.run->error.isEmpty())
    out << LabBlock{LabBlock::Row, QObject::tr("Not measured"), e.run->error};
  if (!e.run->chartPng.isEmpty())
    out << LabBlock{LabBlock::Figure,
                    QObject::tr("Figure: step %1, the %2 chart of the report's run.")
                        .arg(e.index + 1)
                        .arg(e.run->chartTitle),
                    e.run->chartPng};
}

QString escaped(const QString& text, bool markdown) {
  QString html = (markdown ? unlinked(text) : text).toHtmlEscaped();
  if (markdown) {
    static const QRegularExpression code("`([^`]*)`");
    html.replace(code, "<code>\\1</code>");
  }
  return html;
}

}  // namespace

QList<LabBlock> labReportBlocks(const LabReportDoc& doc) {
  QList<LabBlock> out;
  const QString title = doc.lessons.size() == 1
                            ? QObject::tr("Lab report: lesson %1, %2")
                                  .arg(doc.lessons[0]->number)
                                  .arg(doc.lessons[0]->title)
                            : QObject::tr("Lab report: %1 lessons").arg(doc.lessons.size());
  out << LabBlock{LabBlock::Title, title, {}};
  out << LabBlock{LabBlock::Row, QObject::tr("Date"),
                  QLocale::c().toString(doc.when, "yyyy-MM-dd HH:mm t")};
  out << LabBlock{LabBlock::Row, QObject::tr("Machine"), doc.machine.text()};
  out << LabBlock{LabBlock::Row, QObject::tr("Predictions"),
                  doc.progressFrom.isEmpty()
                      ? QObject::tr("no saved progress: no prediction was locked")
                      : QObject::tr("as locked in the window (the saved progress)")};
  out << LabBlock{LabBlock::Para,
                  QObject::tr("Every measurement was made on the machine above; a prediction "
                              "counts by its first try. Each chart is the one the window draws "
                              "for the step, from the run made for this report."),
                  {}};
  for (const lessons::Lesson* l : doc.lessons) {
    out << LabBlock{
        LabBlock::Lesson, QObject::tr("Lesson %1: %2").arg(l->number).arg(l->title), {}};
    LessonProgress lp;
    for (const LabReportEntry& e : doc.entries)
      if (e.lesson == l) lp = e.progress;
    out << LabBlock{LabBlock::Row, QObject::tr("Progress"),
                    lp.completed ? QObject::tr("completed on %1")
                                       .arg(QLocale::c().toString(lp.completedAt, "yyyy-MM-dd"))
                                 : QObject::tr("not completed")};
    const auto runnable = [&](const Step& s) {
      for (const LabReportEntry& e : doc.entries)
        if (e.lesson == l && &e.step() == &s) return e.notHere.isEmpty();
      return false;
    };
    out << LabBlock{LabBlock::Row, QObject::tr("Score"), scoreLesson(*l, lp, runnable).text()};
    for (const LabReportEntry& e : doc.entries)
      if (e.lesson == l) stepBlocks(out, e);
    if (l->retrieval.isEmpty()) continue;
    // What the learner wrote before seeing the model answers.
    out << LabBlock{LabBlock::Step, QObject::tr("Retrieval practice"), {}};
    for (int q = 0; q < l->retrieval.size(); ++q) {
      out << LabBlock{LabBlock::Row, QObject::tr("Question %1").arg(q + 1), l->retrieval[q].q,
                      true};
      const QString answer = lp.answers.value(q).trimmed();
      out << LabBlock{LabBlock::Row, QObject::tr("Your answer"),
                      answer.isEmpty() ? QObject::tr("not answered") : answer};
    }
  }
  return out;
}

QString labReportMarkdown(const QList<LabBlock>& blocks, const QString& reportDir) {
  QStringList md;
  const QDir dir(reportDir);
  for (const LabBlock& b : blocks) {
    const QString text = b.markdown ? unlinked(b.text) : b.text;
    const QString value = b.markdown ? unlinked(b.value) : b.value;
    switch (b.kind) {
      case LabBlock::Title:
        md << "# " + text << "";
        break;
      case LabBlock::Lesson:
        md << "## " + text << "";
        break;
      case LabBlock::Step:
        md << "### " + text << "";
        break;
      case LabBlock::Para:
        md << text << "";
        break;
      case LabBlock::Row:
        md << "- **" + text + ":** " + value;
        break;
      case LabBlock::Figure:
        md << ""
           << "![" + text + "](" + dir.relativeFilePath(b.value) + ")"
           << ""
           << "*" + text + "*"
           << "";
        break;
    }
  }
  // A list ends before the next heading or paragraph.
  QStringList tidy;
  for (int i = 0; i < md.size(); ++i) {
    tidy << md[i];
    if (md[i].startsWith("- ") && i + 1 < md.size() && !md[i + 1].startsWith("- ") &&
        !md[i + 1].isEmpty())
      tidy << "";
  }
  return tidy.join("\n") + "\n";
}

QString writeLabReportPdf(const QList<LabBlock>& blocks, const QString& title,
                          const QString& path) {
  QPdfWriter pdf(path);
  pdf.setCreator("ParaLab");
  pdf.setTitle(title);
  pdf.setPageLayout(QPageLayout(QPageSize(QPageSize::A4), QPageLayout::Portrait,
                                QMarginsF(20, 18, 20, 18), QPageLayout::Millimeter));
  // The document is laid out on the writer in its own pixels (300 dpi): point sizes stay
  // points on paper, and a page of the layout is a page of the PDF.
  pdf.setResolution(300);
  QTextDocument doc;
  doc.documentLayout()->setPaintDevice(&pdf);
  const QRectF body = pdf.pageLayout().paintRectPixels(pdf.resolution());
  doc.setPageSize(body.size());
  QFont font = doc.defaultFont();
  font.setPointSizeF(10.5);
  doc.setDefaultFont(font);
  // Headings as styled paragraphs: Qt sizes <h1>..<h3> relative to the body (h1 twice it),
  // whatever a style sheet says; a report's headings stay within 16 pt.
  doc.setDefaultStyleSheet(
      "p { margin: 3px 0; } p.title { font-size: 16pt; font-weight: bold; margin-bottom: 8px; } "
      "p.lesson { font-size: 14pt; font-weight: bold; margin-top: 14px; } "
      "p.step { font-size: 12pt; font-weight: bold; margin-top: 12px; } "
      "p.caption { font-size: 9pt; font-style: italic; } code { font-family: monospace; }");
  // The figure's width on the page: most of the text's width. An image's size is given in the
  // screen's pixels, which the layout scales to the writer's (QTextImageHandler).
  const QScreen* screen = QGuiApplication::primaryScreen();
  const double figureWidth =
      body.width() * 0.92 * (screen ? screen->logicalDotsPerInchX() : 96.0) / pdf.logicalDpiX();
  QString html;
  for (const LabBlock& b : blocks) {
    const QString text = escaped(b.text, b.markdown), value = escaped(b.value, b.markdown);
    switch (b.kind) {
      case LabBlock::Title:
        html += "<p class='title'>" + text + "</p>";
        break;
      case LabBlock::Lesson:
        html += "<p class='lesson'>" + text + "</p>";
        break;
      case LabBlock::Step:
        html += "<p class='step'>" + text + "</p>";
        break;
      case LabBlock::Para:
        html += "<p>" + text + "</p>";
        break;
      case LabBlock::Row:
        html += "<p><b>" + text + ":</b> " + value + "</p>";
        break;
      case LabBlock::Figure: {
        const QImage image(b.value);
        if (image.isNull()) return QObject::tr("cannot read the chart '%1'").arg(b.value);
        const QUrl url("chart:" + QFileInfo(b.value).fileName());
        doc.addResource(QTextDocument::ImageResource, url, image);
        html += QString(
                    "<p align='center'><img src='%1' width='%2' height='%3'></p>"
                    "<p class='caption' align='center'>%4</p>")
                    .arg(url.toString())
                    .arg(qRound(figureWidth))
                    .arg(qRound(figureWidth * image.height() / image.width()))
                    .arg(text);
        break;
      }
    }
  }
  doc.setHtml(html);
  doc.print(&pdf);
  return QFileInfo(path).size() > 0 ? QString() : QObject::tr("cannot write '%1'").arg(path);
}

}  // namespace paralab
