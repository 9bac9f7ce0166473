// The mixture-of-experts model and expert parallelism with --device cuda: the experts' GEMMs,
// the row gathers and scatter-adds and the all-to-alls on the GPU, the routing plan on the host.
//   * A CUDA serial MoE reproduces the CPU MoE's loss trajectory: 1e-4 relative over 20 steps
//     (fp32 GEMMs summing in another order, as tst_cuda_training's serialMatchesCpu), top-1 and
//     top-2, with the load-balancing loss, and with tokens dropped over capacity; the routing
//     figures (token choices per expert, dropped tokens) are the CPU run's, step for step.
//     Routing is discrete: a token whose top-k margin were below that rounding would part the
//     runs (tst_moe.cpp's matchesSerial says why none does at this size).
//   * Expert parallelism, ep 2 and dp 2 x ep 2, thread ranks sharing the one GPU (ThreadComm's
//     device path), reproduces the CUDA serial run (1e-4; top-2 adds a token's two expert rows
//     with atomics, in any order), with the same routing figures; so do the other gradient
//     syncs (naive all-reduce, ZeRO-1/2/3 with the experts sharded over expert-dp).
//   * --backend nccl follows --backend thread (rows with more ranks than GPUs skip).
//   * Evaluation (countCorrect on the GPU) agrees with the CPU's; forward and backward spans
//     are CUDA events inside the step.
//   * Per-rank device memory is the model-state formula of tst_moe.cpp (the tracker counts the
//     GPU tensors), and live reconfiguration moves the state between GPU and CPU layouts.
// Every row skips without a GPU; tst_cuda_moe_emulated runs them all on the emulated GPU
// (kernels/cuda/emulated.h; NCCL rows skip there). Run: ctest -R tst_cuda_moe -V
#include <QtTest>
#include <cmath>

#include "comm/communicator.h"  // ncclAvailable
#include "cuda_skip.h"
#include "device/compute.h"
#include "loss_trajectory.h"
#include "model/moe.h"
#include "moe_runs.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

using test::moeConfig;  // tst_moe.cpp's run (moe_runs.h)
std::vector<StepMetrics> run(const RunConfig& c, int steps) { return test::runSteps(c, steps); }

std::vector<double> losses(const std::vector<StepMetrics>& ms) {
  std::vector<double> out;
  for (const StepMetrics& m : ms) out.push_back(m.loss);
  return out;
}

// The loss within `tolerance` relative at every step, and the routing figures equal.
void compareRuns(const std::vector<StepMetrics>& got, const std::vector<StepMetrics>& ref,
                 double tolerance, const char* what) {
  VERIFY_TRAJECTORIES_AGREE(losses(got), losses(ref), tolerance, what);
  for (size_t s = 0; s < ref.size(); ++s) {
    QVERIFY2(got[s].expertTokens == ref[s].expertTokens,
             qPrintable(QString("step %1: token choices per expert differ").arg(s + 1)));
    QCOMPARE(*got[s].droppedTokens, *ref[s].droppedTokens);
    if (ref[s].auxLoss && *ref[s].auxLoss > 0)
      QVERIFY2(std::abs(*got[s].auxLoss - *ref[s].auxLoss) <= tolerance * *ref[s].auxLoss,
               qPrintable(QString("step %1: aux loss %2 vs %3")
                              .arg(s + 1)
                              .arg(*got[s].auxLoss)
                              .arg(*ref[s].auxLoss)));
  }
}

}  // namespace

