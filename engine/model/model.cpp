// Which model a run trains (see model.h).
#include "model/model.h"

#include <cstring>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "config.h"
#include "data/dataset.h"
#include "device/compute.h"
#include "model/gpt.h"
#include "model/mlp.h"
#include "model/moe.h"

namespace paralab {

void Model::stored(float* values, int64_t n) const {
  if (m_stored == Dtype::Bf16 || m_stored == Dtype::Fp16)  // on the parameters' device
    m_ps.compute().roundHalf(values, n, m_stored == Dtype::Fp16);
}

// [SECTION] Shards

void Model::resolveShard(ModelShard sh, int units) {
  if (sh.lastUnit < 0) sh.lastUnit = units - 1;
  if (sh.firstUnit < 0 || sh.firstUnit > sh.lastUnit || sh.lastUnit > units - 1)
    throw std::invalid_argument("ModelShard: units " + std::to_string(sh.firstUnit) + ".." +
                                std::to_string(sh.lastUnit) + " outside 0.." +
                                std::to_string(units - 1));
  if (sh.tpSize < 1 || sh.tpRank < 0 || sh.tpRank >= sh.tpSize)
    throw std::invalid_argument("ModelShard: tensor-parallel slice " + std::to_string(sh.tpRank) +
                                " of " + std::to_string(sh.tpSize));
  m_shard = sh;
  m_wholeUnits = units;
}

void Model::sliceFrom(const ParamSet& whole,
                      const std::function<int(const std::string&)>& groupsOf) {
  m_wholeNumel = whole.numel();
  m_slices.clear();
  std::unordered_map<std::string, int> byName;
  for (int j = 0; j < int(whole.refs().size()); ++j) byName[whole.ref(j).name] = j;
  for (const ParamRef& r : m_ps.refs()) {
    const ParamRef& w = whole.ref(byName.at(r.name));
    ParamSlice s{w.shape, w.offset, -1, 0, w.shape.at(0)};
    for (int d = 0; d < int(r.shape.size()); ++d)
      if (r.shape[size_t(d)] != w.shape[size_t(d)]) {  // the cut dimension: slice tpRank of it
        s.dim = d;
        s.groups = groupsOf(r.name);
        const int64_t part = r.shape[size_t(d)] / s.groups;
        s.begin = m_shard.tpRank * part;
        s.end = s.begin + part;
      }
    m_slices.push_back(s);
  }
}

void Model::takeSlicesOf(ParamSet& whole) {
  const Compute& compute = m_ps.compute();
  if (!compute.onGpu()) {
    copySlices(whole.params().data(), false);
    return;
  }
  std::vector<float> mine(size_t(m_ps.numel()));  // on a GPU: cut on the host, then uploaded
  copySlices(whole.params().data(), false, true, mine.data());
  compute.upload(m_ps.params().data(), mine.data(), m_ps.numel());
  compute.sync();  // `mine` goes when this returns
}

void Model::copySlices(float* wholeFlat, bool toWhole, bool replicatedToo, float* shardFlat) {
  if (m_ps.compute().onGpu() && !shardFlat)
    throw std::logic_error("Model::copySlices works on host buffers: on a GPU pass shardFlat");
  for (int i = 0; i < int(m_slices.size()); ++i) {
    const ParamSlice& s = m_slices[size_t(i)];
    float* mine = shardFlat ? shardFlat + m_ps.ref(i).offset : m_ps.param(i);
    if (!mine || (toWhole && s.dim < 0 && !replicatedToo)) continue;
    float* whole = wholeFlat + s.wholeOffset;
    const int64_t numel = numelOf(s.whole);
    // Contiguous runs: the whole weight (dim -1), a block of rows of each part (dim 0), or a
    // piece of each row's parts (dim 1 of a matrix).
    int64_t runs = 1, run = numel, at = 0, stride = 0;
    if (s.dim == 0) {
      const int64_t row = numel / s.whole[0];
      runs = s.groups;
      run = (s.end - s.begin) * row;
      at = s.begin * row;
      stride = s.whole[0] / s.groups * row;
    } else if (s.dim == 1) {
      runs = s.whole[0] * s.groups;
      run = s.end - s.begin;
      at = s.begin;
      stride = s.whole[1] / s.groups;
    }
    for (int64_t k = 0; k < runs; ++k) {
      float* a = mine + k * run;
      float* b = whole + at + k * stride;
      if (toWhole) std::memcpy(b, a, sizeof(float) * size_t(run));
      else std::memcpy(a, b, sizeof(float) * size_t(run));
    }
  }
}

// [SECTION] The run's model

namespace {
MoeFfnShape moeFfnShape(const RunConfig& c) {
  return {c.hidden, c.experts, c.topk, c.capacityFactor, c.auxLoss};
}
GptShape gptShape(const RunConfig& c, const Dataset& d) {
  GptShape s{d.classes, c.seq, c.hidden, c.layers, c.heads};
  if (c.hasExperts()) s.moe = moeFfnShape(c);
  return s;
}
MoeShape moeShape(const RunConfig& c, const Dataset& d) {
  return {d.inputDim, c.hidden,  c.layers,          d.classes,
          c.experts,  c.topk,    c.capacityFactor,  c.auxLoss};
}
MlpShape mlpShape(const RunConfig& c, const Dataset& d) {
  return {d.inputDim, c.hidden, c.layers, d.classes};
}
}  // namespace

std::unique_ptr<Model> makeModel(const RunConfig& config, const Dataset& data,
                                 MemoryTracker* tracker, const Compute* compute,
                                 const ModelShard& shard, bool initialise) {
  if (config.model == ModelKind::Gpt)
    return std::make_unique<Gpt>(gptShape(config, data), config.seed, tracker, compute,
                                 config.recompute, shard, initialise);
  if (config.model == ModelKind::Mlp)
    return std::make_unique<Mlp>(mlpShape(config, data), config.seed, tracker, shard, initialise,
                                 compute);
  if (config.model == ModelKind::Moe) {
    // Its own shards are the experts' placement; its weights are always drawn (it is never
    // built to be filled).
    if (shard.tpSize != 1 || shard.firstUnit != 0 || shard.lastUnit >= 0)
      throw std::invalid_argument("model: --model moe is cut over experts only");
    return std::make_unique<Moe>(moeShape(config, data), config.seed, tracker,
                                 ExpertPlacement{shard.epSize, shard.epRank}, compute);
  }
  throw std::invalid_argument("model: " + nameOf(config.model) + " is not one of mlp, moe, gpt");
}

int64_t parameterCountOf(const RunConfig& config, const Dataset& data) {
  if (config.model == ModelKind::Gpt) return gptShape(config, data).parameterCount();
  if (config.model == ModelKind::Moe) return moeShape(config, data).parameterCount();
  return mlpShape(config, data).parameterCount();
}

double modelFlopsPerSample(const RunConfig& config, const Dataset& data) {
  double P = double(parameterCountOf(config, data));
  if (config.hasExperts())  // a token runs its top-k experts, not the other E - k
    P -= double(config.layers) * double(config.experts - config.topk) *
         double(moeFfnShape(config).expertParameterCount());
  if (config.model == ModelKind::Gpt) {
    const double T = config.seq, attention = 12.0 * config.layers * config.hidden * T;
    return T * (6 * P + attention);
  }
  return 6 * P;
}

}  // namespace paralab
