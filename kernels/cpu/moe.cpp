// Router softmax, top-k and token-row movers of the MoE layer (see moe.h).
// See tests/engine/tst_moe.cpp (gradient check of the whole layer).
#include "cpu/moe.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace paralab::kernels {

template <typename T>
void softmax_rows(T* p, const T* x, int rows, int cols) {
  for (long r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* pr = p + r * cols;
    T mx = xr[0];
    for (int c = 1; c < cols; ++c) mx = std::max(mx, xr[c]);
    double sum = 0;
    for (int c = 0; c < cols; ++c) {
      pr[c] = T(std::exp(double(xr[c] - mx)));
      sum += double(pr[c]);
    }
    const T inv = T(1.0 / sum);
    for (int c = 0; c < cols; ++c) pr[c] *= inv;
  }
}

template <typename T>
void softmax_rows_backward(T* dx, const T* p, const T* dp, int rows, int cols) {
  for (long r = 0; r < rows; ++r) {
    const T* pr = p + r * cols;
    const T* dpr = dp + r * cols;
    double s = 0;
    for (int c = 0; c < cols; ++c) s += double(pr[c]) * double(dpr[c]);
    T* dxr = dx + r * cols;
    for (int c = 0; c < cols; ++c) dxr[c] = T(double(pr[c]) * (double(dpr[c]) - s));
  }
}

template <typename T>
void topk_rows(int* idx, const T* x, int rows, int cols, int k) {
  for (long r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    int* out = idx + r * k;
    // Selection by k passes: k is 1 or 2 in practice, and E is small.
    for (int j = 0; j < k; ++j) {
      int best = -1;
      for (int c = 0; c < cols; ++c) {
        bool taken = false;
        for (int i = 0; i < j; ++i) taken = taken || out[i] == c;
        if (!taken && (best < 0 || xr[c] > xr[best])) best = c;  // strict: ties keep the lower c
      }
      out[j] = best;
    }
  }
}

template <typename T>
void topk_gates(T* gate, const T* p, const int* idx, int rows, int cols, int k) {
  for (long r = 0; r < rows; ++r) {
    double z = 0;
    for (int j = 0; j < k; ++j) z += double(p[r * cols + idx[r * k + j]]);
    for (int j = 0; j < k; ++j) {
      const double pj = double(p[r * cols + idx[r * k + j]]);
      gate[r * k + j] = T(k == 1 ? pj : pj / z);
    }
  }
}

template <typename T>
void topk_gates_backward(T* dlogits, const T* p, const int* idx, const T* gate, const T* dgate,
                         int rows, int cols, int k) {
  for (long r = 0; r < rows; ++r) {
    const int* c = idx + r * k;
    const T* pr = p + r * cols;
    T* dr = dlogits + r * cols;
    if (k == 1) {
      const double g = double(dgate[r]) * double(pr[c[0]]);
      for (int e = 0; e < cols; ++e) dr[e] += T(g * ((e == c[0] ? 1.0 : 0.0) - double(pr[e])));
      continue;
    }
    double s = 0;
    for (int j = 0; j < k; ++j) s += double(dgate[r * k + j]) * double(gate[r * k + j]);
    for (int j = 0; j < k; ++j)
      dr[c[j]] += T(double(gate[r * k + j]) * (double(dgate[r * k + j]) - s));
  }
}

long capacity_ahead(const float* counts, int groups, int k, int experts, int g, int j, int e) {
  auto at = [&](int gg, int jj) { return long(counts[(long(gg) * k + jj) * experts + e]); };
  long s = 0;
  for (int jj = 0; jj < j; ++jj)
    for (int gg = 0; gg < groups; ++gg) s += at(gg, jj);
  for (int gg = 0; gg < g; ++gg) s += at(gg, j);
  return s;
}

long capacity_kept(const float* counts, int groups, int k, int experts, int g, int j, int e,
                   long capacity) {
  const long n = long(counts[(long(g) * k + j) * experts + e]);
  return std::clamp(capacity - capacity_ahead(counts, groups, k, experts, g, j, e), 0L, n);
}