class TstCudaMoe : public QObject {
  Q_OBJECT
 private slots:
  // No GPU: the whole suite is reported as skipped (tests/CMakeLists.txt).
  void initTestCase() { SKIP_WITHOUT_GPU(); }
  void serialMatchesCpu_data() {
    QTest::addColumn<int>("topk");
    QTest::addColumn<double>("capacity");
    QTest::addColumn<double>("aux");
    QTest::newRow("k=1") << 1 << 4.0 << 0.0;
    QTest::newRow("k=2") << 2 << 4.0 << 0.0;
    QTest::newRow("k=1 aux") << 1 << 4.0 << 0.01;
    QTest::newRow("k=2 aux") << 2 << 4.0 << 0.01;
    QTest::newRow("k=2 drops + aux") << 2 << 0.75 << 0.01;
  }
  void serialMatchesCpu() {
    SKIP_WITHOUT_GPU();
    QFETCH(int, topk);
    QFETCH(double, capacity);
    QFETCH(double, aux);
    RunConfig cpu = moeConfig(1, 1, topk);
    cpu.capacityFactor = capacity;
    cpu.auxLoss = aux;
    RunConfig gpu = cpu;
    test::useGpu(gpu);
    const auto ref = run(cpu, 20), got = run(gpu, 20);
    compareRuns(got, ref, 1e-4, qPrintable("cuda vs cpu " + QString(QTest::currentDataTag())));
    if (capacity < 1) {
      int64_t dropped = 0;
      for (const StepMetrics& m : got) dropped += *m.droppedTokens;
      QVERIFY(dropped > 0);
    }
    QVERIFY2(ref.back().loss < 0.8 * ref.front().loss, "the run should learn");
  }

