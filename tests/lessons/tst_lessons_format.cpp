// The lesson.md format (lessons/README.md): a small lesson parsed field by field, each kind of
// mistake reported with its line, capabilities, metric paths and comparisons.
// Run: ctest -R tst_lessons_format.
#include <QJsonArray>
#include <QJsonDocument>
#include <QtTest>

#include "lesson.h"

using namespace paralab::lessons;

// A step whose prediction is answered by choosing (lessons/README.md, "prediction").
static const char* kChoiceLesson = R"LESSON(---
title: Who waits
minutes: 5
objectives: [Pick the rank that idles least]
---

## Step: A straggler

```experiment
{"ranks": 4, "straggler": "2=3", "steps": 20}
```

```prediction
{"ask": "Which rank idles least?",
 "choices": [{"label": "rank 0", "metric": "ranks[0].idle_ms"},
             {"label": "rank 2", "metric": "ranks[2].idle_ms"},
             {"label": "rank 3", "metric": "ranks[3].idle_ms"}],
 "pick": "min", "over": "median", "unit": "ms",
 "reasoning": "The straggler computes while the others wait: rank 2.",
 "expect": "rank 2"}
```

## Step: Carry forward

Done.

## Retrieval practice

Q: Why?
A: Because.

## Flashcards

Q: Card?
A: Yes.
)LESSON";

// Five steps of a recorded run (`paralab-run --ranks 4 --hidden 384 --batch 256 --straggler 2=3
// --json`), cut to the fields the choices read.
static const char* kStragglerRun[] = {
    R"({"step":1,"step_ms":827.669,"ranks":[{"rank":0,"idle_ms":669.709,"comm_ms":80.611},{"rank":1,"idle_ms":658.528,"comm_ms":48.769},{"rank":2,"idle_ms":176.877,"comm_ms":39.174},{"rank":3,"idle_ms":656.858,"comm_ms":66.519}]})",
    R"({"step":2,"step_ms":106.25,"ranks":[{"rank":0,"idle_ms":13.613,"comm_ms":60.955},{"rank":1,"idle_ms":25.775,"comm_ms":41.235},{"rank":2,"idle_ms":12.318,"comm_ms":59.887},{"rank":3,"idle_ms":36.25,"comm_ms":22.094}]})",
    R"({"step":3,"step_ms":116.895,"ranks":[{"rank":0,"idle_ms":42.708,"comm_ms":26.777},{"rank":1,"idle_ms":53.225,"comm_ms":44.07},{"rank":2,"idle_ms":1.893,"comm_ms":38.151},{"rank":3,"idle_ms":64.331,"comm_ms":18.572}]})",
    R"({"step":4,"step_ms":171.922,"ranks":[{"rank":0,"idle_ms":95.614,"comm_ms":13.694},{"rank":1,"idle_ms":119.891,"comm_ms":29.293},{"rank":2,"idle_ms":18.012,"comm_ms":32.546},{"rank":3,"idle_ms":106.821,"comm_ms":29.273}]})",
    R"({"step":5,"step_ms":174.014,"ranks":[{"rank":0,"idle_ms":101.093,"comm_ms":15.414},{"rank":1,"idle_ms":84.337,"comm_ms":15.016},{"rank":2,"idle_ms":33.821,"comm_ms":12.457},{"rank":3,"idle_ms":93.538,"comm_ms":39.919}]})"};

static const char* kLesson = R"LESSON(---
title: A tiny lesson
minutes: 5
objectives:
  - Predict a speedup
  - Measure it
needs: [strategy:sync]
---

Welcome. This is the introduction.

## Step: Run it
needs: device:cuda

Some text about an [[all-reduce]] and [[ZeRO|sharding]].

```experiment
{"ranks": 4, "hidden": 64, "steps": 20}
```

