// Spread: how far apart the ranks' models are, for the strategies whose replicas drift (local
// SGD, gossip). Defined as the largest L2 distance of a rank's flat parameter vector from the
// ranks' mean, max_i ||x_i - mean_j x_j||_2 (the consensus distance of the decentralised SGD
// papers, Lian et al. 2017). The largest pairwise distance lies between it and twice it; it
// needs every model at once, ours needs the mean. See tests/engine/tst_async_strategies.cpp.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "comm/communicator.h"
#include "device/compute.h"

namespace paralab {

// Collective on `comm`: given this rank's parameters and the ranks' mean (from an all-reduce
// Avg the caller made), returns the spread on every rank. Costs one all-reduce Max of 1 float.
inline double spreadFromMean(Communicator& comm, const float* params, const float* mean,
                             int64_t count) {
  double sum = 0;  // squared distance, accumulated in double over P terms
  for (int64_t i = 0; i < count; ++i) {
    const double d = double(params[i]) - double(mean[i]);
    sum += d * d;
  }
  float mine = float(std::sqrt(sum));
  comm.allReduce(&mine, &mine, 1, ReduceOp::Max);
  return double(mine);
}

// The same for vectors in the memory of `compute`'s device: on a GPU both are copied to the host
// first (2 x 4P bytes over PCIe, on the steps that report a spread).
inline double spreadFromMean(Communicator& comm, const Compute& compute, const float* params,
                             const float* mean, int64_t count) {
  if (!compute.onGpu()) return spreadFromMean(comm, params, mean, count);
  std::vector<float> p(static_cast<size_t>(count)), m(static_cast<size_t>(count));
  compute.download(p.data(), params, count);
  compute.download(m.data(), mean, count);
  return spreadFromMean(comm, p.data(), m.data(), count);
}

}  // namespace paralab
