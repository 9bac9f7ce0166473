// A schedule the learner writes (--schedule FILE, parallel/pipeline/schedule_file.h): its cells
// and CSV, the checker refusing a broken table with the first action at fault (a deadlock, a W
// before its B, a send nobody receives), the peak per rank of a valid one, split backwards,
// paralab-run's exit 2 with that line, and a 1F1B written by hand running as the built-in one.
// Run: ctest -R tst_schedule_file
#include <QTemporaryDir>
#include <QtTest>

#include "json_lines.h"
#include "loss_trajectory.h"
#include "parallel/pipeline/schedule_file.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

// Rows written as text: "F0,F1,B0,B1" per rank.
ScheduleGrid grid(std::initializer_list<const char*> rows) {
  std::string text;
  for (const char* r : rows) text += std::string(r) + "\n";
  std::string why;
  const auto g = parseScheduleCsv(text, int(rows.size()), &why);
  if (!g) qFatal("%s", why.c_str());
  return *g;
}

// The computes of a built-in schedule as the table a learner writes, rank by rank.
ScheduleGrid tableOf(PipeSchedule s, int P, int M, int V = 1) {
  ScheduleGrid g;
  for (const auto& steps : pipelinePlan(s, P, M, V)) {
    auto& row = g.emplace_back();
    for (const PipeStep& p : steps)
      if (isCompute(p.action))
        row.push_back({p.action == PipeAction::Forward          ? 'F'
                       : p.action == PipeAction::BackwardWeight ? 'W'
                                                                : 'B',
                       p.micro, p.chunk});
  }
  return g;
}

std::vector<PipeStep> computesOf(const std::vector<PipeStep>& steps) {
  std::vector<PipeStep> out;
  for (const PipeStep& p : steps)
    if (isCompute(p.action)) out.push_back(p);
  return out;
}

std::string fault(const ScheduleGrid& g, int M, int V = 1) {
  return checkSchedule(g, PipeShape{.stages = int(g.size()), .micros = M, .chunks = V})
      .fault.value_or("");
}

}  // namespace

class TstScheduleFile : public QObject {
  Q_OBJECT

 private slots:
  // [SECTION] The table's cells: short, with a chunk, torch's stage-first form; computes only.
  void cells() {
    std::string why;
    QCOMPARE(*parseScheduleCell(" F3 ", 0, 2, &why), (ScheduleCell{'F', 3, 0}));
    QCOMPARE(*parseScheduleCell("b2.1", 1, 2, &why), (ScheduleCell{'B', 2, 1}));
    QCOMPARE(*parseScheduleCell("3W0", 1, 2, &why), (ScheduleCell{'W', 0, 1}));
    QCOMPARE(*parseScheduleCell("", 0, 2, &why), ScheduleCell{});
    QVERIFY(!parseScheduleCell("2F0", 1, 2, &why));
    QCOMPARE(why, std::string("virtual stage 2 is on rank 0 (virtual stage = chunk x pp + rank)"));
    QVERIFY(!parseScheduleCell("SEND_F1", 0, 2, &why));
    QVERIFY(why.find("computes only") != std::string::npos);
    QVERIFY(!parseScheduleCell("X1", 0, 2, &why));
    QVERIFY(!parseScheduleCell("F", 0, 2, &why));
    std::string text = "# a comment\nF0,,F1,B0,B1\n\nF0,B0,F1,B1\n";
    const auto g = parseScheduleCsv(text, 2, &why);
    QVERIFY(g);
    QCOMPARE(int((*g)[0].size()), 5);
    QVERIFY((*g)[0][1].empty());
    QCOMPARE(*parseScheduleCsv(scheduleCsv(*g), 2, &why), *g);  // written and read back
    QVERIFY(!parseScheduleCsv("F0,Q1\n", 1, &why));
    QCOMPARE(why, std::string("rank 0, action 2 ('Q1'): not an action (allowed: F, B, I or W and "
                              "a micro-batch: F0, B3.1, 5W2)"));
    QVERIFY(isScheduleFile("my.csv") && isScheduleFile("./s") && !isScheduleFile("1f1b"));
  }