```prediction
{
  "ask": "Speedup at N ranks?",
  "formula": "1 / ((1 - p) + p / N)",
  "inputs": {"p": 0.95, "N": "$ranks"},
  "unit": "×",
  "expect": 3.5
}
```

```compare
{"metric": "samples_per_s / 2", "over": "median", "warmup": 1, "unit": "samples/s", "explain": "Because."}
```

```text
## not a heading inside a fence
```

## Step: Sweep it

```experiment
{"hidden": 64}
```

```sweep
{"ranks": [1, 2, 4], "steps": 3, "warmup": 1}
```

```bench
{"kind": "gemm-ladder", "size": 256}
```

## Retrieval practice

Q: Why?
A: Because
of reasons.

Q: Second
question?

A: Answer.

## Flashcards

Q: Card?
A: Yes.
)LESSON";

class TestLessonFormat : public QObject {
  Q_OBJECT
  // The data row's mistake (`from` replaced by `to` in `lesson`) is refused with `expected`.
  static void expectMistake(const char* lesson, const QString& slug) {
    QFETCH(QString, from);
    QFETCH(QString, to);
    QFETCH(QString, expected);
    QString text = QString(lesson);
    QVERIFY2(text.contains(from), qPrintable(from));
    text.replace(text.indexOf(from), from.size(), to);
    const ParseResult r = parseLesson(text, slug);
    QVERIFY(!r.lesson);
    QVERIFY2(r.errors.join('\n').contains(expected), qPrintable(r.errors.join('\n')));
  }

 private slots:
  void parsesEveryField() {
    const ParseResult r = parseLesson(kLesson, "07-tiny");
    QVERIFY2(r.errors.isEmpty(), qPrintable(r.errors.join('\n')));
    const Lesson& l = *r.lesson;
    QCOMPARE(l.number, 7);
    QCOMPARE(l.title, QString("A tiny lesson"));
    QCOMPARE(l.minutes, 5);
    QCOMPARE(l.objectives, QStringList({"Predict a speedup", "Measure it"}));
    QCOMPARE(l.needs, QStringList{"strategy:sync"});
    QCOMPARE(l.intro, QString("Welcome. This is the introduction."));
    QCOMPARE(l.steps.size(), 2);

    const Step& s = l.steps[0];
    QCOMPARE(s.title, QString("Run it"));
    QCOMPARE(s.line, 12);
    QCOMPARE(s.needs, QStringList{"device:cuda"});
    QVERIFY(s.markdown.startsWith("Some text about"));
    QVERIFY(s.markdown.contains("## not a heading inside a fence"));
    QVERIFY(!s.markdown.contains("experiment"));
    QCOMPARE(s.experiment->value("ranks").toInt(), 4);
    QCOMPARE(s.prediction->ask, QString("Speedup at N ranks?"));
    QCOMPARE(s.prediction->unit, QString("×"));
    QCOMPARE(*s.prediction->expect, 3.5);
    QCOMPARE(s.compare->over, QString("median"));
    QCOMPARE(s.compare->warmup, 1);
    QCOMPARE(glossaryReferences(s.markdown), QStringList({"all-reduce", "ZeRO"}));

    QString error;
    const auto ref = referenceValue(*s.prediction, *s.experiment, &error);
    QVERIFY2(ref, qPrintable(error));
    QCOMPARE(QString::number(*ref, 'f', 1), QString("3.5"));  // 1 / (0.05 + 0.95/4) = 3.48

    const Step& t = l.steps[1];
    QCOMPARE(t.sweep->ranks, QList<int>({1, 2, 4}));
    QCOMPARE(t.sweep->steps, 3);
    QCOMPARE(t.bench->kind, QString("gemm-ladder"));
    QCOMPARE(benchOption(*t.bench, "size"), 256.0);
    QCOMPARE(benchOption(*t.bench, "threads"), 0.0);  // not given: its default, every core
    QCOMPARE(benchOption(*t.bench, "repeats"), 3.0);

    // A latency block of the GPT: its context and heads, the defaults of the rest; the MLP's
    // block (no "model") as before.
    const QString gemm = "{\"kind\": \"gemm-ladder\", \"size\": 256}";
    const ParseResult gpt = parseLesson(
        QString(kLesson).replace(
            gemm, "{\"kind\": \"latency\", \"model\": \"gpt\", \"max-batch\": 64, \"seq\": 32}"),
        "07-tiny");
    QVERIFY2(gpt.errors.isEmpty(), qPrintable(gpt.errors.join('\n')));
    const Bench& g = *gpt.lesson->steps[1].bench;
    QCOMPARE(benchWord(g, "model"), QString("gpt"));
    QCOMPARE(benchOption(g, "seq"), 32.0);
    QCOMPARE(benchOption(g, "heads"), 4.0);
    QCOMPARE(benchOption(g, "hidden"), 128.0);
    const ParseResult mlp =
        parseLesson(QString(kLesson).replace(gemm, "{\"kind\": \"latency\"}"), "07-tiny");
    QVERIFY2(mlp.errors.isEmpty(), qPrintable(mlp.errors.join('\n')));
    QCOMPARE(benchWord(*mlp.lesson->steps[1].bench, "model"), QString("mlp"));

    QCOMPARE(l.retrieval.size(), 2);
    QCOMPARE(l.retrieval[0].a, QString("Because\nof reasons."));
    QCOMPARE(l.retrieval[1].q, QString("Second\nquestion?"));
    QCOMPARE(l.cards.size(), 1);
    QCOMPARE(l.cards[0].q, QString("Card?"));
    QCOMPARE(allNeeds(l), QStringList({"strategy:sync", "device:cuda"}));
  }

