// This machine as the projection's device: the figures the projection takes from a GPU's
// datasheet, measured here instead, for one run's shapes. The GEMM rate at the run's own GEMM
// shapes with the run's kernel on one thread (a rank is one worker), the rates of the engine's
// own elementwise, attention and loss kernels at the run's activation shapes and of its
// optimizer over a rank's parameters, and the thread ranks' collectives under the run's link (alpha and
// beta fitted from a small and a large all-reduce among the run's ranks). When there are more
// ranks than cores, each rank gets cores / ranks of a core.
//
// projectOnHost() then runs the same model as a projection onto real GPUs (projection.h), so a
// learner can set the projected step beside the one just measured: the check that the model
// is worth believing when it speaks of a cluster. See tests/engine/tst_projection_host.cpp and
// `paralab-bench project`.
#pragma once
#include <string>
#include <vector>

#include "projection/projection.h"

namespace paralab {
struct RunConfig;
}

namespace paralab::projection {

struct HostProfile {
  std::string title;       // "this machine: 2 cores, OpenBLAS 0.3.21 ... (measured)"
  int cores = 1;           // hardware threads the ranks share
  int ranks = 1;           // the run's ranks
  double gemmFlops = 0;    // one core, FLOP/s, over the run's GEMM shapes
  double bytesPerS = 0;    // one core, the engine's elementwise kernels on a block's activations
  double attentionFlops = 0;  // one core, the engine's attention kernel (the GPT), FLOP/s
  // One core, the engine's optimizer update over a rank's parameters, bytes/s as the model
  // counts them (weights and states read and written, the gradient read)
  double optimizerBytesPerS = 0;
  // One core, the engine's softmax cross-entropy over a micro-batch's logits, bytes/s as the
  // model counts them
  double lossBytesPerS = 0;
  // One core copying the run's samples from random places of its data set into a batch,
  // bytes/s, and one sample's bytes (an image's floats; a window's tokens and targets).
  double dataBytesPerS = 0;
  double sampleBytes = 0;
  Link link;               // the thread ranks' collectives, measured (the run's emulated link)
  double linkFitError = 0; // the fit's worst relative error over the sizes timed
  // Each rank's share of a core while every rank computes: min(1, cores / ranks).
  double coreShare() const;
};

// Times the run's GEMM shapes, its elementwise and attention kernels and the ranks'
// all-reduce; about a second.
// Throws ConfigError where projectRun() would (a strategy or model a projection does not cover).
HostProfile measureHost(const RunConfig& c);

// The run the settings describe, projected onto this machine as `host` measured it: one GPU per
// rank, every group on the measured link, fp32 arithmetic, the engine's vocabulary `vocab`.
// With more ranks than cores, a pipeline's schedule is played out in time with the cores shared
// by the stages that can run: a stage waiting in the bubble gives its share to the others.
Projection projectOnHost(const RunConfig& c, const HostProfile& host, int vocab = kEngineVocab);

// The layouts the projection on this machine is checked on (paralab-bench project,
// tst_projection_host_timing): the experiments of lessons 5 (data parallelism), 7 (ZeRO),
// 10 (tensor parallelism) and 11 (the pipeline), as run settings in JSON, steps aside.
struct CheckedLayout {
  const char* name;
  const char* settings;
};
const std::vector<CheckedLayout>& lessonLayouts();

}  // namespace paralab::projection
