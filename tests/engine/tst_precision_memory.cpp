// Mixed precision's memory, measured by the per-rank tracker (train/precision.h,
// memory_estimate.h): model states to the byte against Megatron-LM's accounting — fp32 with
// Adam 16 bytes a parameter, bf16/fp16 18 (2 + 4 gradient + 4 master + 8), with ZeRO-1 (the
// distributed optimizer) 6 + 12/d, ZeRO-2 2 + 16/d, ZeRO-3 18/d — and the activations halved,
// all but the fp32 ones (LayerNorm's statistics, the logits, the token ids).
// Run: ctest -R tst_precision_memory
#include <QtTest>

#include "loss_trajectory.h"
#include "memory_estimate.h"
#include "model/model.h"
#include "parallel/data/zero.h"
#include "train/precision.h"

using namespace paralab;

namespace {

// Adam on an MLP whose units all divide by 2 and 4 ranks (H = 32): no ZeRO padding, so the
// formulas hold to the byte.
RunConfig adamRun(Dtype d, int dp, int zero) {
  RunConfig c = test::smallRun(32, 2, 48);
  c.optimizer = "adam";
  c.lr = 0.002;
  c.precision = d;
  c.dp = dp > 1 ? dp : 0;
  c.zero = zero;
  c.deriveRanks();
  return c;
}

int64_t category(const MemorySnapshot& m, MemCategory c) { return m[c]; }

}  // namespace

class TstPrecisionMemory : public QObject {
  Q_OBJECT
 private slots:
  void modelStates_data() {
    QTest::addColumn<int>("dtype");
    QTest::addColumn<int>("dp");
    QTest::addColumn<int>("zero");
    QTest::addColumn<int>("perParamTimesD");  // bytes a parameter per rank, times d
    QTest::newRow("fp32 serial: 16") << int(Dtype::Fp32) << 1 << 0 << 16;
    QTest::newRow("bf16 serial: 18") << int(Dtype::Bf16) << 1 << 0 << 18;
    QTest::newRow("fp16 serial: 18") << int(Dtype::Fp16) << 1 << 0 << 18;
    QTest::newRow("bf16 dp2: 18") << int(Dtype::Bf16) << 2 << 0 << 2 * 18;
    QTest::newRow("fp32 zero-1 d=2: 8 + 8/2") << int(Dtype::Fp32) << 2 << 1 << 2 * 8 + 8;
    QTest::newRow("bf16 zero-1 d=2: 6 + 12/2") << int(Dtype::Bf16) << 2 << 1 << 2 * 6 + 12;
    QTest::newRow("bf16 zero-2 d=2: 2 + 16/2") << int(Dtype::Bf16) << 2 << 2 << 2 * 2 + 16;
    QTest::newRow("fp16 zero-3 d=2: 18/2") << int(Dtype::Fp16) << 2 << 3 << 18;
  }
  void modelStates() {
    QFETCH(int, dtype);
    QFETCH(int, dp);
    QFETCH(int, zero);
    QFETCH(int, perParamTimesD);
    const Dtype d = Dtype(dtype);
    const RunConfig c = adamRun(d, dp, zero);
    QVERIFY2(!c.validate(), c.validate().value_or("").c_str());
    Trainer t(c);
    t.step();
    const StepMetrics m = t.step();
    const int64_t P = t.parameterCount();
    const ZeroLayout layout(makeModel(c, t.data(), nullptr, nullptr)->params(), std::max(1, dp));
    QCOMPARE(layout.paddedNumel, P);  // no padding: the formulas are exact
    const ModelStateBytes f = modelStatesPerRank(P, zero, 8, std::max(1, dp), stateWidths(d));
    for (const RankMetrics& r : m.ranks) {
      const MemorySnapshot& mem = r.mem;
      const int64_t params = category(mem, MemCategory::Params),
                    grads = category(mem, MemCategory::Grads),
                    master = category(mem, MemCategory::Master),
                    optimizer = category(mem, MemCategory::Optimizer);
      qInfo("rank %d: params %lld grads %lld master %lld optimizer %lld (P = %lld)", r.rank,
            (long long)params, (long long)grads, (long long)master, (long long)optimizer,
            (long long)P);
      QCOMPARE(params, int64_t(f.params));
      QCOMPARE(grads, int64_t(f.grads));
      QCOMPARE(master, int64_t(f.master));
      QCOMPARE(optimizer, int64_t(f.optimizer));
      QCOMPARE((params + grads + master + optimizer) * std::max(1, dp),
               int64_t(perParamTimesD) * P);
    }
    // The estimate that refuses a run too big for this machine counts the same states.
    QCOMPARE(estimateMemory(c).modelStates, int64_t(perParamTimesD) * P);
  }

  // 16-bit activations take half their fp32 bytes; the fp32 ones keep theirs: per MLP sample
  // a mean and a 1/std per block and 10 logits; per GPT token a mean and a 1/std for each of a
  // block's two LayerNorms and the final one, 2 token ids and V logits.
  void activationsHalved_data() {
    QTest::addColumn<bool>("gpt");
    QTest::addColumn<int>("dtype");
    for (const bool gpt : {false, true})
      for (const Dtype d : {Dtype::Bf16, Dtype::Fp16})
        QTest::addRow("%s %s", gpt ? "gpt" : "mlp", nameOf(d).c_str()) << gpt << int(d);
  }
  void activationsHalved() {
    QFETCH(bool, gpt);
    QFETCH(int, dtype);
    RunConfig c = gpt ? test::smallGptRun(16) : test::smallRun(32, 2, 48);
    c.precision = Dtype(dtype);
    RunConfig fp32 = c;
    fp32.precision = Dtype::Fp32;
    Trainer half(c), full(fp32);
    const int64_t a16 = half.step().ranks.at(0).mem[MemCategory::Activations];
    const int64_t a32 = full.step().ranks.at(0).mem[MemCategory::Activations];
    const int64_t L = c.layers;
    const int64_t kept32 =
        gpt ? 4 * int64_t(c.batch) * c.seq * (4 * L + 2 + 2 + full.data().classes)
            : 4 * int64_t(c.batch) * (2 * L + 10);
    QCOMPARE(a16, (a32 - kept32) / 2 + kept32);
    QVERIFY((a32 - kept32) % 4 == 0);
    // The estimate counts the same way.
    const MemoryEstimate e16 = estimateMemory(c), e32 = estimateMemory(fp32);
    QVERIFY2(e16.activations < e32.activations && 2 * e16.activations > e32.activations,
             "the estimate halves all but the fp32 activations");
  }

  // The master copy is its own category, fp32 runs hold none, and each category's dtype is
  // named in the memory's words.
  void masterCopyIsItsOwnCategory() {
    QCOMPARE(QString::fromStdString(std::string(memCategoryName(MemCategory::Master))),
             QString("master"));
    Trainer fp32(adamRun(Dtype::Fp32, 1, 0));
    QCOMPARE(fp32.step().ranks.at(0).mem[MemCategory::Master], int64_t(0));
    QCOMPARE(stateWidths(Dtype::Bf16).params, 2);
    QCOMPARE(stateWidths(Dtype::Fp16).grads, 4);
    QCOMPARE(stateWidths(Dtype::Fp32).master, 0);
  }
};

QTEST_GUILESS_MAIN(TstPrecisionMemory)
#include "tst_precision_memory.moc"
