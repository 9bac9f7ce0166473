// Faults on purpose (train/faults.h): --straggler, --fail and --serial-ms are read and refused as
// the settings table says; a serial section holds every rank's step to at least its length; a
// straggler holds synchronous data parallelism to its pace but not ps-async, local SGD or
// Hogwild (measured as ratios in one run, wide margins); a failing rank ends the run with one
// message naming it. Run: ctest -R tst_faults
#include <QtTest>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <vector>

#include "config.h"
#include "emulated_parts.h"
#include "train/faults.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

// Compute dominates: H 384 on 2 thread ranks, 128 samples each.
RunConfig stragglerRun(const std::string& strategy, const std::string& straggler) {
  RunConfig c;
  c.dataset = "synthetic";
  c.ranks = 2;
  c.hidden = 384;
  c.batch = 256;
  c.evalEvery = 0;
  c.strategy = strategy;
  c.straggler = straggler;
  // Local SGD meets the straggler at each averaging: every 8 steps it waits at most its
  // emulated compute, 2 steps' time, so the other rank keeps at least 8/10 of its pace.
  c.syncEvery = 8;
  return c;
}

struct Measured {
  double medianStepMs = 0;
  double samplesPerS = 0;          // samples the ranks delivered / the steps' time
  double rank0SamplesPerS = 0;     // those rank 0 delivered / the steps' time
  std::vector<double> waitMs;      // per rank: idle + comm, summed
  std::vector<double> emulatedMs;  // per rank: emulated_straggler_ms, summed
  std::vector<int64_t> samples;    // per rank, summed
};

constexpr int kMeasuredSteps = 16;

// Steps after two warm-up steps (first-touch of buffers, the BLAS's threads).
Measured measure(const RunConfig& c, int steps = kMeasuredSteps) {
  Trainer t(c);
  for (int i = 0; i < 2; ++i) t.step();
  Measured m;
  m.waitMs.assign(2, 0), m.emulatedMs.assign(2, 0), m.samples.assign(2, 0);
  std::vector<double> stepMs;
  double totalMs = 0, samples = 0;
  for (int i = 0; i < steps; ++i) {
    const StepMetrics s = t.step();
    stepMs.push_back(s.stepMs);
    totalMs += s.stepMs;
    for (const RankMetrics& r : s.ranks) {
      samples += double(r.samples);
      m.samples[size_t(r.rank)] += r.samples;
      m.waitMs[size_t(r.rank)] += r.idleMs + r.commMs;
      m.emulatedMs[size_t(r.rank)] += r.emulatedStragglerMs.value_or(0);
    }
  }
  std::sort(stepMs.begin(), stepMs.end());
  m.medianStepMs = stepMs[stepMs.size() / 2];
  m.samplesPerS = samples / (totalMs * 1e-3);
  m.rank0SamplesPerS = double(m.samples[0]) / (totalMs * 1e-3);
  return m;
}

}  // namespace

class TstFaults : public QObject {
  Q_OBJECT
 private slots:
  // [SECTION] The settings: one line naming the field and what is allowed.
  void refused_data() {
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("value");
    QTest::addColumn<int>("tp");
    QTest::addColumn<QString>("error");
    QTest::newRow("no such rank") << "straggler"
                                  << "5=2" << 1
                                  << "straggler: rank 5 does not exist (allowed: 0..3)";
    QTest::newRow("negative rank")
        << "straggler"
        << "-1=2" << 1 << "straggler: rank -1 does not exist (allowed: 0..3)";
    QTest::newRow("not the form") << "straggler"
                                  << "1x3" << 1
                                  << "straggler: '1x3' is not RANK=FACTOR (allowed: none, or "
                                     "RANK=FACTOR with FACTOR 1..100, e.g. 1=3)";
    QTest::newRow("faster") << "straggler"
                            << "1=0.5" << 1
                            << "straggler: factor 0.5 is out of range (allowed: 1..100)";
    QTest::newRow("fail rank") << "fail"
                               << "4@2" << 1 << "fail: rank 4 does not exist (allowed: 0..3)";
    QTest::newRow("fail step 0") << "fail"
                                 << "1@0" << 1
                                 << "fail: step 0 is out of range (allowed: 1 or more)";
    QTest::newRow("fail form") << "fail"
                               << "1=2" << 1
                               << "fail: '1=2' is not RANK@STEP (allowed: none, or RANK@STEP "
                                  "with STEP 1 or more, e.g. 1@5)";
    QTest::newRow("tensor parallel")
        << "straggler"
        << "1=2" << 2
        << "straggler: emulated in the data-parallel strategies' forward and backward (not "
           "with --tp, --pp, --model moe or --ffn moe)";
  }
  void refused() {
    QFETCH(QString, key);
    QFETCH(QString, value);
    QFETCH(int, tp);
    QFETCH(QString, error);
    RunConfig c;
    c.dataset = "synthetic";
    c.ranks = 4;
    c.tp = tp;
    (key == "straggler" ? c.straggler : c.fail) = value.toStdString();
    QCOMPARE(QString::fromStdString(c.validate().value_or("")), error);
  }

