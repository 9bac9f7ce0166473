// Bytes as people read them (binary units: KiB = 1024 B), for the memory, traffic, link and
// timeline charts: one unit per axis, picked from the largest value drawn.
// See tests/app/tst_charts.cpp (byteUnits).
#pragma once
#include <QString>
#include <cmath>
#include <cstdint>

namespace paralab {

struct ByteUnit {
  double bytes = 1;    // bytes per unit: 1, 1024, 1024², 1024³
  QString name = "B";  // "B", "KiB", "MiB", "GiB"
};

// The largest unit in which `maxBytes` is at least 1 (so axis ticks stay above 1).
inline ByteUnit byteUnitFor(double maxBytes) {
  static const char* names[] = {"B", "KiB", "MiB", "GiB"};
  ByteUnit u;
  for (int i = 1; i < 4 && maxBytes >= std::ldexp(1.0, 10 * i); ++i)
    u = {std::ldexp(1.0, 10 * i), names[i]};
  return u;
}

// "1.50 MiB", "512 B": three significant digits in the unit that suits the value.
inline QString formatBytes(double bytes) {
  const ByteUnit u = byteUnitFor(std::abs(bytes));
  const double v = bytes / u.bytes;
  if (u.bytes == 1) return QString("%1 B").arg(qint64(std::llround(v)));
  return QString("%1 %2").arg(v, 0, 'f', v >= 100 ? 0 : v >= 10 ? 1 : 2).arg(u.name);
}

}  // namespace paralab