  void mistakesNameTheLine_data() {
    QTest::addColumn<QString>("from");
    QTest::addColumn<QString>("to");
    QTest::addColumn<QString>("expected");
    QTest::newRow("no front matter") << "---\ntitle" << "title" << "07-tiny/lesson.md:1: a lesson starts with front matter";
    QTest::newRow("unknown key") << "minutes: 5" << "minutes: 5\nauthor: x" << ":4: unknown front-matter key 'author'";
    QTest::newRow("bad minutes") << "minutes: 5" << "minutes: soon" << ":3: minutes: expected a positive";
    QTest::newRow("bad need") << "[strategy:sync]" << "[sync]" << "need 'sync' is not";
    QTest::newRow("bad heading") << "## Step: Sweep it" << "## Sweep it" << ":39: '## Sweep it': a '## ' heading is";
    QTest::newRow("h1") << "Welcome." << "# Welcome" << ":10: no '# ' headings";
    QTest::newRow("bad json") << "\"steps\": 20}" << "\"steps\": 20" << ":18: experiment: not a JSON object";
    QTest::newRow("formula error") << "p / N)\"" << "p / N\"" << "prediction: formula '1 / ((1 - p) + p / N': position 21: expected ')' to close the '(' at position 5";
    QTest::newRow("missing input") << "\"N\": \"$ranks\"}" << "\"M\": 3}" << "formula uses 'N' but 'inputs' does not give it";
    QTest::newRow("unused input") << "\"N\": \"$ranks\"}" << "\"N\": 3, \"q\": 1}" << "input 'q' is not used";
    QTest::newRow("bad reference") << "\"$ranks\"" << "\"$layers\"" << "input 'N' reads 'layers' but the step's experiment gives no number";
    QTest::newRow("typo key") << "\"unit\": \"×\"" << "\"units\": \"×\"" << "unknown key 'units'";
    QTest::newRow("no explain") << ", \"explain\": \"Because.\"" << "" << "compare: 'explain' is missing";
    QTest::newRow("bad over") << "\"median\"" << "\"max\"" << "'over' is one of first, last, median, mean";
    QTest::newRow("sweep order") << "[1, 2, 4]" << "[4, 2]" << "sweep: 'ranks' must be in increasing order";
    QTest::newRow("sweep sizing")
        << "[1, 2, 4]"
        << "\"all cores\""
        << ":45: sweep: 'ranks' is 'all cores', not a sizing: allowed \"cores\"";
    QTest::newRow("sweep sizing factor") << "[1, 2, 4]"
                                         << "\"9*cores\""
                                         << ":45: sweep: 'ranks' is '9*cores', not a sizing";
    QTest::newRow("sweep_max without sweep")
        << "\"$ranks\""
        << "\"$sweep_max\""
        << "prediction: input 'N' reads '$sweep_max' but the step has no ```sweep";
    QTest::newRow("block outside step") << "Welcome." << "```experiment\n{}\n```" << "belongs inside a '## Step:'";
    QTest::newRow("duplicate block") << "## Step: Sweep it\n\n```experiment" << "```experiment\n{}\n```\n## Step: Sweep it\n\n```experiment" << "at most one ```experiment";
    QTest::newRow("answerless card") << "A: Yes." << "" << "this 'Q:' has no 'A:'";
    QTest::newRow("stray text") << "Q: Card?" << "Stray.\nQ: Card?" << "belongs to a 'Q:' or an 'A:'";
    QTest::newRow("no cards") << "## Flashcards\n\nQ: Card?\nA: Yes." << "" << "'## Flashcards' with Q:/A: pairs is missing";
    QTest::newRow("bench kind") << "\"gemm-ladder\"" << "\"gemm\"" << ":49: bench: 'kind' is 'gemm', not a benchmark (allowed: gemm-ladder, simd-width, false-sharing, latency, roofline, layouts, gpu-counts, gil)";
    QTest::newRow("bench no kind") << "\"kind\": \"gemm-ladder\", " << "" << ":49: bench: 'kind' is missing (allowed: gemm-ladder";
    QTest::newRow("bench range") << "\"size\": 256" << "\"size\": 9000" << ":49: bench: 'size' of gemm-ladder is a whole number 16..2048";
    QTest::newRow("bench key of another kind") << "\"size\": 256" << "\"increments\": 256" << ":49: bench: unknown key 'increments' (allowed: kind, size, threads, repeats)";
    QTest::newRow("bench model") << "\"kind\": \"gemm-ladder\", \"size\": 256" << "\"kind\": \"latency\", \"model\": \"rnn\"" << ":49: bench: 'model' of latency is one of mlp, gpt";
    QTest::newRow("bench seq of the mlp") << "\"kind\": \"gemm-ladder\", \"size\": 256" << "\"kind\": \"latency\", \"seq\": 128" << ":49: bench: 'seq' of latency needs \"model\": \"gpt\"";
    QTest::newRow("bench roofline precision") << "\"kind\": \"gemm-ladder\", \"size\": 256" << "\"kind\": \"roofline\", \"precision\": \"bf16\"" << ":49: bench: 'precision' of roofline is one of fp32, tf32";
    QTest::newRow("bench layouts gpus") << "\"kind\": \"gemm-ladder\", \"size\": 256" << "\"kind\": \"layouts\", \"gpus\": 4" << ":49: bench: 'gpus' of layouts is a whole number 8..16384";
    QTest::newRow("bench unknown key") << "\"size\": 256" << "\"size\": 256, \"sizes\": 8" << ":49: bench: unknown key 'sizes' (allowed: kind, size, threads, repeats)";
    QTest::newRow("bench key of other kinds") << "\"size\": 256" << "\"size\": 256, \"hidden\": 64" << ":49: bench: unknown key 'hidden' (allowed: kind, size, threads, repeats); 'hidden' is a key of latency, roofline, layouts";
    QTest::newRow("bench wrong type") << "\"size\": 256" << "\"size\": \"big\"" << ":49: bench: 'size' of gemm-ladder is a whole number 16..2048";
    QTest::newRow("bench heads") << "\"kind\": \"gemm-ladder\", \"size\": 256" << "\"kind\": \"latency\", \"model\": \"gpt\", \"hidden\": 64, \"heads\": 5" << ":49: bench: 'heads' (5) of the GPT must divide 'hidden' (64)";
    QTest::newRow("repeated step title") << "## Step: Sweep it" << "## Step: Run it"
                                         << ":39: step title 'Run it' is also the title of the step on line";
    QTest::newRow("unclosed fence") << "## Flashcards" << "```text\n## Flashcards" << "a fenced block is not closed";
  }
  void mistakesNameTheLine() { expectMistake(kLesson, "07-tiny"); }

