// The mixture-of-experts MLP (--model moe): the residual MLP of mlp.h with each block's FFN
// replaced by E expert FFNs behind a learned router — x + MoE(LN(x)), top-k routing, an expert
// capacity, the Switch load-balancing loss (Shazeer et al. 2017; Lepikhin et al. 2020, GShard;
// Fedus et al. 2021, Switch). Experts may sit on other ranks (expert parallelism, Rajbhandari
// et al. 2022, DeepSpeed-MoE): the model then moves token rows through an ExpertExchange,
// written by engine/parallel/expert_parallel.cpp. The model runs on the rank's Compute, the CPU
// or a GPU; the routing decisions are made on the host either way (moe.cpp says why).
// See tests/engine/tst_moe.cpp and tst_cuda_moe.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include "model/layers.h"
#include "model/mlp.h"  // UnitHooks
#include "model/param_set.h"

namespace paralab {

struct MoeShape {
  int input = 784;
  int hidden = 128;
  int layers = 2;
  int classes = 10;
  int experts = 4;
  int topk = 1;
  // Expert capacity C = ceil(factor x T x k / E) token rows per expert per step, T the tokens of
  // the GLOBAL batch (one sample is one token here): the same C and the same dropped tokens
  // whether one rank holds every expert or they are spread over ranks.
  double capacityFactor = 1.25;
  double auxLoss = 0;  // alpha of the Switch loss alpha * E * sum_e f_e P_e (0 = off)
  int64_t expertParameterCount() const;  // one expert: H*4H + 4H + 4H*H + H
  int64_t parameterCount() const;        // the whole model, every expert of every block
};

// Which experts this rank holds: the `shard`-th of `shards` equal runs of 0..E-1.
struct ExpertPlacement {
  int shards = 1;
  int shard = 0;
};

// Where this rank's tokens and experts sit among the ranks (from the strategy's ProcessGrid).
struct ExpertTopology {
  int tokenRanks = 1;  // ranks whose tokens share the experts' capacity (the dp group)
  int tokenRank = 0;   // this rank's place in the global token order (its dp index)
  // The token rank of each member q of this rank's expert-parallel group; member q holds
  // experts [q E/G, (q+1) E/G).
  std::vector<int> epTokenRanks = {0};
};

// The communication of an MoE layer; the strategy implements it with collectives. Without one
// (a serial model) the model copies locally.
class ExpertExchange {
 public:
  virtual ~ExpertExchange() = default;
  virtual const ExpertTopology& topology() const = 0;
  // Every token rank's `n` routing counts: `all` gets tokenRanks blocks of n, in token order.
  // Host memory (the routing plan is made on the host).
  virtual void gatherCounts(const float* mine, float* all, int n) = 0;
  // Rows of `width` floats: sendRows[q] rows to EP member q, recvRows[q] from it, packed in
  // member order (send[q] on one rank is recv[that rank] on q). Memory of the model's device,
  // written by work still queued on its stream: the exchange waits for it first.
  virtual void exchangeRows(const float* send, const std::vector<int64_t>& sendRows, float* recv,
                            const std::vector<int64_t>& recvRows, int width) = 0;
};

// What the last training forward routed, for the metrics (this rank's share of each figure:
// summed over ranks they give the step's totals).
struct MoeStats {
  std::vector<int64_t> routed;  // [L x E] this rank's token choices per expert, before capacity
  int64_t dropped = 0;          // of those, dropped over capacity (all blocks)
  int64_t processed = 0;        // token rows this rank's experts ran (all blocks, forward)
  double auxLoss = 0;           // this rank's part of the load-balancing loss (nats)
};

// One block's routing of this rank's tokens, [tokens x k] row-major.
struct BlockRouting {
  std::vector<int> choice;    // expert of each (token, choice), best first
  std::vector<float> gate;    // its combine weight
  std::vector<uint8_t> kept;  // 0: dropped over capacity
  int64_t capacity = 0;       // C of this step
};

class Moe {
 public:
  // `compute`: where the model runs and with which GEMM (null: Compute::host()). x and labels
  // of the calls below are host memory, uploaded per call on a GPU.
  Moe(const MoeShape& shape, uint64_t seed, MemoryTracker* tracker, ExpertPlacement placement = {},
      const Compute* compute = nullptr);

  // As Mlp::forwardLoss: the SUM of the per-sample cross-entropies; gradients of backward()
  // are scaled by 1 / `normalizer` (the global batch). The load-balancing loss is in stats().
  double forwardLoss(const float* x, const int* labels, int batch, double normalizer,
                     UnitHooks* hooks = nullptr, ExpertExchange* exchange = nullptr);
  // Accumulates (+=) parameter gradients of the last forwardLoss (cross-entropy + aux loss).
  void backward(UnitHooks* hooks = nullptr, ExpertExchange* exchange = nullptr);
  // Arg-max predictions that match; routes without a capacity limit (nothing dropped).
  int countCorrect(const float* x, const int* labels, int batch, UnitHooks* hooks = nullptr,
                   ExpertExchange* exchange = nullptr);