  // [SECTION] Valid tables: the built-in schedules written out pass, their computes run in the
  // table's order, and the peak per rank is theirs (1F1B min(P - s, M), GPipe M).
  void builtInTablesPass() {
    for (int P : {2, 4})
      for (int M : {4, 8}) {
        for (PipeSchedule s : {PipeSchedule::OneFOneB, PipeSchedule::GPipe}) {
          const ScheduleCheck c =
              checkSchedule(tableOf(s, P, M), PipeShape{.stages = P, .micros = M});
          QVERIFY2(c.ok(), c.fault.value_or("").c_str());
          QVERIFY(!c.splitsBackward);
          const auto builtIn = pipelinePlan(s, P, M);
          for (int r = 0; r < P; ++r) {
            QCOMPARE(computesOf(c.plan[size_t(r)]), computesOf(builtIn[size_t(r)]));
            // A receive comes where the compute that needs it is next: the rank holds no
            // micro-batch's buffers before its computes say so.
            const auto& steps = c.plan[size_t(r)];
            for (size_t i = 0; i < steps.size(); ++i) {
              if (steps[i].action != PipeAction::RecvAct && steps[i].action != PipeAction::RecvGrad)
                continue;
              size_t k = i;
              while (!isCompute(steps[k].action)) ++k;
              QCOMPARE(steps[k].micro, steps[i].micro);
              QCOMPARE(steps[k].action, steps[i].action == PipeAction::RecvAct
                                            ? PipeAction::Forward
                                            : PipeAction::Backward);
            }
            QCOMPARE(c.peak[size_t(r)], s == PipeSchedule::GPipe ? M : std::min(P - r, M));
          }
        }
        const ScheduleCheck i = checkSchedule(tableOf(PipeSchedule::Interleaved, P, M, 2),
                                              PipeShape{.stages = P, .micros = M, .chunks = 2});
        QVERIFY2(i.ok(), i.fault.value_or("").c_str());
      }
  }

  // A split backward: B then W of each micro-batch. W at once keeps 1F1B's peak; all the W
  // left to the end of the row holds every micro-batch's activations until then.
  void splitBackward() {
    const ScheduleGrid now =
        grid({"F0,F1,B0,W0,F2,B1,W1,F3,B2,W2,B3,W3", "F0,B0,W0,F1,B1,W1,F2,B2,W2,F3,B3,W3"});
    const ScheduleCheck c = checkSchedule(now, PipeShape{.stages = 2, .micros = 4});
    QVERIFY2(c.ok(), c.fault.value_or("").c_str());
    QVERIFY(c.splitsBackward);
    QCOMPARE(c.peak, (std::vector<int>{2, 1}));
    int inputs = 0, weights = 0;
    for (const PipeStep& p : c.plan[0])
      inputs += p.action == PipeAction::BackwardInput,
          weights += p.action == PipeAction::BackwardWeight;
    QCOMPARE(inputs, 4);
    QCOMPARE(weights, 4);
    const ScheduleGrid late =
        grid({"F0,F1,B0,F2,B1,F3,B2,B3,W0,W1,W2,W3", "F0,B0,F1,B1,F2,B2,F3,B3,W0,W1,W2,W3"});
    const ScheduleCheck d = checkSchedule(late, PipeShape{.stages = 2, .micros = 4});
    QVERIFY2(d.ok(), d.fault.value_or("").c_str());
    QCOMPARE(d.peak, (std::vector<int>{4, 4}));
  }

