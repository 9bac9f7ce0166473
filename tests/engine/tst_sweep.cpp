// Scaling sweeps: the Amdahl and Gustafson fits recover the parallel fraction from synthetic
// timings, a real sweep measures every rank count and whether the loss curves coincide, and
// cancelling stops it.
// Run: ctest -R tst_sweep
#include <QtTest>
#include <cmath>
#include <nlohmann/json.hpp>
#include <thread>

#include "train/sweep.h"

using namespace paralab;

class TstSweep : public QObject {
  Q_OBJECT
 private slots:
  void amdahlRecoversP() {
    // Timings of a program that is 95% parallel: T(N) = 0.05 + 0.95 / N.
    const std::vector<int> n = {1, 2, 4, 8};
    std::vector<double> ms;
    for (int k : n) ms.push_back(100.0 * (0.05 + 0.95 / k));
    const SweepResult r = analyseSweep(Scaling::Strong, n, ms, 256);
    QVERIFY(std::abs(r.amdahl.p - 0.95) < 1e-12);
    QVERIFY(std::abs(r.amdahl.r2 - 1.0) < 1e-12);
    // The lesson's numbers: 5.9x at 8, 15.4x at 64, at most 20x.
    QVERIFY(std::abs(r.amdahl.speedup(8) - 5.925925925925926) < 1e-9);
    QVERIFY(std::abs(r.amdahl.speedup(64) - 15.421686746987952) < 1e-9);
    QVERIFY(std::abs(r.amdahl.speedup(1e12) - 20.0) < 1e-6);
    QCOMPARE(r.points[3].speedup, 100.0 / (100.0 * (0.05 + 0.95 / 8)));
    QVERIFY(std::abs(r.points[3].efficiency - r.points[3].speedup / 8) < 1e-12);
    QCOMPARE(r.points[0].samplesPerS, 256 / 0.1);
  }

  void amdahlWithNoise() {
    const std::vector<int> n = {1, 2, 4, 8};
    const double noise[] = {1.0, 1.01, 0.99, 1.02};
    std::vector<double> ms;
    for (size_t i = 0; i < n.size(); ++i) ms.push_back(noise[i] * (0.2 + 0.8 / n[i]));
    const SweepResult r = analyseSweep(Scaling::Strong, n, ms, 64);
    QVERIFY2(std::abs(r.amdahl.p - 0.8) < 0.02, qPrintable(QString::number(r.amdahl.p)));
    QVERIFY(r.amdahl.r2 > 0.95 && r.amdahl.r2 <= 1.0);
  }

  // Both laws pass through S(1) = 1 and have one parameter: fitted on ranks 1 and 2 alone they
  // meet both points whatever the timings, so R² would read 1.000 and mean nothing.
  void oneRankCountBesideOneHasNoRSquared() {
    const SweepResult two = analyseSweep(Scaling::Strong, {1, 2}, {10.0, 7.0}, 64);
    QVERIFY(std::abs(two.amdahl.speedup(2) - 10.0 / 7.0) < 1e-12);  // met exactly
    QVERIFY(std::isnan(two.amdahl.r2));
    QVERIFY(std::isnan(two.gustafson.r2));
    QCOMPARE(r2Text(two.amdahl.r2), std::string("n/a"));
    const SweepResult three = analyseSweep(Scaling::Strong, {1, 2, 4}, {10.0, 7.0, 5.0}, 64);
    QVERIFY(std::isfinite(three.amdahl.r2) && three.amdahl.r2 < 1.0);
    QCOMPARE(r2Text(0.98765), std::string("0.988"));
  }

