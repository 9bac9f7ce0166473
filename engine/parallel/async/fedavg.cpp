// Federated averaging (`--strategy fedavg`; McMahan et al. 2017, "Communication-Efficient
// Learning of Deep Networks from Decentralized Data", Algorithm 1): --clients simulated
// clients, each holding its own label-skewed shard of the training set, are spread over the
// ranks. One step of the run is one round: a fraction of the clients, drawn at random, start
// from the global model, take --local-steps SGD steps on their own data, and the server
// (rank 0) averages their models weighted by their shard sizes and sends the result back.
// See tests/engine/tst_fedavg.cpp and lesson 9.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "comm/communicator.h"
#include "data/dataset.h"
#include "parallel/data/replica.h"
#include "rng.h"
#include "schema.h"

namespace paralab {

// [SECTION] The settings FedAvg adds to the run (its row in registry.cpp offers them).

namespace {

const Setting& clientsSetting() {
  static const Setting s =
      extraSetting("clients", SettingType::Integer, int64_t(10))
          .in("", "Clients")
          .describe("Simulated clients, spread over the ranks (client c on rank c mod ranks)",
                    "Each holds its own shard of the training set, skewed towards some labels "
                    "as a phone's photos are.")
          .range(1, 1000);
  return s;
}
const Setting& participationSetting() {
  static const Setting s =
      extraSetting("participation", SettingType::Real, 0.5)
          .in("", "Participation")
          .describe("Fraction of the clients that take part in a round (C in McMahan et al.)")
          .above(0, 1);
  return s;
}
const Setting& localStepsSetting() {
  static const Setting s =
      extraSetting("local-steps", SettingType::Integer, int64_t(5))
          .in("", "Local steps")
          .describe("SGD steps each taking part client makes on its own data per round",
                    "Each on a mini-batch of --batch samples from its shard; one step of the "
                    "run is one round.")
          .range(1, 1000)
          .units("steps");
  return s;
}
const Setting& alphaSetting() {
  static const Setting s =
      extraSetting("dirichlet-alpha", SettingType::Real, 0.5)
          .in("", "Label skew α")
          .describe(
              "Dirichlet α of the clients' label mix: small α gives each client few "
              "labels (non-IID)",
              "Each label's samples are split over the clients in proportions drawn from "
              "Dirichlet(α, …, α) (Hsu et al. 2019). 0 = IID: every client a uniform "
              "random share.")
          .range(0, 1000)
          .zeroIs("IID");
  return s;
}

// A Gamma(a, 1) sample (Marsaglia & Tsang 2000), for the Dirichlet proportions.
double gamma(Rng& rng, double a) {
  if (a < 1) return gamma(rng, a + 1) * std::pow(1.0 - rng.uniform(), 1.0 / a);
  const double d = a - 1.0 / 3, c = 1 / std::sqrt(9 * d);
  for (;;) {
    const double x = rng.normal(), v = std::pow(1 + c * x, 3);
    if (v <= 0) continue;
    const double u = 1.0 - rng.uniform();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

// Every client's training-sample indices, ascending (one client: 0, 1, ..., n-1, the serial
// run's data), the same on every rank. alpha 0: a uniform random split into equal shares;
// else each label's samples are dealt out in Dirichlet(alpha) proportions.
std::vector<std::vector<int>> clientShards(const Dataset& data, int clients, double alpha,
                                           uint64_t seed) {
  Rng rng(seed ^ 0xFEDA'0000'0000'0001ull);
  std::vector<std::vector<int>> shards(static_cast<size_t>(clients));
  const auto deal = [&](std::vector<int> indices, const std::vector<double>& share) {
    for (size_t i = indices.size(); i > 1; --i) std::swap(indices[i - 1], indices[rng.below(i)]);
    double cumulative = 0;
    size_t from = 0;
    for (int c = 0; c < clients; ++c) {
      cumulative += share[size_t(c)];
      const size_t to =
          c + 1 == clients
              ? indices.size()
              : std::min(indices.size(), size_t(std::llround(cumulative * double(indices.size()))));
      shards[size_t(c)].insert(shards[size_t(c)].end(), indices.begin() + long(from),
                               indices.begin() + long(to));
      from = std::max(from, to);
    }
  };
  if (alpha == 0) {
    std::vector<int> all(static_cast<size_t>(data.numTrain()));
    std::iota(all.begin(), all.end(), 0);
    deal(all, std::vector<double>(size_t(clients), 1.0 / clients));
  } else {
    // The labels present (text windows are labelled by region, fewer than the vocabulary).
    const int labels = 1 + *std::max_element(data.trainY.begin(), data.trainY.end());
    for (int label = 0; label < labels; ++label) {
      std::vector<int> ofLabel;
      for (int64_t i = 0; i < data.numTrain(); ++i)
        if (data.trainY[size_t(i)] == label) ofLabel.push_back(int(i));
      std::vector<double> share(static_cast<size_t>(clients));
      for (double& p : share) p = gamma(rng, alpha);
      const double sum = std::accumulate(share.begin(), share.end(), 0.0);
      for (double& p : share) p /= sum;
      deal(ofLabel, share);
    }
  }
  for (auto& s : shards) std::sort(s.begin(), s.end());
  return shards;
}

// [SECTION] The strategy
//
// Round t on every rank:
//   1. draw the round's clients: max(1, round(C·N)) of the N, from (seed, t), the same draw
//      on every rank;
//   2. for each of them this rank simulates (client c on rank c mod R): load the global model,
//      take K steps of the optimizer on mini-batches of its own shard (mean loss over the
//      mini-batch; optimizer state starts fresh each round, clients keep none), and add
//      (n_c / n) · θ_c to this rank's sum, n_c its shard size and n those of the round's
//      clients together;
//   3. the server (rank 0) reduces the ranks' sums — the new global model θ = Σ (n_c/n) θ_c —
//      and broadcasts it.
// Traffic per round (group "world"): a reduce and a broadcast of 4P bytes, whatever the
// number of clients; a real deployment sends 4P per client each way.
// With one client, participation 1 and K = 1 a round is one serial SGD step on the serial
// run's global batch: the client's sampler is the serial run's (shard 0..n-1, seed).
class FedAvg final : public ReplicaStrategy {
 public:
  explicit FedAvg(RankContext& ctx)
      : ReplicaStrategy(ctx),
        m_clients(int(std::get<int64_t>(clientsSetting().get(*ctx.config)))),
        m_participation(std::get<double>(participationSetting().get(*ctx.config))),
        m_localSteps(int(std::get<int64_t>(localStepsSetting().get(*ctx.config)))) {
    const int64_t P = m_model->params().numel();
    m_opt = makeOptimizer(P);
    m_global = compute().tensor({P}, MemCategory::Workspace, ctx.memory);
    m_sum = compute().tensor({P}, MemCategory::Comm, ctx.memory);
    m_weight = compute().tensor({1}, MemCategory::Workspace, ctx.memory);
    m_shards = clientShards(*ctx.data, m_clients, std::get<double>(alphaSetting().get(*ctx.config)),
                            ctx.config->seed);
    for (int c = m_ctx.rank; c < m_clients; c += m_ctx.worldSize) {
      const int64_t n = int64_t(m_shards[size_t(c)].size());
      const int batch = int(std::min<int64_t>(ctx.config->batch, n));
      m_samplers.emplace_back(n > 0 ? n : 1, std::max(batch, 1), ctx.config->seed + uint64_t(c));
    }
  }

  RankStep step(int64_t step, const std::vector<int>&) override {
    RankStep out;
    ParamSet& ps = m_model->params();
    const int64_t P = ps.numel();
    float* params = ps.params().data();
    const std::vector<int> round = roundClients(step);
    double roundSamples = 0;
    for (int c : round) roundSamples += double(m_shards[size_t(c)].size());
    compute().copy(m_global.data(), params, P);  // every rank holds the global model
    compute().zero(m_sum.data(), P);
    for (int c : round) {
      if (c % m_ctx.worldSize != m_ctx.rank || m_shards[size_t(c)].empty()) continue;
      compute().copy(params, m_global.data(), P);
      resetOptimizer();
      for (int k = 0; k < m_localSteps; ++k) {
        takeClientBatch(step, c, step * m_localSteps + k);
        out.lossSum += forwardBackward(step);  // gradients: the mean over the mini-batch
        out.samples += m_slice;
        update(step, *m_opt, params, ps.grads().data());
      }
      const float w = float(double(m_shards[size_t(c)].size()) / roundSamples);
      compute().upload(m_weight.data(), &w, 1);
      compute().scaleRows(params, m_weight.data(), 1, int(P));  // θ_c · n_c / n
      compute().residualAdd(m_sum.data(), params, P);
    }
    compute().sync();  // the sum is complete before the server reads it
    m_ctx.comm->reduce(m_sum.data(), params, P, 0, ReduceOp::Sum, device());
    m_ctx.comm->broadcast(params, P, 0, device());
    return out;
  }

  RankHoldings holdings() const override {
    RankHoldings h = ReplicaStrategy::holdings();
    // Not a slice of the global batch: the clients this rank simulates and their data.
    std::erase_if(h.items, [](const HeldSlice& s) { return s.kind == HoldingKind::Batch; });
    const int64_t D = m_ctx.data->inputDim;
    for (int c = m_ctx.rank; c < m_clients; c += m_ctx.worldSize) {
      const int64_t len = int64_t(m_shards[size_t(c)].size());
      h.items.push_back({"client " + std::to_string(c) + " data", HoldingKind::Batch, -1, 0, len,
                         len, len, D, len * D * 4});
    }
    return h;
  }

 private:
  Optimizer* fullOptimizer() override { return m_opt.get(); }

  // Step 1: the round's clients, ascending.
  std::vector<int> roundClients(int64_t round) const {
    const int m = std::max(1, int(std::lround(m_participation * m_clients)));
    std::vector<int> all(static_cast<size_t>(m_clients));
    std::iota(all.begin(), all.end(), 0);
    Rng rng(m_ctx.config->seed * 0x9E3779B97F4A7C15ull + uint64_t(round));
    for (int i = 0; i < m; ++i)
      std::swap(all[size_t(i)], all[size_t(i) + rng.below(uint64_t(m_clients - i))]);
    all.resize(size_t(m));
    std::sort(all.begin(), all.end());
    return all;
  }

  // Mini-batch `index` of client c's own sampler, into the input buffers.
  void takeClientBatch(int64_t step, int c, int64_t index) {
    ScopedSpan s(m_ctx.spans, SpanKind::Data, step + 1, "client batch");
    BatchSampler& sampler = m_samplers[size_t(c / m_ctx.worldSize)];
    sampler.globalBatch(index, m_batch);
    const std::vector<int>& shard = m_shards[size_t(c)];
    const int D = m_ctx.data->inputDim;
    m_slice = m_globalBatch = int(m_batch.size());
    m_x.resize(size_t(m_slice) * D);
    m_labels.resize(size_t(m_slice));
    for (int i = 0; i < m_slice; ++i) {
      const int sample = shard[size_t(m_batch[size_t(i)])];
      std::memcpy(&m_x[size_t(i) * D], &m_ctx.data->trainX[size_t(sample) * D], sizeof(float) * D);
      m_labels[size_t(i)] = m_ctx.data->trainY[size_t(sample)];
    }
  }

  void resetOptimizer() {
    const int64_t P = m_model->params().numel();
    for (float* state : {m_opt->momentOne(), m_opt->momentTwo()})
      if (state) compute().zero(state, P);
    m_opt->setSteps(0);
  }

  int m_clients;
  double m_participation;
  int m_localSteps;
  std::unique_ptr<Optimizer> m_opt;  // the simulated client's, reset each round
  Tensor m_global, m_sum, m_weight;  // the round's starting model; Σ (n_c/n) θ_c; one weight
  std::vector<std::vector<int>> m_shards;  // every client's sample indices (the same everywhere)
  std::vector<BatchSampler> m_samplers;    // this rank's clients' own mini-batch order
  std::vector<int> m_batch;
};

}  // namespace

std::vector<Setting> fedAvgSettings() {
  return {clientsSetting(), participationSetting(), localStepsSetting(), alphaSetting()};
}

std::unique_ptr<Strategy> makeFedAvg(RankContext& ctx) { return std::make_unique<FedAvg>(ctx); }

}  // namespace paralab
