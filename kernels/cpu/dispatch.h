// Run-time choice of the vector level (baseline x86-64, AVX2 + FMA, AVX-512) of ParaLab's own CPU
// kernels: one table of function pointers per level, the CPU's best bound once at start, a lower
// one forced by PARALAB_SIMD=baseline|avx2|avx512. See tests/kernels/tst_simd_levels.cpp and the
// head line of `paralab-bench gpt`.
#pragma once

namespace paralab::kernels {

enum class SimdLevel { Baseline, Avx2, Avx512 };

// The level the kernels run at: the CPU's best, or the lower one PARALAB_SIMD names. A value
// that is not a level, or a level the CPU lacks, stops the program at start (one line, exit 2).
SimdLevel simdLevel();
// The best level this CPU (and its operating system) runs.
SimdLevel simdLevelCpu();
// True when the CPU (and its operating system) runs AVX512_BF16 (vdpbf16ps): gemm_bf16 uses it
// while the level is avx512, so PARALAB_SIMD=avx2 or baseline turns it off too.
bool cpuHasAvx512Bf16();
// "baseline", "avx2" or "avx512"; the vector width in floats (4, 8, 16).
const char* simdLevelName(SimdLevel level);
int simdWidthFloats(SimdLevel level);
// Parses a level's name; false for anything else.
bool simdLevelFromName(const char* name, SimdLevel* level);
// Switches every kernel to `level`; false (and nothing changes) when the CPU lacks it. The
// tests run each kernel at every level the machine has through this.
bool setSimdLevel(SimdLevel level);

// The float kernels each level provides (the double versions are the scalar references only).
// Shapes and formulas are those of the public kernels that call them (attention.h, layers.h,
// optim.h, gemm.h); `work` is caller-provided scratch of the size named.
struct VecKernels {
  // Attention's rows (cpu/attention_gemm.h: the GEMMs write the scores, these the rest). Row r
  // of a block of `rows` rows, ld apart, sees its first clamp(n0 + r, 0, width) entries; every
  // row's entries from there to `width` are set to 0. Scores come scaled by 1/sqrt(hs).
  // P = softmax of the visible scores, in place.
  void (*causalSoftmaxRows)(float* s, long ld, int rows, int n0, int width);
  // dS = scale P (dP - rowsum(P dP)), in place of dP.
  void (*causalSoftmaxBackwardRows)(float* ds, long ldds, const float* p, long ldp, int rows,
                                    int n0, int width, float scale);
  // The online softmax's step (attention_blocks.h): m, l [rows], o's rows ldo apart (hs floats)
  // rescaled by exp(m - m'); s becomes exp(S - m'). Rows that see nothing keep their state.
  void (*onlineSoftmaxRows)(float* s, long lds, float* m, float* l, float* o, long ldo, int hs,
                            int rows, int n0, int width);
  // The blockwise backward's rows: P = exp(S - lse) in place of S, dS = scale P (dP - D) in place
  // of dP; lse and D [rows].
  void (*blockGradRows)(float* p, long ldp, float* ds, long ldds, const float* lse, const float* D,
                        int rows, int n0, int width, float scale);
  void (*layernormForward)(float* y, float* mean, float* rstd, const float* x, const float* gamma,
                           const float* beta, int rows, int cols, float eps);
  void (*layernormBackward)(float* dx, float* dgamma, float* dbeta, const float* dy, const float* x,
                            const float* mean, const float* rstd, const float* gamma, int rows,
                            int cols);
  // layernormBackward's dgamma and dbeta (+=) alone, columns [c0, c1): the same arithmetic per
  // entry, so a split by columns adds up to the same bits.
  void (*layernormParamGrads)(float* dgamma, float* dbeta, const float* dy, const float* x,
                              const float* mean, const float* rstd, int rows, int cols, int c0,
                              int c1);
  void (*biasAdd)(float* y, const float* b, int rows, int cols);
  // db[c] += sum over rows of dy[r, c], columns [c0, c1) of rows `cols` wide.
  void (*biasBackward)(float* db, const float* dy, int rows, int cols, int c0, int c1);
  // Returns the sum over rows of the loss; dlogits as layers.h's softmax_xent.
  double (*softmaxXent)(float* dlogits, const float* logits, const int* labels, int rows,
                        int classes, double normalizer);
  void (*geluForward)(float* y, const float* x, long n);
  void (*geluBackward)(float* dx, const float* x, const float* dy, long n);
  // The two fused a row at a time ([rows, cols]), the same arithmetic as biasAdd then
  // geluForward (h += b; g = gelu(h)), and geluBackward then biasBackward (dx may be dy).
  void (*biasGeluForward)(float* h, float* g, const float* b, int rows, int cols);
  void (*geluBackwardBias)(float* dx, float* db, const float* x, const float* dy, int rows,
                           int cols);
  // c1 = 1 - beta1^t, c2 = 1 - beta2^t (Adam's bias corrections).
  void (*adamUpdate)(float* p, float* m, float* v, const float* g, long n, float lr, float beta1,
                     float beta2, float eps, float c1, float c2);
  void (*sgdUpdate)(float* p, const float* g, long n, float lr);
  void (*momentumUpdate)(float* p, float* v, const float* g, long n, float lr, float mu);
  // One row of the SIMD GEMM rung: c = beta c + sum_k (alpha a[k * aStride]) b[k, :].
  void (*gemmRow)(int N, int K, float alpha, const float* a, long aStride, const float* b, int ldb,
                  float beta, float* c);
  // dst = a + b, elementwise (the host all-reduce's sum).
  void (*addArrays)(float* dst, const float* a, const float* b, long n);
  // y = e^x by the kernels' own exp (the softmax's and GELU's), for its error-bound test.
  void (*expArray)(float* y, const float* x, long n);
};

// The table of the current level, and of a given one (which the CPU must have).
const VecKernels& vec();
const VecKernels& vecAt(SimdLevel level);

}  // namespace paralab::kernels
