// Mixed precision on the GPU (--device cuda --kernel tensor-core --precision bf16|fp16): the
// model's GEMMs on the 16-bit tensor-core kernel (cuda/gemm.h), parameters, kept activations and
// weight gradients rounded on the GPU where they are stored (cuda/mixed_precision.h), the fp32
// master copy updated by the optimizer, fp16's loss scale as on the CPU (train/precision.h).
//   * A serial bf16 run follows the CPU's bf16 run of the same model and seed (MLP and GPT):
//     within 5e-3 relative over 12 steps, since besides the order of the GEMMs' sums the
//     tensor cores round the fp32 activation gradients to bf16 too (2^-9 relative), and a
//     master value near a bf16 tie may round to the neighbouring bf16 on one device.
//   * Sync data parallelism (bucket, ZeRO-1/2/3) in 16 bits follows its GPU serial run as the
//     CPU's layouts follow theirs (tst_precision).
//   * --accumulate 4 keeps the earlier micro-batches' fp32 sum on the GPU: it follows the GPU
//     run of the whole batch and the CPU's --accumulate 4 run.
//   * --strategy ps-sync in 16 bits follows sync data parallelism on as many GPU ranks, the
//     GPU's serial run and the CPU's ps-sync run; the servers alone hold the fp32 master.
//   * Tensor, sequence, pipeline and context parallelism in 16 bits follow the GPU's serial run
//     as the CPU's layouts follow theirs (tst_precision_model_parallel), and their CPU runs;
//     so do the experts (--model moe, --ffn moe, expert parallelism).
//   * fp16 with the dynamic loss scale trains (loss falls, the scale and skipped steps are in
//     the metrics); fp16 without scaling flushes gradient entries, counted on the GPU.
//   * Model-state memory per rank is the CPU's: 18 bytes a parameter with Adam.
//   * What cannot run is refused in one line: 16 bits on another rung of the GPU ladder.
// Every row skips without a GPU; tst_cuda_precision_emulated runs them on the emulated GPU.
// Run: ctest -R tst_cuda_precision -V
#include <QtTest>
#include <cmath>

#include "cuda_skip.h"
#include "device/compute.h"
#include "layout_spec.h"
#include "loss_trajectory.h"
#include "memory_estimate.h"
#include "moe_runs.h"
#include "parallel/data/replica.h"  // shardLen
#include "train/precision.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

RunConfig run(bool gpt, Dtype d) {
  RunConfig c = gpt ? test::smallGptRun(8) : test::smallRun(32, 2, 32);
  c.precision = d;
  c.steps = 12;
  return c;
}

RunConfig onGpu(RunConfig c) {
  c.device = Device::Cuda;
  c.kernel = "tensor-core";
  return c;
}

// The same run on the CPU: the twin a GPU layout is held to.
RunConfig onCpu(RunConfig c) {
  c.device = Device::Cpu;
  c.kernel = "vendor";
  return c;
}

// A 16-bit layout run on the GPU (`laid`) against the GPU run it must follow (loss `bound`,
// parameters twice that, or `bound` itself at 1e-5: tst_precision*'s bounds) and against the same
// layout on the CPU (5e-3, the GPU's fp32 sums in another order); and it learns.
void verifyGpuLayout(const test::RunRecord& laid, const test::RunRecord& serial,
                     const test::RunRecord& cpu, double bound, const QString& what) {
  VERIFY_TRAJECTORIES_AGREE(laid.losses, serial.losses, bound, what + " on the GPU");
  VERIFY_PARAMETERS_AGREE(laid.params, serial.params, bound < 1e-3 ? bound : 2 * bound,
                          "final parameters, " + what);
  VERIFY_TRAJECTORIES_AGREE(laid.losses, cpu.losses, 5e-3,
                            what + ": the layout on the GPU vs the CPU");
  QVERIFY2(laid.losses.back() < laid.losses.front(), "it learns");
}

}  // namespace

