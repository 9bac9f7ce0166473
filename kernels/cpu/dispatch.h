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
  // work: (hs + T) * Tp floats, Tp = T rounded up to a multiple of 16.
  void (*attentionProbs)(float* att, const float* qkv, int B, int T, int C, int NH, float* work);
  void (*attentionOutput)(float* out, const float* att, const float* qkv, int B, int T, int C,
                          int NH);
  void (*attentionBackward)(float* dqkv, const float* dout, const float* qkv, const float* att,
                            int B, int T, int C, int NH, float* work);
  // Blockwise attention (attention_blocks.h) for a block that is neither empty nor in the
  // chunk's future. work: hs * Tkp + Tkp + hs floats (forward), 2 (hs + Tq) Tkp + hs (backward),
  // Tkp = Tk rounded up to a multiple of 16.
  void (*attentionBlockForward)(float* o, float* m, float* l, const float* q, int ldq,
                                const float* k, const float* v, int ldkv, int B, int NH, int hs,
                                int q0, int Tq, int k0, int Tk, float* work);
  void (*attentionBlockBackward)(float* dq, float* dk, float* dv, const float* dout,
                                 const float* lse, const float* D, const float* q, int ldq,
                                 const float* k, const float* v, int ldkv, int B, int NH, int hs,
                                 int q0, int Tq, int k0, int Tk, float* work);
  void (*layernormForward)(float* y, float* mean, float* rstd, const float* x, const float* gamma,
                           const float* beta, int rows, int cols, float eps);
  void (*layernormBackward)(float* dx, float* dgamma, float* dbeta, const float* dy, const float* x,
                            const float* mean, const float* rstd, const float* gamma, int rows,
                            int cols);
  void (*biasAdd)(float* y, const float* b, int rows, int cols);
  void (*biasBackward)(float* db, const float* dy, int rows, int cols);
  // Returns the sum over rows of the loss; dlogits as layers.h's softmax_xent.
  double (*softmaxXent)(float* dlogits, const float* logits, const int* labels, int rows,
                        int classes, double normalizer);
  void (*geluForward)(float* y, const float* x, long n);
  void (*geluBackward)(float* dx, const float* x, const float* dy, long n);
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
