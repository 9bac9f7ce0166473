// Mixed precision's rounding, refusals and loss scale (see precision.h).
// See tests/engine/tst_precision.cpp.
#include "train/precision.h"

#include <algorithm>
#include <cmath>

#include "comm/communicator.h"
#include "cpu/half.h"
#include "device/compute.h"
#include "model/layers.h"
#include "parallel/data/grad_sync.h"
#include "parallel/strategy.h"

namespace paralab {

bool sixteenBit(Dtype d) { return d == Dtype::Bf16 || d == Dtype::Fp16; }
int valueBytes(Dtype d) { return sixteenBit(d) ? 2 : 4; }

int64_t roundStored(Dtype d, float* values, int64_t n) {
  if (!sixteenBit(d) || !values) return 0;
  return kernels::round_to_half(values, n, d == Dtype::Fp16);
}

void roundStored(const Compute& c, Dtype d, float* values, int64_t n) {
  if (sixteenBit(d) && values) c.roundHalf(values, n, d == Dtype::Fp16);
}

void countStoredBytes(MemoryTracker* tracker, Dtype d) {
  if (!tracker) return;
  for (const MemCategory c : {MemCategory::Params, MemCategory::Activations})
    tracker->setValueBytes(c, valueBytes(d));
}

std::optional<std::string> precisionRefusal(const RunConfig& c) {
  if (c.precision == Dtype::Tf32 || c.precision == Dtype::Fp8)
    return "precision: " + nameOf(c.precision) +
           " is for --project (a training run: fp32, bf16 or fp16)";
  if (!sixteenBit(c.precision)) return std::nullopt;
  const std::string head = "precision: " + nameOf(c.precision) + " ";
  if (c.device == Device::Cuda && c.kernel != "tensor-core")
    return head +
           "trains on the CPU, or with --device cuda on 16-bit tensor cores (allowed "
           "there: --kernel tensor-core)";
  // Model and expert parallelism round where the serial model does (stage.h, moe_ffn.h), on
  // the rank's Compute, the CPU or a GPU; the synchronous parameter server keeps the fp32
  // master on its servers (param_server.cpp); the asynchronous strategies keep no master copy.
  if (c.strategy != "sync" && c.strategy != "ps-sync")
    return head +
           "trains serially and with --strategy sync (data, tensor, sequence, pipeline, "
           "context and expert parallelism, ZeRO) or --strategy ps-sync; the asynchronous "
           "strategies (ps-async, hogwild, local-sgd, gossip, fedavg) train in fp32";
  return std::nullopt;
}

std::string precisionNote(const RunConfig& c) {
  if (!sixteenBit(c.precision)) return "";
  if (c.device == Device::Cuda)  // the 16-bit WMMA GEMM (cuda/gemm.h), the rest fp32
    return nameOf(c.precision) + " mixed (" + nameOf(c.precision) +
           " tensor-core GEMMs summing in fp32)";
  // The CPU kernels widen 16-bit values and compute in fp32 (precision.h), but for the forward
  // weight GEMMs of a bf16 run on AMX (model/layers.h: forwardGemmInBf16).
  // Short: every chart's subtitle carries it.
  const std::string head = nameOf(c.precision) + " mixed (16-bit memory and numerics, ";
  if (forwardGemmInBf16(c.precision, c.device == Device::Cuda, c.kernel))
    return head + "forward GEMMs in bf16 on AMX)";
  return head + "fp32 speed)";
}

double parseLossScale(const std::string& text) {
  if (text == "dynamic") return 0;
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(v >= 1) || !std::isfinite(v) || v > 1e30)
    throw ConfigError("loss-scale: '" + text +
                      "' is not dynamic or a number from 1 to 1e30 (1: no scaling)");
  return v;
}

// [SECTION] The loss scale

LossScaler::LossScaler(const RunConfig& c) : m_window(c.lossScaleWindow) {
  if (c.precision != Dtype::Fp16) return;  // bf16 and fp32: S = 1
  const double fixed = parseLossScale(c.lossScale);
  m_dynamic = fixed == 0;
  // 2^16, DeepSpeed's initial_scale_power 16; its loss_scale_window is 1000, our default too.
  m_scale = m_dynamic ? 65536.f : float(fixed);
}

void LossScaler::update(bool overflow) {
  if (overflow) ++m_skipped;
  if (!m_dynamic) return;
  if (overflow) {  // every overflow halves (DeepSpeed's hysteresis 1), down to 1 (min_loss_scale)
    m_scale = std::max(1.f, m_scale / 2);
    m_clean = 0;
  } else if (++m_clean >= m_window) {
    m_scale *= 2;
    m_clean = 0;
  }
}

LossScaleState LossScaler::state() const {
  if (!m_dynamic && m_skipped == 0 && m_scale == 1.f) return {};  // bf16, fp32, a scale of 1
  return {m_scale, m_clean, m_skipped};
}