  void machineSizedSweeps_data() {
    QTest::addColumn<int>("cores");
    QTest::addColumn<QList<int>>("upTo");  // "cores"
    QTest::addColumn<QList<int>>("past");  // "2*cores"
    QTest::addColumn<QString>("basis");    // what a fit over "2*cores" stands on
    QTest::newRow("1 core") << 1 << QList<int>{1, 2} << QList<int>{1, 2}
                            << "fitted on ranks 1–2, cores shared past 1";
    QTest::newRow("2 cores") << 2 << QList<int>{1, 2} << QList<int>{1, 2, 4}
                             << "fitted on ranks 1–4, cores shared past 2";
    QTest::newRow("6 cores") << 6 << QList<int>{1, 2, 4, 6} << QList<int>{1, 2, 4, 6, 8, 12}
                             << "fitted on ranks 1–12, cores shared past 6";
  }
  // A sweep sized to the machine, and the inputs that follow it, as machines with 1, 2 and 6
  // cores see them: the core count is given, so the test is the same on every machine.
  void machineSizedSweeps() {
    QFETCH(int, cores);
    QFETCH(QList<int>, upTo);
    QFETCH(QList<int>, past);
    QFETCH(QString, basis);
    const QString listed = "{\"ranks\": [1, 2, 4], \"steps\": 3, \"warmup\": 1}\n```\n";
    const QString predicted =
        "\n```prediction\n{\"ask\": \"Past?\", \"formula\": \"N / C\", \"inputs\": {\"N\": "
        "\"$sweep_max\", \"C\": \"$cores\"}, \"unit\": \"\"}\n```\n\n```compare\n{\"metric\": "
        "\"amdahl_p\", \"unit\": \"\", \"explain\": \"Why.\"}\n```\n";
    for (const QString form : {"cores", "2*cores"}) {
      QString text = QString(kLesson);
      QVERIFY(text.contains(listed));
      text.replace(listed, QString(listed).replace("[1, 2, 4]", "\"" + form + "\"") + predicted);
      const ParseResult r = parseLesson(text, "07-tiny", {}, cores);
      QVERIFY2(r.errors.isEmpty(), qPrintable(r.errors.join('\n')));
      const Step& s = r.lesson->steps[1];
      QCOMPARE(s.sweep->sizedTo, form);
      QCOMPARE(s.sweep->cores, cores);
      QCOMPARE(s.sweep->ranks, form == "cores" ? upTo : past);
      // "$sweep_max" is the sweep's largest rank count here, "$cores" the cores.
      QString error;
      const auto ref = referenceValue(*s.prediction, *s.experiment, &error);
      QVERIFY2(ref, qPrintable(error));
      QCOMPARE(*ref, double(s.sweep->ranks.last()) / cores);
      if (form == "2*cores")
        QCOMPARE(fitNote(s), basis);
      else if (cores >= 2)
        QCOMPARE(fitNote(s), QString("fitted on ranks 1–%1, a core each").arg(cores));
    }
    // A listed sweep is as written, on any machine; the first step compares no fit.
    const Lesson listedLesson = *parseLesson(kLesson, "07-tiny", {}, cores).lesson;
    QCOMPARE(listedLesson.steps[1].sweep->ranks, QList<int>({1, 2, 4}));
    QVERIFY(listedLesson.steps[1].sweep->sizedTo.isEmpty());
    QCOMPARE(fitNote(listedLesson.steps[0]), QString());
  }

