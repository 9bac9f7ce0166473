// What an exported figure shows a reader, measured from the file as rendered: the words of a
// PDF page with their boxes (Poppler's `pdftotext -bbox`, as a PDF viewer lays them out) and
// the text of an SVG with the size it is drawn at (font size times the group's scale).
// Used by tests/app/tst_app.cpp (exportFormats, scriptedExport).
#pragma once
#include <QFile>
#include <QList>
#include <QProcess>
#include <QRectF>
#include <QRegularExpression>
#include <QSizeF>
#include <QString>
#include <QTemporaryDir>
#include <QXmlStreamReader>
#include <cmath>

namespace paralab::test {

struct RenderedWord {
  QString text;
  QRectF box;  // points, origin top left of the page
  // Set on the words of a line that runs up or down the page (a vertical axis label): their
  // letters' height is the box's width.
  bool turned = false;
  double letterHeight() const { return turned ? box.width() : box.height(); }
};

struct RenderedPage {
  QSizeF size;  // points
  QList<RenderedWord> words;
  QString error;  // why the page could not be read ("" when it was)
};

// Page `number` (1: the first) of `pdf` as Poppler lays it out (`-bbox-layout`: words grouped
// in lines).
inline RenderedPage renderPdfWords(const QString& pdf, int number = 1) {
  RenderedPage page;
  QTemporaryDir dir;
  const QString html = dir.filePath("words.html");
  QProcess p;
  p.start("pdftotext", {"-bbox-layout", "-f", QString::number(number), "-l",
                        QString::number(number), pdf, html});
  if (!p.waitForFinished(20000) || p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
    page.error = "pdftotext -bbox-layout failed on " + pdf + " (is poppler-utils installed?): " +
                 QString::fromLocal8Bit(p.readAllStandardError()) + p.errorString();
    return page;
  }
  QFile f(html);
  if (!f.open(QIODevice::ReadOnly)) {
    page.error = "pdftotext wrote no " + html;
    return page;
  }
  // The XHTML pdftotext writes: <page width= height=>, then blocks of <line>s of <word>s, each
  // with xMin= yMin= xMax= yMax=.
  const auto box = [](const QXmlStreamAttributes& a) {
    return QRectF(QPointF(a.value("xMin").toDouble(), a.value("yMin").toDouble()),
                  QPointF(a.value("xMax").toDouble(), a.value("yMax").toDouble()));
  };
  QXmlStreamReader xml(&f);
  QRectF line;
  qsizetype lineStart = 0;
  while (!xml.atEnd()) {
    const auto token = xml.readNext();
    // A line of three letters or more that is taller than wide runs up the page (a tick
    // label "2" is taller than wide too, upright).
    if (token == QXmlStreamReader::EndElement && xml.name() == QStringView(u"line")) {
      qsizetype letters = 0;
      for (qsizetype i = lineStart; i < page.words.size(); ++i) letters += page.words[i].text.size();
      for (qsizetype i = lineStart; i < page.words.size(); ++i)
        page.words[i].turned = letters >= 3 && line.height() > 1.5 * line.width();
    }
    if (token != QXmlStreamReader::StartElement) continue;
    const auto a = xml.attributes();
    if (xml.name() == QStringView(u"page")) {
      page.size = QSizeF(a.value("width").toDouble(), a.value("height").toDouble());
    } else if (xml.name() == QStringView(u"line")) {
      line = box(a);
      lineStart = page.words.size();
    } else if (xml.name() == QStringView(u"word")) {
      const QRectF r = box(a);
      page.words.push_back({xml.readElementText(), r, false});
    }
  }
  if (xml.hasError()) page.error = "cannot read pdftotext's output: " + xml.errorString();
  return page;
}

// Every text of an SVG written by QSvgGenerator with the height it is drawn at in the SVG's
// own units: the font-size of its group times the vertical scale of the group's transform.
struct SvgText {
  QString text;
  double size = 0;
};

inline QList<SvgText> svgTexts(const QString& svg, QString* error) {
  QList<SvgText> out;
  QFile f(svg);
  if (!f.open(QIODevice::ReadOnly)) {
    *error = "cannot open " + svg;
    return out;
  }
  QXmlStreamReader xml(&f);
  struct Group {
    double fontSize = 0, scaleY = 1;
  };
  QList<Group> stack{Group{}};
  static const QRegularExpression matrix(R"(matrix\(([^)]*)\))");
  while (!xml.atEnd()) {
    const auto token = xml.readNext();
    if (token == QXmlStreamReader::EndElement && xml.name() == QStringView(u"g"))
      stack.pop_back();
    if (token != QXmlStreamReader::StartElement) continue;
    const auto a = xml.attributes();
    if (xml.name() == QStringView(u"g")) {
      Group g = stack.back();
      if (a.hasAttribute("font-size")) {
        QString fs = a.value("font-size").toString();
        g.fontSize = fs.remove("pt").remove("px").toDouble();
      }
      if (const auto m = matrix.match(a.value("transform").toString()); m.hasMatch()) {
        const QStringList v = m.captured(1).split(QRegularExpression("[ ,]+"), Qt::SkipEmptyParts);
        if (v.size() == 6) g.scaleY = std::hypot(v[2].toDouble(), v[3].toDouble());
      }
      stack.push_back(g);
    } else if (xml.name() == QStringView(u"text")) {
      double size = stack.back().fontSize;
      if (a.hasAttribute("font-size")) size = a.value("font-size").toString().remove("pt").toDouble();
      const double scale = stack.back().scaleY;
      const QString text = xml.readElementText(QXmlStreamReader::IncludeChildElements).simplified();
      if (!text.isEmpty()) out.push_back({text, size * scale});
    }
  }
  if (xml.hasError()) *error = xml.errorString();
  return out;
}

}  // namespace paralab::test
