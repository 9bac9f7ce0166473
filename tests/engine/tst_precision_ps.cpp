// Mixed precision under the synchronous parameter server (--strategy ps-sync, param_server.cpp)
// and HSDP (--zero-shard node): each against its own serial 16-bit run, fp16's overflow skipped
// on every rank alike, the servers' fp32 master and optimizer state and the workers' 16-bit
// parameters to the byte (tracker and holdings), the master through a save and a load.
// Run: ctest -R tst_precision_ps
#include <QtTest>
#include <map>

#include "loss_scale_run.h"
#include "loss_trajectory.h"
#include "memory_estimate.h"
#include "parallel/data/replica.h"  // shardLen
#include "train/precision.h"

using namespace paralab;

namespace {

// The MLP (H = 32, 2 blocks, batch 48) or the small GPT in `d`. The MLP trains with SGD and
// momentum: Adam moves a weight whose gradient is near zero by a whole step of lr whichever
// sign its 16-bit rounding gives it, so its parameters would measure the optimizer, not the
// layout (tst_precision_model_parallel).
RunConfig run(bool gpt, Dtype d) {
  RunConfig c = gpt ? test::smallGptRun(16) : test::smallRun(32, 2, 48);
  c.precision = d;
  return c;
}

RunConfig psSync(RunConfig c, int ranks, int servers) {
  c.strategy = "ps-sync";
  c.ranks = ranks;
  c.servers = servers;
  return c;
}

RunConfig dpPerTensor(RunConfig c, int ranks) {
  c.ranks = ranks;
  c.dpVersion = DpVersion::PerTensor;
  return c;
}

bool allRepresentable(const std::vector<float>& values, Dtype d) {
  std::vector<float> v = values;
  roundStored(d, v.data(), int64_t(v.size()));
  return v == values;
}

}  // namespace

class TstPrecisionPs : public QObject {
  Q_OBJECT
 private slots:
  // [SECTION] Equal to serial

