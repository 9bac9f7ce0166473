// The holdings map under mixed precision: the fp32 master copy is a bar of its own in each
// layer's row, held by ZeRO's ranks as they hold the optimizer state, named with its dtype in
// the legend beside the 16-bit parameters; an fp32 run draws no such bar.
// Run: ctest -R tst_holdings_precision --output-on-failure
#include <QTest>

#include "holdings_inputs.h"

using namespace paralab;
using namespace paralab::test;

namespace {

QStringList legendNames(const HoldingsMap& m) {
  QStringList names;
  for (int i = 0; i < m.legend->itemCount(); ++i)
    if (auto* p = qobject_cast<QCPPlottableLegendItem*>(m.legend->item(i)))
      names << p->plottable()->name();
  return names;
}

}  // namespace

class TstHoldingsPrecision : public QObject {
  Q_OBJECT
 private slots:
  // ZeRO-3 over 4 ranks in bf16: rank r holds the r-th quarter of every layer's master copy,
  // as of its optimizer state; the legend says the dtypes.
  void masterBarShardedAsTheOptimizerState() {
    RunConfig z;
    z.ranks = 4, z.zero = 3, z.layers = 2;
    z.precision = Dtype::Bf16;
    HoldingsMap map;
    map.showHoldings(holdingsOf(z));
    for (int r = 0; r < 4; ++r)
      for (const QString& row : {QString("block0"), QString("block1"), QString("classifier")}) {
        const auto* master = findCell(map, r, row, HoldingKind::Master);
        const auto* opt = findCell(map, r, row, HoldingKind::Optimizer);
        QVERIFY2(master && opt, qPrintable(QString("rank %1, %2").arg(r).arg(row)));
        QCOMPARE(master->parts, opt->parts);
        QCOMPARE(master->dtype, Dtype::Fp32);
        QCOMPARE(findCell(map, r, row, HoldingKind::Params)->dtype, Dtype::Bf16);
        if (row != "block0") continue;  // a block divides by 4; a small layer's chunks are padded
        QCOMPARE(int(master->parts.size()), 1);
        QVERIFY(std::abs(master->parts[0].first - r / 4.0) < 1e-3);
        QVERIFY(std::abs(master->parts[0].second - (r + 1) / 4.0) < 1e-3);
      }
    const QStringList names = legendNames(map);
    QVERIFY2(names.contains("master (fp32)") && names.contains("params (bf16)"),
             qPrintable(names.join(", ")));
    // Together the four ranks hold each layer's master once.
    std::vector<std::pair<double, double>> parts;
    for (int r = 0; r < 4; ++r)
      for (const auto& p : findCell(map, r, "block0", HoldingKind::Master)->parts)
        parts.push_back(p);
    QVERIFY(coversWhole(parts));
  }

  // Serial bf16: the whole master on the one rank. Then fp32 on the same map: no master bar,
  // no master in the legend, the parameters without a dtype of their own.
  void wholeOnOneRankAndGoneInFp32() {
    RunConfig c;
    c.layers = 2;
    c.precision = Dtype::Bf16;
    HoldingsMap map;
    map.showHoldings(holdingsOf(c));
    const auto* master = findCell(map, 0, "block0", HoldingKind::Master);
    QVERIFY(master);
    QVERIFY(coversWhole(master->parts));
    QVERIFY(legendNames(map).contains("master (fp32)"));
    c.precision = Dtype::Fp32;
    map.showHoldings(holdingsOf(c));
    QVERIFY(!findCell(map, 0, "block0", HoldingKind::Master));
    QVERIFY(findCell(map, 0, "block0", HoldingKind::Optimizer));
    const QStringList names = legendNames(map);
    QVERIFY2(!names.contains("master (fp32)") && names.contains("params"),
             qPrintable(names.join(", ")));
  }
};

QTEST_MAIN(TstHoldingsPrecision)
#include "tst_holdings_precision.moc"