  // A fitted fraction outside 0..1 is flagged, in the direction the run went; inside, nothing.
  void fractionOutsideZeroToOneIsExplained() {
    const std::vector<int> n = {1, 2, 4};
    const SweepResult inside = analyseSweep(Scaling::Strong, n, {10.0, 6.0, 4.0}, 64);
    QVERIFY(inside.amdahl.p > 0 && inside.amdahl.p < 1);
    QVERIFY(inside.amdahl.caveat().empty());
    // More ranks, slower steps: no parallel fraction can do that.
    const SweepResult slower = analyseSweep(Scaling::Strong, n, {10.0, 12.0, 20.0}, 64);
    QVERIFY(slower.amdahl.p < 0);
    QVERIFY2(slower.amdahl.caveat().find("slower") != std::string::npos,
             slower.amdahl.caveat().c_str());
    // Better than ideal (super-linear): p > 1 for Amdahl, s < 0 for Gustafson.
    const SweepResult superlinear = analyseSweep(Scaling::Strong, n, {10.0, 4.0, 2.0}, 64);
    QVERIFY(superlinear.amdahl.p > 1);
    QVERIFY(superlinear.amdahl.caveat().find("super-linear") != std::string::npos);
    const SweepResult weakSlower = analyseSweep(Scaling::Weak, n, {10.0, 25.0, 60.0}, 64);
    QVERIFY(weakSlower.gustafson.s > 1);
    QVERIFY(weakSlower.gustafson.caveat().find("slower") != std::string::npos);
  }

  // A sweep past the machine's cores says its last points measure sharing.
  void coresCaveatOnlyBeyondTheCores() {
    SweepResult r = analyseSweep(Scaling::Strong, {1, 2, 4}, {10.0, 6.0, 5.0}, 64);
    QVERIFY(coresCaveat(r).empty());  // cores not known
    r.cores = 4;
    QVERIFY(coresCaveat(r).empty());
    r.cores = 2;
    QVERIFY2(coresCaveat(r).find("2 cores") != std::string::npos, coresCaveat(r).c_str());
    // Shown after the fit as sentences: the cores alone here (p lies inside 0..1).
    QVERIFY(fitCaveat(r).empty());
    QCOMPARE(QString::fromStdString(fitNotes(r)),
             "R" + QString::fromStdString(coresCaveat(r)).mid(1) + ".");
  }

  void gustafsonRecoversS() {
    // Weak scaling: per-rank work fixed, serial fraction s = 0.1 of the parallel run:
    // scaled speedup N - 0.1 (N - 1) = N T1 / TN  =>  TN = N T1 / (N - 0.1 (N - 1)).
    const std::vector<int> n = {1, 2, 4, 8};
    std::vector<double> ms;
    for (int k : n) ms.push_back(10.0 * k / (k - 0.1 * (k - 1)));
    const SweepResult r = analyseSweep(Scaling::Weak, n, ms, 32);
    QVERIFY(std::abs(r.gustafson.s - 0.1) < 1e-12);
    QVERIFY(std::abs(r.points[3].speedup - (8 - 0.7)) < 1e-9);
    QCOMPARE(r.points[3].samplesPerS, 32.0 * 8 / (ms[3] * 1e-3));
  }

  void parse() {
    QCOMPARE(parseSweep("ranks=1,2,4,8"), (std::vector<int>{1, 2, 4, 8}));
    QCOMPARE(parseSweep("ranks=4,2,2"), (std::vector<int>{2, 4}));
    for (const char* bad : {"ranks=", "ranks=0", "ranks=1,x", "nodes=1,2", "ranks=1,65",
                            "ranks=cores,2", "ranks=9*cores"}) {
      try {
        parseSweep(bad);
        QFAIL(bad);
      } catch (const ConfigError& e) {
        QVERIFY2(QString(e.what()).startsWith("sweep:"), e.what());
      }
    }
  }

