// The holdings map against the layout under context and expert parallelism: every layout of the
// GPT's dp x tp x pp x cp and the experts' dp with ep (the MoE, the GPT's --ffn moe), at every ZeRO
// stage on 4 and 8 ranks, each rank's held slice of each layer (engine holdings and map cells)
// equal to the sharding formula's. Run: ctest -R tst_holdings_layouts --output-on-failure
#include <QTest>
#include <cmath>
#include <map>
#include <set>

#include "holdings_inputs.h"

using namespace paralab;
using namespace paralab::test;

namespace {

using Parts = std::vector<std::pair<double, double>>;
constexpr int kLayers = 2, kExperts = 8;

RunConfig layoutRun(ModelKind model, int ranks, int dp, int tp, int pp, int cp, int ep, int zero) {
  RunConfig c;
  c.model = model;
  c.ranks = ranks, c.dp = dp, c.tp = tp, c.pp = pp, c.cp = cp, c.ep = ep, c.zero = zero;
  c.layers = kLayers;
  c.heads = 4, c.seq = 16;  // the GPT: 16 tokens, 2·cp zigzag chunks of them for cp up to 8
  c.experts = kExperts;     // the MoE: every ep up to 8 divides them
  if (pp > 1) c.microbatches = 2;
  return c;
}

// The refusal the documented rules give a layout (docs/architecture.md §3, config.cpp's
// validateLayout, the moe row of the strategy table), as the start of its line; "" for none.
std::string ruleRefusal(const RunConfig& c) {
  if (c.model == ModelKind::Moe && c.modelParallel()) return "model: --model moe composes";
  if (c.pp > c.layers) return "pp: ";
  if (c.dpDegree() % c.ep != 0) return "ep: ";
  // Ulysses gives each cp rank whole heads of its tp rank's heads / tp.
  if (c.cp > 1 && c.cpKind == CpKind::Ulysses && (c.heads / c.tp) % c.cp != 0) return "cp-kind: ";
  return "";
}

// ZeRO's chunk of a unit of `len` floats over `n` replicas, replica `r`'s: padded to a multiple
// of n, chunk = ⌈len/n⌉, [r·chunk, (r+1)·chunk) clipped to len (parallel/data/zero.h).
std::pair<int64_t, int64_t> zeroChunk(int64_t len, int n, int r) {
  const int64_t chunk = (len + n - 1) / n, begin = std::min(len, r * chunk);
  return {begin, std::min(len, begin + chunk)};
}

bool near(const Parts& a, const Parts& b, double tol = 1e-9) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::abs(a[i].first - b[i].first) > tol || std::abs(a[i].second - b[i].second) > tol)
      return false;
  return true;
}

QString show(const Parts& p) {
  QStringList s;
  for (const auto& [a, b] : p) s << QString("%1..%2").arg(a, 0, 'f', 4).arg(b, 0, 'f', 4);
  return s.join(' ');
}

double length(const Parts& p) {
  double n = 0;
  for (const auto& [a, b] : p) n += b - a;
  return n;
}

// The row of an expert ("block0.expert5") -> its block and expert; {-1, -1} for another row.
std::pair<int, int> expertOf(const QString& row) {
  static const QRegularExpression re("^block(\\d+)\\.expert(\\d+)$");
  const auto m = re.match(row);
  return m.hasMatch() ? std::pair{m.captured(1).toInt(), m.captured(2).toInt()} : std::pair{-1, -1};
}

}  // namespace

class TestHoldingsLayouts : public QObject {
  Q_OBJECT

 private slots:
  void layoutsAreValidatedByTheRules_data();
  void layoutsAreValidatedByTheRules();
  void contextParallelHoldings_data();
  void contextParallelHoldings();
  void expertParallelHoldings_data();
  void expertParallelHoldings();
};

