// A small deterministic random generator (SplitMix64): the same seed gives the same model,
// data and batches on every machine, compiler and rank, which the parallel-equals-serial
// tests rely on (std::normal_distribution differs between standard libraries).
#pragma once
#include <cmath>
#include <cstdint>

namespace paralab {

class Rng {
 public:
  explicit Rng(uint64_t seed) : m_state(seed) {}
  uint64_t next() {  // SplitMix64 (Steele, Lea & Flood 2014)
    uint64_t z = (m_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double normal() {  // Box-Muller
    const double u1 = 1.0 - uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  uint64_t below(uint64_t n) { return next() % n; }

 private:
  uint64_t m_state;
};

}  // namespace paralab
