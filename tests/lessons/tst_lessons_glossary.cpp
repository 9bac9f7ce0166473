// The glossary: parsing terms and aliases, finding them in text (whole words, plurals, case
// rules, never inside code), making them links in a lesson's Markdown and in answers.
// Run: ctest -R tst_lessons_glossary.
#include <QtTest>

#include "glossary.h"
#include "lesson.h"

using namespace paralab::lessons;

static const char* kGlossary = R"(# Glossary

Intro text is ignored.

## all-reduce
Also: allreduce
Every rank ends with the sum.

## ring all-reduce
Reduce-scatter, then all-gather.

## ZeRO
Sharding of model states.

## micro-batch
A slice of a batch.

## NVLink
A GPU-to-GPU link.
)";

class TestGlossary : public QObject {
  Q_OBJECT
 private slots:
  // [[term|words]] links where written; each other term at its first plain occurrence only,
  // never in a heading, in `code` or inside a link already made.
  void linksMarkdown() {
    const Glossary g = Glossary::parse(kGlossary);
    const QString md = g.linkMarkdown(
        "## ZeRO here\nA [[ring all-reduce|ring]] then ZeRO and ZeRO, `all-reduce` then "
        "all-reduce.");
    QCOMPARE(md, QString("## ZeRO here\nA [ring](glossary:ring%20all-reduce) then "
                         "[ZeRO](glossary:ZeRO) and ZeRO, `all-reduce` then "
                         "[all-reduce](glossary:all-reduce)."));
  }

  // A card's or question's answer as rich text: the first plain occurrence of each term is a
  // link whose hover text is its definition; code and escaping stay as paragraphHtml makes them.
  void linksAnswers() {
    const Glossary g = Glossary::parse(kGlossary);
    const QString html = paragraphHtml(
        "ZeRO shards <state>; `all-reduce` in code,\n  then all-reduce and ZeRO.", &g);
    QCOMPARE(html, QString("<a href=\"glossary:ZeRO\">ZeRO</a> shards &lt;state&gt;; "
                           "<code>all-reduce</code> in code, then "
                           "<a href=\"glossary:all-reduce\">all-reduce</a> and ZeRO."));
    QCOMPARE(paragraphHtml("then all-reduce"), QString("then all-reduce"));  // no glossary
    QCOMPARE(g.tooltip("glossary:ring%20all-reduce"),
             QString("<b>ring all-reduce</b><br>Reduce-scatter, then all-gather."));
    QVERIFY(g.tooltip("lesson:02-amdahl/1").isEmpty());
  }

  void parses() {
    QStringList errors;
    const Glossary g = Glossary::parse(kGlossary, &errors);
    QVERIFY2(errors.isEmpty(), qPrintable(errors.join('\n')));
    QCOMPARE(g.terms().size(), 5);
    QCOMPARE(g.terms()[0].term, QString("all-reduce"));
    QCOMPARE(g.terms()[0].aliases, QStringList{"allreduce"});
    QCOMPARE(g.terms()[0].definition, QString("Every rank ends with the sum."));
    QCOMPARE(g.terms()[0].line, 5);
    QVERIFY(g.find("All-Reduces"));
    QVERIFY(g.find("allreduce"));
    QVERIFY(g.find("micro-batches"));
    QVERIFY(!g.find("zero"));  // capitalised terms match only as written
    QCOMPARE(g.find("ZeRO")->term, QString("ZeRO"));
  }

  void problemsAreReported() {
    QStringList errors;
    Glossary::parse("## a\nA.\n## b\n\n## a\nAgain.\n", &errors);
    QCOMPARE(errors.size(), 2);
    QVERIFY2(errors[0].contains("'b' has no definition"), qPrintable(errors[0]));
    QVERIFY2(errors[1].contains("'a' is defined twice"), qPrintable(errors[1]));
  }

  void findsTermsInText() {
    const Glossary g = Glossary::parse(kGlossary);
    const QString text =
        "A ring all-reduce beats the naive all-reduce. Two allreduces, four micro-batches over NVLink; "
        "ZeRO is not zero, and `--zero 3` or\n```\nall-reduce in code\n```\nis code. nvlink is lowercase.";
    const QList<TermMatch> m = g.findIn(text);
    QStringList found;
    for (const TermMatch& t : m) found << t.term + "=" + text.mid(t.start, t.length);
    QCOMPARE(found, QStringList({"ring all-reduce=ring all-reduce", "all-reduce=all-reduce",
                                 "all-reduce=allreduces", "micro-batch=micro-batches", "NVLink=NVLink",
                                 "ZeRO=ZeRO"}));
  }

  void wholeWordsOnly() {
    const Glossary g = Glossary::parse(kGlossary);
    QVERIFY(g.findIn("pre-all-reducer ZeROs NVLinked").size() == 1);  // only "ZeROs" (plural)
  }
};

QTEST_GUILESS_MAIN(TestGlossary)
#include "tst_lessons_glossary.moc"
