// Time intervals [start, end) in ns, as spans cover them: their union, what one set leaves of
// another, and how long two sets overlap. The ring's hidden share (parallel/context/ring_attention.h)
// and the timeline's idle and waiting bars (app/charts/timeline_chart.h) are both made of these.
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace paralab::intervals {

using Interval = std::pair<int64_t, int64_t>;

// The union of `v` as sorted, disjoint intervals.
inline std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& i : v)
    if (!out.empty() && i.first <= out.back().second)
      out.back().second = std::max(out.back().second, i.second);
    else
      out.push_back(i);
  return out;
}

// The parts of `a` that no interval of `b` covers (both sorted and disjoint).
inline std::vector<Interval> minus(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  size_t j = 0;
  for (auto [start, end] : a) {
    while (j < b.size() && b[j].second <= start) ++j;
    for (size_t k = j; k < b.size() && b[k].first < end; ++k) {
      if (b[k].first > start) out.push_back({start, b[k].first});
      start = std::max(start, b[k].second);
    }
    if (start < end) out.push_back({start, end});
  }
  return out;
}

// How long both sets (sorted, disjoint) cover, ns.
inline int64_t overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t ns = 0;
  size_t j = 0;
  for (const auto& [a0, a1] : a) {
    while (j < b.size() && b[j].second <= a0) ++j;
    for (size_t k = j; k < b.size() && b[k].first < a1; ++k)
      ns += std::max<int64_t>(0, std::min(a1, b[k].second) - std::max(a0, b[k].first));
  }
  return ns;
}

}  // namespace paralab::intervals
