// --kernel on the CPU: every rank of every strategy computes its GEMMs with the chosen rung of
// the ladder (kernels/cpu/gemm.h), through its Compute (engine/device/compute.h).
// Each rung sums a GEMM's K products in its own order (naive: one scalar chain per output;
// simd: one chain per lane; tiled: blocked over K with FMA panels; OpenBLAS: its own blocking),
// so a run's losses differ from the vendor run's in the last bits and no more: the trajectories
// agree to 1e-5 relative over 20 steps, as data-parallel runs agree with serial ones
// (tst_parallel_equals_serial.cpp). That they differ at all is what shows the flag is obeyed.
// Run: ctest -R tst_kernel_choice
#include <QtTest>
#include <cmath>

#include "capabilities.h"
#include "cpu/dispatch.h"
#include "cpu/gemm.h"
#include "device/compute.h"
#include "loss_trajectory.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

RunConfig baseConfig() { return test::smallRun(32, 2, 32); }

}  // namespace

class TstKernelChoice : public QObject {
  Q_OBJECT
 private slots:
  // Serial: each rung reproduces the vendor trajectory up to summation order.
  void serialMatchesVendor_data() {
    QTest::addColumn<QString>("kernel");
    for (const char* k : {"naive", "simd", "threaded", "tiled"}) QTest::newRow(k) << k;
  }
  void serialMatchesVendor() {
    QFETCH(QString, kernel);
    const RunConfig vendor = baseConfig();
    RunConfig c = vendor;
    c.kernel = kernel.toStdString();
    const std::vector<double> ref = test::lossTrajectory(vendor, 20),
                              got = test::lossTrajectory(c, 20);
    QVERIFY2(got != ref, "bit for bit the vendor run: --kernel was ignored");
    VERIFY_TRAJECTORIES_AGREE(got, ref, 1e-5, "--kernel " + kernel + " vs vendor");
  }

  // Every strategy family hands --kernel to each of its ranks, and the ranks' layers use it:
  // a run with the naive rung is not the vendor run bit for bit, and is close to it.
  void everyStrategyUsesTheKernel_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("zero");
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("pp");
    QTest::addColumn<QString>("model");
    QTest::newRow("serial") << "sync" << 0 << 1 << 1 << "mlp";
    QTest::newRow("sync N=2") << "sync" << 0 << 1 << 1 << "mlp";
    QTest::newRow("zero-3 N=2") << "sync" << 3 << 1 << 1 << "mlp";
    QTest::newRow("ps-sync N=2") << "ps-sync" << 0 << 1 << 1 << "mlp";
    QTest::newRow("local-sgd N=2") << "local-sgd" << 0 << 1 << 1 << "mlp";
    QTest::newRow("gossip N=2") << "gossip" << 0 << 1 << 1 << "mlp";
    QTest::newRow("tp=2") << "sync" << 0 << 2 << 1 << "mlp";
    QTest::newRow("pp=2") << "sync" << 0 << 1 << 2 << "mlp";
    QTest::newRow("moe N=2") << "sync" << 0 << 1 << 1 << "moe";
  }
  void everyStrategyUsesTheKernel() {
    QFETCH(QString, strategy);
    QFETCH(int, zero);
    QFETCH(int, tp);
    QFETCH(int, pp);
    QFETCH(QString, model);
    RunConfig vendor = baseConfig();
    vendor.strategy = strategy.toStdString();
    vendor.zero = zero;
    vendor.tp = tp;
    vendor.pp = pp;
    vendor.model = *fromName<ModelKind>(model.toStdString());
    vendor.ranks = QString(QTest::currentDataTag()) == "serial" ? 1 : 2;
    RunConfig naive = vendor;
    naive.kernel = "naive";
    {
      Trainer t(naive);
      for (int r = 0; r < t.localRankCount(); ++r) {
        QCOMPARE(QString::fromStdString(t.compute(r).kernel()), QString("naive"));
        QCOMPARE(t.compute(r).device(), Device::Cpu);
      }
    }
    const std::vector<double> ref = test::lossTrajectory(vendor, 5),
                              got = test::lossTrajectory(naive, 5);
    QVERIFY2(got != ref, "the naive run is the vendor run bit for bit: --kernel was ignored");
    VERIFY_TRAJECTORIES_AGREE(got, ref, 1e-4, QTest::currentDataTag());
  }

  // The SIMD rung says the vector width it runs at, the level chosen at start.
  void simdRungSaysItsWidth() {
    for (const GemmChoice& k : gemmChoices(Device::Cpu))
      if (k.name == "simd" || k.name == "threaded") {
        const std::string want = simdLevelName() + " (" +
                                 std::to_string(kernels::simdWidthFloats(kernels::simdLevel())) +
                                 " floats)";
        QVERIFY2(k.summary.find(want) != std::string::npos, k.summary.c_str());
      } else {
        QVERIFY2(k.summary.find(" floats)") == std::string::npos, k.summary.c_str());
      }
  }

  // Compute::cpu refuses a name the registry does not know, rather than falling back.
  void unknownKernelIsRefused() {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Compute::cpu("tensor-core"));
    QCOMPARE(Compute::cpu("tiled")->kernel(), std::string("tiled"));
  }
};

QTEST_GUILESS_MAIN(TstKernelChoice)
#include "tst_kernel_choice.moc"