  void accepted() {
    RunConfig c;
    c.dataset = "synthetic";
    c.ranks = 4;
    c.straggler = "3=2.5";
    c.fail = "0@7";
    QCOMPARE(QString::fromStdString(c.validate().value_or("")), QString());
    const StragglerSpec s = *parseStraggler(c.straggler, c.ranks);
    QCOMPARE(s.rank, 3);
    QCOMPARE(s.factor, 2.5);
    const FailSpec f = *parseFail(c.fail, c.ranks);
    QCOMPARE(f.rank, 0);
    QCOMPARE(f.step, int64_t(7));
    QVERIFY(!parseStraggler("none", 4) && !parseFail("none", 4));
  }

  // [SECTION] The straggler, measured: ratios within one run of this test, so a loaded machine
  // slows both sides alike. Sync with factor 3 on one of 2 ranks would take 3x as long per
  // step on idle cores if compute were all of a step (printed); the bar compares the fast
  // rank's waiting with the straggler's emulated time. ps-async and
  // local SGD do not wait for it: the other rank keeps its own pace (bar: at least 0.6 of its
  // samples/s without the straggler, where waiting would give 1/3), so the run keeps about
  // (1 + 1/3) / 2 = 2/3 of its throughput (printed, not asserted: on a loaded machine it
  // ranges about 0.55 to 1.5).
  void syncWaitsForTheStraggler() {
    const Measured plain = measure(stragglerRun("sync", "none"));
    const Measured slow = measure(stragglerRun("sync", "1=3"));
    const double ratio = slow.medianStepMs / plain.medianStepMs;
    const double emulatedPerStep = slow.emulatedMs[1] / kMeasuredSteps;
    qInfo("sync: median step %.1f ms -> %.1f ms with straggler 1=3 (x%.2f); the straggler's "
          "emulated time %.1f ms per step, rank 0 waited %.1f ms per step",
          plain.medianStepMs, slow.medianStepMs, ratio, emulatedPerStep,
          slow.waitMs[0] / kMeasuredSteps);
    // Labelled: only the slowed rank reports emulated time.
    QVERIFY(slow.emulatedMs[1] > 0);
    QCOMPARE(slow.emulatedMs[0], 0.0);
    QCOMPARE(plain.emulatedMs[1], 0.0);
    // The whole step goes at the straggler's pace: the fast rank spends (nearly) all of the
    // straggler's emulated time waiting for it, in the same steps. Measured against the
    // emulated time itself, so it holds however slow the rest of the step is (a loaded
    // machine, an instrumented build); the step-time ratio between two runs does not (printed
    // above). A rank that did not wait would show about its plain run's wait.
    QVERIFY2(slow.waitMs[0] >= 0.75 * slow.emulatedMs[1],
             qPrintable(QString("rank 0 waited %1 ms per step, the straggler's emulated time %2 ms")
                            .arg(slow.waitMs[0] / kMeasuredSteps)
                            .arg(emulatedPerStep)));
    QVERIFY2(slow.waitMs[0] > slow.waitMs[1],
             qPrintable(QString("%1 %2").arg(slow.waitMs[0]).arg(slow.waitMs[1])));
  }