  // [SECTION] Broken tables: refused with the first action at fault, rank, position and why.
  void refusals_data() {
    QTest::addColumn<QStringList>("rows");
    QTest::addColumn<int>("M");
    QTest::addColumn<QString>("line");
    const auto row = [](const char* name, QStringList rows, int M, const char* line) {
      QTest::newRow(name) << rows << M << QString(line);
    };
    // Rank 1 runs F1 first, which waits for rank 0's F1, behind rank 0's B0, which waits for
    // rank 1's B0, behind its F1.
    row("deadlock", {"F0,B0,F1,B1", "F1,F0,B0,B1"}, 2,
        "rank 1, action 1 (F1): deadlock: it waits for the activation of F1 from rank 0, which "
        "waits at its action 2 (B0)");
    row("W before its B", {"F0,F1,B0,W0,B1,W1", "F0,W0,B0,F1,B1,W1"}, 2,
        "rank 1, action 2 (W0): W before its B (B0 is at action 3)");
    row("a send nobody receives", {"F0,F1,F2,B0,B1,B2", "F0,B0,F1,B1"}, 3,
        "rank 0, action 3 (F2): its activation goes to rank 1, which has no F2 to receive it");
    row("B before its F", {"B0,F0,F1,B1", "F0,B0,F1,B1"}, 2,
        "rank 0, action 1 (B0): B before its F (F0 is at action 2)");
    row("a second F", {"F0,F0,F1,B0,B1", "F0,B0,F1,B1"}, 2,
        "rank 0, action 2 (F0): a second F of micro-batch 0 (the first is at action 1)");
    row("I without its W", {"F0,F1,I0,B1", "F0,B0,F1,B1"}, 2,
        "rank 0, action 3 (I0): I is the input half of a split backward, and this rank has no W0");
    row("micro-batch out of range", {"F0,F1,F2,B0,B1", "F0,B0,F1,B1"}, 2,
        "rank 0, action 3 (F2): micro-batch 2 is out of range (--microbatches 2: 0..1)");
    row("a micro-batch nobody runs", {"F0,B0", "F0,B0"}, 2,
        "rank 0: no F1 (each rank runs one F and one B of every micro-batch 0..1)");
    row("rows and ranks", {"F0,B0"}, 1, "");
  }
  void refusals() {
    QFETCH(QStringList, rows);
    QFETCH(int, M);
    QFETCH(QString, line);
    std::string text;
    for (const QString& r : rows) text += r.toStdString() + "\n";
    std::string why;
    const auto g = parseScheduleCsv(text, int(rows.size()), &why);
    QVERIFY2(g, why.c_str());
    if (line.isEmpty()) {  // two ranks asked of a table of one
      QCOMPARE(checkSchedule(*g, PipeShape{.stages = 2, .micros = M}).fault.value_or(""),
               std::string("1 rows, one per rank, but --pp is 2"));
      return;
    }
    QCOMPARE(QString::fromStdString(fault(*g, M)), line);
  }

  // Deadlock is in the order, not the counts: the same computes in 1F1B's order pass.
  void deadlockFixed() {
    QCOMPARE(fault(grid({"F0,B0,F1,B1", "F1,F0,B0,B1"}), 2).substr(0, 22),
             std::string("rank 1, action 1 (F1):"));
    QCOMPARE(fault(grid({"F0,F1,B0,B1", "F0,B0,F1,B1"}), 2), std::string());
  }