  void capabilities() {
    const QStringList available{"strategy:sync", "device:cpu"};
    QCOMPARE(missingNeeds({"strategy:sync"}, available), QStringList());
    QCOMPARE(missingNeeds({"strategy:sync", "strategy:model-parallel", "device:cuda"}, available),
             QStringList({"strategy:model-parallel", "device:cuda"}));
    QVERIFY(describeMissing("device:cuda").contains("GPU"));
    QVERIFY(describeMissing("strategy:moe").contains("coming"));
  }

  void metricPaths() {
    const QJsonObject step{
        {"step", 3}, {"samples_per_s", 1000.0}, {"emulated", "ethernet"},
        {"ranks", QJsonArray{QJsonObject{{"rank", 0}, {"bytes_sent", 100}, {"mem", QJsonObject{{"params", 40}}}},
                             QJsonObject{{"rank", 1}, {"bytes_sent", 300}}}}};
    QCOMPARE(*metricAt(step, "samples_per_s"), 1000.0);
    QCOMPARE(*metricAt(step, "ranks[1].bytes_sent"), 300.0);
    QCOMPARE(*metricAt(step, "ranks[0].mem.params"), 40.0);
    QCOMPARE(*metricAt(step, "ranks[rank=1].bytes_sent"), 300.0);
    QVERIFY(!metricAt(step, "ranks[2].bytes_sent"));
    QVERIFY(!metricAt(step, "emulated"));  // a string is not a number
    QVERIFY(!metricAt(step, "nothing"));

    Compare c;
    c.metric = "samples_per_s / 1000 + ranks[1].bytes_sent";
    QList<QJsonObject> steps;
    for (double v : {9000.0, 1000.0, 3000.0, 2000.0}) {
      QJsonObject s = step;
      s["samples_per_s"] = v;
      steps << s;
    }
    c.over = "last";
    QCOMPARE(*measuredValue(c, steps), 302.0);
    c.over = "first";
    QCOMPARE(*measuredValue(c, steps), 309.0);
    c.over = "median";
    c.warmup = 1;  // leaves out the first, slow step
    QCOMPARE(*measuredValue(c, steps), 302.0);
    c.over = "mean";
    QCOMPARE(*measuredValue(c, steps), 302.0);
    c.metric = "missing";
    QString error;
    QVERIFY(!measuredValue(c, steps, &error));
    QVERIFY2(error.contains("no step of the run reports it: position 1: 'missing' is not defined"), qPrintable(error));
    // A metric only some steps report (spread on averaging steps): chosen among those.
    steps[1]["spread"] = 0.5;
    steps[3]["spread"] = 0.25;
    c.metric = "spread";
    c.over = "last";
    QCOMPARE(*measuredValue(c, steps), 0.25);
    c.over = "first";
    QCOMPARE(*measuredValue(c, steps), 0.5);
    c.over = "mean";
    c.warmup = 0;
    QCOMPARE(*measuredValue(c, steps), 0.375);

    const QJsonObject sweep{{"amdahl_p", 0.9},
                            {"points", QJsonArray{QJsonObject{{"ranks", 1}, {"speedup", 1.0}},
                                                  QJsonObject{{"ranks", 8}, {"speedup", 4.7}}}}};
    c.metric = "points[ranks=8].speedup";
    QCOMPARE(*measuredValue(c, sweep), 4.7);
  }

