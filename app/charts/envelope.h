// Envelope: the rows of a long series, bounded, in a selection that draws the same picture as
// all of them (the window's history of a run: MetricHistory). See tests/app/tst_app.cpp
// (historyStaysBounded) and tests/app/tst_run_data.cpp (longRunKeepsItsEarlyCurve).
#pragma once
#include <QVector>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>

namespace paralab {

// Envelope: rows in step order reduced so that a line through them has the shape of a line
// through all of them, at the resolution of a chart. The run is cut into stretches of equal width
// (the width doubles when they are too many, two neighbours merging); each keeps its first and last
// row and, for every key, the row of its least and greatest value (M4 aggregation, Jugel et al.
// 2014: the pixels a line chart draws are the same). The newest rows are all kept. Rows are
// measured values, never averages.
template <class Row>
class Envelope {
 public:
  using Key = double Row::*;
  // Holds fewer than `maxRows` rows (the newest kTail of them all).
  static constexpr int kTail = 64;
  Envelope(int maxRows, std::initializer_list<Key> keys)
      : m_keys(keys),
        m_tail(std::clamp(maxRows / 16, 2, kTail)),
        m_maxBuckets(std::max(2, (maxRows - 1 - m_tail) / perBucket())) {}

  void add(const Row& r);
  void clear() {
    m_width = 1;
    m_buckets.clear();
    m_recent.clear();
    m_rows.clear();
    m_dirty = false;
  }
  const QVector<Row>& rows() const;  // in step order

 private:
  struct Bucket {
    int64_t index = 0;  // covers steps [index * width + 1, (index + 1) * width]
    QVector<Row> picks;
  };
  int perBucket() const { return 2 + 2 * int(m_keys.size()); }  // first, last, extremes
  void reduce(QVector<Row>& v) const;
  void widen();

  QVector<Key> m_keys;
  int m_tail, m_maxBuckets;
  int64_t m_width = 1;
  QVector<Bucket> m_buckets;  // the last one is still filling
  QVector<Row> m_recent;      // the newest m_tail rows
  mutable QVector<Row> m_rows;
  mutable bool m_dirty = false;
};

template <class Row>
void Envelope<Row>::add(const Row& r) {
  m_dirty = true;
  m_recent.push_back(r);
  if (m_recent.size() > m_tail) m_recent.removeFirst();
  const int64_t index = (int64_t(r.step) - 1) / m_width;
  if (!m_buckets.isEmpty() && m_buckets.back().index == index) {
    m_buckets.back().picks.push_back(r);
    reduce(m_buckets.back().picks);
    return;
  }
  m_buckets.push_back({index, {r}});
  if (m_buckets.size() > m_maxBuckets) widen();
}

// Twice as wide: neighbours 2k and 2k + 1 become one, which keeps the extremes of both.
template <class Row>
void Envelope<Row>::widen() {
  m_width *= 2;
  QVector<Bucket> merged;
  for (Bucket& b : m_buckets) {
    b.index /= 2;
    if (!merged.isEmpty() && merged.back().index == b.index) {
      merged.back().picks += b.picks;
      reduce(merged.back().picks);
    } else {
      merged.push_back(std::move(b));
    }
  }
  m_buckets = std::move(merged);
}

// Keeps the first and last row and, per key, the least and greatest value (NaN ignored).
template <class Row>
void Envelope<Row>::reduce(QVector<Row>& v) const {
  if (v.size() <= perBucket()) return;
  QVector<bool> keep(v.size(), false);
  keep.front() = keep.back() = true;
  for (Key k : m_keys) {
    int lo = -1, hi = -1;
    for (int i = 0; i < v.size(); ++i) {
      const double x = v[i].*k;
      if (std::isnan(x)) continue;
      if (lo < 0 || x < v[lo].*k) lo = i;
      if (hi < 0 || x > v[hi].*k) hi = i;
    }
    if (lo >= 0) keep[lo] = keep[hi] = true;
  }
  int out = 0;
  for (int i = 0; i < v.size(); ++i)
    if (keep[i]) v[out++] = v[i];
  v.resize(out);
}

template <class Row>
const QVector<Row>& Envelope<Row>::rows() const {
  if (!m_dirty) return m_rows;
  m_rows.clear();
  // The bucketed rows before the newest ones, which are all there.
  const double recentFrom = m_recent.isEmpty() ? 0 : m_recent.front().step;
  for (const Bucket& b : m_buckets)
    for (const Row& r : b.picks)
      if (r.step < recentFrom) m_rows.push_back(r);
  m_rows += m_recent;
  m_dirty = false;
  return m_rows;
}

}  // namespace paralab
