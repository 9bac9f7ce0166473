// The compute part of the projection (compute_model.h): a block's operations, their FLOPs and
// bytes, and their roofline time. See tests/engine/tst_projection.cpp.
#include "projection/compute_model.h"

#include "config.h"  // ConfigError

#include <algorithm>
#include <cmath>

namespace paralab::projection {

Roofline Roofline::of(const GpuSpec& gpu, Precision p, const std::string& attentionKernel) {
  Roofline r;
  r.peakFlops = gpu.peakFlops(p);
  r.matmulFraction = gpu.matmulFraction();
  r.bytesPerS = gpu.hbmGBps * 1e9 * kHbmFraction;
  r.sms = gpu.sms;
  r.attentionFlops = gpu.attentionTflops * 1e12;
  r.optimizerBytesPerS = gpu.optimizerGBps * 1e9;
  r.lossBytesPerS = gpu.lossGBps * 1e9;
  r.elementBytes = projection::elementBytes(p);
  r.gemmRates = gpu.gemmRates;
  r.gemmRatesPeakFlops = gpu.bf16Tflops * 1e12;
  if (!attentionKernel.empty()) {
    const auto it = gpu.fusedAttention.find(attentionKernel);
    if (it == gpu.fusedAttention.end())
      throw ConfigError("attention-kernel: " + gpu.name + " has no measured '" + attentionKernel +
                        "' kernel (resources/gpus/" + gpu.name + ".json)");
    r.fusedAttention = it->second;
  }
  if (p == Precision::Fp8Mixed) {
    r.operandBytes = gemmOperandBytes(p);
    r.bf16PeakFlops = gpu.peakFlops(Precision::Bf16Mixed);
  }
  return r;
}

Roofline Roofline::bf16() const {
  Roofline r = *this;
  if (bf16PeakFlops > 0) r.peakFlops = bf16PeakFlops, r.operandBytes = 0, r.bf16PeakFlops = 0;
  return r;
}

double splitK(double m, double n, double k, double count, int sms) {
  if (sms <= 0 || k <= 0) return 1;
  const double tiles = std::ceil(m / kTileRows) * std::ceil(n / kTileCols) * std::max(1.0, count);
  if (tiles >= sms) return 1;
  return std::max(1.0, std::min(std::floor(sms / tiles), std::floor(k / kSplitDepth)));
}

double waveEfficiency(double m, double n, double count, int sms, double k) {
  if (sms <= 0) return 1;
  const double tiles = std::ceil(m / kTileRows) * std::ceil(n / kTileCols) * std::max(1.0, count) *
                       splitK(m, n, k, count, sms);
  const double waves = std::ceil(tiles / sms);
  return tiles / (waves * sms);
}

OpCost gemmCost(const Roofline& r, std::string name, double m, double n, double k, double count) {
  OpCost op;
  op.name = std::move(name);
  op.gemm = true;
  op.m = m, op.n = n, op.k = k, op.count = count;
  op.flops = 2 * m * n * k * count;
  // Each operand read once and the output written once: the least traffic a GEMM can have.
  op.bytes = double(r.elementBytes) * count * (m * k + k * n + m * n);
  if (r.operandBytes > 0)  // fp8: the operands are narrower than the output
    op.bytes -= double(r.elementBytes - r.operandBytes) * count * (m * k + k * n);
  // Split-K's partial sums, written in fp32 and read back to be added.
  const double splits = splitK(m, n, k, count, r.sms);
  op.bytes += (splits - 1) * 2 * 4.0 * count * m * n;
  // A measured rate for the shape holds its waves already; a batch of `count` GEMMs fills the
  // GPU as one with count times the rows.
  const double computeS =
      r.gemmRates ? op.flops / (r.gemmRates->rate(m * std::max(1.0, count), n, k) * 1e12 *
                                r.peakFlops / r.gemmRatesPeakFlops)
                  : op.flops / (r.gemmFlops() * waveEfficiency(m, n, count, r.sms, k));
  const double memoryS = op.bytes / r.bytesPerS;
  op.computeBound = computeS >= memoryS;
  op.seconds = std::max(computeS, memoryS);
  return op;
}

OpCost elementwiseCost(const Roofline& r, std::string name, double bytes) {
  OpCost op;
  op.name = std::move(name);
  op.bytes = bytes;
  op.seconds = bytes / r.bytesPerS;
  return op;
}

double totalSeconds(const std::vector<OpCost>& ops) {
  double s = 0;
  for (const OpCost& op : ops) s += op.seconds;
  return s;
}

double totalFlops(const std::vector<OpCost>& ops) {
  double f = 0;
  for (const OpCost& op : ops) f += op.flops;
  return f;
}

namespace {

// Attention's two products, computed by attention's own kernel where it has one.
constexpr const char* kScores = "attention scores QK^T";
constexpr const char* kWeightedSum = "attention weighted sum PV";

// The forward rate of a fused attention kernel for this block: its launch computes b (heads / tp)
// sequences of s / cp queries, as many query tiles as that many heads of the measured length.
double fusedAttentionRate(const Roofline& r, const BlockWork& w, bool backward = false) {
  const double heads = w.microBatch * double(w.heads) / w.tp * (double(w.seq) / w.cp) /
                       r.fusedAttention->seq;
  return backward ? r.fusedAttention->backward(heads) : r.fusedAttention->forward(heads);
}

// Attention's core on this GPU: heads / tp heads of each of b sequences; its s / cp queries
// against all s keys. Scores and probabilities: (heads / tp) s values per query token.
void attentionCore(const Roofline& r, const BlockWork& w, std::vector<OpCost>& ops) {
  const double e = r.elementBytes, T = w.tokens(), s = w.seq, cp = w.cp;
  const double headsHere = double(w.heads) / w.tp, dh = double(w.hidden) / w.heads;
  const double scores = headsHere * s * T;
  // A kernel of attention's own runs the products at its measured rate, not the GEMMs'.
  const auto product = [&](const char* name, double m, double n, double k) {
    OpCost op = gemmCost(r.bf16(), name, m, n, k, w.microBatch * headsHere);
    if (r.fusedAttention)
      op.seconds = op.flops / (fusedAttentionRate(r, w) * 1e12), op.bytes = 0,
      op.computeBound = true;
    else if (r.attentionFlops > 0)
      op.seconds = op.flops / r.attentionFlops, op.computeBound = true;
    return op;
  };
  ops.push_back(product(kScores, s / cp, s, dh));
  // A fused kernel keeps the scores, the softmax and its dropout on the chip.
  if (!r.fusedAttention) {
    ops.push_back(elementwiseCost(r, "scale, mask, softmax", 2 * e * scores));
    // Dropout reads and writes each probability and writes its 1-byte mask.
    if (w.dropout) ops.push_back(elementwiseCost(r, "attention dropout", (2 * e + 1) * scores));
  }
  ops.push_back(product(kWeightedSum, s / cp, dh, s));
}

}  // namespace

std::vector<OpCost> attentionCoreForward(const Roofline& r, const BlockWork& w) {
  std::vector<OpCost> ops;
  if (w.attention) attentionCore(r, w, ops);
  return ops;
}

std::vector<OpCost> blockForward(const Roofline& r, const BlockWork& w) {
  const double e = r.elementBytes, T = w.tokens(), h = w.hidden, t = w.tp;
  const double f = w.ffnMultiple;
  // Without sequence parallelism every tp rank repeats the LayerNorms, dropouts and residual
  // adds on the whole hidden width; with it, each does 1/tp of the tokens.
  const double shared = w.sequenceParallel ? t : 1;
  // Residual add: read the branch and the stream, write the stream; dropout adds its mask.
  const double residual = (3 * e + (w.dropout ? 1 : 0)) * h * T / shared;
  const double layerNorm = 2 * e * h * T / shared;
  std::vector<OpCost> ops;
  // A linear layer's bias in a pass of its own: read and write its output.
  const auto bias = [&](const std::string& layer, double width) {
    if (w.unfusedBias) ops.push_back(elementwiseCost(r, layer + " bias", 2 * e * width * T));
  };
  if (w.attention) {
    ops.push_back(elementwiseCost(r, "LayerNorm 1", layerNorm));
    ops.push_back(gemmCost(r, "QKV projection", T, 3 * h / t, h));
    bias("QKV projection", 3 * h / t);
    attentionCore(r, w, ops);
    ops.push_back(gemmCost(r, "attention output projection", T, h, h / t));
    bias("attention output projection", h);
    ops.push_back(elementwiseCost(r, "residual add (attention)", residual));
  }
  ops.push_back(elementwiseCost(r, w.attention ? "LayerNorm 2" : "LayerNorm", layerNorm));
  if (w.experts > 0) {
    // Each token to its top-k experts: k T rows through the experts this GPU holds (balanced
    // routing), then the k results weighted back into one row.
    const double rows = T * w.topk;
    ops.push_back(gemmCost(r, "router", T, w.experts, h));
    ops.push_back(gemmCost(r, "expert fc1", rows, f * h / t, h));
    ops.push_back(elementwiseCost(r, "expert GELU", 2 * e * f * h / t * rows));
    ops.push_back(gemmCost(r, "expert fc2", rows, h, f * h / t));
    ops.push_back(elementwiseCost(r, "combine top-k", (w.topk + 1) * e * h * T));
  } else {
    ops.push_back(gemmCost(r, "FFN fc1", T, f * h / t, h));
    ops.push_back(elementwiseCost(r, "bias + GELU", 2 * e * f * h / t * T));
    ops.push_back(gemmCost(r, "FFN fc2", T, h, f * h / t));
    bias("FFN fc2", h);
  }
  ops.push_back(elementwiseCost(r, w.attention ? "residual add (FFN)" : "residual add", residual));
  return ops;
}

std::vector<OpCost> blockBackward(const Roofline& r, const BlockWork& w) {
  std::vector<OpCost> ops;
  for (const OpCost& op : blockForward(r, w)) {
    if (op.gemm) {
      // C = A B (m x k by k x n): dA = dC B^T (m x n by n x k), dB = A^T dC (k x m by m x n).
      const bool core = op.name == kScores || op.name == kWeightedSum;
      const Roofline rate = core ? r.bf16() : r;  // attention's products stay bf16 under fp8
      OpCost input = gemmCost(rate, op.name + " input grad", op.m, op.k, op.n, op.count);
      OpCost weight = gemmCost(rate, op.name + " weight grad", op.k, op.n, op.m, op.count);
      if (r.fusedAttention && core)
        for (OpCost* g : {&input, &weight})
          g->seconds = g->flops / (fusedAttentionRate(r, w, true) * 1e12), g->bytes = 0;
      else if (r.attentionFlops > 0 && core)
        for (OpCost* g : {&input, &weight}) g->seconds = g->flops / r.attentionFlops;
      ops.push_back(input);
      ops.push_back(weight);
    } else {
      ops.push_back(elementwiseCost(r, op.name + " backward", 2 * op.bytes));
    }
  }
  return ops;
}

std::vector<OpCost> firstEnd(const Roofline& r, const EndsWork& w) {
  const double e = r.elementBytes, T = w.samples * w.seq / w.cp, h = w.hidden;
  std::vector<OpCost> ops;
  if (!w.gpt) {
    // The input layer: forward and its weight gradient (nothing needs the pixels' gradient).
    ops.push_back(gemmCost(r, "input layer", w.samples, h / w.tp, w.input));
    ops.push_back(gemmCost(r, "input layer weight grad", w.input, h / w.tp, w.samples));
    return ops;
  }
  // Forward reads a token row and a position row and writes their sum; backward adds the
  // gradient rows into both tables.
  ops.push_back(elementwiseCost(r, "token + position embedding", 2 * 3 * e * h * T));
  return ops;
}

std::vector<OpCost> lastEnd(const Roofline& r, const EndsWork& w) {
  const double e = r.elementBytes, T = w.samples * w.seq / w.cp, h = w.hidden;
  std::vector<OpCost> ops;
  const Roofline head = r.bf16();  // the output head stays bf16 under fp8
  const auto withBackward = [&](const std::string& name, double m, double n, double k) {
    ops.push_back(gemmCost(head, name, m, n, k));
    ops.push_back(gemmCost(head, name + " input grad", m, k, n));
    ops.push_back(gemmCost(head, name + " weight grad", k, n, m));
  };
  const double outputs =
      w.gpt ? double(w.vocab) / (w.vocabParallel ? w.tp : 1) : double(w.classes);
  const double rows = w.gpt ? T : w.samples;
  if (w.gpt)
    ops.push_back(elementwiseCost(r, "final LayerNorm (forward and backward)", 3 * 2 * e * h * T));
  withBackward(w.gpt ? "output head (logits)" : "output head", rows, outputs, h);
  // Softmax cross-entropy in fp32.
  OpCost loss = elementwiseCost(r, "softmax cross-entropy (forward and backward)",
                                crossEntropyBytesPerLogit(e, w.unfusedLoss) * outputs * rows);
  if (r.lossBytesPerS > 0) loss.seconds = loss.bytes / r.lossBytesPerS;
  ops.push_back(loss);
  return ops;
}

double crossEntropyBytesPerLogit(double e, bool unfused) {
  if (!unfused) return 2 * (e + 4);
  const double cast = e < 4 ? e + 4 : 0;  // to fp32 and, for the gradient, back
  return cast + 4 + 8 + 8 + 4 + 8 + 8 + cast;
}

double narayananStepFlops(double B, double s, double l, double h, double V) {
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

double modelFlopsPerToken(double activeParameters, int layers, int hidden, int seq,
                          bool attention) {
  return 6 * activeParameters + (attention ? 12.0 * layers * hidden * double(seq) : 0.0);
}

}  // namespace paralab::projection