  // The sweep's first and last points and the point at its cores, in a sweep recorded on a
  // 2-core machine: paralab-run --sweep 'ranks=4*cores' --hidden 64 --batch 128 --steps 3
  // --eval-every 0 --json (the configuration left out).
  void sweepSelectors() {
    const QByteArray recorded =
        R"({"amdahl_p": -3.5048865858408442, "amdahl_r2": 0.8347592290692387,
      "cores": 2, "gustafson_r2": 0.5037779137722749, "gustafson_serial_fraction": 1.1335881828364467,
      "points": [
        {"efficiency": 1.0, "ranks": 1, "samples_per_s": 154548.86823139346, "speedup": 1.0, "step_ms": 0.828217},
        {"efficiency": 0.2411645662504659, "ranks": 2, "samples_per_s": 74543.42154304883, "speedup": 0.4823291325009318, "step_ms": 1.71712},
        {"efficiency": 0.11827454096367923, "ranks": 4, "samples_per_s": 73116.78578609685, "speedup": 0.4730981638547169, "step_ms": 1.750624},
        {"efficiency": 0.02172631408186723, "ranks": 8, "samples_per_s": 26862.218017538933, "speedup": 0.17381051265493783, "step_ms": 4.765057}],
      "scaling": "strong", "schema": 1, "sweep": true})";
    const QJsonObject sweep = QJsonDocument::fromJson(recorded).object();
    QVERIFY(!sweep.isEmpty());
    QCOMPARE(*metricAt(sweep, "points[first].step_ms"), 0.828217);
    QCOMPARE(*metricAt(sweep, "points[first].ranks"), 1.0);
    QCOMPARE(*metricAt(sweep, "points[last].ranks"), 8.0);
    QCOMPARE(*metricAt(sweep, "points[last].speedup"), 0.17381051265493783);
    QCOMPARE(*metricAt(sweep, "points[ranks=$cores].speedup"), 0.4823291325009318);
    QVERIFY(!metricAt(sweep, "points[ranks=$nothing].speedup"));  // no such number at the top
    QVERIFY(!metricAt(sweep, "points[ranks=$scaling].speedup"));  // a string, not a number
    QVERIFY(!metricAt(QJsonObject{{"points", QJsonArray{}}}, "points[last].speedup"));
    // The oversubscription step's comparison: 8 ranks' speedup against 2 ranks' (the cores).
    Compare c;
    c.metric = "points[last].speedup / points[ranks=$cores].speedup";
    QCOMPARE(*measuredValue(c, sweep), 0.17381051265493783 / 0.4823291325009318);
  }

  void choicesParse() {
    const ParseResult r = parseLesson(kChoiceLesson, "09-who");
    QVERIFY2(r.lesson, qPrintable(r.errors.join('\n')));
    const Prediction& p = *r.lesson->steps[0].prediction;
    QVERIFY(p.isChoice());
    QCOMPARE(p.line, 13);
    QCOMPARE(p.choices.size(), 3);
    QCOMPARE(p.choices[1].label, QString("rank 2"));
    QCOMPARE(p.choices[1].metric, QString("ranks[2].idle_ms"));
    QCOMPARE(p.pick, QString("min"));
    QCOMPARE(p.over, QString("median"));
    QCOMPARE(p.unit, QString("ms"));
    QCOMPARE(p.expectChoice, QString("rank 2"));
    QVERIFY(p.formula.isEmpty() && !p.expect);
  }

  void choiceMistakesNameTheLine_data() {
    QTest::addColumn<QString>("from");
    QTest::addColumn<QString>("to");
    QTest::addColumn<QString>("expected");
    QTest::newRow("unknown key") << "\"pick\": \"min\"" << "\"pick\": \"min\", \"formula\": \"1\""
        << ":13: prediction: unknown key 'formula' (allowed: ask, choices, pick, over, warmup, unit, reasoning, expect)";
    QTest::newRow("unknown key of a choice") << "\"label\": \"rank 0\"" << "\"name\": \"rank 0\""
        << ":13: prediction: choice 1: unknown key 'name' (allowed: label, metric)";
    QTest::newRow("expect not a label") << "\"expect\": \"rank 2\"" << "\"expect\": \"rank 1\""
        << ":13: prediction: 'expect' is the label the reasoning gives, one of: rank 0, rank 2, rank 3";
    QTest::newRow("missing metric") << ", \"metric\": \"ranks[3].idle_ms\"" << ""
        << ":13: prediction: choice 3: 'metric' is missing";
    QTest::newRow("bad metric") << "ranks[3].idle_ms" << "ranks[3].idle_ms +"
        << ":13: prediction: choice 3: metric 'ranks[3].idle_ms +'";
    QTest::newRow("bad pick") << "\"pick\": \"min\"" << "\"pick\": \"least\""
        << ":13: prediction: 'pick' is max or min";
    QTest::newRow("one choice") << "{\"label\": \"rank 0\", \"metric\": \"ranks[0].idle_ms\"},\n             {\"label\": \"rank 2\", \"metric\": \"ranks[2].idle_ms\"},\n             {\"label\": \"rank 3\", \"metric\": \"ranks[3].idle_ms\"}" << "{\"label\": \"rank 2\", \"metric\": \"ranks[2].idle_ms\"}"
        << ":13: prediction: 'choices' is a list of at least two";
    QTest::newRow("label twice") << "\"label\": \"rank 3\"" << "\"label\": \"rank 0\""
        << ":13: prediction: choice 3: 'rank 0' is given twice";
    QTest::newRow("no experiment") << "```experiment\n{\"ranks\": 4, \"straggler\": \"2=3\", \"steps\": 20}\n```" << ""
        << ":11: prediction: choices are measured by the step's ```experiment";
    QTest::newRow("with a compare") << "## Step: Carry forward" << "```compare\n{\"metric\": \"loss\", \"explain\": \"x\"}\n```\n\n## Step: Carry forward"
        << ":23: compare: a prediction with choices is compared by its choices' metrics";
  }
  void choiceMistakesNameTheLine() { expectMistake(kChoiceLesson, "09-who"); }

  // The measured answer of a recorded run: each choice's median after the 2 warm-up steps
  // (steps 3 to 5), the smallest or largest of them.
  void measuredChoiceOfARecordedRun() {
    Prediction p = *parseLesson(kChoiceLesson, "09-who").lesson->steps[0].prediction;
    QList<QJsonObject> steps;
    for (const char* s : kStragglerRun) steps << QJsonDocument::fromJson(s).object();
    ChoiceMeasurement m = measuredChoice(p, steps);
    QVERIFY2(m.error.isEmpty(), qPrintable(m.error));
    QCOMPARE(m.values, QList<double>({95.614, 18.012, 93.538}));
    QCOMPARE(m.answer, 1);  // rank 2 idles least
    p.pick = "max";
    QCOMPARE(measuredChoice(p, steps).answer, 0);  // rank 0: 95.614 ms against rank 3's 93.538
    p.over = "last";
    QCOMPARE(measuredChoice(p, steps).answer, 0);  // 101.093 against 93.538
    p.over = "first";  // step 1 (no warm-up for first and last): rank 0, 669.709 ms
    QCOMPARE(measuredChoice(p, steps).answer, 0);
    p.choices[0].metric = "ranks[7].idle_ms";  // no such rank: no answer, and it says which
    m = measuredChoice(p, steps);
    QCOMPARE(m.answer, -1);
    QVERIFY2(m.error.startsWith("rank 0: no step of the run reports it"), qPrintable(m.error));
    // A tie has no answer either.
    p.choices[0].metric = "ranks[3].idle_ms";
    m = measuredChoice(p, steps);
    QCOMPARE(m.answer, -1);
    QVERIFY2(m.error.contains("measured the same"), qPrintable(m.error));
  }
};

QTEST_GUILESS_MAIN(TestLessonFormat)
#include "tst_lessons_format.moc"