namespace {

// Every combination of degrees whose product is 4 or 8 ranks, at ZeRO 0..3: the GPT's dp x tp x
// pp x cp with cp ≥ 2, its attention the ring or Ulysses's; the MoE's and the GPT-with-MoE-FFN's dp
// with ep, and the MoE asked for tp, pp or cp.
std::vector<std::pair<QString, RunConfig>> layouts(ModelKind model) {
  std::vector<std::pair<QString, RunConfig>> out;
  for (int ranks : {4, 8})
    for (int zero = 0; zero <= 3; ++zero) {
      const QString z = QString(" zero%1").arg(zero);
      if (model == ModelKind::Gpt)
        for (int cp : {2, 4, 8})
          for (int tp : {1, 2, 4})
            for (int pp : {1, 2, 4})
              for (CpKind kind : {CpKind::Ring, CpKind::Ulysses})
                if (ranks % (cp * tp * pp) == 0) {
                  const int dp = ranks / (cp * tp * pp);
                  RunConfig c = layoutRun(model, ranks, dp, tp, pp, cp, 1, zero);
                  c.cpKind = kind;
                  out.push_back({QString("gpt %1 ranks dp%2 tp%3 pp%4 cp%5%6")
                                         .arg(ranks)
                                         .arg(dp)
                                         .arg(tp)
                                         .arg(pp)
                                         .arg(cp)
                                         .arg(kind == CpKind::Ulysses ? " ulysses" : "") +
                                     z,
                                 c});
                }
      if (model != ModelKind::Moe) continue;
      for (int ep : {1, 2, 4, 8}) {
        out.push_back({QString("moe %1 ranks ep%2").arg(ranks).arg(ep) + z,
                       layoutRun(model, ranks, ranks, 1, 1, 1, ep, zero)});
        RunConfig g = layoutRun(ModelKind::Gpt, ranks, ranks, 1, 1, 1, ep, zero);
        g.ffn = Ffn::Moe;
        out.push_back({QString("gpt ffn moe %1 ranks ep%2").arg(ranks).arg(ep) + z, g});
      }
      for (const auto [tp, pp, cp] : {std::tuple{2, 1, 1}, {1, 2, 1}, {1, 1, 2}})
        out.push_back(
            {QString("moe %1 ranks tp%2 pp%3 cp%4").arg(ranks).arg(tp).arg(pp).arg(cp) + z,
             layoutRun(model, ranks, ranks / (tp * pp * cp), tp, pp, cp, 1, zero)});
    }
  return out;
}

// The rows of a holdings test: the layouts validate() accepts (that it accepts exactly those the
// rules allow is layoutsAreValidatedByTheRules's).
void addAcceptedLayouts(ModelKind model) {
  QTest::addColumn<RunConfig>("config");
  for (const auto& [name, c] : layouts(model))
    if (!holdingsRun(c).validate()) QTest::newRow(qPrintable(name)) << c;
}

}  // namespace

void TestHoldingsLayouts::layoutsAreValidatedByTheRules_data() {
  QTest::addColumn<RunConfig>("config");
  for (ModelKind m : {ModelKind::Gpt, ModelKind::Moe})
    for (const auto& [name, c] : layouts(m)) QTest::newRow(qPrintable(name)) << c;
}

// validate() accepts exactly the layouts the documented rules allow, and refuses the others with
// one line naming the field; the holdings tests below take the accepted ones.
void TestHoldingsLayouts::layoutsAreValidatedByTheRules() {
  QFETCH(RunConfig, config);
  const std::optional<std::string> refused = holdingsRun(config).validate();
  const std::string rule = ruleRefusal(config);
  if (rule.empty()) {
    QVERIFY2(!refused, refused ? refused->c_str() : "");
  } else {
    QVERIFY2(refused, ("accepted, though the rules refuse it: " + rule).c_str());
    QVERIFY2(refused->starts_with(rule), refused->c_str());
    QVERIFY(refused->find('\n') == std::string::npos);
  }
}

// [SECTION] Context parallelism: the GPT over dp x tp x pp x cp

void TestHoldingsLayouts::contextParallelHoldings_data() { addAcceptedLayouts(ModelKind::Gpt); }

