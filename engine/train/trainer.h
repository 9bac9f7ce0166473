// Trainer: one training run: data, model, optimizer, and the loop body of one step, with its
// spans and metrics. Serial (one rank) for now; the parallel strategies plug in here.
// See tests/engine/tst_training.cpp and `paralab-run --steps 100`.
#pragma once
#include <memory>
#include <vector>

#include "config.h"
#include "data/dataset.h"
#include "metrics/metrics.h"
#include "metrics/span_recorder.h"
#include "model/mlp.h"
#include "optim/optimizer.h"

namespace paralab {

class Trainer {
 public:
  // Loads (or reuses) the data set and builds the model; throws DataError / ConfigError.
  explicit Trainer(const RunConfig& config);

  // One step on the next global batch. Evaluates test accuracy when the step is a multiple
  // of eval-every (and on the last step of a bounded run).
  StepMetrics step();
  // Test-split accuracy over the first `maxSamples` test samples (0 = all), in [0, 1].
  double evaluate(int maxSamples);

  int64_t stepsDone() const { return m_step; }
  const RunConfig& config() const { return m_config; }
  const MemoryTracker& memory() const { return m_memory; }
  const SpanRecorder& spans() const { return m_spans; }
  Mlp& model() { return *m_model; }

 private:
  RunConfig m_config;
  std::shared_ptr<const Dataset> m_data;
  MemoryTracker m_memory;  // before the model and optimizer: they report into it
  SpanRecorder m_spans;
  std::unique_ptr<Mlp> m_model;
  std::unique_ptr<Optimizer> m_optimizer;
  BatchSampler m_sampler;
  std::vector<int> m_indices, m_labels;
  std::vector<float> m_x;
  int64_t m_step = 0;
};

}  // namespace paralab
