// The GEMM tests' shared reference: random problems with padded strides, the answer in double,
// and the error each precision may make. Used by tst_gemm (CPU) and tst_cuda_kernels (GPU).
#pragma once

#include <cmath>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "cpu/gemm.h"

namespace paralab::test {

struct GemmProblem {
  int M, N, K;
  bool ta, tb;
  int lda, ldb, ldc;
  float alpha, beta;
  std::vector<float> A, B, C0;
  std::vector<double> ref;    // alpha op(A) op(B) + beta C0, in double, M x N
  std::vector<double> absAB;  // |alpha| sum_k |a_ik b_kj|
  std::vector<double> absBC;  // |beta c_ij|

  // fp32: any order of summing K products rounds at most K + 4 times per element (the adds,
  // the multiplies fused or not, alpha, beta * c, the final add), each by at most u = 2^-24
  // relative: |C - C_exact| <= (K + 4) u (|alpha| sum |a b| + |beta c|) (Higham, "Accuracy and
  // Stability of Numerical Algorithms", 2nd ed., sec. 3.1). It grows with K.
  // TF32 (tensor cores): each input also loses all but 10 mantissa bits, at most 2^-10
  // relative (truncated; 2^-11 rounded), so each product 2 * 2^-10 more, accumulated in fp32.
  double bound(size_t e, bool tf32) const {
    const double u = std::ldexp(1.0, -24), inputs = tf32 ? 2 * std::ldexp(1.0, -10) : 0.0;
    return (inputs + (K + 4) * u) * absAB[e] + (K + 4) * u * absBC[e] + 1e-30;
  }
};

// p's ref, absAB and absBC from its A, B and C0 in double; `round`, where given, is applied to
// each operand of A and B first (the operands as a 16-bit kernel reads them).
inline void computeReference(GemmProblem& p, float (*round)(float) = nullptr) {
  const int M = p.M, N = p.N, K = p.K;
  const auto widen = [&](const std::vector<float>& v) {
    std::vector<double> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = round ? double(round(v[i])) : double(v[i]);
    return out;
  };
  const std::vector<double> A = widen(p.A), B = widen(p.B);
  std::vector<double> absA(A), absB(B);
  for (double& x : absA) x = std::abs(x);
  for (double& x : absB) x = std::abs(x);
  std::vector<double> ab(size_t(M) * N), abs(size_t(M) * N);
  kernels::gemm_naive<double>(p.ta, p.tb, M, N, K, 1.0, A.data(), p.lda, B.data(), p.ldb, 0.0,
                              ab.data(), N);
  kernels::gemm_naive<double>(p.ta, p.tb, M, N, K, 1.0, absA.data(), p.lda, absB.data(), p.ldb,
                              0.0, abs.data(), N);
  p.ref.resize(ab.size());
  p.absAB.resize(ab.size());
  p.absBC.resize(ab.size());
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      const size_t e = size_t(i) * N + j;
      const double c = p.beta == 0.f ? 0.0 : double(p.C0[size_t(i) * p.ldc + j]);
      p.ref[e] = double(p.alpha) * ab[e] + double(p.beta) * c;
      p.absAB[e] = std::abs(double(p.alpha)) * abs[e];
      p.absBC[e] = std::abs(double(p.beta) * c);
    }
}

// op(A) is M x K, op(B) K x N; every leading dimension is its minimum plus `pad`.
inline GemmProblem makeGemmProblem(int M, int N, int K, bool ta, bool tb, float alpha, float beta,
                                   int pad) {
  GemmProblem p{M, N, K, ta, tb, (ta ? M : K) + pad, (tb ? K : N) + pad, N + pad, alpha, beta,
                {}, {}, {}, {}, {}, {}};
  std::mt19937 gen(unsigned(M * 7919 + N * 31 + K + (ta ? 1000003 : 0) + (tb ? 2000003 : 0)));
  std::uniform_real_distribution<float> u(-1, 1);
  p.A.resize(size_t(ta ? K : M) * p.lda);
  p.B.resize(size_t(tb ? N : K) * p.ldb);
  p.C0.resize(size_t(M) * p.ldc);
  for (float& x : p.A) x = u(gen);
  for (float& x : p.B) x = u(gen);
  for (float& x : p.C0) x = u(gen);
  computeReference(p);
  return p;
}

// The same problem made once per test program: the double reference is the slow part, and
// every kernel of a ladder is checked against it.
inline const GemmProblem& sharedGemmProblem(int M, int N, int K, bool ta, bool tb, float alpha,
                                            float beta, int pad) {
  static std::map<std::tuple<int, int, int, bool, bool, float, float, int>, GemmProblem> cache;
  const auto key = std::make_tuple(M, N, K, ta, tb, alpha, beta, pad);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, makeGemmProblem(M, N, K, ta, tb, alpha, beta, pad)).first;
  return it->second;
}

}  // namespace paralab::test