  // The bound. Each worker rounds the gradient of its own slice to 16 bits before the server
  // sums the slices in fp32, where the serial run rounds the whole batch's gradient once: the
  // runs agree to 16-bit rounding (loss 1e-2, parameters 2e-2 of the largest), the bound
  // tst_precision sets for `--strategy sync` on 2 ranks. Where the rounding points are the same
  // — sync data parallelism on as many ranks, each rounding its own slice — only the order of
  // the fp32 sums differs (the server adds the pushes in rank order to its own), so ps-sync
  // agrees with it to fp32's tolerance (1e-5, tst_parallel_equals_serial). fp16 runs at the
  // dynamic loss scale (2^16, never overflowing on these runs: the scale of each step agrees).
  void agreesWithSerial_data() {
    QTest::addColumn<bool>("gpt");
    QTest::addColumn<int>("dtype");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("servers");
    for (const Dtype d : {Dtype::Bf16, Dtype::Fp16}) {
      const char* name = d == Dtype::Bf16 ? "bf16" : "fp16";
      QTest::addRow("mlp %s N=2 S=1", name) << false << int(d) << 2 << 1;
      QTest::addRow("mlp %s N=2 S=2", name) << false << int(d) << 2 << 2;
      QTest::addRow("mlp %s N=3 S=2", name) << false << int(d) << 3 << 2;
      QTest::addRow("gpt %s N=3 S=3", name) << true << int(d) << 3 << 3;
    }
    QTest::newRow("gpt bf16 N=2 S=1") << true << int(Dtype::Bf16) << 2 << 1;
  }
  void agreesWithSerial() {
    QFETCH(bool, gpt);
    QFETCH(int, dtype);
    QFETCH(int, ranks);
    QFETCH(int, servers);
    const Dtype d = Dtype(dtype);
    const RunConfig serial = run(gpt, d), ps = psSync(serial, ranks, servers);
    QVERIFY2(!ps.validate(), ps.validate().value_or("").c_str());
    const int steps = gpt ? 15 : 30;
    Trainer t(ps);
    test::RunRecord b;
    std::vector<StepMetrics> lines;
    for (int s = 0; s < steps; ++s) {
      lines.push_back(t.step());
      b.losses.push_back(lines.back().loss);
    }
    b.params = t.saveState().params;
    const test::RunRecord a = test::recordRun(serial, steps),
                          dp = test::recordRun(dpPerTensor(serial, ranks), steps);
    VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-2, "16-bit ps-sync vs serial 16-bit");
    VERIFY_PARAMETERS_AGREE(b.params, a.params, 2e-2, "final parameters, vs serial");
    VERIFY_TRAJECTORIES_AGREE(b.losses, dp.losses, 1e-5, "16-bit ps-sync vs sync per-tensor");
    VERIFY_PARAMETERS_AGREE(b.params, dp.params, 1e-5, "final parameters, vs sync per-tensor");
    QVERIFY2(allRepresentable(b.params, d), "the workers' parameters are 16-bit values");
    QVERIFY2(b.losses.back() < 0.9 * b.losses.front(), "the run should learn");
    for (const StepMetrics& m : lines) {
      QVERIFY(m.lossScale && m.skippedSteps);
      QCOMPARE(*m.skippedSteps, int64_t(0));
      QCOMPARE(*m.lossScale, d == Dtype::Fp16 ? 65536.0 : 1.0);
      for (const RankMetrics& r : m.ranks) QCOMPARE(r.lossScale, m.lossScale);
    }
    // The rounding is real: the same layout in fp32 is another trajectory.
    RunConfig fp32 = ps;
    fp32.precision = Dtype::Fp32;
    QVERIFY(test::recordRun(fp32, steps).params != b.params);
  }

  // [SECTION] fp16's loss scale

  // A scale doubled after every clean step overflows; the overflow, found by the one server
  // whose shard holds it, skips the step on every rank, and every rank reports the same scale
  // and skipped steps, the scale halving after a skip and doubling after a clean step.
  void fp16SkipsOnEveryRank() {
    test::verifyScaleFollowsOverflows(psSync(run(false, Dtype::Fp16), 3, 2), 40);
  }

  // A fixed scale that overflows: every step is skipped on every rank, and the parameters —
  // every server's shard, every worker's copy — stay as they were. At 2^21 the first step's
  // gradients overflow in both shards and the second step's in the second server's shard only
  // (the classifier's, the largest), so the first server skips that update because the world
  // agreed, not because it overflowed; 1e30 overflows in every shard.
  void fp16ForcedOverflow_data() {
    QTest::addColumn<QString>("scale");
    QTest::newRow("2^21") << "2097152";
    QTest::newRow("1e30") << "1e30";
  }
  void fp16ForcedOverflow() {
    QFETCH(QString, scale);
    test::verifyForcedOverflowSkips(psSync(run(false, Dtype::Fp16), 3, 2), scale.toStdString());
  }

  // [SECTION] Memory, to the byte

  // Every rank holds the whole model in 16 bits (2 bytes a parameter) and its fp32 gradient
  // buffer (4: the one the rounded gradients are pushed from and, on a server, summed in);
  // server k alone holds its shard's fp32 master (4 P_k) and Adam's moments (8 P_k). A server
  // holds what a ZeRO-1 rank over S ranks holds (6 + 12/S bytes a parameter, where S divides
  // P), a worker 6; the whole job 6N + 12 a parameter.
  void modelStatesPerRank_data() {
    QTest::addColumn<int>("dtype");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("servers");
    QTest::newRow("bf16 N=2 S=1") << int(Dtype::Bf16) << 2 << 1;
    QTest::newRow("bf16 N=3 S=2") << int(Dtype::Bf16) << 3 << 2;
    QTest::newRow("fp16 N=4 S=2") << int(Dtype::Fp16) << 4 << 2;
  }
  void modelStatesPerRank() {
    QFETCH(int, dtype);
    QFETCH(int, ranks);
    QFETCH(int, servers);
    const Dtype d = Dtype(dtype);
    RunConfig c = psSync(run(false, d), ranks, servers);
    c.optimizer = "adam";
    c.lr = 0.002;
    QVERIFY2(!c.validate(), c.validate().value_or("").c_str());
    Trainer t(c);
    t.step();
    const StepMetrics m = t.step();
    const int64_t P = t.parameterCount();
    QCOMPARE(P % servers, int64_t(0));  // equal shards: the ZeRO-1 formula holds to the byte
    const ModelStateBytes zero1 = paralab::modelStatesPerRank(P, 1, 8, servers, stateWidths(d));
    int64_t whole = 0;
    for (const RankMetrics& r : m.ranks) {
      const MemorySnapshot& mem = r.mem;
      const int64_t shard = r.rank < servers ? shardLen(r.rank, servers, P) : 0;
      qInfo("rank %d: params %lld grads %lld master %lld optimizer %lld (P = %lld)", r.rank,
            (long long)mem[MemCategory::Params], (long long)mem[MemCategory::Grads],
            (long long)mem[MemCategory::Master], (long long)mem[MemCategory::Optimizer],
            (long long)P);
      QCOMPARE(mem[MemCategory::Params], 2 * P);
      QCOMPARE(mem[MemCategory::Grads], 4 * P);
      QCOMPARE(mem[MemCategory::Master], 4 * shard);
      QCOMPARE(mem[MemCategory::Optimizer], 8 * shard);
      if (r.rank < servers) {
        QCOMPARE(mem[MemCategory::Params], int64_t(zero1.params));
        QCOMPARE(mem[MemCategory::Grads], int64_t(zero1.grads));
        QCOMPARE(mem[MemCategory::Master], int64_t(zero1.master));
        QCOMPARE(mem[MemCategory::Optimizer], int64_t(zero1.optimizer));
      }
      whole += mem[MemCategory::Params] + mem[MemCategory::Grads] + mem[MemCategory::Master] +
               mem[MemCategory::Optimizer];
    }
    QCOMPARE(whole, (6 * ranks + 12) * P);
    // The estimate that refuses a run too big for this machine counts the same states.
    QCOMPARE(estimateMemory(c).modelStates, whole);
    // The holdings list the same bytes: the parameters as 16-bit values, the servers' master
    // and optimizer shards end to end over the flat buffer.
    int64_t mastered = 0;
    for (const RankHoldings& h : t.holdings()) {
      const MemorySnapshot& mem = m.ranks.at(size_t(h.rank)).mem;
      std::map<HoldingKind, int64_t> bytes;
      for (const HeldSlice& s : h.items) {
        bytes[s.kind] += s.bytes;
        if (s.kind == HoldingKind::Params) QCOMPARE(int(s.dtype), int(d));
        if (s.kind != HoldingKind::Master) continue;
        QCOMPARE(s.begin, mastered);  // server k's shard starts where server k-1's ends
        mastered = s.end;
      }
      QCOMPARE(bytes[HoldingKind::Params], mem[MemCategory::Params]);
      QCOMPARE(bytes[HoldingKind::Grads], mem[MemCategory::Grads]);
      QCOMPARE(bytes[HoldingKind::Master], mem[MemCategory::Master]);
      QCOMPARE(bytes[HoldingKind::Optimizer], mem[MemCategory::Optimizer]);
    }
    QCOMPARE(mastered, P);
  }

  // [SECTION] The master through a save and a load

  // Saved after 10 steps, loaded into a fresh run of the same layout, 10 more: the uninterrupted
  // run's losses, loss scales and parameters, bit for bit (the servers' master shards and the
  // loss scale travel in the state); without the master the run parts from it.
  void resumesBitForBit_data() {
    QTest::addColumn<int>("dtype");
    QTest::newRow("bf16") << int(Dtype::Bf16);
    QTest::newRow("fp16") << int(Dtype::Fp16);
  }
  void resumesBitForBit() {
    QFETCH(int, dtype);
    RunConfig c = psSync(run(false, Dtype(dtype)), 3, 2);
    // fp16's scale grows within the run: its state matters.
    if (Dtype(dtype) == Dtype::Fp16) c.lossScaleWindow = 3;
    const int per = 10;
    std::vector<StepMetrics> straight, resumed;
    std::vector<float> straightParams;
    {
      Trainer t(c);
      for (int s = 0; s < 2 * per; ++s) straight.push_back(t.step());
      straightParams = t.saveState().params;
    }
    TrainingState saved;
    {
      Trainer t(c);
      for (int s = 0; s < per; ++s) resumed.push_back(t.step());
      saved = t.saveState();
    }
    QCOMPARE(saved.master.size(), saved.params.size());
    QVERIFY2(saved.master != saved.params, "the master holds what 16 bits round away");
    Trainer t(c);
    t.loadState(saved);
    for (int s = 0; s < per; ++s) resumed.push_back(t.step());
    for (int s = 0; s < 2 * per; ++s) {
      QCOMPARE(resumed[size_t(s)].loss, straight[size_t(s)].loss);
      QCOMPARE(resumed[size_t(s)].lossScale, straight[size_t(s)].lossScale);
    }
    QVERIFY(t.saveState().params == straightParams);
    TrainingState bare = saved;
    bare.master.clear();
    Trainer u(c);
    u.loadState(bare);
    for (int s = 0; s < per; ++s) u.step();
    QVERIFY(u.saveState().params != straightParams);
  }

  // [SECTION] HSDP in 16 bits

  // ZeRO-3 inside each node of 2 ranks, a replica per node, 4 ranks, bf16: every rank rounds its
  // own slice's gradient, as sync data parallelism on 4 ranks does, so it agrees with the
  // serial bf16 run to bf16's rounding (the bound above) and with sync per-tensor on 4 ranks to
  // fp32's (tst_hsdp: HSDP equals serial to 1e-5 in fp32).
  void hsdpAgreesWithSerial_data() {
    QTest::addColumn<bool>("gpt");
    QTest::newRow("mlp") << false;
    QTest::newRow("gpt") << true;
  }
  void hsdpAgreesWithSerial() {
    QFETCH(bool, gpt);
    const RunConfig serial = run(gpt, Dtype::Bf16);
    RunConfig hsdp = serial;
    hsdp.ranks = 4;
    hsdp.zero = 3;
    hsdp.gpusPerNode = 2;
    hsdp.zeroShard = ZeroShard::Node;
    QVERIFY2(!hsdp.validate(), hsdp.validate().value_or("").c_str());
    const int steps = gpt ? 10 : 20;
    const test::RunRecord a = test::recordRun(serial, steps), b = test::recordRun(hsdp, steps),
                          dp = test::recordRun(dpPerTensor(serial, 4), steps);
    VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-2, "bf16 hsdp vs serial bf16");
    VERIFY_PARAMETERS_AGREE(b.params, a.params, 2e-2, "final parameters, vs serial");
    VERIFY_TRAJECTORIES_AGREE(b.losses, dp.losses, 1e-5, "bf16 hsdp vs sync per-tensor");
    VERIFY_PARAMETERS_AGREE(b.params, dp.params, 1e-5, "final parameters, vs sync per-tensor");
    QVERIFY2(allRepresentable(b.params, Dtype::Bf16), "parameters are 16-bit values");
  }

  // [SECTION] What stays fp32

  // The asynchronous strategies are refused in one line naming what trains in 16 bits; fp32
  // trains them. ps-sync trains in 16 bits on the CPU and on a GPU (tst_cuda_precision).
  void refusals_data() {
    QTest::addColumn<QString>("strategy");
    for (const char* s : {"ps-async", "hogwild", "local-sgd", "gossip", "fedavg"})
      QTest::newRow(s) << s;
  }
  void refusals() {
    QFETCH(QString, strategy);
    RunConfig c = run(false, Dtype::Fp16);
    c.strategy = strategy.toStdString();
    c.ranks = 2;
    const std::string err = c.validate().value_or("");
    QVERIFY2(err ==
                 "precision: fp16 trains serially and with --strategy sync (data, tensor, "
                 "sequence, pipeline, context and expert parallelism, ZeRO) or --strategy "
                 "ps-sync; the asynchronous strategies (ps-async, hogwild, local-sgd, gossip, "
                 "fedavg) train in fp32",
             err.c_str());
    c.precision = Dtype::Fp32;
    QVERIFY2(!c.validate(), c.validate().value_or("").c_str());
    RunConfig gpu = psSync(run(false, Dtype::Bf16), 2, 1);
    gpu.device = Device::Cuda;
    gpu.kernel = "tensor-core";
    QVERIFY2(!precisionRefusal(gpu), precisionRefusal(gpu).value_or("").c_str());
    gpu.device = Device::Cpu;
    QVERIFY(!precisionRefusal(gpu));
  }
};

QTEST_GUILESS_MAIN(TstPrecisionPs)
#include "tst_precision_ps.moc"
