// HoldingsMap's layout (see holdings_map.h): each row's tensors end to end, each held slice a
// part of its row, from the strategies' own sharding metadata (engine/parallel/holdings.h).
// See tests/app/tst_charts_ranks.cpp, tst_holdings_layouts.cpp and tst_holdings_precision.cpp.
#include <algorithm>
#include <map>

#include "charts/byte_units.h"
#include "charts/holdings_map.h"
#include "charts/holdings_rows.h"

namespace paralab {

using namespace holdings_rows;

namespace {

// Elements of the whole tensor a named slice is part of.
int64_t wholeElements(const HeldSlice& s) {
  return s.dim == 0 ? s.total * s.cols : s.dim == 1 ? s.rows * s.total : s.rows * s.cols;
}

// [begin, end) of the slice as fractions of what it is a slice of.
std::pair<double, double> fraction(const HeldSlice& s) {
  if (s.dim < 0 || s.total <= 0) return {0, 1};
  return {double(s.begin) / double(s.total), double(s.end) / double(s.total)};
}

Parts merged(Parts p) {
  std::sort(p.begin(), p.end());
  Parts out;
  for (const auto& [a, b] : p) {
    if (!out.empty() && a <= out.back().second + 1e-12)
      out.back().second = std::max(out.back().second, b);
    else
      out.push_back({a, b});
  }
  return out;
}

// The part of `base` (sorted intervals laid end to end) from fraction fa to fb of its length:
// a flat buffer is the rank's own parameters flattened, so its slices fall on those.
Parts within(const Parts& base, double fa, double fb) {
  double length = 0;
  for (const auto& [a, b] : base) length += b - a;
  Parts out;
  double at = 0;  // length of base before the current interval
  for (const auto& [a, b] : base) {
    const double lo = std::max(fa * length, at), hi = std::min(fb * length, at + (b - a));
    if (hi > lo) out.push_back({a + (lo - at), a + (hi - at)});
    at += b - a;
  }
  return out;
}

// A block's experts as one row ("block0.experts": ZeRO's flat unit of them), and whether a row
// is one of its experts ("block0.expert2").
bool isExpertsRow(const QString& row) { return row.endsWith(".experts"); }
bool isExpertOf(const QString& row, const QString& expertsRow) {
  const QString prefix = expertsRow.chopped(1);  // "block0.expert"
  return row.size() > prefix.size() && row.startsWith(prefix) && row[prefix.size()].isDigit();
}

// The rank's place in its expert-parallel group, (index, size), from the group it reports
// ("ep", as the JSON of a process's holdings carries it too); (0, 1) without one.
std::pair<int, int> expertParallelPlace(const RankHoldings& h) {
  for (const HeldGroup& g : h.groups)
    if (g.name == "ep")
      for (int i = 0; i < int(g.worldRanks.size()); ++i)
        if (g.worldRanks[size_t(i)] == h.rank) return {i, int(g.worldRanks.size())};
  return {0, 1};
}

QString describe(const HeldSlice& s) {
  const QString dtype =
      s.dtype != Dtype::Fp32 ? QString(" %1").arg(QString::fromStdString(nameOf(s.dtype))) : "";
  const QString what = s.dim < 0 ? QObject::tr("whole")
                                 : QObject::tr("%1 %2–%3 of %4")
                                       .arg(s.dim == 0 ? QObject::tr("rows") : QObject::tr("cols"))
                                       .arg(s.begin)
                                       .arg(s.end)
                                       .arg(s.total);
  return QString("%1: %2, %3%4")
      .arg(QString::fromStdString(s.tensor), what, formatBytes(double(s.bytes)), dtype);
}

}  // namespace

QString HoldingsMap::rowOf(const std::string& tensor) {
  std::string t = isFlat(tensor) ? tensor.substr(0, tensor.size() - 7) : tensor;
  const QStringList parts = QString::fromStdString(t).split('.');
  // An expert is a row of its own, the MoE MLP's ("block0.expert2.fc1.weight") as the GPT's
  // ("block0.moe.expert2.fc1.weight").
  for (qsizetype i = 1; i < parts.size(); ++i)
    if (parts[i].startsWith("expert")) return parts[0] + '.' + parts[i];
  return parts.value(0);
}

// [SECTION] Laying the slices out: each row's tensors end to end, each held slice a part.

std::vector<HoldingsMap::Cell> HoldingsMap::cellsOf(const std::vector<RankHoldings>& holdings) {
  // Each layer's tensors end to end, in the order the engine lists them (its flattening
  // order), at their whole size (from any rank's slice of them).
  std::map<QString, std::vector<std::pair<std::string, int64_t>>> layout;
  for (const RankHoldings& h : holdings)
    for (const HeldSlice& s : h.items)
      if ((s.kind == HoldingKind::Params || s.kind == HoldingKind::Grads) && !isFlat(s.tensor)) {
        auto& tensors = layout[rowOf(s.tensor)];
        if (std::none_of(tensors.begin(), tensors.end(),
                         [&](const auto& t) { return t.first == s.tensor; }))
          tensors.push_back({s.tensor, wholeElements(s)});
      }
  auto offsetOf = [&](const QString& row, const std::string& tensor, int64_t* whole) {
    int64_t at = 0;
    for (const auto& [name, n] : layout[row]) {
      if (name == tensor) return *whole = n, at;
      at += n;
    }
    return *whole = 0, at;
  };
  auto rowTotal = [&](const QString& row) {
    int64_t n = 0;
    for (const auto& [name, e] : layout[row]) n += e;
    return n;
  };

  std::map<std::tuple<int, QString, int>, Cell> cells;
  for (const RankHoldings& h : holdings) {
    // What this rank holds of each layer's parameters, per layer and all in order: a flat
    // buffer (ZeRO's chunks, optimizer state) is the rank's own parameters flattened, so its
    // slices fall on those; one named after no layer ("model (flat)") spans all of them.
    std::map<QString, Parts> named;
    std::vector<std::pair<QString, std::pair<double, double>>> all;
    for (const HeldSlice& s : h.items)
      if (s.kind == HoldingKind::Params && !isFlat(s.tensor)) {
        int64_t whole = 0;
        const QString row = rowOf(s.tensor);
        const double at = double(offsetOf(row, s.tensor, &whole));
        const auto [a, b] = fraction(s);
        named[row].push_back({at + a * whole, at + b * whole});
        all.push_back({row, {at + a * whole, at + b * whole}});
      }
    for (auto& [row, parts] : named) parts = merged(parts);
    const std::pair<int, int> ep = expertParallelPlace(h);

    for (const HeldSlice& s : h.items) {
      const bool data = s.kind == HoldingKind::Batch || s.kind == HoldingKind::Activations;
      const QString row = !data                          ? rowOf(s.tensor)
                          : s.kind == HoldingKind::Batch ? kBatch
                          : s.inFlight                   ? kInFlight
                          : s.recomputed                 ? kRecomputed
                                                         : kActivations;
      const auto [a, b] = fraction(s);
      auto cell = [&](const QString& r) -> Cell& {
        Cell& c = cells[{h.rank, r, int(s.kind)}];
        c.rank = h.rank, c.row = r, c.kind = s.kind, c.dtype = s.dtype;
        if (c.items.isEmpty() || c.items.back() != describe(s)) c.items << describe(s);
        return c;
      };
      const double total = double(rowTotal(row));
      // The rank's parameters a flat buffer named after no layer is: all of them ("model
      // (flat)"), or, for a block's experts ("block0.experts (flat)"), its experts' rows.
      std::vector<std::pair<QString, std::pair<double, double>>> scope;
      if (isFlat(s.tensor) && total <= 0)
        for (const auto& held : all)
          if (!isExpertsRow(row) || isExpertOf(held.first, row)) scope.push_back(held);
      if (data) {
        cell(row).parts.push_back({a, b});
        cell(row).bytes += s.bytes;
      } else if (!scope.empty()) {
        Parts base;
        for (const auto& [r, part] : scope) base.push_back(part);
        // Walk those parameters in order, each piece back to its own layer.
        double before = 0, length = 0;
        for (const auto& p : base) length += p.second - p.first;
        for (const auto& [r, part] : scope) {
          const double n = part.second - part.first;
          const double lo = std::max(a * length, before), hi = std::min(b * length, before + n);
          if (hi > lo) {
            const double rt = double(rowTotal(r));
            cell(r).parts.push_back(
                {(part.first + lo - before) / rt, (part.first + hi - before) / rt});
            cell(r).bytes +=
                int64_t(double(s.bytes) * (hi - lo) / std::max(1e-12, (b - a) * length));
          }
          before += n;
        }
      } else if (total <= 0) {  // a layer nobody holds by name (ZeRO-3): the flat is the layer,
        // or, cut by tensor parallelism, this rank's tp shard of it (the shards end to end), or,
        // a block's experts spread by expert parallelism, this rank's run of them (the block's
        // experts end to end, ep rank e holding the e-th 1/G of them)
        const bool spread = isExpertsRow(row) && ep.second > 1;
        const double n = s.tpShards > 1 ? double(s.tpShards) : spread ? double(ep.second) : 1.0;
        const double at = s.tpShards > 1 ? s.tpShard : spread ? ep.first : 0;
        cell(row).parts.push_back({(at + a) / n, (at + b) / n});
        cell(row).bytes += s.bytes;
      } else if (isFlat(s.tensor)) {
        const Parts base = named.count(row) ? named[row] : Parts{{0.0, total}};
        for (const auto& [lo, hi] : within(base, a, b))
          cell(row).parts.push_back({lo / total, hi / total});
        cell(row).bytes += s.bytes;
      } else {
        int64_t whole = 0;
        const double at = double(offsetOf(row, s.tensor, &whole));
        cell(row).parts.push_back({(at + a * whole) / total, (at + b * whole) / total});
        cell(row).bytes += s.bytes;
      }
    }
  }

  std::vector<Cell> out;
  for (auto& [key, c] : cells) {
    c.parts = merged(c.parts);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace paralab
