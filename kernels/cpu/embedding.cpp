// Token + position embedding on the CPU (see embedding.h for the formulas).
// See tests/kernels/tst_attention_gradcheck.cpp.
#include "cpu/embedding.h"

namespace paralab::kernels {

template <typename Real>
void embedding_forward(Real* out, const int* tokens, const Real* wte, const Real* wpe, int B, int T,
                       int C) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const long r = (long)b * T + t;
      const Real* e = wte + (long)tokens[r] * C;
      const Real* p = wpe + (long)t * C;
      Real* o = out + r * C;
      for (int c = 0; c < C; ++c) o[c] = e[c] + p[c];
    }
}

template <typename Real>
void embedding_backward(Real* dwte, Real* dwpe, const Real* dout, const int* tokens, int B, int T,
                        int C) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const long r = (long)b * T + t;
      const Real* d = dout + r * C;
      Real* de = dwte + (long)tokens[r] * C;
      Real* dp = dwpe + (long)t * C;
      for (int c = 0; c < C; ++c) {
        de[c] += d[c];
        dp[c] += d[c];
      }
    }
}

#define PARALAB_EMBEDDING_KERNELS(Real)                                                        \
  template void embedding_forward<Real>(Real*, const int*, const Real*, const Real*, int, int, \
                                        int);                                                  \
  template void embedding_backward<Real>(Real*, Real*, const Real*, const int*, int, int, int);
PARALAB_EMBEDDING_KERNELS(float)
PARALAB_EMBEDDING_KERNELS(double)
#undef PARALAB_EMBEDDING_KERNELS

}  // namespace paralab::kernels