// The formula. Context parallelism cuts the windows, not the weights (as Megatron-LM's, whose cp
// ranks hold whole layers and split activations): a cp rank holds what the same (dp, tp, pp)
// rank would without cp. So stage s of P holds blocks [s·L/P, (s+1)·L/P), the embedding on the
// first stage and the head on the last; a tensor tensor parallelism cuts (dim ≥ 0) is tp rank t's
// [t·n/T, (t+1)·n/T) of that dimension, every other tensor whole. The replicas that sum a
// gradient are dp x cp (process_grid.h), so ZeRO shards over them: replica r = dp·cp + cp-index
// of N = dp·cp owns zeroChunk(len, N, r) of each unit of its tp rank (the optimizer state from
// stage 1, the gradients from 2, the parameters from 3). In the map, a unit no tensor
// parallelism cuts is its row; a cut one is tp rank t's 1/T of the row, ((t + a)/T, (t + b)/T)
// for the chunk (a, b) (ZeRO-3), or falls on the rank's own slices (ZeRO-1, 2).
void TestHoldingsLayouts::contextParallelHoldings() {
  QFETCH(RunConfig, config);
  const RunConfig& c = config;
  const std::vector<RankHoldings> held = holdingsOf(c);
  QCOMPARE(int(held.size()), c.ranks);
  const int N = c.dp * c.cp, T = c.tp, P = c.pp;
  std::map<int, GridCoords> at;
  for (const RankHoldings& h : held) at[h.rank] = h.coords;
  const auto stageRows = [&](int s) {
    std::set<QString> rows;
    if (s == 0) rows.insert("embed");
    for (int b = s * kLayers / P; b < (s + 1) * kLayers / P; ++b)
      rows.insert(QString("block%1").arg(b));
    if (s == P - 1) rows.insert("head");
    return rows;
  };

  // The engine's holdings: named slices and ZeRO chunks as the formula gives them.
  std::set<QString> cut;  // the rows tensor parallelism cuts
  for (const RankHoldings& h : held) {
    const GridCoords& g = h.coords;
    const int r = g.dp * c.cp + g.cp;
    std::set<QString> rows;
    for (const HeldSlice& s : h.items) {
      if (s.kind == HoldingKind::Batch || s.kind == HoldingKind::Activations) continue;
      const QString row = HoldingsMap::rowOf(s.tensor);
      rows.insert(row);
      const QString where = QString("rank %1 (dp %2 cp %3 tp %4 pp %5): %6 %7 %8..%9 of %10")
                                .arg(h.rank)
                                .arg(g.dp)
                                .arg(g.cp)
                                .arg(g.tp)
                                .arg(g.pp)
                                .arg(s.tensor.c_str())
                                .arg(holdingKindName(s.kind))
                                .arg(s.begin)
                                .arg(s.end)
                                .arg(s.total);
      const bool flat = s.tensor.ends_with(" (flat)");
      const int stage = s.kind == HoldingKind::Params ? 3 : s.kind == HoldingKind::Grads ? 2 : 1;
      if (c.zero >= stage) {  // sharded: this replica's chunk of the unit
        QVERIFY2(flat && s.dim == 0, qPrintable(where));
        const auto [b, e] = zeroChunk(s.total, N, r);
        QVERIFY2(s.begin == b && s.end == e,
                 qPrintable(where + QString(", formula %1..%2").arg(b).arg(e)));
        if (s.tpShards > 1) cut.insert(row);
      } else if (flat) {  // the optimizer state without ZeRO: the whole unit
        QVERIFY2(s.kind == HoldingKind::Optimizer && s.dim < 0 && s.end == s.total,
                 qPrintable(where));
      } else if (s.dim < 0) {
        QVERIFY2(s.begin == 0 && s.end == s.total, qPrintable(where));
      } else {  // cut by tensor parallelism: tp rank t's 1/T
        QVERIFY2(T > 1 && s.begin == g.tp * s.total / T && s.end == (g.tp + 1) * s.total / T,
                 qPrintable(where));
        cut.insert(row);
      }
    }
    QVERIFY2(rows == stageRows(g.pp),
             qPrintable(QString("rank %1 holds %2")
                            .arg(h.rank)
                            .arg(QStringList(rows.begin(), rows.end()).join(", "))));
  }
  QCOMPARE(cut.empty(), T == 1);

  // The map's cells.
  std::map<std::tuple<int, QString, int>, Parts> cells;  // (rank, row, kind)
  for (const HoldingsMap::Cell& cell : HoldingsMap::cellsOf(held))
    if (cell.kind != HoldingKind::Batch && cell.kind != HoldingKind::Activations)
      cells[{cell.rank, cell.row, int(cell.kind)}] = cell.parts;
  std::map<std::tuple<int, int, QString, int>, Parts> byStage;  // (pp, dp·cp, row, kind)
  for (const RankHoldings& h : held) {
    const GridCoords& g = h.coords;
    const int r = g.dp * c.cp + g.cp;
    for (const QString& row : stageRows(g.pp))
      for (HoldingKind k : {HoldingKind::Params, HoldingKind::Grads, HoldingKind::Optimizer}) {
        const Parts& drawn = cells[{h.rank, row, int(k)}];
        const QString where = QString("rank %1 (dp %2 cp %3 tp %4 pp %5), %6 %7: drawn %8")
                                  .arg(h.rank)
                                  .arg(g.dp)
                                  .arg(g.cp)
                                  .arg(g.tp)
                                  .arg(g.pp)
                                  .arg(row)
                                  .arg(holdingKindName(k))
                                  .arg(show(drawn));
        const int stage = k == HoldingKind::Params ? 3 : k == HoldingKind::Grads ? 2 : 1;
        for (const auto& p : drawn)
          byStage[{g.pp, c.zero >= stage ? -1 : r, row, int(k)}].push_back(p);
        // The unit's length: its chunk's item, or the whole unit's optimizer state.
        int64_t len = 0;
        for (const HeldSlice& s : h.items)
          if (s.kind == k && HoldingsMap::rowOf(s.tensor) == row && s.tensor.ends_with(" (flat)"))
            len = s.total;
        if (c.zero < stage) {
          if (!cut.count(row))
            QVERIFY2(near(drawn, {{0, 1}}), qPrintable(where + ", formula whole"));
          continue;
        }
        const auto [b, e] = zeroChunk(len, N, r);
        const double fa = double(b) / double(len), fb = double(e) / double(len);
        if (!cut.count(row)) {
          QVERIFY2(near(drawn, {{fa, fb}}), qPrintable(where + ", formula " + show({{fa, fb}})));
        } else if (c.zero == 3) {
          const Parts want{{(g.tp + fa) / T, (g.tp + fb) / T}};
          QVERIFY2(near(drawn, want), qPrintable(where + ", formula " + show(want)));
        } else {  // the chunk's share of what this tp rank holds, on its own slices
          const Parts& mine = cells[{h.rank, row, int(HoldingKind::Params)}];
          QVERIFY2(std::abs(length(drawn) - (fb - fa) * length(mine)) < 1e-9, qPrintable(where));
          for (const auto& [lo, hi] : drawn)
            QVERIFY2(std::any_of(mine.begin(), mine.end(),
                                 [&](const auto& p) {
                                   return lo >= p.first - 1e-9 && hi <= p.second + 1e-9;
                                 }),
                     qPrintable(where + ", outside the rank's slices " + show(mine)));
        }
      }
  }
  // A stage's layers whole: on each replica's tp ranks, or, sharded, on all its ranks together.
  for (const auto& [key, parts] : byStage) {
    const auto& [pp, r, row, k] = key;
    QVERIFY2(coversWhole(parts), qPrintable(QString("stage %1 replica %2: %3 %4 not whole: %5")
                                                .arg(pp)
                                                .arg(r)
                                                .arg(row)
                                                .arg(holdingKindName(HoldingKind(k)))
                                                .arg(show(parts))));
  }
}