  // [SECTION] The file as paralab-run takes it: one line naming the file and the action,
  // exit 2.
  void fileRefusals() {
    QTemporaryDir dir;
    const auto write = [&](const char* name, const char* text) {
      const QString path = dir.filePath(name);
      QFile f(path);
      if (!f.open(QIODevice::WriteOnly)) qFatal("cannot write %s", qPrintable(path));
      f.write(text);
      return path.toStdString();
    };
    const std::string bad = write("x.csv", "F0,F1,B0,W0,B1,W1\nF0,W0,B0,F1,B1,W1\n");
    const PipeShape shape{.stages = 2, .micros = 2};
    QCOMPARE(
        scheduleFileRefusal(bad, shape).value_or(""),
        "schedule file " + bad + ": rank 1, action 2 (W0): W before its B (B0 is at action 3)");
    const std::string split = write("split.csv", "F0,F1,B0,W0,B1,W1\nF0,B0,W0,F1,B1,W1\n");
    QVERIFY(checkSchedule(grid({"F0,F1,B0,W0,B1,W1", "F0,B0,W0,F1,B1,W1"}), shape).ok());
    QVERIFY2(!scheduleFileRefusal(split, shape),
             scheduleFileRefusal(split, shape).value_or("").c_str());  // a split backward runs
    QVERIFY(scheduleFileRefusal(dir.filePath("none.csv").toStdString(), shape)
                ->find("cannot be read") != std::string::npos);

    const test::ProgramResult r =
        test::runProgram(PARALAB_RUN, {"--pp", "2", "--microbatches", "2", "--steps", "1",
                                       "--schedule", QString::fromStdString(bad)});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err, QString::fromStdString("paralab-run: schedule file " + bad +
                                           ": rank 1, action 2 (W0): W before its B (B0 is at "
                                           "action 3)\n"));
  }

  // [SECTION] Running it: 1F1B written by hand trains exactly as the built-in 1F1B, loss at
  // every step and parameters after, on 2 and 4 stages.
  // Interleaved 1F1B written with its chunks (F3.1) runs as the built-in one too, and ZB-H1
  // written with its split backwards (B then W later) as the built-in ZB-H1.
  void handWritten1F1BRunsAsBuiltIn_data() {
    QTest::addColumn<int>("P");
    QTest::addColumn<int>("M");
    QTest::addColumn<int>("V");
    QTest::addColumn<bool>("zeroBubble");
    QTest::newRow("pp2 M4") << 2 << 4 << 1 << false;
    QTest::newRow("pp4 M8") << 4 << 8 << 1 << false;
    QTest::newRow("pp2 M4, interleaved over 2 chunks") << 2 << 4 << 2 << false;
    QTest::newRow("pp4 M8, ZB-H1") << 4 << 8 << 1 << true;
  }
  void handWritten1F1BRunsAsBuiltIn() {
    QFETCH(int, P);
    QFETCH(int, M);
    QFETCH(int, V);
    QFETCH(bool, zeroBubble);
    QTemporaryDir dir;
    const QString path = dir.filePath("1f1b.csv");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    const PipeSchedule s = zeroBubble ? PipeSchedule::ZbH1
                           : V > 1    ? PipeSchedule::Interleaved
                                      : PipeSchedule::OneFOneB;
    f.write(scheduleCsv(tableOf(s, P, M, V), V).c_str());
    f.close();
    RunConfig builtIn = test::smallRun(32, 8, 48);
    builtIn.pp = P;
    builtIn.ranks = P;
    builtIn.microbatches = M;
    builtIn.schedule = pipeSchedule(s).name;
    builtIn.virtualStages = V;
    RunConfig file = builtIn;
    file.schedule = path.toStdString();
    QVERIFY2(!file.validate(), file.validate().value_or("").c_str());
    const test::RunRecord a = test::recordRun(builtIn, 10), b = test::recordRun(file, 10);
    QCOMPARE(b.losses, a.losses);
    QCOMPARE(b.params, a.params);
  }

  // The run follows the file's order, not the default 1F1B: GPipe written as a table holds
  // GPipe's M micro-batches of activations on every stage, as the built-in GPipe does.
  void fileOrderIsRun() {
    const int P = 2, M = 8;
    QTemporaryDir dir;
    const QString path = dir.filePath("gpipe.csv");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(scheduleCsv(tableOf(PipeSchedule::GPipe, P, M)).c_str());
    f.close();
    RunConfig c = test::smallRun(32, 4, 64);
    c.pp = P;
    c.ranks = P;
    c.microbatches = M;
    const auto peaks = [](const RunConfig& config) {
      Trainer t(config);
      t.step();
      std::vector<int64_t> out;
      for (int s = 0; s < 2; ++s)
        out.push_back(t.memory(s).snapshot().peak[int(MemCategory::Activations)]);
      return out;
    };
    const std::vector<int64_t> oneF = peaks(c);
    c.schedule = "gpipe";
    const std::vector<int64_t> gpipe = peaks(c);
    c.schedule = path.toStdString();
    const std::vector<int64_t> file = peaks(c);
    QCOMPARE(file, gpipe);
    for (int s = 0; s < 2; ++s) QVERIFY(file[size_t(s)] > oneF[size_t(s)]);
  }
};

QTEST_GUILESS_MAIN(TstScheduleFile)
#include "tst_schedule_file.moc"