  int numUnits() const { return int(m_blocks.size()) + 2; }  // in_proj, blocks, classifier
  ParamSet& params() { return m_ps; }
  const MoeShape& shape() const { return m_shape; }
  const ExpertPlacement& placement() const { return m_place; }
  int localExperts() const { return m_shape.experts / m_place.shards; }
  int firstExpert() const { return m_place.shard * localExperts(); }
  // Ranges [begin, end) of the flat buffers: the expert weights, and everything else.
  const std::vector<std::pair<int64_t, int64_t>>& expertRanges() const { return m_expertRanges; }
  const std::vector<std::pair<int64_t, int64_t>>& denseRanges() const { return m_denseRanges; }
  const MoeStats& stats() const { return m_stats; }
  const BlockRouting& routing(int block) const { return m_acts.blocks.at(size_t(block)).route; }

 private:
  struct Expert {
    Linear fc1, fc2;
  };
  struct Block {
    LayerNorm ln;
    Linear router;
    std::vector<Expert> experts;  // the local ones, firstExpert() onwards
  };
  // A block's activations and its routing plan, kept for backward. Rows: B tokens of this
  // rank, S token choices it sends out, R rows its experts receive. Tensors are memory of the
  // model's device, vectors host memory.
  struct BlockActs {
    // [B, H], [B], [B], [B, E]; probs: the router's probabilities (CPU: the softmax in place),
    // or its logits (GPU: the softmax runs on their host copy, probsHost).
    Tensor ln, mean, rstd, probs;
    Tensor xin, h, g, ycomb;       // [R, H], [R, 4H], [R, 4H] expert side; [S, H] outputs back
    std::vector<float> probsHost;  // GPU: [B, E] router probabilities on the host
    // GPU: the plan's sendTok, sendGate, perm and unperm uploaded for the row kernels.
    Tensor tokDev, gateDev, permDev, unpermDev;
    BlockRouting route;
    std::vector<int> sendTok;       // token of each sent row (expert order, then choice, token)
    std::vector<float> sendGate;    // its gate
    std::vector<int> sendSlot;      // its (token, choice) slot
    std::vector<int> perm, unperm;  // expert-major row i <- received row perm[i]; and back
    std::vector<int64_t> sendRows, recvRows;  // per EP member
    std::vector<int> expertRows;              // rows of each local expert, expert-major
    std::vector<float> f;  // fraction of the step's token choices per expert (aux loss)
    double tokens = 0;     // T, tokens of the global batch
  };
  struct Acts {
    int capacity = 0;
    Tensor x;               // [B, input]
    std::vector<Tensor> a;  // residual stream a[0..L], [B, H]
    Tensor logits, dlogits;
    std::vector<BlockActs> blocks;
    // Workspace, grown as the routing needs: rows in flight and gradients.
    Tensor send, recv, rows, wide;  // [rows, H] x 3, [rows, 4H]
    Tensor da, dln, dtmp, dprobs;   // [B, H] x 3, [B, E]
    Tensor labels;                  // GPU: [B] int32 labels, kept in a float tensor's bytes
    Tensor dgate;                   // GPU: [S] gate gradients, copied back for the router
    std::vector<float> dprobsHost;  // GPU: [B, E] dprobs made on the host, then uploaded
  };
  bool onGpu() const;
  void ensureCapacity(int batch);
  void grow(Tensor& t, int64_t rows, int64_t cols, MemCategory category);
  float* hostProbs(BlockActs& A);  // the router's probabilities [B, E] where the host reads them
  void uploadPlan(BlockActs& A);   // GPU: the plan's index arrays and gates to the device
  const int* labelsHere(const int* labels, int batch);  // on the model's device
  void forwardTo(const float* x, int batch, bool train, UnitHooks* hooks, ExpertExchange& ex);
  void blockForward(int l, int batch, bool train, ExpertExchange& ex);
  void blockBackward(int l, ExpertExchange& ex);
  void routeAndPlan(int l, int batch, bool train, ExpertExchange& ex);

  MoeShape m_shape;
  ExpertPlacement m_place;
  MemoryTracker* m_tracker;
  const Compute* m_compute;
  ParamSet m_ps;
  Linear m_in;
  std::vector<Block> m_blocks;
  Linear m_cls;
  Acts m_acts;
  MoeStats m_stats;
  int m_batch = 0;
  std::vector<std::pair<int64_t, int64_t>> m_expertRanges, m_denseRanges;
};

}  // namespace paralab
