// Training with --device cuda: the model, its gradients, the optimizer state and the
// collectives of two thread ranks sharing one GPU, all in device memory.
//   * A CUDA serial run reproduces the CPU (OpenBLAS) loss trajectory. fp32 GEMMs: 1e-4
//     relative over 20 steps (the same products summed in another order, and tanhf on the GPU
//     where the CPU uses a fast exp-based tanh, both ~1e-7 per operation). TF32 tensor cores
//     (tensor-core, vendor-tf32): 1e-2, since every GEMM input is rounded to a 10-bit mantissa
//     (relative error 2^-11 ~ 5e-4 per product) and that compounds over the steps.
//   * Sync data parallel (per-tensor, bucket) and ZeRO-1/2/3 with N = 2 ranks on the one GPU
//     (ThreadComm's device path) reproduce the CUDA serial run: 1e-4, as on the CPU the ranks'
//     sums differ from the serial GEMM's only in order (cuBLAS may also pick another
//     algorithm for the half batch).
//   * Local SGD averaging every step reproduces it too (the average is an all-reduce on the GPU),
//     and local SGD and gossip (ring, random) follow their CPU runs (1e-4).
//   * The parameter servers follow their CPU runs (1e-4; ps-sync also the CUDA serial run) and
//     ps-async's staleness is the round-robin formula; Hogwild's four racing streams learn.
//   * --backend nccl, a thread rank per GPU, follows --backend thread on the same GPUs (1e-5):
//     serial, sync, ZeRO-1/2/3, local SGD, gossip and the parameter servers; rows with more
//     ranks than GPUs skip.
//   * Live reconfiguration moves the state off and onto the GPU (CUDA -> CUDA ZeRO-3 -> CPU).
//   * The caching allocator reuses a freed block, zero-filled, and the tracker counts tensors.
//   * Per-rank device memory, from the tracking allocator, is the model-state formula: 16P
//     bytes with Adam (4P params, 4P grads, 8P moments), and ZeRO-3's 16 bytes per owned float.
// Every GPU row skips without a GPU; tst_cuda_training_emulated runs them on the emulated GPU
// (kernels/cuda/emulated.h; NCCL rows skip there). What cuda refuses is checked everywhere.
// The model-parallel family and the MoE on the GPU: tst_cuda_model_parallel, tst_cuda_moe.
// Run: ctest -R tst_cuda_training -V
#include <QtTest>
#include <cmath>

#include "comm/communicator.h"  // ncclAvailable
#include "cuda_skip.h"
#include "device/compute.h"
#include "layout_spec.h"
#include "loss_trajectory.h"
#include "model/mlp.h"
#include "parallel/strategy.h"
#include "parallel/data/zero.h"
#include "train/latency_sweep.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

// On the emulated GPU the kernels execute on the host, one CUDA thread after another: half the
// width and batch there (a quarter of the GEMM work; the same code paths) keep the suite short.
RunConfig baseConfig() {
  const int n = kernels::cuda_query_devices().emulated ? 32 : 64;
  RunConfig c = test::smallRun(n, 2, n);
  c.bucketMb = 0.01;  // several buckets even for this small model
  return c;
}

bool haveGpu() { return kernels::cuda_query_devices().count > 0; }

}  // namespace

class TstCudaTraining : public QObject {
  Q_OBJECT
 private slots:
  // No GPU: the whole suite is reported as skipped (tests/CMakeLists.txt).
  void initTestCase() { SKIP_WITHOUT_GPU(); }
  void serialMatchesCpu_data() {
    QTest::addColumn<QString>("kernel");
    QTest::addColumn<double>("tolerance");
    for (const char* k : {"naive", "coalesced", "tiled", "vendor"}) QTest::newRow(k) << k << 1e-4;
    for (const char* k : {"tensor-core", "vendor-tf32"}) QTest::newRow(k) << k << 1e-2;
  }
  void serialMatchesCpu() {
    SKIP_WITHOUT_GPU();
    QFETCH(QString, kernel);
    QFETCH(double, tolerance);
    const RunConfig cpu = baseConfig();
    RunConfig gpu = cpu;
    test::useGpu(gpu);
    gpu.kernel = kernel.toStdString();
    if (kernels::cuda_query_devices().emulated && kernel.startsWith("vendor")) {
      // No cuBLAS on the emulated GPU: the run stops at its first GEMM, saying so.
      try {
        test::lossTrajectory(gpu, 1);
        QFAIL("cuBLAS ran on the emulated GPU");
      } catch (const std::runtime_error& e) {
        QVERIFY2(QString(e.what()).contains("cuBLAS needs a real GPU"), e.what());
      }
      return;
    }
    const std::vector<double> ref = test::lossTrajectory(cpu, 20),
                              got = test::lossTrajectory(gpu, 20);
    VERIFY_TRAJECTORIES_AGREE(got, ref, tolerance, "cuda " + kernel + " vs cpu vendor");
  }

