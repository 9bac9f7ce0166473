// Tensor, sequence, pipeline and context parallelism with --device cuda: thread ranks sharing
// one GPU, every shard's parameters, gradients, optimizer state, activations and messages in
// device memory, collectives through ThreadComm's device path.
//   * tp 2, tp 2 + sp (also cut into ring steps: --tp-overlap), pp 2 (GPipe, 1F1B), tp 2 x pp 2
//     and dp 2 x tp 2 reproduce the CUDA serial loss trajectory over 20 steps within 1e-4
//     relative, with each gradient sync on the dp axis (ZeRO-1/2/3, per-tensor and bucketed
//     all-reduce). On the CPU these layouts match serial to 1e-5 (tst_model_parallel.cpp): the
//     ranks sum the same products in another order (fc2's partial sums, micro-batch
//     accumulation). On the GPU cuBLAS may also pick another algorithm for each shard's narrower
//     GEMMs and the device reduction sums in its own order,
//     ~1e-7 per operation, compounding over the steps: 1e-4, as tst_cuda_training.cpp allows
//     data parallelism on the GPU.
//   * Context parallelism (ring attention, cuda/attention_blocks.h): a GPT under cp 2 and cp 4
//     (zigzag and contiguous), cp 2 x tp 2, cp 2 x pp 2, cp 2 x tp 2 x pp 2, dp 2 x cp 2 with
//     ZeRO-1 and cp 2 with full recomputation reproduces the CUDA serial GPT over
//     10 steps, loss and final parameters, within 1e-4 relative as above (the ring's blockwise
//     softmax sums in another order than serial's whole-row kernel); the ring's K/V and dK/dV
//     blocks travel as device buffers, and each rank's bytes and messages on the cp group are
//     what RingAttention::forwardFloats and backwardFloats say.
//   * Each rank's tracking allocator sees its activations on the GPU: per pipeline stage, the
//     schedule's micro-batches in flight times one micro-batch's buffers.
//   * Evaluation gathers the shards onto rank 0's GPU and agrees with the serial run's.
//   * Live reconfiguration moves the state off and onto the GPU through the serial layout:
//     CUDA serial -> CUDA tp 2 -> CUDA dp 2 x pp 2 ZeRO-1 -> CPU serial continues the
//     uninterrupted CUDA run (1e-4).
// Every row skips without a GPU; tst_cuda_model_parallel_emulated runs them all on the emulated GPU
// (kernels/cuda/emulated.h; NCCL rows skip there). Run: ctest -R tst_cuda_model_parallel -V
#include <QtTest>
#include <cmath>

#include "comm/comm_accounting.h"
#include "comm/communicator.h"
#include "cuda_skip.h"
#include "device/compute.h"
#include "layout_spec.h"
#include "loss_trajectory.h"
#include "parallel/pipeline/pipeline.h"
#include "parallel/context/ring_attention.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

RunConfig baseConfig() {
  RunConfig c = test::smallRun(32, 4, 48);
  test::useGpu(c);
  return c;
}

// A small GPT (T = 16, H = 16, 2 heads, 2 layers, Adam) on the GPU: the emulated one runs the
// kernels block after block on the host, so the windows stay few and short.
RunConfig gptConfig() {
  RunConfig c = test::smallGptRun(8);
  test::useGpu(c);
  return c;
}

// "dp2 tp2 pp2 sp gpipe M3 zero1 adam" -> a CUDA configuration ("cpu": on the CPU).
RunConfig parse(const QString& spec) {
  RunConfig c = test::withLayout(baseConfig(), spec);
  if (c.device == Device::Cpu) c.kernel = "vendor";  // the GPU's GEMM is not a CPU one
  return c;
}

}  // namespace

class TstCudaModelParallel : public QObject {
  Q_OBJECT
 private slots:
  // No GPU: the whole suite is reported as skipped (tests/CMakeLists.txt).
  void initTestCase() { SKIP_WITHOUT_GPU(); }
  void matchesCudaSerial_data() {
    QTest::addColumn<QString>("spec");
    for (const char* s :
         {"tp2", "tp2 sp", "tp2 sp tp-overlap", "pp2 gpipe M3", "pp2 1f1b M4", "tp2 pp2 1f1b M2",
          "dp2 tp2"})
      QTest::newRow(s) << QString(s);
    QTest::newRow("dp2 tp2 sp zero1 adam") << "dp2 tp2 sp zero1 adam";
    // The other gradient syncs on the dp axis: ZeRO-2/3, the per-tensor and the bucketed all-reduce.
    for (const char* s :
         {"dp2 tp2 sp zero2", "dp2 pp2 1f1b M2 zero3 adam", "dp2 tp2 pp2 gpipe M2 zero3",
          "dp2 pp2 gpipe M3 per-tensor", "dp2 tp2 pp2 sp 1f1b M2 bucket"})
      QTest::newRow(s) << QString(s);
  }
  void matchesCudaSerial() {
    SKIP_WITHOUT_GPU();
    QFETCH(QString, spec);
    const RunConfig parallel = parse(spec);
    RunConfig serial = baseConfig();
    serial.optimizer = parallel.optimizer;
    serial.lr = parallel.lr;
    const int steps = 20;
    const std::vector<double> ref = test::lossTrajectory(serial, steps),
                              got = test::lossTrajectory(parallel, steps);
    VERIFY_TRAJECTORIES_AGREE(got, ref, 1e-4, "cuda " + spec + " vs cuda serial");
    QVERIFY2(ref.back() < 0.9 * ref.front(), "the run should learn");
  }

