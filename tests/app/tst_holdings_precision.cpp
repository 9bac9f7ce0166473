// The holdings map under mixed precision: the fp32 master copy is a bar of its own in each
// layer's row, held by ZeRO's ranks as they hold the optimizer state, named with its dtype in
// the legend beside the 16-bit parameters, in a colour no other category of the map or the
// memory chart has; an fp32 run draws no such bar. Run: ctest -R tst_holdings_precision
#include <QTest>

#include "chart_inputs.h"
#include "charts/chart_colors.h"
#include "holdings_inputs.h"

using namespace paralab;
using namespace paralab::test;

namespace {

QStringList legendNames(const QCustomPlot& m) {
  QStringList names;
  for (int i = 0; i < m.legend->itemCount(); ++i)
    if (auto* p = qobject_cast<QCPPlottableLegendItem*>(m.legend->item(i)))
      names << p->plottable()->name();
  return names;
}

// Each legend entry as a learner tells it apart: its fill and pattern, or a line's pen where it
// has no fill. Two entries with the same look are listed.
QStringList sameLooks(const QCustomPlot& chart) {
  QStringList seen, same;
  for (int i = 0; i < chart.legend->itemCount(); ++i) {
    auto* item = qobject_cast<QCPPlottableLegendItem*>(chart.legend->item(i));
    if (!item) continue;
    const QCPAbstractPlottable* p = item->plottable();
    const bool filled = p->brush().style() != Qt::NoBrush;
    const QString look =
        QString("%1 %2").arg((filled ? p->brush().color() : p->pen().color()).name(),
                             filled ? QString::number(int(p->brush().style())) : QString("line"));
    for (const QString& s : seen)
      if (s.section('|', 0, 0) == look) same << s.section('|', 1) + " = " + p->name();
    seen << look + "|" + p->name();
  }
  return same;
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

  // A mixed-precision run's legends: the master copy, the batch and every other category each
  // have a look of their own, in the holdings map and in the memory chart.
  void everyCategoryHasItsOwnColour() {
    for (int a = 0; a < kMemCategories; ++a)
      for (int b = a + 1; b < kMemCategories; ++b)
        QVERIFY2(
            chartcolors::memoryColor(MemCategory(a)) != chartcolors::memoryColor(MemCategory(b)),
            qPrintable(QString("memory categories %1 and %2").arg(a).arg(b)));
    RunConfig c;
    c.layers = 2;
    c.precision = Dtype::Bf16;
    HoldingsMap map;
    map.showHoldings(holdingsOf(c));
    const QStringList names = legendNames(map);
    QVERIFY2(names.contains("master (fp32)") && names.contains("batch"),
             qPrintable(names.join(", ")));
    QVERIFY2(sameLooks(map).isEmpty(), qPrintable(sameLooks(map).join("; ")));

    Snapshot s = syntheticSnapshot(2);
    s.config.precision = Dtype::Bf16;
    MemoryChart memory;
    memory.showSnapshot(s);
    QVERIFY2(legendNames(memory).contains("master params (fp32)"),
             qPrintable(legendNames(memory).join(", ")));
    QVERIFY2(sameLooks(memory).isEmpty(), qPrintable(sameLooks(memory).join("; ")));
  }
};

QTEST_MAIN(TstHoldingsPrecision)
#include "tst_holdings_precision.moc"
