// The per-step record: its JSON reads back to the same record, every line says its schema, a
// bad line is refused naming the field, every name it writes is defined in
// lessons/reference/metrics.md, and the trainer's own steps (data, pipeline, expert and
// asynchronous layouts) travel through it unchanged. Run: ctest -R tst_metrics
#include <QFile>
#include <QRegularExpression>
#include <QtTest>
#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "metrics/metrics.h"
#include "metrics/run_record.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

// Every field set, with values that do not survive a lossy trip (17 significant digits).
StepMetrics fullStep() {
  StepMetrics m;
  m.step = 4242;
  m.loss = 2.302585092994046;
  m.stepMs = 12.345678901234567;
  m.samplesPerS = 20736.123456789012;
  m.forwardMs = 1.1, m.backwardMs = 2.2, m.optimizerMs = 0.3, m.dataMs = 0.04;
  m.testAccuracy = 0.8125;
  m.staleness = 1.75;
  m.spread = 0.0123;
  m.bubble = 0.4;
  m.bubbleReference = 3.0 / 7.0;
  m.accumulate = 4;
  m.expertTokens = {{10, 20, 30, 40}, {25, 25, 25, 25}};
  m.droppedTokens = 7;
  m.auxLoss = 0.0101;
  m.emulated = "pcie";
  for (int r = 0; r < 3; ++r) {
    RankMetrics k;
    k.rank = r;
    k.lossSum = 100.5 + r;
    k.samples = 43;
    k.computeMs = 3.3 + r, k.commMs = 1.0 / 3.0, k.idleMs = 0.1 * r;
    k.dataMs = 0.01, k.forwardMs = 1.1, k.backwardMs = 2.2, k.optimizerMs = 0.3;
    k.bytesSent = 1'000'000'007LL * (r + 1);
    k.bytesRecv = 999'999'937LL;
    k.sentTo = {0, 12345, 678};
    k.bytesModelled = r == 1;
    k.ops = {{"allreduce", "dp", 3, 600, 600, 0.25}, {"send", "pp", 1, 78, 0, 1.0 / 7.0}};
    k.staleness = 1.5 + r;
    k.spread = 0.01;
    k.stage = StageTimes{1'000'000'000'000LL + r, 1'000'000'500'000LL, 400'000, true};
    k.bubble = 0.2 * r;
    k.expertTokens = {{5, 10, 15, 20}, {12, 13, 12, 13}};
    k.droppedTokens = r;
    k.tokens = 64 + r;
    k.auxLoss = 0.003;
    for (int c = 0; c < kMemCategories; ++c) {
      k.mem.current[size_t(c)] = 1000 * (c + 1) + r;
      k.mem.peak[size_t(c)] = 2000 * (c + 1) + r;
    }
    k.mem.peakTotal = 99'999 + r;
    m.ranks.push_back(k);
  }
  return m;
}

// What a reader of the file sees: the line as text, parsed again.
StepMetrics throughText(const StepMetrics& m) {
  return stepMetricsFromJson(nlohmann::json::parse(toJson(m).dump()));
}

QString readError(const nlohmann::json& line) {
  try {
    stepMetricsFromJson(line);
  } catch (const std::runtime_error& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

// Names in the first cell of metrics.md's table rows, and in `{a, b, c}` lists inside them.
std::set<std::string> documentedNames() {
  QFile doc(PARALAB_SOURCE_DIR "/lessons/reference/metrics.md");
  if (!doc.open(QIODevice::ReadOnly | QIODevice::Text)) return {};
  const QString text = QString::fromUtf8(doc.readAll());
  std::set<std::string> documented;
  static const QRegularExpression code("`([a-z_.{}, ]+)`");
  for (const QString& row : text.split('\n')) {
    if (!row.startsWith('|')) continue;
    for (auto m = code.globalMatch(row); m.hasNext();)
      for (const QString& name : m.next().captured(1).remove('{').remove('}').split(
               QRegularExpression("[ ,.]+"), Qt::SkipEmptyParts))
        documented.insert(name.toStdString());
  }
  return documented;
}

// Every key of `j`, at any depth (array elements' keys included).
void collectKeys(const nlohmann::json& j, std::set<std::string>& keys) {
  if (j.is_object())
    for (const auto& [key, value] : j.items()) {
      keys.insert(key);
      collectKeys(value, keys);
    }
  else if (j.is_array())
    for (const auto& value : j) collectKeys(value, keys);
}

}  // namespace

class TestMetrics : public QObject {
  Q_OBJECT

 private slots:
  // A serial step is all compute: its spans cover the loss, the buffers and the batch's upload
  // too, so idle_ms (time under no span) is only the gaps between them. It was the whole loss
  // before (4 % of a GPT step).
  void serialStepIsCoveredBySpans_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("dataset");
    QTest::addColumn<int>("hidden");
    QTest::newRow("mlp") << "mlp" << "synthetic" << 64;
    QTest::newRow("gpt") << "gpt" << "fortunes" << 128;  // 114 characters: the loss is not small
  }
  void serialStepIsCoveredBySpans() {
    QFETCH(QString, model);
    QFETCH(QString, dataset);
    QFETCH(int, hidden);
    RunConfig c;
    c.model = *fromName<ModelKind>(model.toStdString());
    c.dataset = dataset.toStdString();
    c.hidden = hidden, c.batch = model == "gpt" ? 32 : 256, c.evalEvery = 0;
    Trainer t(c);
    std::vector<double> share;
    for (int i = 0; i < 7; ++i) {
      const StepMetrics m = t.step();
      if (i >= 2) share.push_back(m.ranks[0].idleMs / m.stepMs);
    }
    std::sort(share.begin(), share.end());
    const double median = share[share.size() / 2];
    qInfo("%s: idle %.2f %% of a serial step (median of 5)", qPrintable(model), 100 * median);
    QVERIFY2(median < 0.025, qPrintable(QString("idle %1 % of the step").arg(100 * median)));
  }

  void roundTripKeepsEveryField() {
    const StepMetrics full = fullStep();
    QVERIFY(throughText(full) == full);
    // And with every optional figure absent: absent again, not zero.
    StepMetrics bare;
    bare.step = 1;
    bare.loss = 2.5;
    bare.ranks.resize(2);
    bare.ranks[1].rank = 1;
    const StepMetrics back = throughText(bare);
    QVERIFY(back == bare);
    QVERIFY(!back.testAccuracy && !back.ranks[0].stage && !back.ranks[1].tokens);
    // A record that differs in one rank's field is not equal: the comparison sees the ranks.
    StepMetrics other = full;
    other.ranks[2].ops[1].ms += 1e-12;
    QVERIFY(!(throughText(other) == full));
  }

  void everyLineCarriesItsSchema() {
    const nlohmann::json line = toJson(fullStep());
    QCOMPARE(line.at("schema").get<int>(), kMetricsSchema);
    nlohmann::json newer = line;
    newer["schema"] = kMetricsSchema + 1;
    QVERIFY2(readError(newer).startsWith("schema:"), qPrintable(readError(newer)));
    nlohmann::json none = line;
    none.erase("schema");
    QCOMPARE(readError(none), QString("schema: missing"));
  }

  void badLinesNameTheField() {
    nlohmann::json line = toJson(fullStep());
    line["ranks"][1].erase("comm_ms");
    QCOMPARE(readError(line), QString("ranks[1].comm_ms: missing"));
    line = toJson(fullStep());
    line["ranks"][2]["mem"]["grads"] = "many";
    QCOMPARE(readError(line), QString("ranks[2].mem.grads: of the wrong type"));
    line = toJson(fullStep());
    line["ranks"][0]["ops"][1].erase("group");
    QCOMPARE(readError(line), QString("ranks[0].ops[1].group: missing"));
    line = toJson(fullStep());
    line["step_ms"] = nullptr;
    QCOMPARE(readError(line), QString("step_ms: of the wrong type"));
  }

  // One schema, documented once: every name a line can hold is in metrics.md's tables.
  void everyNameIsDocumented() {
    const std::set<std::string> documented = documentedNames();
    std::set<std::string> written;
    collectKeys(toJson(fullStep()), written);
    QVERIFY(written.size() > 40);
    for (const std::string& key : written)
      QVERIFY2(documented.count(key),
               qPrintable("not in metrics.md: " + QString::fromStdString(key)));
  }

  // A recorded run (paralab-run --json, the window's run.jsonl): its steps and settings read
  // back as written, its summary's names documented; a bad line is refused naming its number.
  void recordedRunReadsBack() {
    RunConfig c;
    c.hidden = 48, c.ranks = 3, c.strategy = "local-sgd", c.link = "nvlink";
    StepMetrics a = fullStep(), b = fullStep();
    a.step = 1, b.step = 2, b.loss = 1.5, b.testAccuracy.reset();
    RunSummary summary;
    summary.add(a), summary.add(b);
    QCOMPARE(summary.steps, int64_t(2));
    QCOMPARE(summary.finalLoss, 1.5);
    QCOMPARE(*summary.testAccuracy, 0.8125);  // the last one measured
    QCOMPARE(summary.meanStepMs(), a.stepMs);
    QVERIFY(std::abs(summary.samplesPerS() - a.samplesPerS) < 1e-9 * a.samplesPerS);
    const nlohmann::json last = toJson(summary, c);
    std::set<std::string> names;
    for (const auto& [key, value] : last.items()) names.insert(key);
    const std::set<std::string> documented = documentedNames();
    for (const std::string& key : names)
      QVERIFY2(documented.count(key),
               qPrintable("not in metrics.md: " + QString::fromStdString(key)));
    QCOMPARE(last.at("emulated").get<std::string>(), std::string("nvlink"));

    std::stringstream file;
    file << toJson(a).dump() << '\n' << '\n' << toJson(b).dump() << '\n' << last.dump() << '\n';
    std::vector<StepMetrics> steps;
    RunConfig read;
    bool hasSettings = false;
    QCOMPARE(readRecordedRun(
                 file, [&](const StepMetrics& m) { steps.push_back(m); }, &read, &hasSettings),
             std::string());
    QVERIFY(hasSettings);
    QCOMPARE(int(steps.size()), 2);
    QVERIFY(steps[0] == a && steps[1] == b);
    QVERIFY(read.toJson() == c.toJson());

    // Refusals: each names the line.
    const auto error = [](const std::string& text) {
      std::stringstream in(text);
      RunConfig ignored;
      bool settings = false;
      return QString::fromStdString(readRecordedRun(
          in, [](const StepMetrics&) {}, &ignored, &settings));
    };
    const std::string stepLine = toJson(a).dump() + "\n";
    QVERIFY(error(stepLine + "{not json\n").startsWith("line 2: not a JSON object"));
    QVERIFY(error(stepLine + last.dump() + "\n" + stepLine).startsWith("line 3: a line after"));
    nlohmann::json noLoss = toJson(b);
    noLoss.erase("loss");
    QCOMPARE(error(stepLine + noLoss.dump() + "\n"), QString("line 2: loss: missing"));
    nlohmann::json badConfig = last;
    badConfig["config"]["hidden"] = "wide";
    QVERIFY2(error(stepLine + badConfig.dump() + "\n").startsWith("line 2: hidden"),
             qPrintable(error(stepLine + badConfig.dump() + "\n")));
    QVERIFY(error("").startsWith("no step in it"));
    // Without the summary the steps still read; the caller is told there were no settings.
    std::stringstream stopped(stepLine);
    RunConfig unset;
    QCOMPARE(readRecordedRun(
                 stopped, [](const StepMetrics&) {}, &unset, &hasSettings),
             std::string());
    QVERIFY(!hasSettings);
    // A last line cut short: the steps before it stand when the caller takes that, and the
    // line is named; anything after it, or no step before it, is still refused.
    const std::string cutLine = toJson(b).dump().substr(0, 50);
    int64_t cut = -1;
    int stepsRead = 0;
    std::stringstream cutShort(stepLine + cutLine + "\n\n");
    QCOMPARE(readRecordedRun(
                 cutShort, [&](const StepMetrics&) { ++stepsRead; }, &unset, &hasSettings, &cut),
             std::string());
    QCOMPARE(cut, int64_t(2));
    QCOMPARE(stepsRead, 1);
    QVERIFY(error(stepLine + cutLine).startsWith("line 2: not a JSON object"));  // not asked
    std::stringstream middle(stepLine + cutLine + "\n" + stepLine);
    QVERIFY(readRecordedRun(middle, [](const StepMetrics&) {}, &unset, &hasSettings, &cut)
                .starts_with("line 2: not a JSON object"));
    std::stringstream only(cutLine);
    QVERIFY(readRecordedRun(only, [](const StepMetrics&) {}, &unset, &hasSettings, &cut)
                .starts_with("line 1: incomplete"));
    nlohmann::json newerSummary = last;
    newerSummary["schema"] = kMetricsSchema + 1;
    QVERIFY2(error(stepLine + newerSummary.dump() + "\n").startsWith("line 2: schema: version"),
             qPrintable(error(stepLine + newerSummary.dump() + "\n")));
  }

  // The trainer's steps as they leave the engine (the Session's snapshots, `--json`, the
  // window's run file): each layout's per-rank figures under the same names, read back to the
  // same record, every name documented.
  void trainerStepsReadBack_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("pp");
    const auto row = [](const char* name, QString strategy, QString model, int pp) {
      QTest::addRow("%s", name) << strategy << model << pp;
    };
    row("sync ZeRO-1", "sync", "mlp", 1);
    row("pipeline", "sync", "mlp", 2);
    row("experts", "sync", "moe", 1);
    row("hogwild", "hogwild", "mlp", 1);
    row("local SGD", "local-sgd", "mlp", 1);
  }
  void trainerStepsReadBack() {
    QFETCH(QString, strategy);
    QFETCH(QString, model);
    QFETCH(int, pp);
    RunConfig c;
    c.dataset = "synthetic";
    c.hidden = 16;
    c.batch = 32;
    c.ranks = 2;
    c.evalEvery = 2;
    c.evalSamples = 64;
    c.strategy = strategy.toStdString();
    c.model = *fromName<ModelKind>(model.toStdString());
    c.pp = pp;
    c.microbatches = pp > 1 ? 4 : 1;
    c.zero = strategy == "sync" && model == "mlp" && pp == 1 ? 1 : 0;
    if (const auto err = c.validate()) QFAIL(err->c_str());
    Trainer trainer(c);
    const std::set<std::string> documented = documentedNames();
    std::set<std::string> written;
    for (int i = 0; i < c.syncEvery; ++i) {  // local SGD's spread at its first averaging
      const StepMetrics m = trainer.step();
      QCOMPARE(int(m.ranks.size()), 2);
      const nlohmann::json line = toJson(m);
      QCOMPARE(line.at("schema").get<int>(), kMetricsSchema);
      QVERIFY(throughText(m) == m);
      collectKeys(line, written);
      // The same names for every rank.
      std::set<std::string> first, second;
      collectKeys(line.at("ranks")[0], first);
      collectKeys(line.at("ranks")[1], second);
      QVERIFY(first == second);
    }
    for (const std::string& key : written)
      QVERIFY2(documented.count(key),
               qPrintable("not in metrics.md: " + QString::fromStdString(key)));
    // Each layout's own figures are there under their names.
    const std::string own = pp > 1                    ? "stage"
                            : model == "moe"          ? "expert_tokens"
                            : strategy == "hogwild"   ? "staleness"
                            : strategy == "local-sgd" ? "spread"
                                                      : "ops";
    QVERIFY2(written.count(own), own.c_str());
  }
};

QTEST_GUILESS_MAIN(TestMetrics)
#include "tst_metrics.moc"
