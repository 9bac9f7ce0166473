// LessonParser's reading of lesson.md's lines: the front matter, the '## ' headings that open
// steps, retrieval practice and flashcards, Q:/A: pairs, and the fences whose blocks
// lesson_blocks.cpp checks. The format is in lessons/README.md; errors name the file and line.
// See tests/lessons/tst_lessons_format.cpp.
#include "lesson_parser.h"

#include <QRegularExpression>

#include "train/sweep.h"

namespace paralab::lessons {

namespace {

QStringList parseList(QString v) {
  v = v.trimmed();
  if (v.startsWith('[') && v.endsWith(']')) v = v.mid(1, v.size() - 2);
  QStringList out;
  for (const QString& s : v.split(',', Qt::SkipEmptyParts))
    if (!s.trimmed().isEmpty()) out << s.trimmed();
  return out;
}

QString trimBlankLines(const QStringList& lines) {
  int b = 0, e = int(lines.size());
  while (b < e && lines[b].trimmed().isEmpty()) ++b;
  while (e > b && lines[e - 1].trimmed().isEmpty()) --e;
  return lines.mid(b, e - b).join('\n');
}

}  // namespace

LessonParser::LessonParser(const QString& text, const QString& slug, const QString& path, int cores)
    : m_lines(text.split('\n')),
      m_where(path.isEmpty() ? slug + "/lesson.md" : path),
      m_cores(cores > 0 ? cores : machineCores()) {
  m_lesson.slug = slug;
  m_lesson.path = path;
  static const QRegularExpression nn("^(\\d+)-");
  const auto m = nn.match(slug);
  if (m.hasMatch()) m_lesson.number = m.captured(1).toInt();
  for (QString& l : m_lines)
    if (l.endsWith('\r')) l.chop(1);
}

ParseResult LessonParser::run() {
  int body = frontMatter();
  if (body >= 0) this->body(body);
  ParseResult r;
  r.errors = m_errors;
  if (m_errors.isEmpty()) r.lesson = m_lesson;
  return r;
}

void LessonParser::error(int line, const QString& what) {
  m_errors << QString("%1:%2: %3").arg(m_where).arg(line).arg(what);
}

int LessonParser::frontMatter() {
  if (m_lines.isEmpty() || m_lines[0].trimmed() != "---") {
    error(1,
          "a lesson starts with front matter: a line '---', then title, minutes, objectives, "
          "needs, then '---'");
    return -1;
  }
  int i = 1;
  QString listKey;  // the key whose "  - item" lines follow
  bool closed = false;
  for (; i < m_lines.size(); ++i) {
    const QString raw = m_lines[i];
    const QString line = raw.trimmed();
    if (line == "---") {
      closed = true;
      ++i;
      break;
    }
    if (line.isEmpty() || line.startsWith('#')) continue;
    if (line.startsWith("- ")) {
      if (listKey.isEmpty())
        error(i + 1, "a '- item' line must follow 'objectives:' or 'needs:'");
      else
        (listKey == "objectives" ? m_lesson.objectives : m_lesson.needs) << line.mid(2).trimmed();
      continue;
    }
    const int colon = line.indexOf(':');
    if (colon <= 0) {
      error(i + 1, QString("expected 'key: value' in the front matter, got '%1'").arg(line));
      continue;
    }
    const QString key = line.left(colon).trimmed();
    const QString value = line.mid(colon + 1).trimmed();
    listKey.clear();
    if (key == "title") {
      m_lesson.title = value;
    } else if (key == "minutes") {
      bool ok = false;
      m_lesson.minutes = value.toInt(&ok);
      if (!ok || m_lesson.minutes <= 0)
        error(i + 1, "minutes: expected a positive whole number of minutes");
    } else if (key == "objectives" || key == "needs") {
      if (value.isEmpty())
        listKey = key;
      else
        (key == "objectives" ? m_lesson.objectives : m_lesson.needs) << parseList(value);
    } else {
      error(i + 1,
            QString("unknown front-matter key '%1' (allowed: title, minutes, objectives, needs)")
                .arg(key));
    }
  }
  if (!closed) {
    error(1, "the front matter is not closed by a line '---'");
    return -1;
  }
  if (m_lesson.title.isEmpty()) error(1, "front matter: 'title' is missing");
  if (m_lesson.minutes == 0) error(1, "front matter: 'minutes' is missing");
  if (m_lesson.objectives.isEmpty()) error(1, "front matter: 'objectives' is missing (a list)");
  checkNeeds(2, m_lesson.needs);
  return i;
}

void LessonParser::checkNeeds(int line, const QStringList& needs) {
  static const QRegularExpression re("^(strategy|device):[a-z0-9-]+$");
  for (const QString& n : needs)
    if (!re.match(n).hasMatch())
      error(line, QString("need '%1' is not 'strategy:NAME' or 'device:NAME'").arg(n));
}

void LessonParser::body(int first) {
  Section section = Section::Intro;
  QStringList text;        // Markdown lines of the current intro or step
  bool wantNeeds = false;  // the line after a step heading may be "needs: ..."
  Card* card = nullptr;
  bool inAnswer = false;
  QString fence;  // the open fence's marker (``` or ~~~), "" when none
  QString block;  // the kind of the open special block, "" when an ordinary fence
  int blockLine = 0;
  QStringList blockLines;

  auto finishText = [&] {
    if (section == Section::Intro)
      m_lesson.intro = trimBlankLines(text);
    else if (section == Section::Step) {
      m_lesson.steps.last().markdown = trimBlankLines(text);
      finishStep(m_lesson.steps.last());
    }
    text.clear();
  };

  for (int i = first; i < m_lines.size(); ++i) {
    const QString& raw = m_lines[i];
    const QString line = raw.trimmed();
    const int ln = i + 1;
    // Inside a fence: collect until it closes.
    if (!fence.isEmpty()) {
      if (line == fence) {
        fence.clear();
        if (!block.isEmpty())
          takeBlock(block, blockLine, blockLines, section);
        else
          text << raw;
        block.clear();
      } else if (!block.isEmpty()) {
        blockLines << raw;
      } else {
        text << raw;
      }
      continue;
    }
    if (line.startsWith("```") || line.startsWith("~~~")) {
      fence = line.left(3);
      const QString info = line.mid(3).trimmed();
      static const QStringList kinds = {"experiment", "sweep", "prediction", "compare", "bench"};
      if (kinds.contains(info)) {
        block = info;
        blockLine = ln;
        blockLines.clear();
        if (section != Section::Step)
          error(ln, QString("a ```%1 block belongs inside a '## Step:'").arg(info));
      } else {
        text << raw;
      }
      wantNeeds = false;
      continue;
    }
    if (raw.startsWith("# ")) {
      error(ln,
            "no '# ' headings: the title comes from the front matter; steps are '## Step: title'");
      continue;
    }
    if (raw.startsWith("## ")) {
      finishText();
      const QString heading = raw.mid(3).trimmed();
      card = nullptr;
      if (heading.startsWith("Step:")) {
        if (section == Section::Retrieval || section == Section::Cards)
          error(ln, "steps come before '## Retrieval practice' and '## Flashcards'");
        section = Section::Step;
        Step s;
        s.title = heading.mid(5).trimmed();
        s.line = ln;
        if (s.title.isEmpty()) error(ln, "a step needs a title: '## Step: title'");
        // The title is the key of the learner's progress on the step (progress.h).
        for (const Step& other : m_lesson.steps)
          if (!s.title.isEmpty() && other.title == s.title)
            error(ln, QString("step title '%1' is also the title of the step on line %2 (a "
                              "step's title is unique in its lesson)")
                          .arg(s.title)
                          .arg(other.line));
        m_lesson.steps << s;
        wantNeeds = true;
      } else if (heading == "Retrieval practice") {
        section = Section::Retrieval;
      } else if (heading == "Flashcards") {
        section = Section::Cards;
      } else {
        error(ln,
              QString(
                  "'## %1': a '## ' heading is 'Step: title', 'Retrieval practice' or 'Flashcards' "
                  "(use '### ' inside a step)")
                  .arg(heading));
      }
      continue;
    }
    if (section == Section::Retrieval || section == Section::Cards) {
      QList<Card>& list = section == Section::Retrieval ? m_lesson.retrieval : m_lesson.cards;
      if (line.startsWith("Q:")) {
        list << Card{line.mid(2).trimmed(), QString(), ln};
        card = &list.last();
        inAnswer = false;
      } else if (line.startsWith("A:")) {
        if (!card || inAnswer)
          error(ln, "'A:' must follow a 'Q:'");
        else {
          card->a = line.mid(2).trimmed();
          inAnswer = true;
        }
      } else if (!line.isEmpty()) {
        if (!card)
          error(ln, "text in this section belongs to a 'Q:' or an 'A:'");
        else {
          QString& field = inAnswer ? card->a : card->q;
          field += (field.isEmpty() || field.endsWith('\n') ? "" : "\n") + line;
        }
      } else if (card) {
        QString& field = inAnswer ? card->a : card->q;
        if (!field.isEmpty() && !field.endsWith("\n\n")) field += "\n\n";
      }
      continue;
    }
    if (wantNeeds && !line.isEmpty()) {
      wantNeeds = false;
      if (line.startsWith("needs:")) {
        m_lesson.steps.last().needs = parseList(line.mid(6));
        checkNeeds(ln, m_lesson.steps.last().needs);
        continue;
      }
    }
    text << raw;
  }
  if (!fence.isEmpty())
    error(blockLine ? blockLine : int(m_lines.size()), "a fenced block is not closed");
  finishText();
  for (QList<Card>* list : {&m_lesson.retrieval, &m_lesson.cards})
    for (Card& c : *list) {
      c.q = c.q.trimmed();
      c.a = c.a.trimmed();
      if (c.a.isEmpty()) error(c.line, "this 'Q:' has no 'A:'");
    }
  if (m_lesson.steps.isEmpty())
    error(int(m_lines.size()), "a lesson has at least one '## Step: title'");
  if (m_lesson.retrieval.isEmpty())
    error(int(m_lines.size()), "'## Retrieval practice' with Q:/A: pairs is missing");
  if (m_lesson.cards.isEmpty())
    error(int(m_lines.size()), "'## Flashcards' with Q:/A: pairs is missing");
}

}  // namespace paralab::lessons
