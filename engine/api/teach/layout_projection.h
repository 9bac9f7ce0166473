// Layouts side by side on a cluster: one GPT shape projected (engine/projection/projection.h) on
// N GPUs at several tensor-parallel degrees, pipeline and batch kept, so a lesson can show what
// tp inside a node and tp across nodes cost. Every figure is projected, never measured. A
// lesson's ```bench {"kind": "layouts"} draws it; `paralab-bench layouts` prints it.
// See tests/engine/tst_teach_roofline.cpp (layoutProjection*).
#pragma once
#include <string>
#include <vector>

#include "projection/projection.h"

namespace paralab::teach {

struct LayoutProjectionOptions {
  std::string gpu = "h100-sxm";  // resources/gpus
  int gpus = 512, gpusPerNode = 8;
  std::string nodeLink = "infiniband";  // "infiniband" | "ethernet"
  // The model: Llama 2 70B's blocks, width, heads, context and vocabulary (Touvron et al.
  // 2023, Table 1 and §2.2), projected as the engine's GPT block (GELU FFN of 4h, one K/V head
  // per query head): the projection has no SwiGLU and no grouped-query attention.
  int layers = 80, hidden = 8192, heads = 64, seq = 4096, vocab = 32000;
  int batch = 1024;  // sequences per step: 4 M tokens, Llama 2's batch
  int pp = 8;
  std::vector<int> tps = {8, 16};
  std::string recompute = "selective";
};

struct LayoutPoint {
  int tp = 1;
  bool projected = false;
  projection::Projection projection;  // when projected
  std::string refused;                // validate()'s line otherwise
  // A TP group's placement: ranks and nodes it spans.
  int tpNodes = 1;
  // One tensor-parallel all-reduce of a micro-batch's activations (b s h elements of the
  // precision) over the TP group's link, seconds: what each of the block's all-reduces costs.
  double tpAllReduceSeconds = 0;
  double tpAllReduceBytes = 0;
  double tpShare() const;  // TP communication / step
};

struct LayoutProjection {
  projection::ModelSpec model;
  projection::Cluster cluster;
  std::vector<LayoutPoint> points;
};

// Projects each tp of `options`; a refused one keeps its reason. Throws ConfigError for an
// unknown GPU or node link.
LayoutProjection runLayoutProjection(const LayoutProjectionOptions& options);

}  // namespace paralab::teach
