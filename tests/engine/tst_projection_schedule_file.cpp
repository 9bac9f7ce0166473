// A learner's schedule file in the projection (`paralab-run --project h100-sxm:8 --pp 4
// --schedule my.csv`): checked as a training run checks it, and played by the same code as the
// table's schedules, so a hand-written 1F1B or ZB-H1 projects the bubble and memory of
// `--schedule 1f1b` or `zb-h1`. Run: ctest -R tst_projection_schedule_file
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "config.h"
#include "json_lines.h"
#include "projection/projection.h"
#include "projection_fixtures.h"

using namespace paralab;
using namespace paralab::projection;
using namespace paralab::projection::fixtures;

namespace {

// 1F1B on 4 stages, 8 micro-batches, written by hand: stage s runs 3 - s warm-up forwards,
// then one forward and one backward, then the backwards left (Narayanan et al. 2021 §2.2.1).
constexpr const char* kOneFOneB =
    "F0,F1,F2,F3,B0,F4,B1,F5,B2,F6,B3,F7,B4,B5,B6,B7\n"
    "F0,F1,F2,B0,F3,B1,F4,B2,F5,B3,F6,B4,F7,B5,B6,B7\n"
    "F0,F1,B0,F2,B1,F3,B2,F4,B3,F5,B4,F6,B5,F7,B6,B7\n"
    "F0,B0,F1,B1,F2,B2,F3,B3,F4,B4,F5,B5,F6,B6,F7,B7\n";

// ZB-H1 (Qi et al. 2023 §3.1) on 4 stages, 8 micro-batches: 1F1B with each backward split into
// B and W, stage s running its W's s micro-batches late, the drain's B's each followed by a W.
constexpr const char* kZbH1 =
    "F0,F1,F2,F3,B0,W0,F4,B1,W1,F5,B2,W2,F6,B3,W3,F7,B4,W4,B5,W5,B6,W6,B7,W7\n"
    "F0,F1,F2,B0,F3,B1,W0,F4,B2,W1,F5,B3,W2,F6,B4,W3,F7,B5,W4,B6,W5,B7,W6,W7\n"
    "F0,F1,B0,F2,B1,F3,B2,W0,F4,B3,W1,F5,B4,W2,F6,B5,W3,F7,B6,W4,B7,W5,W6,W7\n"
    "F0,B0,F1,B1,F2,B2,F3,B3,W0,F4,B4,W1,F5,B5,W2,F6,B6,W3,F7,B7,W4,W5,W6,W7\n";

// ZB-H1 with stage 3's first W moved before its B.
constexpr const char* kWBeforeB =
    "F0,F1,F2,F3,B0,W0,F4,B1,W1,F5,B2,W2,F6,B3,W3,F7,B4,W4,B5,W5,B6,W6,B7,W7\n"
    "F0,F1,F2,B0,F3,B1,W0,F4,B2,W1,F5,B3,W2,F6,B4,W3,F7,B5,W4,B6,W5,B7,W6,W7\n"
    "F0,F1,B0,F2,B1,F3,B2,W0,F4,B3,W1,F5,B4,W2,F6,B5,W3,F7,B6,W4,B7,W5,W6,W7\n"
    "F0,W0,B0,F1,B1,F2,B2,F3,B3,F4,B4,W1,F5,B5,W2,F6,B6,W3,F7,B7,W4,W5,W6,W7\n";

constexpr int kStages = 4, kMicros = 8;

// A 16-block GPT of 2,048 on 8 A100s: dp 2 x pp 4, 8 micro-batches of one sequence.
ModelSpec gpt() { return ModelSpec::megatronGpt(16, 2048, 16, 2048, 51200); }
Layout pipeline() {
  Layout l;
  l.pp = kStages;
  l.globalBatch = 2 * kMicros;
  l.microBatches = kMicros;
  return l;
}

}  // namespace

class TstProjectionScheduleFile : public QObject {
  Q_OBJECT

  QTemporaryDir m_dir;

  using Result = paralab::test::ProgramResult;
  static Result run(const QStringList& args) {
    return paralab::test::runProgram(PARALAB_RUN, args);
  }

  std::string write(const char* name, const char* text) {
    const QString path = m_dir.filePath(name);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return {};
    f.write(text);
    return path.toStdString();
  }