void LossScaler::restore(const LossScaleState& s) {
  if (s.scale <= 0) return;
  if (m_dynamic) m_scale = float(s.scale);  // a fixed --loss-scale stays what the run says
  m_clean = int(s.clean);
  m_skipped = s.skipped;
}

// [SECTION] One rank's mixed precision

const Compute& MixedPrecision::compute() const { return m_compute ? *m_compute : Compute::host(); }

void MixedPrecision::Hooks::beforeBackward(int u) {
  if (m_inner) m_inner->beforeBackward(u);  // first: it may bind the unit's gradients elsewhere
  // Gradients left by earlier micro-batches of the step (all zero at the first, or where the
  // strategy's buffer starts empty, as ZeRO-2/3's staging does): set aside, the buffer zeroed.
  if (m_mp.compute().onGpu()) return setAsideOnDevice(u);
  const ParamUnit& unit = m_ps.units()[size_t(u)];
  int64_t n = 0;
  bool held = false;
  for (int i = unit.firstRef; i < unit.endRef; ++i) {
    const float* g = m_ps.grad(i);
    const int64_t len = m_ps.ref(i).numel();
    held = held || (g && std::any_of(g, g + len, [](float v) { return v != 0.f; }));
    n += len;
  }
  if (!held) return;
  Tensor sum = Compute::host().tensor({n}, MemCategory::Workspace, m_memory);
  float* at = sum.data();
  for (int i = unit.firstRef; i < unit.endRef; ++i) {
    const int64_t len = m_ps.ref(i).numel();
    if (float* g = m_ps.grad(i)) {  // an unbound weight's part stays zero
      std::copy(g, g + len, at);
      std::fill(g, g + len, 0.f);
    }
    at += len;
  }
  m_sums[u] = std::move(sum);
}

// Not read back (that would wait for the backward so far). The sum is a Workspace tensor of
// the rank's device, as the CPU's is of the host; the copies queue on the rank's stream, in
// order with the backward that follows.
void MixedPrecision::Hooks::setAsideOnDevice(int u) {
  if (m_mp.m_microBatches <= 1) return;  // one micro-batch a step: nothing to keep
  const Compute& c = m_mp.compute();
  const ParamUnit& unit = m_ps.units()[size_t(u)];
  int64_t n = 0;
  for (int i = unit.firstRef; i < unit.endRef; ++i) n += m_ps.ref(i).numel();
  Tensor sum = c.tensor({n}, MemCategory::Workspace, m_memory);  // zero-filled
  float* at = sum.data();
  for (int i = unit.firstRef; i < unit.endRef; ++i) {
    const int64_t len = m_ps.ref(i).numel();
    if (float* g = m_ps.grad(i)) {
      c.copy(at, g, len);
      c.zero(g, len);
    }
    at += len;
  }
  m_sums[u] = std::move(sum);
}

void MixedPrecision::Hooks::afterBackward(int u) {
  const ParamUnit& unit = m_ps.units()[size_t(u)];
  // This micro-batch's gradients, rounded where a 16-bit GEMM stores them.
  // Counted on the device (report() takes the count), so the GPU's backward is not waited for.
  for (int i = unit.firstRef; i < unit.endRef; ++i)
    m_mp.compute().roundHalf(m_ps.grad(i), m_ps.ref(i).numel(), m_mp.m_dtype == Dtype::Fp16, true);
  if (const auto it = m_sums.find(u); it != m_sums.end()) {  // added into the fp32 sum
    const float* at = it->second.data();
    const bool gpu = m_mp.compute().onGpu();
    for (int i = unit.firstRef; i < unit.endRef; ++i) {
      float* g = m_ps.grad(i);
      const int64_t len = m_ps.ref(i).numel();
      if (g && gpu)  // g += sum on the rank's stream (cuda/layers.h residual_add: fp32)
        m_mp.compute().residualAdd(g, at, len);
      else
        for (int64_t j = 0; g && j < len; ++j) g[j] = at[j] + g[j];
      at += len;
    }
    m_sums.erase(it);
  }
  if (m_inner) m_inner->afterBackward(u);
}

bool MixedPrecision::finishGradients(const std::vector<HeldGradients>& held, Communicator* agree) {
  if (!active()) return true;
  m_stepScale = m_scaler.scale();
  const float inv = 1.f / m_stepScale;
  for (const HeldGradients& h : held) compute().unscale(h.grads, h.count, inv);
  float overflow = compute().takeNonFinite() ? 1.f : 0.f;
  if (agree && agree->size() > 1)  // every rank skips, or none (Megatron's found_inf all-reduce)
    agree->allReduce(&overflow, &overflow, 1, ReduceOp::Max);
  m_scaler.update(overflow != 0);
  return overflow == 0;
}

void MixedPrecision::report(RankStep& out) {
  if (!active()) return;
  out.lossScale = m_stepScale;
  out.skippedSteps = m_scaler.skipped();
  out.flushedGrads = compute().takeFlushed();  // this step's, counted by the hooks
}

}  // namespace paralab
