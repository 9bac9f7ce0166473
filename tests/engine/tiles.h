// What the holdings tests ask of slices, in one place: intervals [begin, end) that tile
// [0, total) exactly once (each float held by one rank of the group). Used by tst_holdings and
// tst_grad_sync.
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace paralab::test {

inline bool tiles(std::vector<std::pair<int64_t, int64_t>> parts, int64_t total) {
  std::sort(parts.begin(), parts.end());
  int64_t at = 0;
  for (const auto& [a, b] : parts) {
    if (a != at || b < a) return false;
    at = b;
  }
  return at == total;
}

}  // namespace paralab::test