  void asyncStrategiesDoNotWait_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<QString>("straggler");
    // A slowed worker (the server's own gradient every third step would cap the ratio at
    // about 2/3 on 2 ranks, too near the bar to measure on a loaded machine).
    QTest::newRow("ps-async") << "ps-async"
                              << "1=3";
    QTest::newRow("local-sgd") << "local-sgd"
                               << "1=3";
    // Hogwild's ranks meet once a step only to report; the straggler adds its update late.
    QTest::newRow("hogwild") << "hogwild"
                             << "1=3";
  }
  void asyncStrategiesDoNotWait() {
    QFETCH(QString, strategy);
    QFETCH(QString, straggler);
    // Each window is about half a second: another test on the other core (ctest -j2) can slow
    // one of the pair. Up to three pairs; the best counts, and a rank that waited for the
    // straggler would give about 1/3 in every one.
    Measured plain, slow;
    double fastRatio = 0;
    for (int attempt = 0; attempt < 3 && fastRatio < 0.6; ++attempt) {
      plain = measure(stragglerRun(strategy.toStdString(), "none"));
      slow = measure(stragglerRun(strategy.toStdString(), straggler.toStdString()));
      fastRatio = std::max(fastRatio, slow.rank0SamplesPerS / plain.rank0SamplesPerS);
      qInfo("%s: %.0f -> %.0f samples/s with straggler %s (x%.2f); rank 0 alone x%.2f",
            qPrintable(strategy), plain.samplesPerS, slow.samplesPerS, qPrintable(straggler),
            slow.samplesPerS / plain.samplesPerS, slow.rank0SamplesPerS / plain.rank0SamplesPerS);
    }
    QVERIFY2(fastRatio >= 0.6, qPrintable(QString::number(fastRatio)));
    // The straggler did act: it delivered fewer samples than the rank it did not slow.
    QVERIFY2(slow.samples[1] < slow.samples[0],
             qPrintable(QString("%1 %2").arg(slow.samples[0]).arg(slow.samples[1])));
    QVERIFY(slow.samples[1] > 0);  // and it did deliver, late
    QVERIFY(slow.emulatedMs[1] > 0);
    QCOMPARE(slow.emulatedMs[0], 0.0);
  }

  // [SECTION] The labels: every emulated part of a run is named, in one order, with what it
  // does; a run with none has none (every label on screen and in exports comes from here).
  // Deferred slowness books each step's share: an asynchronous straggler busy for several
  // steps reports in each step at most the time that step lasted, not the whole of its emulated
  // compute in the step where it ends.
  void deferredSlownessIsBookedPerStep() {
    RunConfig c = stragglerRun("hogwild", "1=4");
    c.hidden = 64, c.batch = 64;
    Trainer t(c);
    double total = 0;
    int busySteps = 0;
    for (int i = 0; i < 12; ++i) {
      const StepMetrics s = t.step();
      const double emulated = s.ranks[1].emulatedStragglerMs.value_or(0);
      total += emulated;
      QVERIFY2(emulated <= s.stepMs + 1.0,
               qPrintable(QString("step %1: %2 ms of emulated compute in a step of %3 ms")
                              .arg(s.step).arg(emulated).arg(s.stepMs)));
      // A step in which the straggler delivered nothing, it spent computing (emulated).
      if (i > 0 && s.ranks[1].samples == 0) {
        ++busySteps;
        QVERIFY2(emulated > 0, qPrintable(QString("step %1: busy, none booked").arg(s.step)));
      }
    }
    QVERIFY2(total > 0 && busySteps > 0, "the straggler was slowed");
  }

  void emulatedPartsSayWhat() {
    RunConfig c;
    QVERIFY(emulatedParts(c).empty());
    c.link = "pcie";
    c.straggler = "1=3";
    c.serialMs = 5;
    const std::vector<EmulatedPart> parts = emulatedParts(c);
    QCOMPARE(int(parts.size()), 3);
    QCOMPARE(QString::fromStdString(parts[0].brief), QString("pcie"));
    QVERIFY(QString::fromStdString(parts[0].detail).startsWith("the pcie link: transfer times"));
    QCOMPARE(QString::fromStdString(parts[1].brief), QString("straggler 1=3"));
    QVERIFY(QString::fromStdString(parts[1].detail).contains("compute takes factor times as long"));
    QCOMPARE(QString::fromStdString(parts[2].brief), QString("serial section 5 ms"));
    QVERIFY(QString::fromStdString(parts[2].detail).contains("5 ms a step"));
    QCOMPARE(QString::fromStdString(emulatedBriefs(c)),
             QString("pcie · straggler 1=3 · serial section 5 ms"));
    // Every JSON line says so: a step's "emulated" names each part, not only the link.
    RunConfig run;
    run.dataset = "synthetic", run.hidden = 16, run.batch = 8, run.ranks = 2, run.evalEvery = 0;
    run.straggler = "1=2";
    Trainer t(run);
    const nlohmann::json step = toJson(t.step());
    QCOMPARE(QString::fromStdString(step.value("emulated", "")), QString("straggler 1=2"));
  }

  // [SECTION] A serial section (--serial-ms): rank 0 sleeps in every step before the gradients
  // are summed, so every rank's step takes at least that long (a sleep lasts at least its time:
  // a floor, not a timing bar); the other rank spends it waiting; the training is unchanged.
  void serialSectionIsRefusedOutsideSync() {
    RunConfig c;
    c.dataset = "synthetic";
    c.ranks = 2;
    c.serialMs = 5;
    QCOMPARE(QString::fromStdString(c.validate().value_or("")), QString());
    c.strategy = "hogwild";
    QCOMPARE(QString::fromStdString(c.validate().value_or("")),
             QString("serial-ms: a serial section every rank waits for needs --strategy sync "
                     "(asynchronous ranks would not wait)"));
    c.strategy = "sync";
    c.serialMs = 1001;
    QCOMPARE(QString::fromStdString(c.validate().value_or("")),
             QString("serial-ms: 1001 is out of range (allowed: 0..1000; 0 = none)"));
  }
  void serialSectionEveryRankWaitsFor() {
    for (int ranks : {1, 2}) {
      RunConfig c = stragglerRun("sync", "none");
      c.hidden = 32;
      c.ranks = ranks;
      c.serialMs = 20;
      Trainer t(c);
      RunConfig plainConfig = c;
      plainConfig.serialMs = 0;
      Trainer plain(plainConfig);
      for (int i = 0; i < 3; ++i) {
        const StepMetrics s = t.step(), p = plain.step();
        QVERIFY2(s.stepMs >= 20, qPrintable(QString::number(s.stepMs)));
        QCOMPARE(s.loss, p.loss);  // the same training, only slower
        // Rank 0 is busy through it (a compute span); another rank waits for it: whatever of
        // the 20 ms it did not spend in its own compute (on shared cores a preempted rank's
        // compute stretches) it spends waiting, not a fixed share of it.
        QVERIFY2(s.ranks[0].forwardMs >= 20, qPrintable(QString::number(s.ranks[0].forwardMs)));
        if (ranks == 2) {
          const double waited = s.ranks[1].idleMs + s.ranks[1].commMs;
          QVERIFY2(waited >= 20 - s.ranks[1].computeMs - 3,
                   qPrintable(QString("rank 1 waited %1 ms and computed %2 ms of a 20 ms section")
                                  .arg(waited)
                                  .arg(s.ranks[1].computeMs)));
        }
      }
    }
  }

  // [SECTION] A failing rank: one message naming the rank, the op and the step; the other
  // ranks, blocked in collectives or waiting for the next step, are released.
  void failingRankEndsTheRun_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<QString>("fail");
    QTest::newRow("sync, 2 ranks") << "sync" << 2 << "1@3";
    QTest::newRow("sync, 4 ranks") << "sync" << 4 << "2@2";
    QTest::newRow("ps-async server") << "ps-async" << 3 << "0@2";
    QTest::newRow("local-sgd") << "local-sgd" << 2 << "0@2";
  }
  void failingRankEndsTheRun() {
    QFETCH(QString, strategy);
    QFETCH(int, ranks);
    QFETCH(QString, fail);
    RunConfig c;
    c.dataset = "synthetic";
    c.hidden = 32;
    c.batch = 32;
    c.evalEvery = 0;
    c.ranks = ranks;
    c.strategy = strategy.toStdString();
    c.fail = fail.toStdString();
    const FailSpec f = *parseFail(c.fail, ranks);
    Trainer t(c);
    QString error;
    int64_t stepsDone = 0;
    try {
      for (; stepsDone < 5; ++stepsDone) t.step();
    } catch (const std::exception& e) {
      error = e.what();
    }
    QCOMPARE(stepsDone, f.step - 1);
    QCOMPARE(error, QString("rank %1 failed at step %2 after its backward: injected failure "
                            "(--fail %3)")
                        .arg(f.rank)
                        .arg(f.step)
                        .arg(fail));
  }
};

QTEST_GUILESS_MAIN(TstFaults)
#include "tst_faults.moc"