  void expertParallelMatchesCudaSerial_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("ep");
    QTest::addColumn<int>("topk");
    QTest::addColumn<double>("capacity");
    QTest::addColumn<int>("zero");  // the gradient sync: ZeRO stage, or 0 and --dp-version
    QTest::addColumn<QString>("version");
    for (int k : {1, 2}) {
      QTest::addRow("ep=2 dp=2 k=%d", k) << 2 << 2 << k << 4.0 << 0 << "bucket";
      QTest::addRow("ep=2 dp=4 k=%d", k) << 4 << 2 << k << 4.0 << 0 << "bucket";
    }
    QTest::newRow("ep=1 dp=2 k=2") << 2 << 1 << 2 << 4.0 << 0 << "bucket";
    QTest::newRow("ep=2 dp=4 k=2 drops") << 4 << 2 << 2 << 0.75 << 0 << "bucket";
    QTest::newRow("ep=2 dp=4 k=2 per-tensor") << 4 << 2 << 2 << 4.0 << 0 << "per-tensor";
    for (int zero : {1, 2, 3})
      QTest::addRow("ep=2 dp=4 k=2 zero-%d", zero) << 4 << 2 << 2 << 4.0 << zero << "bucket";
    QTest::newRow("ep=2 dp=2 k=1 zero-3") << 2 << 2 << 1 << 4.0 << 3 << "bucket";
  }
  void expertParallelMatchesCudaSerial() {
    SKIP_WITHOUT_GPU();
    QFETCH(int, ranks);
    QFETCH(int, ep);
    QFETCH(int, topk);
    QFETCH(double, capacity);
    QFETCH(int, zero);
    QFETCH(QString, version);
    RunConfig serial = moeConfig(1, 1, topk);
    test::useGpu(serial);
    serial.capacityFactor = capacity;
    RunConfig parallel = serial;
    parallel.ranks = ranks;
    parallel.ep = ep;
    parallel.zero = zero;
    parallel.dpVersion = *fromName<DpVersion>(version.toStdString());
    const auto ref = run(serial, 20), got = run(parallel, 20);
    compareRuns(got, ref, 1e-4,
                qPrintable("cuda " + QString(QTest::currentDataTag()) + " vs cuda serial"));
    // Every rank's experts ran on the GPU: their rows add up to the routed rows kept.
    for (const StepMetrics& m : got) {
      int64_t routed = 0, processed = 0;
      for (const auto& block : m.expertTokens)
        for (int64_t n : block) routed += n;
      for (const RankMetrics& r : m.ranks) processed += *r.tokens;
      QCOMPARE(processed, routed - *m.droppedTokens);
    }
  }

  // The GPT with an MoE FFN (--ffn moe): every position of every window routed on its own, on
  // the GPU as on the CPU, and its experts spread over ranks as on one.
  void gptExpertsMatchCpuAndSerial_data() {
    QTest::addColumn<int>("topk");
    QTest::addColumn<double>("capacity");
    QTest::newRow("k=1") << 1 << 4.0;
    QTest::newRow("k=2 drops") << 2 << 0.75;
  }
  void gptExpertsMatchCpuAndSerial() {
    SKIP_WITHOUT_GPU();
    QFETCH(int, topk);
    QFETCH(double, capacity);
    RunConfig cpu = test::smallGptRun(8);
    cpu.ffn = Ffn::Moe, cpu.experts = 4, cpu.topk = topk, cpu.capacityFactor = capacity;
    cpu.auxLoss = 0.01;
    RunConfig gpu = cpu;
    test::useGpu(gpu);
    RunConfig spread = gpu;
    spread.ranks = 2, spread.ep = 2;
    const auto ref = run(cpu, 15), got = run(gpu, 15), par = run(spread, 15);
    compareRuns(got, ref, 1e-4, "gpt experts: cuda vs cpu");
    compareRuns(par, got, 1e-4, "gpt experts: cuda ep=2 vs cuda serial");
    QVERIFY2(ref.back().loss < 0.9 * ref.front().loss, "the run should learn");
  }

  // NCCL moves the same rows and sums the same two addends as ThreadComm's device path.
  void ncclMatchesThreads_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("ep");
    QTest::addColumn<int>("topk");
    QTest::newRow("serial") << 1 << 1 << 2;
    QTest::newRow("ep=2 dp=2 k=1") << 2 << 2 << 1;
    QTest::newRow("ep=2 dp=2 k=2") << 2 << 2 << 2;
  }
  void ncclMatchesThreads() {
    SKIP_WITHOUT_GPU();
    QFETCH(int, ranks);
    QFETCH(int, ep);
    QFETCH(int, topk);
    SKIP_WITHOUT_NCCL_GPUS(ranks);
    RunConfig thread = moeConfig(ranks, ep, topk);
    test::useGpu(thread);
    RunConfig nccl = thread;
    nccl.backend = Backend::Nccl;
    const auto ref = run(thread, 20), got = run(nccl, 20);
    compareRuns(got, ref, 1e-4, qPrintable("nccl vs thread " + QString(QTest::currentDataTag())));
  }

  // Evaluation runs the MoE's forward and the arg-max count on the GPU (every rank of the EP
  // group takes part); the step's compute spans are CUDA events mapped into the step.
  void evaluationAndSpans_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("ep");
    QTest::newRow("serial") << 1 << 1;
    QTest::newRow("ep=2 dp=2") << 2 << 2;
  }
  void evaluationAndSpans() {
    SKIP_WITHOUT_GPU();
    QFETCH(int, ranks);
    QFETCH(int, ep);
    const RunConfig cpu = moeConfig(ranks, ep, 2);
    RunConfig gpu = cpu;
    test::useGpu(gpu);
    Trainer a(cpu), b(gpu);
    for (int r = 0; r < b.localRankCount(); ++r) QVERIFY(b.compute(r).onGpu());
    for (int s = 0; s < 10; ++s) a.step(), b.step();
    const double accCpu = a.evaluate(1000), accGpu = b.evaluate(1000);
    qInfo("test accuracy after 10 steps: cpu %.4f, cuda %.4f", accCpu, accGpu);
    QVERIFY2(std::abs(accCpu - accGpu) <= 0.005,
             qPrintable(QString("%1 vs %2").arg(accCpu).arg(accGpu)));
    const int64_t before = nowNs();
    b.step();
    const int64_t after = nowNs();
    int forward = 0, backward = 0;
    for (const Span& s : b.spans().since(11)) {
      if (s.kind != SpanKind::Forward && s.kind != SpanKind::Backward) continue;
      (s.kind == SpanKind::Forward ? forward : backward)++;
      QVERIFY(s.startNs <= s.endNs);
      QVERIFY2(s.startNs >= before - 1'000'000 && s.endNs <= after + 1'000'000,
               qPrintable(QString("span [%1, %2] outside the step [%3, %4]")
                              .arg(s.startNs)
                              .arg(s.endNs)
                              .arg(before)
                              .arg(after)));
    }
    // At least one per unit (a block's spans pause around its collectives).
    QVERIFY(forward >= gpu.layers + 2);
    QVERIFY(backward >= gpu.layers + 2);
  }

  // The tracker counts the GPU tensors: model states per rank are tst_moe.cpp's formula (dense
  // weights whole, E/ep experts per block; momentum: 4 bytes each of params, grads, optimizer),
  // and the activations are device tensors of the rank too.
  void deviceMemoryIsTheFormula_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("ep");
    QTest::newRow("serial") << 1 << 1;
    QTest::newRow("ep=2 dp=2") << 2 << 2;
    QTest::newRow("ep=2 dp=4") << 4 << 2;
  }
  void deviceMemoryIsTheFormula() {
    SKIP_WITHOUT_GPU();
    QFETCH(int, ranks);
    QFETCH(int, ep);
    RunConfig c = moeConfig(ranks, ep, 2);
    test::useGpu(c);
    Trainer t(c);
    const StepMetrics m = t.step();
    const auto [expert, dense, held] = test::moeHeld(c, ep);
    for (const RankMetrics& r : m.ranks) {
      QCOMPARE(r.mem[MemCategory::Params], 4 * held);
      QCOMPARE(r.mem[MemCategory::Grads], 4 * held);
      QCOMPARE(r.mem[MemCategory::Optimizer], 4 * held);
      QVERIFY(r.mem[MemCategory::Activations] > 0);
    }
  }

  // Live reconfiguration through the serial layout, off and onto the GPU: CUDA serial ->
  // CUDA ep 2 x 2 -> CPU ep 2 x 4 -> CUDA serial continues the uninterrupted CUDA run (1e-4, as
  // the GPU and CPU differ in rounding), and a reload saves back the state it took.
  void reconfigureAcrossDevicesContinues() {
    SKIP_WITHOUT_GPU();
    auto layout = [](int ranks, int ep, Device device) {
      RunConfig c = moeConfig(ranks, ep, 2);
      c.optimizer = "adam";
      c.lr = 0.002;
      c.device = device;
      if (c.device == Device::Cuda) test::useGpu(c);
      return c;
    };
    const std::vector<RunConfig> next = {layout(2, 2, Device::Cuda), layout(4, 2, Device::Cpu),
                                         layout(1, 1, Device::Cuda)};
    const int per = 5;
    const std::vector<double> ref =
        test::lossTrajectory(layout(1, 1, Device::Cuda), per * int(next.size() + 1));
    std::vector<double> got;
    auto trainer = std::make_unique<Trainer>(layout(1, 1, Device::Cuda));
    for (int s = 0; s < per; ++s) got.push_back(trainer->step().loss);
    for (const RunConfig& to : next) {
      const TrainingState state = trainer->saveState();
      QCOMPARE(state.step, int64_t(got.size()));
      trainer = std::make_unique<Trainer>(to);
      trainer->loadState(state);
      const TrainingState back = trainer->saveState();
      QVERIFY2(back.params == state.params && back.optM == state.optM && back.optV == state.optV,
               qPrintable(QString("the state changed on its way into %1 ranks ep %2 on %3")
                              .arg(to.ranks)
                              .arg(to.ep)
                              .arg(nameOf(to.device).c_str())));
      QCOMPARE(back.optimizerSteps, state.optimizerSteps);
      for (int s = 0; s < per; ++s) got.push_back(trainer->step().loss);
    }
    VERIFY_TRAJECTORIES_AGREE(got, ref, 1e-4,
                              "cuda -> cuda ep2 x2 -> cpu ep2 x4 -> cuda vs uninterrupted cuda");
  }
};

QTEST_GUILESS_MAIN(TstCudaMoe)
#include "tst_cuda_moe.moc"