long capacity_drop(unsigned char* kept, const int* choice, int rows, int k, const float* counts,
                   int groups, int g, int experts, long capacity) {
  long dropped = 0;
  std::vector<long> pos(static_cast<size_t>(experts));
  for (int j = 0; j < k; ++j) {
    for (int e = 0; e < experts; ++e)
      pos[size_t(e)] = capacity_ahead(counts, groups, k, experts, g, j, e);
    for (long t = 0; t < rows; ++t) {
      const bool over = pos[size_t(choice[t * k + j])]++ >= capacity;
      kept[t * k + j] = over ? 0 : 1;
      dropped += over;
    }
  }
  return dropped;
}

void dispatch_order(int* tok, int* slot, long* count, const int* choice, const unsigned char* kept,
                    int rows, int k, int experts) {
  std::vector<long> at(size_t(experts) + 1, 0);
  for (long s = 0; s < long(rows) * k; ++s)
    if (kept[s]) ++at[size_t(choice[s]) + 1];
  for (int e = 0; e < experts; ++e)
    count[e] += at[size_t(e) + 1], at[size_t(e) + 1] += at[size_t(e)];
  for (int j = 0; j < k; ++j)
    for (long t = 0; t < rows; ++t) {
      const long s = t * k + j;
      if (!kept[s]) continue;
      const long i = at[size_t(choice[s])]++;
      tok[i] = int(t);
      slot[i] = int(s);
    }
}

void expert_major_perm(int* perm, int* unperm, const long* from, int members, int local) {
  std::vector<long> start(size_t(members) * local);
  long off = 0;
  for (size_t qi = 0; qi < start.size(); ++qi) start[qi] = off, off += from[qi];
  long r = 0;
  for (int i = 0; i < local; ++i)
    for (int q = 0; q < members; ++q)
      for (long n = 0; n < from[size_t(q) * local + i]; ++n, ++r) {
        perm[r] = int(start[size_t(q) * local + i] + n);
        unperm[perm[r]] = int(r);
      }
}

template <typename T>
void gather_rows(T* dst, const T* src, const int* index, long n, int cols) {
  for (long i = 0; i < n; ++i)
    std::memcpy(dst + i * cols, src + long(index[i]) * cols, sizeof(T) * size_t(cols));
}

template <typename T>
void scatter_add_rows(T* dst, const T* src, const int* index, const T* scale, long n, int cols) {
  for (long i = 0; i < n; ++i) {
    T* d = dst + long(index[i]) * cols;
    const T* s = src + i * cols;
    const T a = scale ? scale[i] : T(1);
    for (int c = 0; c < cols; ++c) d[c] += a * s[c];
  }
}

template <typename T>
void dot_rows(T* out, const T* a, const int* index, const T* b, long n, int cols) {
  for (long i = 0; i < n; ++i) {
    const T* ar = a + long(index[i]) * cols;
    const T* br = b + i * cols;
    double s = 0;
    for (int c = 0; c < cols; ++c) s += double(ar[c]) * double(br[c]);
    out[i] = T(s);
  }
}

#define PARALAB_MOE_KERNELS(T)                                                                 \
  template void softmax_rows<T>(T*, const T*, int, int);                                       \
  template void softmax_rows_backward<T>(T*, const T*, const T*, int, int);                    \
  template void topk_rows<T>(int*, const T*, int, int, int);                                   \
  template void topk_gates<T>(T*, const T*, const int*, int, int, int);                        \
  template void topk_gates_backward<T>(T*, const T*, const int*, const T*, const T*, int, int, \
                                       int);                                                   \
  template void gather_rows<T>(T*, const T*, const int*, long, int);                           \
  template void scatter_add_rows<T>(T*, const T*, const int*, const T*, long, int);            \
  template void dot_rows<T>(T*, const T*, const int*, const T*, long, int);
PARALAB_MOE_KERNELS(float)
PARALAB_MOE_KERNELS(double)
#undef PARALAB_MOE_KERNELS

}  // namespace paralab::kernels