class TstCudaPrecision : public QObject {
  Q_OBJECT
 private slots:
  // No GPU: the whole suite is reported as skipped (tests/CMakeLists.txt).
  void initTestCase() { SKIP_WITHOUT_GPU(); }
  void refusals() {
    RunConfig c = onGpu(run(false, Dtype::Bf16));
    c.kernel = "coalesced";
    const std::string err = c.validate().value_or("");
    QVERIFY2(err.rfind("precision: bf16 trains on the CPU, or with --device cuda on 16-bit "
                       "tensor cores (allowed there: --kernel tensor-core)",
                       0) == 0,
             err.c_str());
    // Every synchronous layout trains in 16 bits on the GPU as on the CPU.
    RunConfig moe = test::moeConfig(1, 1, 2);
    moe.precision = Dtype::Bf16;
    moe = onGpu(moe);
    QVERIFY2(!moe.validate(), moe.validate().value_or("").c_str());
    moe.ranks = moe.ep = 2;
    QVERIFY2(!moe.validate(), moe.validate().value_or("").c_str());
    RunConfig dense = onGpu(run(true, Dtype::Fp16));
    dense.tp = 2;
    dense.pp = 2;
    dense.accumulate = 2;
    dense.deriveRanks();
    QVERIFY2(!dense.validate(), dense.validate().value_or("").c_str());
  }

