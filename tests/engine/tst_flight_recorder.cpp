// The flight recorder (comm/flight_recorder.h) and --hang: where ranks diverge is read from
// every rank's recorder into one line; `--hang 2@5` on 4 thread ranks ends at the watchdog's
// timeout naming rank 2 and the collective's number, the same in the line, the thrown record and
// paralab-run's JSON failure line, with no thread left behind. Run: ctest -R tst_flight_recorder
#include <QDir>
#include <QtTest>
#include <nlohmann/json.hpp>

#include "comm/flight_recorder.h"
#include "config.h"
#include "json_lines.h"
#include "loss_trajectory.h"
#include "train/faults.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

FlightEntry entry(int64_t seq, const char* purpose, bool done) {
  return FlightEntry{seq, "allreduce", "dp", 4096, 5, purpose, done};
}

// Ranks 0, 1, 3 wait in #42 over dp; rank 2 finished #41 and never issued #42.
std::vector<RankFlight> stuckAt42() {
  std::vector<RankFlight> ranks;
  for (int r = 0; r < 4; ++r) {
    RankFlight f;
    f.rank = r;
    f.groups = {{"dp", {0, 1, 2, 3}}};
    f.entries = {entry(40, "gradient bucket 1", true), entry(41, "gradient bucket 2", true)};
    if (r != 2) f.entries.push_back(entry(42, "gradient bucket 3", false));
    ranks.push_back(f);
  }
  return ranks;
}

// The threads of this process (Linux): a run that ended leaves none of its own.
int threadCount() {
  return int(QDir("/proc/self/task").entryList(QDir::Dirs | QDir::NoDotAndDotDot).size());
}

RunConfig hangRun() {
  RunConfig c = test::smallRun(32, 2, 32);
  c.ranks = 4;
  c.steps = 8;
  c.timeoutS = 1;
  c.hang = "2@5";
  return c;
}

}  // namespace

class TstFlightRecorder : public QObject {
  Q_OBJECT
 private slots:
  // [SECTION] The reading, from records made by hand.
  void divergenceNamesTheCulprit() {
    const HangDiagnosis d = diagnoseHang(stuckAt42());
    QVERIFY(d.found);
    QCOMPARE(d.waiting, (std::vector<int>{0, 1, 3}));
    QCOMPARE(d.missing, (std::vector<int>{2}));
    QCOMPARE(d.lastDone, (std::vector<int64_t>{41}));
    QCOMPARE(QString::fromStdString(d.line),
             QString("ranks 0, 1 and 3 wait in allreduce #42 (gradient bucket 3, step 5) over dp; "
                     "rank 2 last finished #41 there and never issued #42"));
  }

  void nobodyWaitingIsNoHang() {
    std::vector<RankFlight> ranks = stuckAt42();
    for (RankFlight& r : ranks)
      for (FlightEntry& e : r.entries) e.done = true;
    QVERIFY(!diagnoseHang(ranks).found);
  }

  void ringKeepsTheLast() {
    FlightRecorder fr;
    fr.setRank(1);
    uint64_t last = 0;
    for (int i = 1; i <= int(FlightRecorder::kCapacity) + 10; ++i) {
      last = fr.issue(FlightEntry{i, "allreduce", "world", 4, 1, CommPurpose::current(), false},
                      {0, 1});
      fr.done(last);
    }
    {
      const CommPurpose p("gradient bucket 7");
      fr.issue(FlightEntry{999, "allgather", "world", 4, 2, CommPurpose::current(), false}, {0, 1});
    }
    const RankFlight f = fr.snapshot();
    QCOMPARE(f.entries.size(), FlightRecorder::kCapacity);
    QCOMPARE(f.entries.front().seq, int64_t(12));  // 74 issued, the last 63 of them kept
    QCOMPARE(QString::fromStdString(f.entries.back().purpose), QString("gradient bucket 7"));
    QVERIFY(!f.entries.back().done);
    QVERIFY(CommPurpose::current().empty());  // the purpose ended with its scope
  }

  void jsonRoundTrip() {
    const std::vector<RankFlight> ranks = stuckAt42();
    const HangDiagnosis d = diagnoseHang(ranks);
    const nlohmann::json j = flightToJson(ranks, d, 2);
    std::vector<RankFlight> back;
    HangDiagnosis dBack;
    QCOMPARE(QString::fromStdString(flightFromJson(nlohmann::json::parse(j.dump()), &back, &dBack)),
             QString());
    QCOMPARE(back.size(), size_t(4));
    QCOMPARE(back[0].entries.size(), size_t(2));  // the last 2
    QCOMPARE(back[0].entries.back().seq, int64_t(42));
    QVERIFY(!back[0].entries.back().done);
    QCOMPARE(back[2].entries.back().seq, int64_t(41));
    QCOMPARE(dBack.line, d.line);
    QCOMPARE(dBack.missing, d.missing);
  }

