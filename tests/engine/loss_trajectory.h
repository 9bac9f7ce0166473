// The engine tests' parallel-equals-serial check, in one place: a run's loss at every step and
// its final parameters, the worst step's relative difference from a reference run (each step
// over the tolerance printed with both losses) and the worst parameter's. Used by
// tst_parallel_equals_serial, tst_grad_sync, tst_model_parallel, tst_moe, tst_reconfigure,
// tst_kernel_choice and tst_cuda_training.
#pragma once
#include <QString>
#include <QtGlobal>
#include <algorithm>
#include <cmath>
#include <vector>

#include "train/trainer.h"

namespace paralab::test {

// The tests' small run: synthetic data, SGD with momentum at lr 0.05, no evaluation, so a
// trajectory of tens of steps takes milliseconds and still learns.
inline RunConfig smallRun(int hidden, int layers, int batch) {
  RunConfig c;
  c.dataset = "synthetic";
  c.hidden = hidden;
  c.layers = layers;
  c.batch = batch;
  c.evalEvery = 0;
  c.lr = 0.05;
  c.optimizer = "momentum";
  return c;
}

// A small GPT (H = 16, L = 2, 2 heads, context 16) on the synthetic text, trained with Adam.
inline RunConfig smallGptRun(int batch) {
  RunConfig c = smallRun(16, 2, batch);
  c.model = ModelKind::Gpt;
  c.heads = 2;
  c.seq = 16;
  c.optimizer = "adam";
  c.lr = 0.01;
  return c;
}

// The loss of each of the first `steps` steps of a fresh run of `config`.
inline std::vector<double> lossTrajectory(const RunConfig& config, int steps) {
  Trainer t(config);
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) losses.push_back(t.step().loss);
  return losses;
}

// A run's loss at every step and its parameters after the last, in the serial layout
// (Trainer::saveState gathers them from whatever shards the layout keeps).
struct RunRecord {
  std::vector<double> losses;
  std::vector<float> params;
};
inline RunRecord recordRun(const RunConfig& config, int steps) {
  Trainer t(config);
  RunRecord r;
  for (int s = 0; s < steps; ++s) r.losses.push_back(t.step().loss);
  r.params = t.saveState().params;
  return r;
}

// max_i |got_i - ref_i| / max_i |ref_i|: the largest parameter difference against the largest
// parameter (a per-element ratio would divide by the weights that happen to be near zero).
inline double worstParameterDifference(const std::vector<float>& got,
                                       const std::vector<float>& ref) {
  if (got.size() != ref.size() || ref.empty()) return INFINITY;
  double diff = 0, scale = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff = std::max(diff, std::abs(double(got[i]) - double(ref[i])));
    scale = std::max(scale, std::abs(double(ref[i])));
  }
  return diff / std::max(scale, 1e-30);
}

// max over steps of |got - ref| / |ref|; a step above `tolerance` is printed, so a failing
// comparison has the steps where the runs part beside it.
inline double worstRelativeDifference(const std::vector<double>& got,
                                      const std::vector<double>& ref, double tolerance) {
  double worst = 0;
  for (size_t i = 0; i < std::min(got.size(), ref.size()); ++i) {
    const double rel = std::abs(got[i] - ref[i]) / std::max(1e-12, std::abs(ref[i]));
    if (rel > tolerance)
      qWarning("step %zu: %.10g vs reference %.10g (rel %.3g)", i + 1, got[i], ref[i], rel);
    worst = std::max(worst, rel);
  }
  return got.size() == ref.size() ? worst : INFINITY;
}

}  // namespace paralab::test

// In a test function: every step of `got` within `tolerance` relative of `ref`. The worst step
// is logged under `what` (a QString or C string), and a failure names it. (A macro: QVERIFY2
// returns from the test function.)
#define VERIFY_TRAJECTORIES_AGREE(got, ref, tolerance, what)                                   \
  do {                                                                                         \
    const double worst_ = paralab::test::worstRelativeDifference(got, ref, tolerance);         \
    const QString what_ = QString(what);                                                       \
    qInfo("%s: worst relative loss difference %.3g (tolerance %g)", qPrintable(what_), worst_, \
          double(tolerance));                                                                  \
    QVERIFY2(worst_ <= (tolerance),                                                            \
             qPrintable(QString("%1: relative difference %2").arg(what_).arg(worst_)));        \
  } while (0)

// In a test function: the final parameters of `got` within `tolerance` of `ref`'s
// (worstParameterDifference), logged under `what`.
#define VERIFY_PARAMETERS_AGREE(got, ref, tolerance, what)                               \
  do {                                                                                   \
    const double worst_ = paralab::test::worstParameterDifference(got, ref);             \
    const QString what_ = QString(what);                                                 \
    qInfo("%s: worst parameter difference %.3g of the largest parameter (tolerance %g)", \
          qPrintable(what_), worst_, double(tolerance));                                 \
    QVERIFY2(worst_ <= (tolerance),                                                      \
             qPrintable(QString("%1: parameters differ by %2").arg(what_).arg(worst_))); \
  } while (0)