  void coresSized() {
    // The rank counts for a core count given here, so the test is the same on every machine.
    using V = std::vector<int>;
    QCOMPARE(*coresSizedRanks("cores", 2), (V{1, 2}));
    QCOMPARE(*coresSizedRanks("cores", 1), (V{1, 2}));  // always 1 and 2
    QCOMPARE(*coresSizedRanks("cores", 6), (V{1, 2, 4, 6}));
    QCOMPARE(*coresSizedRanks("cores", 16), (V{1, 2, 4, 8, 16}));
    QCOMPARE(*coresSizedRanks("cores", 128), (V{1, 2, 4, 8, 16, 32, 64}));  // the engine's most
    // Past the cores: the point at the cores stays, to compare the oversubscribed ones with.
    QCOMPARE(*coresSizedRanks("2*cores", 2), (V{1, 2, 4}));
    QCOMPARE(*coresSizedRanks("4*cores", 2), (V{1, 2, 4, 8}));
    QCOMPARE(*coresSizedRanks("2*cores", 6), (V{1, 2, 4, 6, 8, 12}));
    QCOMPARE(*coresSizedRanks("4*cores", 1), (V{1, 2, 4}));
    for (const char* bad : {"", "core", "cores ", "1*cores", "9*cores", "2 * cores", "x*cores"})
      QVERIFY2(!coresSizedRanks(bad, 2), bad);
    QCOMPARE(parseSweep("ranks=cores"), *coresSizedRanks("cores", machineCores()));
    QCOMPARE(parseSweep("ranks=2*cores"), *coresSizedRanks("2*cores", machineCores()));
    QCOMPARE(fitBasis(1, 2, 2), std::string("ranks 1–2, a core each"));
    QCOMPARE(fitBasis(1, 8, 2), std::string("ranks 1–8, cores shared past 2"));
    QCOMPARE(fitBasis(1, 8, 0), std::string("ranks 1–8"));
  }

  void realSweepAndCancel() {
    RunConfig c;
    c.dataset = "synthetic";
    c.hidden = 32;
    c.batch = 64;
    int calls = 0;
    const SweepResult r = runSweep(c, {2}, 3, 1, [&](int done, int total) {
      ++calls;
      return done <= total;
    });
    QCOMPARE(r.points.size(), size_t(2));  // the 1-rank baseline is added
    QCOMPARE(r.points[0].ranks, 1);
    QCOMPARE(r.points[1].ranks, 2);
    QVERIFY(r.points[1].stepMs > 0);
    QCOMPARE(calls, 8);
    QCOMPARE(r.cores, int(std::thread::hardware_concurrency()));  // the machine it ran on
    const SweepResult cancelled = runSweep(c, {1, 2, 4}, 3, 1, [](int done, int) { return done < 6; });
    QVERIFY(cancelled.cancelled);
    QCOMPARE(cancelled.points.size(), size_t(1));  // only the baseline finished
  }

  // A strong sweep trains the same steps at every rank count, so it can say whether the loss
  // curves coincide: sync data parallelism to rounding, local SGD (ranks step apart between
  // averages) visibly not. A weak sweep changes the batch: no gap is taken.
  void lossGapSaysWhetherTheCurvesCoincide() {
    RunConfig c;
    c.dataset = "synthetic";
    c.hidden = 32;
    c.batch = 64;
    const SweepResult sync = runSweep(c, {2, 4}, 4, 1);
    QCOMPARE(sync.points[0].lossGap, 0.0);
    QVERIFY2(sync.maxLossGap() < 1e-5, qPrintable(QString::number(sync.maxLossGap())));
    const nlohmann::json j = toJson(sync, c);
    QCOMPARE(j["loss_gap_max"].get<double>(), sync.maxLossGap());
    QCOMPARE(j["points"][2]["loss_gap"].get<double>(), sync.points[2].lossGap);
    c.strategy = "local-sgd";
    c.syncEvery = 4;
    const SweepResult local = runSweep(c, {2}, 4, 1);
    QVERIFY2(local.maxLossGap() > 1e-3, qPrintable(QString::number(local.maxLossGap())));
    c.strategy = "sync";
    c.scaling = Scaling::Weak;
    const SweepResult weak = runSweep(c, {2}, 2, 1);
    QVERIFY(std::isnan(weak.maxLossGap()));
    QVERIFY(!toJson(weak, c).contains("loss_gap_max"));
  }
};

QTEST_GUILESS_MAIN(TstSweep)
#include "tst_sweep.moc"
