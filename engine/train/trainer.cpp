// The serial training step: data -> forward -> backward -> optimizer, each a span.
// See tests/engine/tst_training.cpp.
#include "train/trainer.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <cstring>

#include "cpu/gemm.h"

namespace paralab {

static const RunConfig& checked(const RunConfig& config) {
  if (auto err = config.validate()) throw ConfigError(*err);
  return config;
}

Trainer::Trainer(const RunConfig& config)
    : m_config(checked(config)),
      m_data(loadDataset(config.dataset, config.dataDir, config.seed)),
      m_sampler(m_data->numTrain(), config.batch, config.seed) {
  // One BLAS thread per rank: a rank is one worker, and parallelism is what the strategies add.
  kernels::vendor_blas_set_threads(1);
  MlpShape shape;
  shape.input = m_data->inputDim;
  shape.classes = m_data->classes;
  shape.hidden = config.hidden;
  shape.layers = config.layers;
  m_model = std::make_unique<Mlp>(shape, config.seed, &m_memory);
  OptimizerHyper hyper;
  hyper.lr = float(config.lr);
  m_optimizer = std::make_unique<Optimizer>(optimizerKind(config.optimizer), hyper,
                                            m_model->params().numel(), &m_memory);
}

static double msBetween(int64_t a, int64_t b) { return double(b - a) * 1e-6; }

StepMetrics Trainer::step() {
  const int B = m_config.batch, D = m_data->inputDim;
  const int64_t stepIndex = m_step + 1;
  m_memory.resetPeaks();
  const int64_t t0 = nowNs();
  {
    ScopedSpan s(&m_spans, SpanKind::Data, stepIndex, "gather batch");
    m_sampler.globalBatch(m_step, m_indices);
    m_x.resize(size_t(B) * D);
    m_labels.resize(size_t(B));
    for (int i = 0; i < B; ++i) {
      std::memcpy(&m_x[size_t(i) * D], &m_data->trainX[size_t(m_indices[i]) * D], sizeof(float) * D);
      m_labels[size_t(i)] = m_data->trainY[size_t(m_indices[i])];
    }
  }
  const int64_t t1 = nowNs();
  double lossSum;
  {
    ScopedSpan s(&m_spans, SpanKind::Forward, stepIndex, "forward");
    lossSum = m_model->forwardLoss(m_x.data(), m_labels.data(), B, B);
  }
  if (!std::isfinite(lossSum))
    throw std::runtime_error("training diverged: the loss is not finite at step " +
                             std::to_string(stepIndex) + "; lower the learning rate (now " +
                             std::to_string(m_config.lr) + ")");
  const int64_t t2 = nowNs();
  {
    ScopedSpan s(&m_spans, SpanKind::Backward, stepIndex, "backward");
    m_model->params().zeroGrads();
    m_model->backward();
  }
  const int64_t t3 = nowNs();
  {
    ScopedSpan s(&m_spans, SpanKind::Optimizer, stepIndex, "optimizer");
    m_optimizer->step(m_model->params().params().data(), m_model->params().grads().data());
  }
  const int64_t t4 = nowNs();
  m_step = stepIndex;

  StepMetrics m;
  m.step = stepIndex;
  m.loss = lossSum / B;
  m.stepMs = msBetween(t0, t4);
  m.samplesPerS = m.stepMs > 0 ? B / (m.stepMs * 1e-3) : 0;
  m.dataMs = msBetween(t0, t1);
  m.forwardMs = msBetween(t1, t2);
  m.backwardMs = msBetween(t2, t3);
  m.optimizerMs = msBetween(t3, t4);
  RankMetrics r;
  r.rank = 0;
  r.computeMs = m.stepMs;
  r.mem = m_memory.snapshot();
  m.ranks.push_back(r);
  const bool lastStep = m_config.steps > 0 && stepIndex == m_config.steps;
  if (m_config.evalEvery > 0 && (stepIndex % m_config.evalEvery == 0 || lastStep))
    m.testAccuracy = evaluate(m_config.evalSamples);
  return m;
}

double Trainer::evaluate(int maxSamples) {
  const int64_t n = maxSamples > 0 ? std::min<int64_t>(maxSamples, m_data->numTest()) : m_data->numTest();
  const int chunk = m_config.batch;  // the training batch: no extra activation memory
  int64_t correct = 0;
  for (int64_t i = 0; i < n; i += chunk) {
    const int b = int(std::min<int64_t>(chunk, n - i));
    correct += m_model->countCorrect(&m_data->testX[size_t(i) * m_data->inputDim],
                                     &m_data->testY[size_t(i)], b);
  }
  return n > 0 ? double(correct) / double(n) : 0.0;
}

}  // namespace paralab