  // The GPT on the GPU (embedding, attention and their backward kernels, the token ids uploaded
  // as ints) follows its CPU run, under each recomputation, serial and sync data parallel on
  // two ranks; its held-out loss agrees too.
  void gptFollowsTheCpu_data() {
    QTest::addColumn<QString>("recompute");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<QString>("layout");  // model parallelism (layout_spec.h), or none
    QTest::newRow("none") << "none" << 1 << "";
    QTest::newRow("selective") << "selective" << 1 << "";
    QTest::newRow("full, sync N=2") << "full" << 2 << "";
    QTest::newRow("tp2 sp") << "none" << 2 << "tp2 sp";
    QTest::newRow("selective, tp2 pp2 1f1b M2") << "selective" << 4 << "tp2 pp2 1f1b M2";
  }
  void gptFollowsTheCpu() {
    SKIP_WITHOUT_GPU();
    QFETCH(QString, recompute);
    QFETCH(int, ranks);
    QFETCH(QString, layout);
    RunConfig cpu = test::smallRun(16, 2, 8);
    cpu.model = ModelKind::Gpt;
    cpu.heads = 2;
    cpu.seq = 8;
    cpu.optimizer = "adam";
    cpu.lr = 0.01;
    cpu.recompute = recomputeFromName(recompute.toStdString());
    cpu.ranks = ranks;
    if (!layout.isEmpty()) cpu = test::withLayout(cpu, layout);
    cpu.steps = 10;
    cpu.evalEvery = 10;
    cpu.evalSamples = 16;
    RunConfig gpu = cpu;
    test::useGpu(gpu);
    Trainer a(cpu), b(gpu);
    std::vector<double> ref, got;
    StepMetrics lastA, lastB;
    for (int s = 0; s < cpu.steps; ++s) {
      lastA = a.step(), lastB = b.step();
      ref.push_back(lastA.loss), got.push_back(lastB.loss);
    }
    VERIFY_TRAJECTORIES_AGREE(got, ref, 1e-4, "gpt cuda vs cpu");
    QVERIFY(lastA.testLoss && lastB.testLoss);
    QVERIFY2(std::abs(*lastA.testLoss - *lastB.testLoss) <= 1e-4 * *lastA.testLoss,
             qPrintable(QString("held-out loss cpu %1 cuda %2").arg(*lastA.testLoss).arg(*lastB.testLoss)));
  }

  // Evaluation (forward, arg-max on the GPU, the count copied back) agrees with the CPU's,
  // and the step's compute spans come from CUDA events inside the step.
  void evaluationAndSpans() {
    SKIP_WITHOUT_GPU();
    RunConfig cpu = baseConfig();
    RunConfig gpu = cpu;
    test::useGpu(gpu);
    Trainer a(cpu), b(gpu);
    QVERIFY(b.compute().onGpu());
    for (int s = 0; s < 10; ++s) a.step(), b.step();
    const double accCpu = a.evaluate(1000), accGpu = b.evaluate(1000);
    qInfo("test accuracy after 10 steps: cpu %.4f, cuda %.4f", accCpu, accGpu);
    QVERIFY2(std::abs(accCpu - accGpu) <= 0.005,
             qPrintable(QString("%1 vs %2").arg(accCpu).arg(accGpu)));
    const int64_t before = nowNs();
    b.step();
    const int64_t after = nowNs();
    int forward = 0, backward = 0;
    for (const Span& s : b.spans().since(11)) {  // the 11th step's spans
      if (s.kind != SpanKind::Forward && s.kind != SpanKind::Backward) continue;
      (s.kind == SpanKind::Forward ? forward : backward)++;
      QVERIFY(s.startNs <= s.endNs);
      // Event times mapped onto the host clock land within the step (a little slack for the
      // microseconds between the reference event and the host's reading of its clock).
      QVERIFY2(s.startNs >= before - 1'000'000 && s.endNs <= after + 1'000'000,
               qPrintable(QString("span [%1, %2] outside the step [%3, %4]")
                              .arg(s.startNs)
                              .arg(s.endNs)
                              .arg(before)
                              .arg(after)));
    }
    QCOMPARE(forward, gpu.layers + 2);  // one per unit
    QCOMPARE(backward, gpu.layers + 2);
  }

