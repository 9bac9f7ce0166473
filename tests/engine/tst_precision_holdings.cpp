// The holdings under mixed precision (Trainer::holdings, parallel/holdings.h): the fp32 master
// copy is a kind of its own ("master"), whole on every replica or sharded by ZeRO exactly as the
// optimizer state is, its bytes what the memory tracker counts; the parameters say their 16-bit
// dtype and count 2 bytes a value; the JSON carries both. Run: ctest -R tst_precision_holdings
#include <QtTest>
#include <map>
#include <nlohmann/json.hpp>

#include "metrics/step_views.h"
#include "tiles.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

RunConfig config(Dtype d, int zero) {
  RunConfig c;
  c.dataset = "synthetic";
  c.hidden = 32;
  c.layers = 4;
  c.batch = 48;
  c.evalEvery = 0;
  c.optimizer = "adam";
  c.lr = 0.002;
  c.precision = d;
  c.ranks = 2;
  c.zero = zero;
  return c;
}

std::vector<const HeldSlice*> ofKind(const RankHoldings& h, HoldingKind k) {
  std::vector<const HeldSlice*> out;
  for (const HeldSlice& s : h.items)
    if (s.kind == k) out.push_back(&s);
  return out;
}

}  // namespace

class TstPrecisionHoldings : public QObject {
  Q_OBJECT
 private slots:
  void masterIsItsOwnKind_data() {
    QTest::addColumn<int>("zero");
    QTest::newRow("sync") << 0;
    QTest::newRow("zero-1") << 1;
    QTest::newRow("zero-2") << 2;
    QTest::newRow("zero-3") << 3;
  }
  void masterIsItsOwnKind() {
    QFETCH(int, zero);
    const RunConfig c = config(Dtype::Bf16, zero);
    Trainer t(c);
    const StepMetrics m = t.step();
    const std::vector<RankHoldings> held = t.holdings();
    const int64_t P = t.parameterCount();
    std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> chunks;  // unit -> master
    std::map<std::string, int64_t> totals;
    for (const RankHoldings& h : held) {
      const auto master = ofKind(h, HoldingKind::Master), opt = ofKind(h, HoldingKind::Optimizer);
      QVERIFY2(!master.empty(), "mixed precision holds a master copy");
      QCOMPARE(master.size(), opt.size());  // one per unit, beside its optimizer state
      int64_t masterBytes = 0;
      for (size_t i = 0; i < master.size(); ++i) {
        const HeldSlice& s = *master[i];
        QCOMPARE(s.dtype, Dtype::Fp32);
        QCOMPARE(s.cols, int64_t(1));
        QCOMPARE(s.bytes, s.rows * 4);
        // Sharded as the optimizer state is: the same unit, the same range.
        QCOMPARE(s.tensor, opt[i]->tensor);
        QCOMPARE(s.dim, opt[i]->dim);
        QCOMPARE(s.begin, opt[i]->begin);
        QCOMPARE(s.end, opt[i]->end);
        QCOMPARE(s.rows, opt[i]->rows);
        chunks[s.tensor].push_back({s.begin, s.end});
        totals[s.tensor] = s.total;
        masterBytes += s.bytes;
      }
      // What the map says this rank holds is what the memory tracker counts.
      QCOMPARE(masterBytes, m.ranks.at(size_t(h.rank)).mem.peak[size_t(MemCategory::Master)]);
      int64_t paramValues = 0;
      for (const HeldSlice* s : ofKind(h, HoldingKind::Params)) {
        QCOMPARE(s->dtype, Dtype::Bf16);
        QCOMPARE(s->bytes, s->rows * s->cols * 2);
        paramValues += s->rows * s->cols;
      }
      if (zero < 3) QCOMPARE(paramValues, P);  // whole on every rank, 2 bytes a parameter
      for (const HeldSlice* s : ofKind(h, HoldingKind::Grads)) QCOMPARE(s->dtype, Dtype::Fp32);
      // The JSON line's holdings read back with the kind and the dtypes.
      const RankHoldings back = holdingsFromJson(toJson(h));
      QCOMPARE(back.items.size(), h.items.size());
      for (size_t i = 0; i < h.items.size(); ++i) {
        QCOMPARE(back.items[i].kind, h.items[i].kind);
        QCOMPARE(back.items[i].dtype, h.items[i].dtype);
      }
    }
    // Whole on each rank at stage 0 (each rank's covers the unit); ZeRO: the ranks' chunks tile
    // each unit once.
    for (const auto& [unit, parts] : chunks) {
      if (zero == 0) {
        for (const auto& [a, b] : parts) QCOMPARE(b - a, totals[unit]);
      } else {
        QVERIFY2(test::tiles(parts, totals[unit]), unit.c_str());
      }
    }
  }

  // fp32 keeps no master: no such kind, parameters at 4 bytes, no dtype in the JSON.
  void fp32HoldsNone() {
    Trainer t(config(Dtype::Fp32, 1));
    t.step();
    for (const RankHoldings& h : t.holdings()) {
      QVERIFY(ofKind(h, HoldingKind::Master).empty());
      for (const HeldSlice* s : ofKind(h, HoldingKind::Params)) {
        QCOMPARE(s->dtype, Dtype::Fp32);
        QCOMPARE(s->bytes, s->rows * s->cols * 4);
      }
      QVERIFY(toJson(h).dump().find("dtype") == std::string::npos);
    }
  }
};

QTEST_GUILESS_MAIN(TstPrecisionHoldings)
#include "tst_precision_holdings.moc"