  // [SECTION] The setting: one line naming it.
  void refused_data() {
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("error");
    QTest::newRow("no such rank") << "4@2"
                                  << "hang: rank 4 does not exist (allowed: 0..3)";
    QTest::newRow("step 0") << "1@0"
                            << "hang: step 0 is out of range (allowed: 1 or more)";
    QTest::newRow("form") << "1=2"
                          << "hang: '1=2' is not RANK@STEP (allowed: none, or RANK@STEP with "
                             "STEP 1 or more, e.g. 2@5)";
  }
  void refused() {
    QFETCH(QString, value);
    QFETCH(QString, error);
    RunConfig c = hangRun();
    c.hang = value.toStdString();
    QCOMPARE(QString::fromStdString(c.validate().value_or("")), error);
  }

  // [SECTION] --hang on thread ranks: the run ends at the watchdog with the culprit named.
  void hangEndsWithTheCulprit_data() {
    QTest::addColumn<QString>("dpVersion");
    QTest::newRow("bucketed, on the communication thread") << "bucket";
    QTest::newRow("per tensor, on the rank's thread") << "per-tensor";
  }
  void hangEndsWithTheCulprit() {
    QFETCH(QString, dpVersion);
    RunConfig c = hangRun();
    c.dpVersion = dpVersion == "per-tensor" ? DpVersion::PerTensor : DpVersion::Bucket;
    const int threadsBefore = threadCount();
    int64_t stepsDone = 0;
    std::optional<HangDetected> caught;
    {
      Trainer t(c);
      try {
        for (int i = 0; i < c.steps; ++i) {
          t.step();
          ++stepsDone;
        }
      } catch (const HangDetected& h) {
        caught = h;
      }
    }
    QVERIFY2(caught, "the run did not end with the flight recorder's reading");
    QCOMPARE(stepsDone, int64_t(4));  // steps 1..4 done, step 5 hung
    const HangDiagnosis& d = caught->diagnosis;
    QCOMPARE(d.missing, (std::vector<int>{2}));
    QCOMPARE(d.waiting, (std::vector<int>{0, 1, 3}));
    QCOMPARE(d.step, int64_t(5));
    QCOMPARE(d.lastDone.at(0) + 1, d.seq);
    // Every waiting rank's recorder holds #seq, issued and not done; rank 2's never holds it.
    for (const RankFlight& r : caught->ranks) {
      bool issued = false;
      for (const FlightEntry& e : r.entries)
        if (e.group == d.group && e.seq == d.seq) issued = !e.done;
      QCOMPARE(issued, r.rank != 2);
    }
    const QString line = QString::fromUtf8(caught->what());
    qInfo("%s", qPrintable(line));
    QVERIFY(line.contains("rank 2 last finished #" + QString::number(d.seq - 1)));
    QVERIFY(line.contains("#" + QString::number(d.seq)));
    QVERIFY(line.contains("(emulated: --hang 2@5)"));
    if (dpVersion == "bucket") QVERIFY(line.contains("gradient bucket"));
    QCOMPARE(threadCount(), threadsBefore);
  }

  // paralab-run: exit 3, one line on stderr, and the JSON failure line agrees with it.
  void cliFailureLine() {
    const test::ProgramResult r = test::runProgram(
        PARALAB_RUN,
        {"--dataset", "synthetic", "--hidden", "32", "--layers", "2", "--batch", "32", "--ranks",
         "4", "--steps", "8", "--eval-every", "0", "--timeout", "1", "--hang", "2@5", "--json"});
    QCOMPARE(r.code, 3);
    const QStringList errLines = r.err.trimmed().split('\n');
    QCOMPARE(errLines.size(), 1);
    const QStringList outLines = r.out.trimmed().split('\n');
    QCOMPARE(outLines.size(), 5);  // 4 steps, then the failure
    const nlohmann::json last = nlohmann::json::parse(outLines.back().toStdString());
    QVERIFY(last.contains("failure"));
    const nlohmann::json& div = last.at("flight_recorder").at("divergence");
    QCOMPARE(div.at("missing"), nlohmann::json::array({2}));
    const int64_t seq = div.at("seq").get<int64_t>();
    QVERIFY(errLines[0].contains("rank 2 last finished #" + QString::number(seq - 1)));
    QVERIFY(errLines[0].contains("never issued #" + QString::number(seq)));
    QCOMPARE(QString::fromStdString(last.at("failure").get<std::string>()),
             errLines[0].mid(QString("paralab-run: ").size()));
    QCOMPARE(last.at("flight_recorder").at("ranks").size(), size_t(4));
  }
};

QTEST_GUILESS_MAIN(TstFlightRecorder)
#include "tst_flight_recorder.moc"