  // Context parallelism on the GPU against the CUDA serial GPT: the loss of every step and the
  // parameters after the last, with the ring's folds on the GPU and its messages device buffers.
  void contextParallelMatchesCudaSerial_data() {
    QTest::addColumn<QString>("layout");
    for (const char* l :
         {"cp2", "cp4", "cp2 contiguous", "cp4 contiguous", "cp2 tp2", "cp2 pp2 1f1b M2",
          "cp2 tp2 pp2 gpipe M2", "dp2 cp2 zero1", "cp2 full"})
      QTest::newRow(l) << QString(l);
  }
  void contextParallelMatchesCudaSerial() {
    SKIP_WITHOUT_GPU();
    QFETCH(QString, layout);
    const RunConfig serial = gptConfig();
    const RunConfig parallel = test::withLayout(serial, layout);
    QVERIFY2(!parallel.validate(), parallel.validate().value_or("").c_str());
    QCOMPARE(parallel.device, Device::Cuda);
    const int steps = 10;
    const test::RunRecord a = test::recordRun(serial, steps), b = test::recordRun(parallel, steps);
    VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-4, "cuda " + layout + " vs cuda serial");
    VERIFY_PARAMETERS_AGREE(b.params, a.params, 1e-4,
                            "final parameters, cuda " + layout + " vs cuda serial");
    QVERIFY2(a.losses.back() < 0.9 * a.losses.front(), "the run should learn");
  }

  // The ring over NCCL (one process's threads, one GPU each; send/recv only): the same
  // trajectory as the thread ranks' ring on the GPU. Skips, saying why, without a GPU per rank.
  void contextParallelOverNccl_data() {
    QTest::addColumn<QString>("layout");
    for (const char* l : {"cp2", "cp4", "cp2 tp2"}) QTest::newRow(l) << QString(l);
  }
  void contextParallelOverNccl() {
    SKIP_WITHOUT_GPU();
    QFETCH(QString, layout);
    const RunConfig thread = test::withLayout(gptConfig(), layout);
    SKIP_WITHOUT_NCCL_GPUS(thread.ranks);
    RunConfig nccl = thread;
    nccl.backend = Backend::Nccl;
    QVERIFY2(!nccl.validate(), nccl.validate().value_or("").c_str());
    const test::RunRecord a = test::recordRun(thread, 10), b = test::recordRun(nccl, 10);
    VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-4, "nccl " + layout + " vs thread ranks");
    VERIFY_PARAMETERS_AGREE(b.params, a.params, 1e-4,
                            "final parameters, nccl " + layout + " vs thread ranks");
  }

  // The ring's traffic per rank and step on the GPU, on the cp group only: per layer and
  // micro-batch of b windows, N - 1 K/V sends forward and 2 (N - 1) sends backward (K/V, and
  // dK/dV behind them), RingAttention::forwardFloats(b) + backwardFloats(b) floats in all, as
  // tst_context_parallel's ringTraffic counts on the CPU. The expected numbers come from
  // RingAttention objects of the same shape on a CPU ring (made, never run).
  void contextParallelRingTraffic_data() {
    QTest::addColumn<QString>("layout");
    for (const char* l : {"cp2", "cp4", "cp4 contiguous", "cp2 tp2", "cp2 M2"})
      QTest::newRow(l) << QString(l);
  }
  void contextParallelRingTraffic() {
    SKIP_WITHOUT_GPU();
    QFETCH(QString, layout);
    const RunConfig c = test::withLayout(gptConfig(), layout);
    QVERIFY2(!c.validate(), c.validate().value_or("").c_str());
    const int N = c.cp, M = c.microbatches, L = c.layers;
    const int b = c.globalBatch() / c.dpDegree() / M;  // windows per micro-batch on a rank
    std::vector<int64_t> fwd(static_cast<size_t>(N)), bwd(static_cast<size_t>(N));
    ThreadWorld ring(N);
    ring.run([&](Communicator& comm) {
      const std::unique_ptr<Compute> cpu = Compute::cpu();
      const RingAttention r(comm, c.seq, c.cpOrder == CpOrder::Zigzag, c.heads / c.tp, c.hidden / c.tp,
                            *cpu, nullptr, nullptr);
      fwd[size_t(comm.rank())] = r.forwardFloats(b);
      bwd[size_t(comm.rank())] = r.backwardFloats(b);
    });
    Trainer t(c);
    t.step();
    t.step();
    for (int r = 0; r < t.localRankCount(); ++r) {
      QVERIFY(t.compute(r).onGpu());
      int64_t sent = 0, sends = 0, recvs = 0;
      for (const CommOpTotals& o : t.lastTraffic(r).ops) {
        if (o.group != "cp") continue;
        if (o.op == CommOp::Send) sent += o.bytes, sends += o.calls;
        if (o.op == CommOp::Recv) recvs += o.calls;
      }
      const int64_t N1 = N - 1, floats = fwd[0] + bwd[0];
      QCOMPARE(fwd[size_t(N - 1)], fwd[0]);  // every rank of the ring sends as much
      QCOMPARE(bwd[0], 2 * fwd[0]);
      QCOMPARE(sends, int64_t(L) * M * 3 * N1);
      QCOMPARE(recvs, sends);
      QCOMPARE(sent, int64_t(L) * M * floats * int64_t(sizeof(float)));
      if (r == 0)
        qInfo("cuda %s: %lld bytes sent by each rank per step on the cp group",
              qPrintable(layout), (long long)sent);
    }
  }

  // The tracking allocator counts each stage's micro-batch buffers on the GPU: with k
  // micro-batches in flight (GPipe M, 1F1B at most P - stage), k times one micro-batch's bytes.
  void activationsOnTheGpu() {
    SKIP_WITHOUT_GPU();
    const int M = 4;
    const RunConfig c = parse("tp2 pp2 gpipe M4 B64");
    Trainer t(c);
    t.step();
    t.step();
    const std::vector<RankHoldings> held = t.holdings();
    for (int r = 0; r < t.localRankCount(); ++r) {
      QVERIFY(t.compute(r).onGpu());
      int64_t micro = 0;
      for (const HeldSlice& h : held[size_t(r)].items)
        if (h.kind == HoldingKind::Activations) micro = h.bytes;  // every micro-batch: 16 rows
      const int stage = held[size_t(r)].coords.pp;
      const int k = peakInFlight(pipelineSchedule(c.schedule, stage, c.pp, M));
      const MemorySnapshot mem = t.memory(r).snapshot();
      const int64_t got = mem.peak[int(MemCategory::Activations)];
      QVERIFY2(got > 0, "no activation memory counted on the GPU");
      QCOMPARE(got, k * micro);
      QVERIFY(mem[MemCategory::Params] > 0 && mem[MemCategory::Grads] > 0);
      qInfo("rank %d (stage %d): activations %lld bytes = %d x %lld on the GPU", r, stage,
            (long long)got, k, (long long)micro);
    }
  }

  // Evaluation: the dp-0 ranks' slices summed onto rank 0's GPU make the whole model there; its
  // accuracy is the CUDA serial run's.
  void evaluationMatchesCudaSerial() {
    SKIP_WITHOUT_GPU();
    Trainer a(baseConfig()), b(parse("tp2 pp2 1f1b M2"));
    for (int s = 0; s < 10; ++s) a.step(), b.step();
    const double accSerial = a.evaluate(1000), accParallel = b.evaluate(1000);
    qInfo("test accuracy after 10 steps: cuda serial %.4f, cuda tp2 x pp2 %.4f", accSerial,
          accParallel);
    QVERIFY2(std::abs(accSerial - accParallel) <= 0.005,
             qPrintable(QString("%1 vs %2").arg(accSerial).arg(accParallel)));
  }

  // Live reconfiguration through the serial layout, parameters and Adam moments copied off and
  // onto the GPU: CUDA serial -> CUDA tp 2 -> CUDA dp 2 x pp 2 ZeRO-1 -> CPU serial continues
  // the uninterrupted CUDA run.
  void reshardingAcrossDevicesContinues() {
    SKIP_WITHOUT_GPU();
    const RunConfig serial = parse("adam");
    const std::vector<RunConfig> next = {parse("tp2 adam"), parse("dp2 pp2 zero1 M2 adam"),
                                         parse("adam cpu")};
    const int per = 6;
    const std::vector<double> ref = test::lossTrajectory(serial, per * int(next.size() + 1));
    std::vector<double> got;
    auto t = std::make_unique<Trainer>(serial);
    for (int s = 0; s < per; ++s) got.push_back(t->step().loss);
    for (const RunConfig& c : next) {
      const TrainingState state = t->saveState();
      t = std::make_unique<Trainer>(c);
      t->loadState(state);
      for (int s = 0; s < per; ++s) got.push_back(t->step().loss);
    }
    VERIFY_TRAJECTORIES_AGREE(
        got, ref, 1e-4, "cuda -> cuda tp2 -> cuda dp2 pp2 zero1 -> cpu vs uninterrupted cuda");
  }
};

QTEST_GUILESS_MAIN(TstCudaModelParallel)
#include "tst_cuda_model_parallel.moc"