  void dataParallelMatchesCudaSerial_data() {
    QTest::addColumn<QString>("variant");
    QTest::addColumn<QString>("optimizer");
    for (const char* v : {"per-tensor", "bucket", "zero-1", "zero-2", "zero-3"}) {
      QTest::addRow("%s momentum", v) << v << "momentum";
      QTest::addRow("%s adam", v) << v << "adam";
    }
  }
  void dataParallelMatchesCudaSerial() {
    SKIP_WITHOUT_GPU();
    QFETCH(QString, variant);
    QFETCH(QString, optimizer);
    RunConfig serial = baseConfig();
    test::useGpu(serial);
    serial.optimizer = optimizer.toStdString();
    if (serial.optimizer == "adam") serial.lr = 0.002;
    RunConfig dp = serial;
    dp.ranks = 2;
    if (variant.startsWith("zero-"))
      dp.zero = variant.mid(5).toInt();
    else
      dp.dpVersion = *fromName<DpVersion>(variant.toStdString());
    const std::vector<double> ref = test::lossTrajectory(serial, 20),
                              got = test::lossTrajectory(dp, 20);
    VERIFY_TRAJECTORIES_AGREE(got, ref, 1e-4, "cuda " + variant + " N=2 vs cuda serial");
  }

  // Local SGD with H = 1 and equal slices is synchronous SGD with momentum (both linear in the
  // gradient; tst_async_strategies.cpp shows it on the CPU): the parameter average on the GPU
  // reproduces the CUDA serial run, and the spread comes back every step.
  void localSgdEveryStepMatchesCudaSerial() {
    SKIP_WITHOUT_GPU();
    RunConfig serial = baseConfig();
    test::useGpu(serial);
    RunConfig local = serial;
    local.strategy = "local-sgd";
    local.ranks = 2;
    local.syncEvery = 1;
    Trainer a(serial), b(local);
    for (int s = 0; s < 20; ++s) {
      const double x = a.step().loss;
      const StepMetrics m = b.step();
      QVERIFY2(
          std::abs(x - m.loss) <= 1e-4 * std::abs(x),
          qPrintable(QString("step %1: serial %2, local-sgd %3").arg(s + 1).arg(x).arg(m.loss)));
      QVERIFY(m.spread.has_value() && std::isfinite(*m.spread));
    }
  }

