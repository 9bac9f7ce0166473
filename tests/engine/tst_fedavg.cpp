// Federated averaging (engine/parallel/async/fedavg.cpp): one client taking part in every round with
// one local step is serial SGD, loss and parameters; label-skewed clients learn less in the same
// rounds than IID ones; a round costs one reduce and one broadcast of the model; the window's
// and the command line's settings are the strategy's own.
// Run: ctest -R tst_fedavg
#include <QtTest>
#include <cmath>

#include "loss_trajectory.h"
#include "schema.h"

using namespace paralab;

namespace {

RunConfig fedavg(int ranks, int clients, double participation, int localSteps, double alpha) {
  RunConfig c = test::smallRun(32, 2, 32);
  c.optimizer = "sgd";
  c.ranks = ranks;
  c.strategy = "fedavg";
  c.extra = {{"clients", int64_t(clients)},
             {"participation", participation},
             {"local-steps", int64_t(localSteps)},
             {"dirichlet-alpha", alpha}};
  return c;
}

// Held-out accuracy after `rounds` rounds.
double accuracyAfter(RunConfig c, int rounds) {
  c.evalEvery = rounds;
  c.evalSamples = 0;
  Trainer t(c);
  StepMetrics m;
  for (int r = 0; r < rounds; ++r) m = t.step();
  return m.testAccuracy.value_or(-1);
}

}  // namespace

class TstFedAvg : public QObject {
  Q_OBJECT
 private slots:
  void oneClientIsSerialSgd_data() {
    QTest::addColumn<int>("ranks");
    QTest::newRow("1 rank") << 1;
    QTest::newRow("2 ranks (the second simulates no client)") << 2;
  }
  void oneClientIsSerialSgd() {
    QFETCH(int, ranks);
    RunConfig serial = test::smallRun(32, 2, 32);
    serial.optimizer = "sgd";
    const RunConfig fed = fedavg(ranks, 1, 1.0, 1, 0.5);
    QVERIFY2(!fed.validate(), fed.validate().value_or("").c_str());
    constexpr int kSteps = 30;
    Trainer a(serial), b(fed);
    std::vector<double> ref, got;
    for (int s = 0; s < kSteps; ++s) {
      ref.push_back(a.step().loss);
      got.push_back(b.step().loss);
    }
    VERIFY_TRAJECTORIES_AGREE(got, ref, 1e-5, "fedavg, one client");
    const TrainingState x = a.saveState(), y = b.saveState();
    QCOMPARE(x.params.size(), y.params.size());
    double worst = 0;
    for (size_t i = 0; i < x.params.size(); ++i)
      worst = std::max(worst, double(std::abs(x.params[i] - y.params[i])));
    qInfo("largest parameter difference after %d steps: %.3g", kSteps, worst);
    QVERIFY(worst <= 1e-6);
  }

  // The same rounds, clients and local steps: clients that each see a few labels drift towards
  // them between averagings, and the average model is worse on the test set (Zhao et al. 2018).
  void labelSkewLearnsLess() {
    constexpr int kRounds = 30;
    const double iid = accuracyAfter(fedavg(2, 20, 0.25, 10, 0.0), kRounds);
    const double skewed = accuracyAfter(fedavg(2, 20, 0.25, 10, 0.05), kRounds);
    qInfo("test accuracy after %d rounds: IID %.3f, Dirichlet(0.05) %.3f, gap %.3f", kRounds, iid,
          skewed, iid - skewed);
    QVERIFY(iid > 0.5);  // it learns
    QVERIFY2(iid - skewed >= 0.05, qPrintable(QString("gap %1").arg(iid - skewed)));
  }

  // A round: every rank's weighted sum reduced onto the server (rank 0), the new model
  // broadcast back: (N - 1) transfers of 4P bytes each way, however many clients took part.
  void roundTrafficIsAReduceAndABroadcast() {
    RunConfig c = fedavg(4, 12, 0.5, 3, 0.5);
    Trainer t(c);
    const int64_t P = t.parameterCount();
    for (int r = 0; r < 3; ++r) {
      const StepMetrics m = t.step();
      int64_t sent = 0, received = 0;
      for (const RankMetrics& rank : m.ranks) sent += rank.bytesSent, received += rank.bytesRecv;
      QCOMPARE(sent, 2 * 3 * 4 * P);
      QCOMPARE(received, sent);
      // The round's samples: 6 clients x 3 local steps x 32 (each shard holds more than 32).
      QVERIFY2(std::abs(m.samplesPerS * m.stepMs / 1e3 - 6 * 3 * 32) < 1e-6 * 576,
               qPrintable(QString::number(m.samplesPerS * m.stepMs / 1e3)));
    }
  }

  // Its four settings are the strategy's own: offered by the settings table, range-checked like
  // every other, and under another strategy kept without effect, the window saying why.
  void settingsAreTheStrategysOwn() {
    for (const char* key : {"clients", "participation", "local-steps", "dirichlet-alpha"}) {
      const Setting* s = findSetting(key);
      QVERIFY2(s, key);
      RunConfig c = test::smallRun(32, 2, 32);
      c.ranks = 2;
      s->set(c, s->type == SettingType::Integer ? SettingValue(int64_t(3)) : SettingValue(0.75));
      QVERIFY2(!c.validate(), c.validate().value_or("").c_str());
      const SettingsInEffect effect = settingsInEffect(c, false);
      QVERIFY2(effect.why(key) && effect.why(key)->rfind("applies to --strategy fedavg", 0) == 0,
               key);
      c.strategy = "fedavg";
      QVERIFY2(!c.validate(), c.validate().value_or("").c_str());
      QVERIFY(!settingsInEffect(c, false).why(key));
    }
    RunConfig c = fedavg(2, 10, 1.5, 1, 0.5);
    QVERIFY(QString::fromStdString(c.validate().value_or("")).startsWith("participation: 1.5"));
  }
};

QTEST_GUILESS_MAIN(TstFedAvg)
#include "tst_fedavg.moc"