// [SECTION] Expert parallelism: the MoE, and the GPT with --ffn moe, over dp with ep

void TestHoldingsLayouts::expertParallelHoldings_data() { addAcceptedLayouts(ModelKind::Moe); }

// The formula (DeepSpeed-MoE's placement, process_grid.h): ep consecutive dp indices form an
// expert-parallel group, dp index d being its rank e = d mod G (G = ep) in group d / G. Each rank
// holds every dense layer whole and, of each block's E experts, its run [e·E/G, (e+1)·E/G). The
// dense layers' gradients are summed over dp (D ranks), an expert's over its D/G replicas (one
// per group: expert-dp), so ZeRO shards a dense unit over dp, replica d owning zeroChunk(len, D,
// d), and a block's experts (one unit, "blockN.experts") over expert-dp, replica d / G owning
// zeroChunk(len, D/G, d / G) of the rank's run. In the map the experts' chunk (a, b) falls on
// the rank's expert rows, the run's E/G experts end to end (ZeRO-1, 2); under ZeRO-3, where no
// expert is held by name, the row "blockN.experts" is all E experts and the rank holds
// ((e + a)/G, (e + b)/G) of it.
void TestHoldingsLayouts::expertParallelHoldings() {
  QFETCH(RunConfig, config);
  const RunConfig& c = config;
  const std::vector<RankHoldings> held = holdingsOf(c);
  QCOMPARE(int(held.size()), c.ranks);
  const int D = c.dp, G = c.ep, run = kExperts / G;
  std::map<std::tuple<int, QString, int>, Parts> cells;  // (rank, row, kind)
  for (const HoldingsMap::Cell& cell : HoldingsMap::cellsOf(held))
    if (cell.kind != HoldingKind::Batch && cell.kind != HoldingKind::Activations)
      cells[{cell.rank, cell.row, int(cell.kind)}] = cell.parts;
  std::map<std::tuple<QString, int>, Parts> all;  // (row, kind): every rank's parts
  for (const RankHoldings& h : held) {
    const int d = h.coords.dp, e = d % G;
    QCOMPARE(h.coords.ep, e);
    QCOMPARE(h.coords.epGroup, d / G);
    const auto isMine = [&](int expert) { return expert >= e * run && expert < (e + 1) * run; };
    // The engine's holdings.
    for (const HeldSlice& s : h.items) {
      if (s.kind == HoldingKind::Batch || s.kind == HoldingKind::Activations) continue;
      const QString row = HoldingsMap::rowOf(s.tensor);
      const QString where = QString("rank %1 (dp %2, ep %3): %4 %5 %6..%7 of %8")
                                .arg(h.rank)
                                .arg(d)
                                .arg(e)
                                .arg(s.tensor.c_str())
                                .arg(holdingKindName(s.kind))
                                .arg(s.begin)
                                .arg(s.end)
                                .arg(s.total);
      const int stage = s.kind == HoldingKind::Params ? 3 : s.kind == HoldingKind::Grads ? 2 : 1;
      if (!s.tensor.ends_with(" (flat)")) {
        QVERIFY2(c.zero < stage && s.dim < 0 && s.begin == 0 && s.end == s.total,
                 qPrintable(where));
        const auto [block, expert] = expertOf(row);
        if (expert >= 0) QVERIFY2(isMine(expert), qPrintable(where + ": not this rank's expert"));
      } else if (c.zero >= stage) {
        const bool experts = row.endsWith(".experts");
        const auto [b, en] = experts ? zeroChunk(s.total, D / G, d / G) : zeroChunk(s.total, D, d);
        QVERIFY2(s.dim == 0 && s.begin == b && s.end == en,
                 qPrintable(where + QString(", formula %1..%2").arg(b).arg(en)));
      } else {
        QVERIFY2(s.kind == HoldingKind::Optimizer && s.dim < 0 && s.end == s.total,
                 qPrintable(where));
      }
    }
    // The map's cells: for each kind, each layer this rank holds.
    for (HoldingKind k : {HoldingKind::Params, HoldingKind::Grads, HoldingKind::Optimizer}) {
      std::map<QString, Parts> want;
      for (const HeldSlice& s : h.items) {
        if (s.kind != k) continue;
        const QString row = HoldingsMap::rowOf(s.tensor);
        if (!s.tensor.ends_with(" (flat)")) {
          want[row] = {{0, 1}};
          continue;
        }
        const double fa = double(s.begin) / double(s.total), fb = double(s.end) / double(s.total);
        if (!row.endsWith(".experts")) {
          want[row] = {{fa, fb}};
        } else if (c.zero == 3) {
          want[row] = {{(e + fa) / G, (e + fb) / G}};
        } else {  // the run's experts end to end: expert e·run + i is [i/run, (i+1)/run) of it
          for (int i = 0; i < run; ++i) {
            const double lo = std::clamp(fa * run - i, 0.0, 1.0),
                         hi = std::clamp(fb * run - i, 0.0, 1.0);
            if (hi > lo) want[row.chopped(1) + QString::number(e * run + i)] = {{lo, hi}};
          }
        }
      }
      std::map<QString, Parts> drawn;
      for (const auto& [key, parts] : cells)
        if (std::get<0>(key) == h.rank && std::get<2>(key) == int(k))
          drawn[std::get<1>(key)] = parts;
      for (const auto& [row, parts] : drawn) {
        for (const auto& p : parts) all[{row, int(k)}].push_back(p);
        QVERIFY2(want.count(row) && near(parts, want[row]),
                 qPrintable(QString("rank %1 (dp %2, ep %3), %4 %5: drawn %6, formula %7")
                                .arg(h.rank)
                                .arg(d)
                                .arg(e)
                                .arg(row)
                                .arg(holdingKindName(k))
                                .arg(show(parts))
                                .arg(want.count(row) ? show(want[row]) : "none")));
      }
      for (const auto& [row, parts] : want)
        QVERIFY2(
            drawn.count(row),
            qPrintable(
                QString("rank %1: %2 %3 not drawn").arg(h.rank).arg(row).arg(holdingKindName(k))));
    }
  }
  // Together the ranks hold every layer and every expert whole.
  std::set<QString> rows;
  for (const auto& [key, parts] : all) {
    rows.insert(std::get<0>(key));
    QVERIFY2(coversWhole(parts), qPrintable(std::get<0>(key) + ": " + show(parts)));
  }
  QCOMPARE(int(rows.size()), 2 + kLayers * (c.zero == 3 ? 2 : 1 + kExperts));
}

QTEST_MAIN(TestHoldingsLayouts)
#include "tst_holdings_layouts.moc"
