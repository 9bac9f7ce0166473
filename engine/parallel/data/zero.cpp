// ZeRO's shard layout (see zero.h): units cut at the model's units and at the groups' ranges,
// each padded to its group's N. See tests/engine/tst_zero.cpp.
#include "parallel/data/zero.h"

#include <algorithm>
#include <stdexcept>

namespace paralab {

ZeroLayout::ZeroLayout(const ParamSet& ps, int ranks)
    : ZeroLayout(ps, {SyncRange{0, ps.numel(), 0, ""}}, {ranks}) {}

ZeroLayout::ZeroLayout(const ParamSet& ps, const std::vector<SyncRange>& ranges,
                       const std::vector<int>& groupSizes)
    : numel(ps.numel()) {
  std::vector<SyncRange> sorted = ranges;
  std::sort(sorted.begin(), sorted.end(),
            [](const SyncRange& a, const SyncRange& b) { return a.begin < b.begin; });
  int64_t covered = 0;
  for (const SyncRange& r : sorted) {
    if (r.begin != covered || r.end < r.begin || r.group < 0 || r.group >= int(groupSizes.size()))
      throw std::logic_error("ZeroLayout: the ranges must tile the flat buffer, each in a group");
    covered = r.end;
  }
  if (covered != numel) throw std::logic_error("ZeroLayout: the ranges must cover every weight");
  for (int m = 0; m < int(ps.units().size()); ++m) {
    const ParamUnit& pu = ps.units()[size_t(m)];
    firstUnit.push_back(int(units.size()));
    for (const SyncRange& r : sorted) {
      const int64_t b = std::max(r.begin, pu.begin), e = std::min(r.end, pu.end);
      if (b >= e) continue;
      const int64_t n = groupSizes[size_t(r.group)];
      Unit u;
      u.name = pu.name + r.suffix;
      u.modelUnit = m;
      u.group = r.group;
      u.begin = b;
      u.len = e - b;
      u.padded = (u.len + n - 1) / n * n;
      u.chunk = u.padded / n;
      u.paddedBegin = paddedNumel;
      u.shardBegin = shardNumel;
      paddedNumel += u.padded;
      shardNumel += u.chunk;
      units.push_back(u);
    }
  }
  firstUnit.push_back(int(units.size()));
}

}  // namespace paralab