  // A 16-bit run's GEMM on the GPU multiplies 16-bit operands: on fp32 inputs it gives the
  // product of their bf16 (fp16) roundings, as the tensor-core rung at fp32 does not.
  void gemmsAre16Bit() {
    SKIP_WITHOUT_GPU();
    const int M = 16, N = 16, K = 64;
    std::vector<float> A(M * K), B(K * N);
    // bf16 rounds every value to 1 (A down by about 2^-9), fp16 A to 1 + 2^-9 and B to 1.
    for (int i = 0; i < M * K; ++i) A[size_t(i)] = 1.f + 0x1p-9f + float(i % 5) * 0x1p-14f;
    for (int i = 0; i < K * N; ++i) B[size_t(i)] = 1.f - float(i % 3) * 0x1p-14f;
    for (Dtype d : {Dtype::Bf16, Dtype::Fp16}) {
      const auto c = Compute::forRank(onGpu(run(false, d)), 0);
      MemoryTracker tracker;
      Tensor dA = c->tensor({M, K}, MemCategory::Workspace, &tracker),
             dB = c->tensor({K, N}, MemCategory::Workspace, &tracker),
             dC = c->tensor({M, N}, MemCategory::Workspace, &tracker);
      c->upload(dA.data(), A.data(), M * K);
      c->upload(dB.data(), B.data(), K * N);
      c->gemm(false, false, M, N, K, 1.f, dA.data(), K, dB.data(), N, 0.f, dC.data(), N);
      std::vector<float> C(M * N);
      c->download(C.data(), dC.data(), M * N);
      std::vector<float> A16 = A, B16 = B;
      roundStored(d, A16.data(), M * K);
      roundStored(d, B16.data(), K * N);
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
          double exact = 0, rounded = 0;
          for (int k = 0; k < K; ++k) {
            exact += double(A[size_t(i * K + k)]) * B[size_t(k * N + j)];
            rounded += double(A16[size_t(i * K + k)]) * B16[size_t(k * N + j)];
          }
          const double got = C[size_t(i * N + j)];
          QVERIFY2(
              std::abs(got - rounded) <= 1e-5 * std::abs(rounded),
              qPrintable(QString("%1: %2 for %3").arg(nameOf(d).c_str()).arg(got).arg(rounded)));
          // Off the fp32 product by about 2^-9 (bf16) and 2^-14 (fp16) relative.
          QVERIFY(std::abs(got - exact) > (d == Dtype::Bf16 ? 1e-3 : 3e-5) * std::abs(exact));
        }
    }
  }

  void bf16FollowsTheCpu_data() {
    QTest::addColumn<bool>("gpt");
    QTest::newRow("mlp") << false;
    QTest::newRow("gpt") << true;
  }
  void bf16FollowsTheCpu() {
    SKIP_WITHOUT_GPU();
    QFETCH(bool, gpt);
    const RunConfig cpu = run(gpt, Dtype::Bf16), gpu = onGpu(cpu);
    QVERIFY2(!gpu.validate(), gpu.validate().value_or("").c_str());
    const std::vector<double> want = test::lossTrajectory(cpu, cpu.steps),
                              got = test::lossTrajectory(gpu, gpu.steps);
    double worst = 0;
    for (size_t s = 0; s < want.size(); ++s) {
      QVERIFY(std::isfinite(got[s]));
      worst = std::max(worst, std::abs(got[s] - want[s]) / std::abs(want[s]));
    }
    qInfo(
        "bf16 %s: loss %.5f -> %.5f on the GPU, %.5f -> %.5f on the CPU; worst relative "
        "difference %.2e",
        gpt ? "gpt" : "mlp", got.front(), got.back(), want.front(), want.back(), worst);
    QVERIFY2(worst < 5e-3, "the GPU's bf16 run follows the CPU's");
    QVERIFY2(got.back() < got.front(), "it learns");
  }

  // Sync data parallelism in 16 bits on the GPU against the GPU's serial run, as on the CPU
  // (tst_precision): each rank rounds its own partial gradient before the fp32 sum, so the
  // layouts agree with serial to bf16's rounding (1e-2), and with dp2 per-tensor, whose
  // rounding points (and fp16's overflow findings) they share, to fp32's (1e-5).
  void dataParallel_data() {
    QTest::addColumn<int>("dtype");
    QTest::addColumn<QString>("layout");
    for (const char* l : {"bucket", "zero-1", "zero-2", "zero-3"})
      QTest::addRow("bf16 %s", l) << int(Dtype::Bf16) << l;
    QTest::addRow("fp16 zero-3") << int(Dtype::Fp16) << "zero-3";
  }
  void dataParallel() {
    SKIP_WITHOUT_GPU();
    QFETCH(int, dtype);
    QFETCH(QString, layout);
    const RunConfig serial = onGpu(run(false, Dtype(dtype)));
    RunConfig perTensor = serial;
    perTensor.dp = 2;
    perTensor.dpVersion = DpVersion::PerTensor;
    perTensor.deriveRanks();
    RunConfig c = serial;
    c.dp = 2;
    if (layout.startsWith("zero-")) c.zero = layout.mid(5).toInt();
    c.deriveRanks();
    QVERIFY2(!c.validate(), c.validate().value_or("").c_str());
    const int steps = 8;
    const test::RunRecord a = test::recordRun(serial, steps), b = test::recordRun(c, steps),
                          ref = test::recordRun(perTensor, steps);
    VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-2, "dp2 on the GPU vs serial");
    VERIFY_TRAJECTORIES_AGREE(b.losses, ref.losses, 1e-5, "dp2 vs dp2 per-tensor");
    VERIFY_PARAMETERS_AGREE(b.params, ref.params, 1e-5, "final parameters, vs dp2 per-tensor");
  }

  // On the GPU as on the CPU (tst_precision_accumulate), the second micro-batch's gradients
  // are rounded alone and added to the first's fp32 sum: S + round(g), not round(S + g).
  void eachMicroBatchRoundedApart() {
    SKIP_WITHOUT_GPU();
    RunConfig c = onGpu(run(false, Dtype::Bf16));
    c.accumulate = 2;
    const auto gpu = Compute::forRank(c, 0);
    MemoryTracker tracker;
    ParamSet ps;
    ps.beginUnit("unit");
    ps.add("w", {3});
    ps.allocate(&tracker, gpu.get());
    MixedPrecision mp(c);
    mp.runOn(*gpu);
    MixedPrecision::Hooks hooks(mp, ps, nullptr, &tracker);
    // 1 + 2^-8 is a bf16 tie (rounds to 1); 2^-9 alone is a bf16 value.
    const std::vector<float> first = {1.f, 3.f, 0.25f}, second = {0x1p-8f, 0x1p-9f, 1.f + 0x1p-8f};
    Tensor written = gpu->tensor({3}, MemCategory::Workspace, &tracker);
    for (const std::vector<float>* g : {&first, &second}) {
      hooks.beforeBackward(0);
      gpu->upload(written.data(), g->data(), 3);  // a backward writes += into the buffer
      gpu->residualAdd(ps.grad(0), written.data(), 3);
      hooks.afterBackward(0);
    }
    std::vector<float> sum(3);
    gpu->download(sum.data(), ps.grad(0), 3);
    QCOMPARE(sum[0], 1.f + 0x1p-8f);  // fp32 keeps what rounding the sum would lose
    QCOMPARE(sum[1], 3.f + 0x1p-9f);  // below bf16's step at 3
    QCOMPARE(sum[2], 0.25f + 1.f);    // the micro-batch's own value rounded: 1 + 2^-8 -> 1
    QCOMPARE(tracker.snapshot().peak[size_t(MemCategory::Workspace)], int64_t(6 * sizeof(float)));
  }

  // --accumulate 4 in 16 bits on the GPU (precision.h: each micro-batch's gradients rounded
  // apart, added on the device to the fp32 sum of the earlier ones). Against the GPU's run of
  // the whole batch at once: each of the 4 micro-batches' gradients is rounded alone where
  // that run rounds their sum once, so they agree to 16-bit rounding, the bound tst_precision
  // sets for 2 ranks each rounding its part (loss 1e-2, parameters 2e-2 of the largest).
  // Against the CPU's --accumulate 4 run: the bound bf16FollowsTheCpu sets (5e-3 relative).
  void accumulates_data() {
    QTest::addColumn<int>("dtype");
    QTest::addColumn<QString>("layout");
    for (const Dtype d : {Dtype::Bf16, Dtype::Fp16})
      QTest::addRow("%s serial", nameOf(d).c_str()) << int(d) << "";
    QTest::addRow("bf16 dp2") << int(Dtype::Bf16) << "dp2";
    QTest::addRow("bf16 dp2 zero-2") << int(Dtype::Bf16) << "zero-2";
  }
  void accumulates() {
    SKIP_WITHOUT_GPU();
    QFETCH(int, dtype);
    QFETCH(QString, layout);
    RunConfig whole = onGpu(run(false, Dtype(dtype)));
    if (!layout.isEmpty()) whole.dp = 2;
    if (layout == "zero-2") whole.zero = 2;
    whole.deriveRanks();
    RunConfig four = whole;
    four.accumulate = 4;
    QVERIFY2(!four.validate(), four.validate().value_or("").c_str());
    const int steps = whole.steps;
    const test::RunRecord a = test::recordRun(whole, steps), b = test::recordRun(four, steps),
                          c = test::recordRun(onCpu(four), steps);
    qInfo("%s K=4 on the GPU: loss %.5f -> %.5f; vs K=1 %.2e (params %.2e), vs the CPU %.2e",
          nameOf(Dtype(dtype)).c_str(), b.losses.front(), b.losses.back(),
          test::worstRelativeDifference(b.losses, a.losses, 1),
          test::worstParameterDifference(b.params, a.params),
          test::worstRelativeDifference(b.losses, c.losses, 1));
    verifyGpuLayout(b, a, c, 1e-2, "K=4 vs K=1");
  }

  // The fp32 sum set aside on the GPU is counted as Workspace, one unit's at a time: the peak
  // grows by the largest unit's gradients at most, never by the model's.
  void accumulatedSumIsWorkspace() {
    SKIP_WITHOUT_GPU();
    RunConfig whole = onGpu(run(false, Dtype::Bf16));
    RunConfig four = whole;
    four.accumulate = 4;
    four.batch = whole.batch;
    const auto peak = [](const RunConfig& c) {
      Trainer t(c);
      t.step();
      return t.step().ranks.at(0).mem.peak[size_t(MemCategory::Workspace)];
    };
    RunConfig small = whole;
    small.batch = whole.batch / 4;  // the micro-batch's scratch, without the sum
    const int64_t withSum = peak(four), without = peak(small);
    Trainer t(whole);
    qInfo("workspace peak: %lld bytes with the sum, %lld without, model %lld bytes of fp32",
          (long long)withSum, (long long)without, (long long)(4 * t.parameterCount()));
    QVERIFY2(withSum > without, "the sum is counted");
    QVERIFY2(withSum - without < 4 * t.parameterCount(), "one unit's sum at a time");
  }

  // ps-sync in 16 bits on the GPU (param_server.cpp): each worker rounds its slice's
  // gradients on its device, the server sums the pushed shards in fp32 there, divides by S,
  // and updates its fp32 master. The bounds are tst_precision_ps's: against sync per-tensor on
  // as many ranks (the same rounding points, another order of fp32 sums) 1e-5; against the
  // serial run (each worker rounds its own slice) loss 1e-2, parameters 2e-2; against the
  // CPU's ps-sync run the bound bf16FollowsTheCpu sets (5e-3 relative).
  void parameterServer_data() {
    QTest::addColumn<int>("dtype");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("servers");
    QTest::newRow("bf16 N=2 S=1") << int(Dtype::Bf16) << 2 << 1;
    QTest::newRow("bf16 N=3 S=2") << int(Dtype::Bf16) << 3 << 2;
    QTest::newRow("fp16 N=2 S=2") << int(Dtype::Fp16) << 2 << 2;
  }
  void parameterServer() {
    SKIP_WITHOUT_GPU();
    QFETCH(int, dtype);
    QFETCH(int, ranks);
    QFETCH(int, servers);
    const RunConfig serial = onGpu(run(false, Dtype(dtype)));
    RunConfig ps = serial, dp = serial;
    ps.strategy = "ps-sync";
    ps.ranks = dp.ranks = ranks;
    ps.servers = servers;
    dp.dpVersion = DpVersion::PerTensor;
    QVERIFY2(!ps.validate(), ps.validate().value_or("").c_str());
    const int steps = 8;
    Trainer t(ps);
    test::RunRecord b;
    StepMetrics last;
    for (int s = 0; s < steps; ++s) b.losses.push_back((last = t.step()).loss);
    b.params = t.saveState().params;
    const test::RunRecord a = test::recordRun(serial, steps), ref = test::recordRun(dp, steps),
                          c = test::recordRun(onCpu(ps), steps);
    VERIFY_TRAJECTORIES_AGREE(b.losses, ref.losses, 1e-5, "ps-sync vs sync per-tensor, GPU");
    VERIFY_PARAMETERS_AGREE(b.params, ref.params, 1e-5, "final parameters, vs sync per-tensor");
    verifyGpuLayout(b, a, c, 1e-2, "ps-sync vs serial");
    // The servers' shards of the fp32 master, nothing on a worker; 16-bit parameters on all.
    const int64_t P = t.parameterCount();
    for (const RankMetrics& r : last.ranks) {
      const int64_t shard = r.rank < servers ? shardLen(r.rank, servers, P) : 0;
      QCOMPARE(r.mem[MemCategory::Master], 4 * shard);
      QCOMPARE(r.mem[MemCategory::Params], 2 * P);
    }
  }

  // Model parallelism in 16 bits on the GPU: each stage rounds what it keeps on its device
  // (stage.h), where the serial model rounds. The bounds are tst_precision_model_parallel's:
  // one pipeline micro-batch rounds at serial's points, fp32's 1e-5; the other layouts sum in
  // another order or round each micro-batch's gradients apart, loss 1e-2 and parameters 2e-2.
  // Against the same layout on the CPU: the bound bf16FollowsTheCpu sets (5e-3 relative).
  void modelParallel_data() {
    QTest::addColumn<bool>("gpt");
    QTest::addColumn<QString>("layout");
    QTest::addColumn<double>("bound");
    QTest::addColumn<int>("dtype");
    QTest::addColumn<int>("accumulate");
    const int bf16 = int(Dtype::Bf16), fp16 = int(Dtype::Fp16);
    QTest::newRow("mlp pp2 M1") << false << "pp2 M1" << 1e-5 << bf16 << 1;
    QTest::newRow("mlp pp2 M4") << false << "pp2 M4" << 1e-2 << bf16 << 1;
    QTest::newRow("mlp tp2") << false << "tp2" << 1e-2 << bf16 << 1;
    QTest::newRow("gpt tp2 sp") << true << "tp2 sp" << 1e-2 << bf16 << 1;
    QTest::newRow("gpt cp2") << true << "cp2" << 1e-2 << bf16 << 1;
    // fp16 at the dynamic scale, --accumulate 2 around a 2-micro-batch pipeline, against the
    // serial --accumulate 2 run.
    QTest::newRow("mlp fp16 tp2 pp2 M2 K2") << false << "tp2 pp2 M2" << 1e-2 << fp16 << 2;
  }
  void modelParallel() {
    SKIP_WITHOUT_GPU();
    QFETCH(bool, gpt);
    QFETCH(QString, layout);
    QFETCH(double, bound);
    QFETCH(int, dtype);
    QFETCH(int, accumulate);
    RunConfig serial = onGpu(run(gpt, Dtype(dtype)));
    serial.accumulate = accumulate;
    serial.layers = 2;
    serial.optimizer = "momentum";  // as tst_precision_model_parallel: the layout, not Adam
    serial.lr = 0.05;
    const RunConfig laid = test::withLayout(serial, layout);
    QVERIFY2(!laid.validate(), laid.validate().value_or("").c_str());
    const int steps = 8;
    const test::RunRecord a = test::recordRun(serial, steps), b = test::recordRun(laid, steps),
                          c = test::recordRun(onCpu(laid), steps);
    verifyGpuLayout(b, a, c, bound, "16-bit layout vs serial");
  }

  // A pipeline's micro-batches are rounded apart as --accumulate's are: each micro-batch's
  // weight gradients rounded alone and added to the fp32 sum in order, on the GPU. pp2 with 4
  // micro-batches has the rounding points and sums of the serial run with --accumulate 4, and
  // agrees with it to fp32's tolerance (1e-5).
  void pipelineMicroBatchesRoundedApart() {
    SKIP_WITHOUT_GPU();
    RunConfig serial = onGpu(run(false, Dtype::Bf16));
    serial.optimizer = "momentum";
    serial.lr = 0.05;
    serial.accumulate = 4;
    RunConfig pipeline = test::withLayout(serial, "pp2 M4 gpipe");
    pipeline.accumulate = 1;
    QVERIFY2(!pipeline.validate(), pipeline.validate().value_or("").c_str());
    const test::RunRecord a = test::recordRun(serial, 8), b = test::recordRun(pipeline, 8);
    VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-5, "pp2 M4 vs serial K=4, GPU");
    VERIFY_PARAMETERS_AGREE(b.params, a.params, 1e-5, "final parameters");
  }

  // The experts in 16 bits on the GPU: the MoE layer rounds what it keeps on its device
  // (moe_ffn.h). Against the GPU's serial run the bound of tst_precision_model_parallel's
  // experts (their gradient sums over dp and expert-dp in another order: loss 1e-2, parameters
  // 2e-2); against the same run on the CPU bf16FollowsTheCpu's (5e-3 relative).
  void experts_data() {
    QTest::addColumn<bool>("gpt");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("ep");
    for (const bool gpt : {false, true}) {
      QTest::addRow("%s serial", gpt ? "gpt" : "moe") << gpt << 1 << 1;
      QTest::addRow("%s ep2", gpt ? "gpt" : "moe") << gpt << 2 << 2;
    }
  }
  void experts() {
    SKIP_WITHOUT_GPU();
    QFETCH(bool, gpt);
    QFETCH(int, ranks);
    QFETCH(int, ep);
    RunConfig serial = test::moeConfig(1, 1, 2);
    if (gpt) {
      const RunConfig g = run(true, Dtype::Bf16);
      serial.model = ModelKind::Gpt, serial.ffn = Ffn::Moe;
      serial.hidden = g.hidden, serial.heads = g.heads, serial.seq = g.seq, serial.batch = g.batch;
    }
    serial.precision = Dtype::Bf16;
    serial = onGpu(serial);
    RunConfig laid = serial;
    laid.ranks = ranks, laid.ep = ep;
    QVERIFY2(!laid.validate(), laid.validate().value_or("").c_str());
    const int steps = 8;
    const test::RunRecord a = test::recordRun(serial, steps), b = test::recordRun(laid, steps),
                          c = test::recordRun(onCpu(laid), steps);
    verifyGpuLayout(b, a, c, 1e-2, "bf16 experts vs serial");
  }

  void fp16DynamicScaleTrains() {
    SKIP_WITHOUT_GPU();
    RunConfig c = onGpu(run(false, Dtype::Fp16));
    c.lossScaleWindow = 4;  // room to grow within the run
    Trainer t(c);
    std::vector<double> losses;
    StepMetrics m;
    for (int s = 0; s < c.steps; ++s) {
      m = t.step();
      losses.push_back(m.loss);
      QVERIFY(m.lossScale.has_value());
      QVERIFY(*m.lossScale >= 1 && *m.lossScale <= 65536 * 8);
    }
    qInfo("fp16 dynamic: loss %.5f -> %.5f, scale %.0f, skipped %lld", losses.front(),
          losses.back(), *m.lossScale, (long long)m.skippedSteps.value_or(-1));
    QVERIFY(std::isfinite(losses.back()));
    QVERIFY2(losses.back() < losses.front(), "it learns");
    QVERIFY(m.skippedSteps.has_value());
    QVERIFY(*m.skippedSteps < c.steps);
  }

  // fp16 with S = 1 loses the gradient entries below 2^-25 (H = 128, a batch of 256: small
  // gradients); the GPU counts them, and a scale keeps them.
  void fp16FlushesUnscaled() {
    SKIP_WITHOUT_GPU();
    RunConfig c = onGpu(run(false, Dtype::Fp16));
    c.hidden = 128;
    c.batch = 256;
    c.lossScale = "1";
    Trainer t(c);
    int64_t flushed = 0;
    for (int s = 0; s < 3; ++s) flushed += t.step().flushedGrads.value_or(0);
    RunConfig scaled = c;
    scaled.lossScale = "1024";
    Trainer u(scaled);
    int64_t kept = 0;
    for (int s = 0; s < 3; ++s) kept += u.step().flushedGrads.value_or(0);
    qInfo("fp16 on the GPU, gradient entries flushed in 3 steps: %lld at S = 1, %lld at S = 1024",
          (long long)flushed, (long long)kept);
    QVERIFY(flushed > 10);
    QVERIFY(kept < flushed / 10);
  }

  void modelStatesPerRank() {
    SKIP_WITHOUT_GPU();
    RunConfig c = onGpu(run(false, Dtype::Bf16));
    c.optimizer = "adam";
    c.lr = 0.002;
    Trainer t(c);
    t.step();
    const StepMetrics m = t.step();
    const int64_t P = t.parameterCount();
    const MemorySnapshot& mem = m.ranks.at(0).mem;
    QCOMPARE(mem[MemCategory::Params], 2 * P);
    QCOMPARE(mem[MemCategory::Grads], 4 * P);
    QCOMPARE(mem[MemCategory::Master], 4 * P);
    QCOMPARE(mem[MemCategory::Optimizer], 8 * P);
  }
};

QTEST_GUILESS_MAIN(TstCudaPrecision)
#include "tst_cuda_precision.moc"