  // The decentralised strategies run the same algorithm on the GPU as on the CPU: the same
  // trajectory up to fp32 summation order (1e-4, as serialMatchesCpu).
  void decentralisedMatchesCpu_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<QString>("topology");
    QTest::addColumn<int>("syncEvery");
    QTest::newRow("local-sgd N=2 H=2") << "local-sgd" << 2 << "ring" << 2;
    QTest::newRow("gossip ring N=2") << "gossip" << 2 << "ring" << 1;
    QTest::newRow("gossip ring N=3") << "gossip" << 3 << "ring" << 1;
    QTest::newRow("gossip random N=4") << "gossip" << 4 << "random" << 1;
  }
  void decentralisedMatchesCpu() {
    SKIP_WITHOUT_GPU();
    QFETCH(QString, strategy);
    QFETCH(int, ranks);
    QFETCH(QString, topology);
    QFETCH(int, syncEvery);
    RunConfig cpu = baseConfig();
    cpu.strategy = strategy.toStdString();
    cpu.ranks = ranks;
    cpu.topology = topology.toStdString();
    cpu.syncEvery = syncEvery;
    RunConfig gpu = cpu;
    test::useGpu(gpu);
    Trainer a(cpu), b(gpu);
    std::vector<double> ref, got;
    for (int s = 0; s < 20; ++s) {
      ref.push_back(a.step().loss);
      const StepMetrics m = b.step();
      got.push_back(m.loss);
      if (s % syncEvery == syncEvery - 1)
        QVERIFY2(m.spread && std::isfinite(*m.spread), "no spread on an averaging step");
    }
    VERIFY_TRAJECTORIES_AGREE(got, ref, 1e-4,
                              QString("cuda %1 vs cpu").arg(QTest::currentDataTag()));
  }

  // The parameter servers run the same algorithm on the GPU as on the CPU (ps-async serves its
  // workers in a fixed order, so it is deterministic too): the same trajectory up to fp32
  // summation order (1e-4), ps-sync also equal to the CUDA serial run, and ps-async's measured
  // staleness (the version float that rides with each reply, copied off the GPU) equal to the
  // round-robin formula of tst_async_strategies.
  void parameterServersMatchCpu_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("servers");
    QTest::newRow("ps-sync N=2 S=1") << "ps-sync" << 2 << 1;
    QTest::newRow("ps-sync N=3 S=2") << "ps-sync" << 3 << 2;
    QTest::newRow("ps-async N=2 S=1") << "ps-async" << 2 << 1;
    QTest::newRow("ps-async N=3 S=2") << "ps-async" << 3 << 2;
  }
  void parameterServersMatchCpu() {
    SKIP_WITHOUT_GPU();
    QFETCH(QString, strategy);
    QFETCH(int, ranks);
    QFETCH(int, servers);
    RunConfig cpu = baseConfig();
    cpu.strategy = strategy.toStdString();
    cpu.ranks = ranks;
    cpu.servers = servers;
    if (strategy == "ps-async") cpu.optimizer = "sgd";  // staleness is momentum enough
    RunConfig gpu = cpu;
    test::useGpu(gpu);
    Trainer a(cpu), b(gpu);
    std::vector<double> ref, got;
    for (int s = 0; s < 20; ++s) {
      ref.push_back(a.step().loss);
      const StepMetrics m = b.step();
      got.push_back(m.loss);
      if (strategy != "ps-async") continue;
      QVERIFY(m.staleness.has_value());
      const double expect =
          s == 0 ? (ranks - 1) / 2.0 : ((servers - 1) / 2.0 + (ranks - 1) * (ranks - 1)) / ranks;
      QCOMPARE(*m.staleness, expect);
    }
    VERIFY_TRAJECTORIES_AGREE(got, ref, 1e-4,
                              QString("cuda %1 vs cpu").arg(QTest::currentDataTag()));
    if (strategy != "ps-sync") return;
    RunConfig serial = gpu;
    serial.strategy = "sync";
    serial.ranks = 1;
    serial.servers = 1;
    VERIFY_TRAJECTORIES_AGREE(got, test::lossTrajectory(serial, 20), 1e-4,
                              QString("cuda %1 vs cuda serial").arg(QTest::currentDataTag()));
  }

  // Hogwild on the GPU: four thread ranks whose kernels read and write one parameter buffer on
  // rank 0's GPU from four streams. Races by design, so no trajectory to match: it must learn
  // (mean loss over steps 41-60 below 0.7 of the first; on the emulated GPU 0.36-0.60 over 80
  // runs, also with four at once on 2 cores),
  // report a staleness of 0..N-1, send nothing, and hold the parameters once, on rank 0.
  void hogwildLearnsOnTheGpu() {
    SKIP_WITHOUT_GPU();
    RunConfig c = baseConfig();
    test::useGpu(c);
    c.strategy = "hogwild";
    c.ranks = 4;
    // Plain SGD: with four racing momentum buffers a loaded machine's bursty interleaving can
    // stall the run (staleness acts as extra momentum, Mitliagkas et al. 2016).
    c.optimizer = "sgd";
    c.lr = 0.1;
    Trainer t(c);
    double first = 0, lastAvg = 0;
    for (int s = 0; s < 60; ++s) {
      const StepMetrics m = t.step();
      QVERIFY(std::isfinite(m.loss));
      if (s == 0) first = m.loss;
      if (s >= 40) lastAvg += m.loss / 20;
      QVERIFY(m.staleness.has_value());
      QVERIFY2(*m.staleness >= 0 && *m.staleness <= c.ranks - 1,
               qPrintable(QString::number(*m.staleness)));
      for (const RankMetrics& r : m.ranks) QCOMPARE(r.bytesSent, int64_t(0));
    }
    qInfo("cuda hogwild N=4: loss %.3f -> %.3f (mean of steps 41-60)", first, lastAvg);
    QVERIFY2(lastAvg < 0.7 * first, qPrintable(QString("%1 -> %2").arg(first).arg(lastAvg)));
    const int64_t P = t.parameterCount();
    QCOMPARE(t.memory(0).snapshot()[MemCategory::Params], 4 * P);
    for (int r = 1; r < c.ranks; ++r)
      QCOMPARE(t.memory(r).snapshot()[MemCategory::Params], int64_t(0));
  }

  // --backend nccl (one thread rank per GPU, collectives by NCCL on the communicator's stream)
  // follows --backend thread (ThreadComm's device path) on the same GPUs: the same sums of two
  // addends (a + b in either order has the same bits, and halving for the average is exact
  // whether it comes before or after the sum), so 1e-5 leaves room only for cuBLAS choices.
  void ncclMatchesThreads_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<QString>("variant");
    QTest::newRow("serial N=1") << 1 << "bucket";
    for (const char* v : {"per-tensor", "bucket", "zero-1", "zero-2", "zero-3", "local-sgd", "gossip",
                          "ps-sync", "ps-async"})
      QTest::addRow("%s N=2", v) << 2 << v;
  }
  void ncclMatchesThreads() {
    SKIP_WITHOUT_GPU();
    QFETCH(int, ranks);
    QFETCH(QString, variant);
    SKIP_WITHOUT_NCCL_GPUS(ranks);
    RunConfig thread = baseConfig();
    test::useGpu(thread);
    thread.ranks = ranks;
    thread.syncEvery = 2;  // local SGD averages on every 2nd step
    if (variant.startsWith("zero-"))
      thread.zero = variant.mid(5).toInt();
    else if (variant == "local-sgd" || variant == "gossip" || variant.startsWith("ps-"))
      thread.strategy = variant.toStdString();
    else
      thread.dpVersion = *fromName<DpVersion>(variant.toStdString());
    RunConfig nccl = thread;
    nccl.backend = Backend::Nccl;
    Trainer a(thread), b(nccl);
    std::vector<double> ref, got;
    for (int s = 0; s < 20; ++s) {
      ref.push_back(a.step().loss);
      got.push_back(b.step().loss);
      bool viaNccl = false;  // the step's collectives were NCCL's
      for (const CommOpTotals& o : b.lastTraffic(0).ops)
        viaNccl = viaNccl || o.algo == CommAlgo::Nccl;
      const bool talks = ranks > 1 && (variant != "local-sgd" || s % 2 == 1);
      QVERIFY2(viaNccl == talks,
               qPrintable(QString("step %1: NCCL calls %2").arg(s + 1).arg(viaNccl)));
    }
    VERIFY_TRAJECTORIES_AGREE(got, ref, 1e-5,
                              QString("nccl %1 vs thread").arg(QTest::currentDataTag()));
  }

  // Live reconfiguration through the serial layout copies the state off and onto the GPU:
  // CUDA serial -> CUDA ZeRO-3 x2 -> CPU serial continues the uninterrupted CUDA run.
  void reshardingAcrossDevicesContinues() {
    SKIP_WITHOUT_GPU();
    RunConfig gpu = baseConfig();
    test::useGpu(gpu);
    gpu.optimizer = "adam";
    gpu.lr = 0.002;
    const int per = 6;
    const std::vector<double> ref = test::lossTrajectory(gpu, 3 * per);
    RunConfig zero3 = gpu, cpu = gpu;
    zero3.ranks = 2;
    zero3.zero = 3;
    cpu.device = Device::Cpu;
    cpu.kernel = "vendor";
    std::vector<double> got;
    auto t = std::make_unique<Trainer>(gpu);
    for (const RunConfig* next : std::vector<const RunConfig*>{&zero3, &cpu, nullptr}) {
      for (int s = 0; s < per; ++s) got.push_back(t->step().loss);
      if (!next) break;
      const TrainingState state = t->saveState();
      t = std::make_unique<Trainer>(*next);
      t->loadState(state);
    }
    VERIFY_TRAJECTORIES_AGREE(got, ref, 1e-4,
                              "cuda -> cuda ZeRO-3 x2 -> cpu vs uninterrupted cuda");
  }

  // The tracking allocator's figures are the model-state formula, on every rank.
  void deviceMemoryIsTheFormula_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("zero");
    QTest::newRow("serial") << 1 << 0;
    QTest::newRow("sync N=2") << 2 << 0;
    QTest::newRow("zero-3 N=2") << 2 << 3;
  }
  void deviceMemoryIsTheFormula() {
    SKIP_WITHOUT_GPU();
    QFETCH(int, ranks);
    QFETCH(int, zero);
    RunConfig c = baseConfig();
    test::useGpu(c);
    c.optimizer = "adam";
    c.lr = 0.002;
    c.ranks = ranks;
    c.zero = zero;
    Trainer t(c);
    t.step();
    const int64_t P = t.parameterCount();
    // Floats of model state each rank holds: all P, or (ZeRO-3) its chunk of every unit.
    int64_t held = P;
    if (zero == 3) {
      MlpShape shape;
      shape.hidden = c.hidden, shape.layers = c.layers, shape.input = 784, shape.classes = 10;
      Mlp layout(shape, c.seed, nullptr);
      held = ZeroLayout(layout.params(), ranks).shardNumel;
    }
    for (int r = 0; r < t.localRankCount(); ++r) {
      QVERIFY(t.compute(r).onGpu());
      const MemorySnapshot m = t.memory(r).snapshot();
      QCOMPARE(m[MemCategory::Params], 4 * held);
      QCOMPARE(m[MemCategory::Grads], 4 * held);
      QCOMPARE(m[MemCategory::Optimizer], 8 * held);
      qInfo("rank %d: params + grads + optimizer = %lld bytes = 16 x %lld", r,
            (long long)(m[MemCategory::Params] + m[MemCategory::Grads] + m[MemCategory::Optimizer]),
            (long long)held);
    }
  }

  // The caching allocator hands a freed block out again, zero-filled like every new tensor, and
  // the tracker counts what the tensors hold, freed or not.
  void allocatorReusesZeroFilledBlocks() {
    SKIP_WITHOUT_GPU();
    const std::unique_ptr<Compute> c = Compute::cuda(0, test::gpuGemm());
    MemoryTracker mem;
    const int64_t n = 1000;
    const std::vector<float> ones(size_t(n), 1.f);
    const float* first = nullptr;
    {
      Tensor a = c->tensor({n}, MemCategory::Activations, &mem);
      QCOMPARE(a.device(), Device::Cuda);
      QCOMPARE(mem.snapshot()[MemCategory::Activations], 4 * n);
      c->upload(a.data(), ones.data(), n);
      first = a.data();
    }
    QCOMPARE(mem.snapshot()[MemCategory::Activations], int64_t(0));
    QCOMPARE(mem.snapshot().peak[int(MemCategory::Activations)], 4 * n);
    Tensor b = c->tensor({n}, MemCategory::Activations, &mem);
    QCOMPARE(static_cast<const float*>(b.data()), first);  // the cached block, no cudaMalloc
    std::vector<float> back(size_t(n), -1.f);
    c->download(back.data(), b.data(), n);
    for (float v : back) QCOMPARE(v, 0.f);
  }

  // --latency-sweep on the GPU: one row per batch size, smallest first, each a positive median
  // time whose throughput and per-sample cost follow from it, for the MLP, the MoE and the GPT
  // (windows of T characters: tokens/s is T x windows/s).
  void latencySweepOnTheGpu_data() {
    QTest::addColumn<QString>("model");
    QTest::newRow("mlp") << "mlp";
    QTest::newRow("moe") << "moe";
    QTest::newRow("gpt") << "gpt";
  }
  void latencySweepOnTheGpu() {
    SKIP_WITHOUT_GPU();
    QFETCH(QString, model);
    RunConfig c = baseConfig();
    test::useGpu(c);
    c.model = *fromName<ModelKind>(model.toStdString());
    QCOMPARE(QString::fromStdString(latencySweepProblem(c)), QString());
    LatencySweepOptions quick;
    quick.warmup = 1;
    quick.repeats = 3;
    quick.minRepeatMs = 0.5;
    quick.maxMsPerSize = 1e9;  // every size timed: the emulated GPU under ASan is that slow
    const LatencySweepResult r = runLatencySweep(c, {1, 8, 64}, quick);
    QCOMPARE(QString::fromStdString(nameOf(r.device)), QString("cuda"));
    QVERIFY(!r.gpu.empty());
    QCOMPARE(int(r.points.size()), 3);
    const int batches[] = {1, 8, 64};
    for (size_t i = 0; i < r.points.size(); ++i) {
      const LatencyPoint& p = r.points[i];
      QCOMPARE(p.batch, batches[i]);
      QVERIFY2(p.msPerForward > 0, qPrintable(QString::number(p.msPerForward)));
      QVERIFY(std::abs(p.samplesPerS - p.batch / p.msPerForward * 1e3) <= 1e-6 * p.samplesPerS);
      QVERIFY(std::abs(p.usPerSample - p.msPerForward * 1e3 / p.batch) <= 1e-6 * p.usPerSample);
      QCOMPARE(p.tokensPerS, model == "gpt" ? p.samplesPerS * c.seq : 0.0);
    }
  }

  // Every strategy runs on the GPU, over ThreadComm's device path or NCCL; --backend mpi, which
  // moves host buffers only, is refused in one line. No GPU needed (cudaRefusal is part of
  // RunConfig::validate once a GPU is found).
  void refusalsNameWhatRuns_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("cp");
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("backend");
    QTest::addColumn<QString>("expected");  // empty: allowed
    for (const char* backend : {"thread", "nccl"}) {
      for (const char* s : {"sync", "ps-sync", "ps-async", "hogwild", "local-sgd", "gossip"})
        QTest::addRow("%s %s", backend, s) << s << 1 << 1 << "mlp" << backend << "";
      QTest::addRow("%s tp", backend) << "sync" << 2 << 1 << "mlp" << backend << "";
      QTest::addRow("%s moe", backend) << "sync" << 1 << 1 << "moe" << backend << "";
      QTest::addRow("%s cp", backend) << "sync" << 1 << 2 << "gpt" << backend << "";
    }
    QTest::newRow("mpi") << "sync" << 1 << 1 << "mlp"
                         << "mpi"
                         << "device: cuda needs --backend thread or nccl; --backend mpi moves "
                            "host buffers only";
  }
  void refusalsNameWhatRuns() {
    QFETCH(QString, strategy);
    QFETCH(int, tp);
    QFETCH(int, cp);
    QFETCH(QString, model);
    QFETCH(QString, backend);
    QFETCH(QString, expected);
    RunConfig c = baseConfig();
    test::useGpu(c);
    c.ranks = 2;
    c.strategy = strategy.toStdString();
    c.tp = tp;
    c.cp = cp;
    c.model = *fromName<ModelKind>(model.toStdString());
    c.backend = *fromName<Backend>(backend.toStdString());
    const std::optional<std::string> why = cudaRefusal(c);
    QCOMPARE(QString::fromStdString(why.value_or("")), expected);
    // What paralab-run prints before it exits with 2 (nccl: once there is a GPU per rank).
    const bool enoughGpus = backend != "nccl" || test::ncclSkipReason(c.ranks).isEmpty();
    if (haveGpu() && enoughGpus && !expected.isEmpty())
      QCOMPARE(QString::fromStdString(c.validate().value_or("")), expected);
    c.device = Device::Cpu;
    QVERIFY(!cudaRefusal(c));
  }
};

QTEST_GUILESS_MAIN(TstCudaTraining)
#include "tst_cuda_training.moc"
