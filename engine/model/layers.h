// The layers of the MLP, each with its forward and backward written out. A layer owns no
// memory: its weights live in the model's ParamSet, its inputs and outputs in the caller's
// activation buffers. The math runs on the ParamSet's Compute: its device, and the GEMM that
// --kernel chose. See tests/engine/tst_model.cpp (whole-model gradient check) and
// tst_kernel_choice.cpp.
#pragma once
#include <cstdint>
#include <string>

#include "model/param_set.h"
#include "rng.h"

namespace paralab {

// The one switch for bf16 arithmetic in training: whether Linear::forward's GEMM x W runs in
// kernels' gemm_bf16 (split over the rank's threads, gemm_bf16_rows) instead of the rank's fp32
// GEMM. Both operands are bf16 values there in a bf16 run (W rounded from the fp32 master, x a
// kept activation, rounded where the model stored it), and the products of two bf16 values are
// exact in fp32, so only the order of the fp32 sums differs. True for a bf16 ParamSet on the
// CPU with the default GEMM (--kernel vendor) where kernels::gemm_bf16_for_training() (AMX, not
// PARALAB_BF16_GEMM=off). Never in fp32 or fp16, nor for a backward GEMM: its activation
// gradients are fp32, which gemm_bf16 would round.
bool forwardGemmInBf16(Dtype stored, bool onGpu, const std::string& kernel);
// The same for a layer's ParamSet: its dtype, its Compute's device and GEMM.
bool forwardGemmInBf16(const ParamSet& ps);
// For the tests: while on (reset by each call), every GEMM forwardGemmInBf16 routes first checks
// that rounding both its operands to bf16 is the identity, and counts the GEMMs and the ones
// with an operand that is not (gemm_bf16 would have changed its numerics).
struct Bf16GemmAudit {
  int64_t routed = 0, inexact = 0;
};
void auditBf16Gemms(bool on);
Bf16GemmAudit bf16GemmAudit();

// y[B, out] = x[B, in] W[in, out] + b[out]. Column-parallel tensor parallelism splits `out`,
// row-parallel splits `in` (Megatron-LM).
class Linear {
 public:
  Linear(ParamSet& ps, const std::string& name, int in, int out);
  // PyTorch's default: W, b ~ U(-1/sqrt(in), 1/sqrt(in)). Host parameters only (a model on
  // the GPU draws a host twin and uploads it, mlp.cpp).
  void init(Rng& rng);
  // addBias false: y = xW only. A row-parallel layer adds its bias once, after the partial
  // products of the tensor-parallel ranks are summed (Megatron-LM; tensor_parallel.cpp).
  void forward(const float* x, float* y, int batch, bool addBias = true);
  // Accumulates dW += x^T dy and db += sum_rows(dy); writes dx = dy W^T unless dx is null:
  // backwardWeight, then backwardInput.
  void backward(const float* x, const float* dy, float* dx, int batch);
  // The two halves of backward, which a zero-bubble pipeline schedule runs apart (Qi et al.
  // 2023): B, dx = dy W^T (reads the weight, writes no gradient), and W, dW += x^T dy and
  // db += sum_rows(dy) (reads x and dy, which the caller keeps until then).
  void backwardInput(const float* dy, float* dx, int batch);
  // biasToo false: dW alone (the caller has db, as the GPT's GELU backward fused with it).
  void backwardWeight(const float* x, const float* dy, int batch, bool biasToo = true);
  int in() const { return m_in; }
  int out() const { return m_out; }
  int weightRef() const { return m_w; }  // indices in the ParamSet (sharding metadata)
  int biasRef() const { return m_b; }

 private:
  ParamSet* m_ps;
  int m_w, m_b, m_in, m_out;
};

// LayerNorm over the feature dimension with learned gamma (init 1) and beta (init 0).
class LayerNorm {
 public:
  LayerNorm(ParamSet& ps, const std::string& name, int dim);
  void init();  // host parameters only, as Linear::init
  // mean and rstd: [batch] saved for backward.
  void forward(const float* x, float* y, float* mean, float* rstd, int batch);
  void backward(const float* x, const float* mean, const float* rstd, const float* dy, float* dx,
                int batch);
  // Its halves (as Linear's). The kernel makes dx and the gamma and beta gradients in one pass,
  // so each half runs it whole and keeps its own results: B writes dx and the parameter
  // gradients into `discard` [2 x dim]; W accumulates the parameter gradients and writes dx
  // into `discard` [batch x dim]. Each result is the one pass's, bit for bit, for one more
  // pass over the rows. Buffers are memory of the ParamSet's Compute.
  void backwardInput(const float* x, const float* mean, const float* rstd, const float* dy,
                     float* dx, int batch, float* discard);
  void backwardWeight(const float* x, const float* mean, const float* rstd, const float* dy,
                      int batch, float* discard);
  int gammaRef() const { return m_gamma; }  // beta is the next ref: gamma and beta are adjacent

 private:
  ParamSet* m_ps;
  int m_gamma, m_beta, m_dim;
};

}  // namespace paralab