 private slots:
  // The table's schedule and the same schedule written by hand: the same fill, the same peak of
  // micro-batches on every stage, so the same bubble, step and activation memory.
  void handWrittenProjectsAsBuiltIn_data() {
    QTest::addColumn<QString>("builtIn");
    QTest::addColumn<QString>("text");
    QTest::newRow("1f1b") << "1f1b" << kOneFOneB;
    QTest::newRow("zb-h1") << "zb-h1" << kZbH1;
  }
  void handWrittenProjectsAsBuiltIn() {
    QFETCH(QString, builtIn);
    QFETCH(QString, text);
    const std::string path = write(qPrintable(builtIn + ".csv"), qPrintable(text));
    QVERIFY(!path.empty());
    Layout table = pipeline();
    table.schedule = parseSchedule(builtIn.toStdString());
    Layout file = pipeline();
    file.scheduleFile = path;
    const auto refused = validate(gpt(), file, a100s(8));
    QVERIFY2(!refused, refused.value_or("").c_str());

    const ScheduleShape a = scheduleShape(builtIn.toStdString(), kStages, kMicros);
    const ScheduleShape b = scheduleShape(path, kStages, kMicros);
    QCOMPARE(b.fill, a.fill);
    QCOMPARE(b.held, a.held);
    // 1F1B fills and drains (P - 1)(F + B + W); ZB-H1 a third of it with equal F, B and W.
    QCOMPARE(a.fill, builtIn == "zb-h1" ? 1.0 / 3 : 1.0);
    for (int k = 0; k < kStages; ++k)  // ZB-H1 holds 1F1B's stage-0 peak on every stage
      QCOMPARE(a.held[size_t(k)], double(builtIn == "zb-h1" ? kStages : kStages - k));

    const Projection p = project(gpt(), table, a100s(8));
    const Projection q = project(gpt(), file, a100s(8));
    QVERIFY(q.split.ppBubble > 0);
    QCOMPARE(q.split.ppBubble, p.split.ppBubble);
    QCOMPARE(q.stepSeconds, p.stepSeconds);
    QCOMPARE(q.memory.activations, p.memory.activations);
    QCOMPARE(q.memoryStage, p.memoryStage);
  }

  // A broken file is refused with the words a training run refuses it with.
  void brokenFileIsRefusedAsARunRefusesIt() {
    const std::string path = write("broken.csv", kWBeforeB);
    Layout l = pipeline();
    l.scheduleFile = path;
    const auto why = validate(gpt(), l, a100s(8));
    QVERIFY(why);
    RunConfig c;
    c.model = ModelKind::Gpt;
    c.dataset = "synthetic";
    c.layers = 16;
    c.pp = kStages;
    c.ranks = 8;
    c.batch = 2 * kMicros;
    c.microbatches = kMicros;
    c.schedule = path;
    QCOMPARE(QString::fromStdString(*why),
             QString::fromStdString(c.validateRules().value_or("(accepted)")));
    QVERIFY2(QString::fromStdString(*why).contains("rank 3, action 2 (W0): W before its B"),
             why->c_str());
  }

  // paralab-run --project takes --schedule FILE, and names it.
  void commandLine() {
    const std::string good = write("cli-1f1b.csv", kOneFOneB);
    const std::string bad = write("cli-broken.csv", kWBeforeB);
    const QStringList args = {
        "--model", "gpt",     "--layers", "16",        "--pp",        "4",      "--microbatches",
        "8",       "--batch", "16",       "--project", "a100-80gb:8", "--json", "--schedule"};
    const Result file = run(args + QStringList{QString::fromStdString(good)});
    QCOMPARE(file.code, 0);
    const QJsonObject f = QJsonDocument::fromJson(file.out.toUtf8()).object();
    QCOMPARE(f["schedule"].toString(), QString::fromStdString(good));
    const Result table = run(args + QStringList{"1f1b"});
    QCOMPARE(table.code, 0);
    const QJsonObject t = QJsonDocument::fromJson(table.out.toUtf8()).object();
    QCOMPARE(f["split_ms"].toObject()["pp_bubble"].toDouble(),
             t["split_ms"].toObject()["pp_bubble"].toDouble());
    QCOMPARE(f["mem_per_gpu"].toObject()["activations"].toDouble(),
             t["mem_per_gpu"].toObject()["activations"].toDouble());

    const Result broken = run(args + QStringList{QString::fromStdString(bad)});
    QCOMPARE(broken.code, 2);
    QCOMPARE(broken.err.count('\n'), 1);  // exactly one line
    QVERIFY2(broken.err.contains("rank 3, action 2 (W0): W before its B"), qPrintable(broken.err));
  }
};

QTEST_GUILESS_MAIN(TstProjectionScheduleFile)
#include "tst_projection_schedule_file.moc"
