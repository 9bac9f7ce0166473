// Linear and LayerNorm on the rank's Compute (see layers.h).
#include "model/layers.h"

#include <atomic>
#include <cmath>

#include "cpu/gemm.h"
#include "cpu/half.h"
#include "device/compute.h"

namespace paralab {

namespace {

std::atomic<bool> g_audit{false};
std::atomic<int64_t> g_routed{0}, g_inexact{0};

bool bf16Values(const float* v, int rows, int cols, int ld) {
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < cols; ++j)
      if (kernels::roundToBf16(v[size_t(r) * ld + j]) != v[size_t(r) * ld + j]) return false;
  return true;
}

}  // namespace

bool forwardGemmInBf16(Dtype stored, bool onGpu, const std::string& kernel) {
  return stored == Dtype::Bf16 && !onGpu && kernel == "vendor" && kernels::gemm_bf16_for_training();
}

bool forwardGemmInBf16(const ParamSet& ps) {
  return forwardGemmInBf16(ps.stored(), ps.compute().onGpu(), ps.compute().kernel());
}

void auditBf16Gemms(bool on) {
  g_routed = 0;
  g_inexact = 0;
  g_audit = on;
}

Bf16GemmAudit bf16GemmAudit() { return {.routed = g_routed.load(), .inexact = g_inexact.load()}; }

Linear::Linear(ParamSet& ps, const std::string& name, int in, int out)
    : m_ps(&ps),
      m_w(ps.add(name + ".weight", {in, out})),
      m_b(ps.add(name + ".bias", {out})),
      m_in(in),
      m_out(out) {}

void Linear::init(Rng& rng) {
  const double bound = 1.0 / std::sqrt(double(m_in));
  float* w = m_ps->param(m_w);
  for (int64_t i = 0; i < int64_t(m_in) * m_out; ++i) w[i] = float(rng.uniform(-bound, bound));
  float* b = m_ps->param(m_b);
  for (int i = 0; i < m_out; ++i) b[i] = float(rng.uniform(-bound, bound));
}

void Linear::forward(const float* x, float* y, int batch, bool addBias) {
  const Compute& c = m_ps->compute();
  const float* w = m_ps->param(m_w);
  if (forwardGemmInBf16(*m_ps)) {
    if (g_audit) {
      ++g_routed;
      if (!bf16Values(x, batch, m_in, m_in) || !bf16Values(w, m_in, m_out, m_out)) ++g_inexact;
    }
    kernels::gemm_bf16_rows(false, false, batch, m_out, m_in, 1.f, x, m_in, w, m_out, 0.f, y,
                            m_out);
  } else {
    c.gemm(false, false, batch, m_out, m_in, 1.f, x, m_in, w, m_out, 0.f, y, m_out);
  }
  if (addBias) c.biasAdd(y, m_ps->param(m_b), batch, m_out);
}

void Linear::backward(const float* x, const float* dy, float* dx, int batch) {
  backwardWeight(x, dy, batch);
  if (dx) backwardInput(dy, dx, batch);
}

void Linear::backwardInput(const float* dy, float* dx, int batch) {
  // dx[B, in] = dy[B, out] W^T[out, in]
  m_ps->compute().gemm(false, true, batch, m_in, m_out, 1.f, dy, m_out, m_ps->param(m_w), m_out,
                       0.f, dx, m_in);
}

void Linear::backwardWeight(const float* x, const float* dy, int batch, bool biasToo) {
  const Compute& c = m_ps->compute();
  // dW[in, out] += x^T[in, B] dy[B, out]
  c.gemm(true, false, m_in, m_out, batch, 1.f, x, m_in, dy, m_out, 1.f, m_ps->grad(m_w), m_out);
  if (biasToo) c.biasBackward(m_ps->grad(m_b), dy, batch, m_out);
}

LayerNorm::LayerNorm(ParamSet& ps, const std::string& name, int dim)
    : m_ps(&ps), m_gamma(ps.add(name + ".gamma", {dim})), m_beta(ps.add(name + ".beta", {dim})),
      m_dim(dim) {}

void LayerNorm::init() {
  float* g = m_ps->param(m_gamma);
  float* b = m_ps->param(m_beta);
  for (int i = 0; i < m_dim; ++i) g[i] = 1.f, b[i] = 0.f;
}

void LayerNorm::forward(const float* x, float* y, float* mean, float* rstd, int batch) {
  m_ps->compute().layerNorm(y, mean, rstd, x, m_ps->param(m_gamma), m_ps->param(m_beta), batch,
                            m_dim);
}

void LayerNorm::backward(const float* x, const float* mean, const float* rstd, const float* dy,
                         float* dx, int batch) {
  m_ps->compute().layerNormBackward(dx, m_ps->grad(m_gamma), m_ps->grad(m_beta), dy, x, mean, rstd,
                                    m_ps->param(m_gamma), batch, m_dim);
}

void LayerNorm::backwardInput(const float* x, const float* mean, const float* rstd, const float* dy,
                              float* dx, int batch, float* discard) {
  m_ps->compute().layerNormBackward(dx, discard, discard + m_dim, dy, x, mean, rstd,
                                    m_ps->param(m_gamma), batch, m_dim);
}

void LayerNorm::backwardWeight(const float* x, const float* mean, const float* rstd,
                               const float* dy, int batch, float* discard) {
  m_ps->compute().layerNormBackward(discard, m_ps->grad(m_gamma), m_ps->grad(m_beta), dy, x, mean,
                                    rstd, m_ps->param(m_gamma), batch, m_dim);
}

}  // namespace paralab
