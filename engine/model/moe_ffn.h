// One block's mixture-of-experts FFN: E expert FFNs (H -> 4H -> GELU -> H) behind a learned
// router, top-k routing, an expert capacity and the Switch load-balancing loss (Shazeer et al.
// 2017; Lepikhin et al. 2020, GShard; Fedus et al. 2021, Switch). The MoE MLP (moe.h) and the
// GPT with --ffn moe (gpt.h) put one in each block where a dense FFN would be: the block adds
// sum_j gate_j expert_j(x) to its residual stream, x the block's normalised rows (tokens).
// Experts may sit on other ranks (expert parallelism, Rajbhandari et al. 2022, DeepSpeed-MoE):
// the layer then moves token rows through an ExpertExchange, written by
// engine/parallel/expert/expert_parallel.cpp. The layer runs on the model's Compute, the CPU or a GPU;
// the routing decisions are made on the host either way (moe_ffn.cpp says why).
// See tests/engine/tst_moe.cpp, tst_cuda_moe.cpp and tst_gpt.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/layers.h"
#include "model/param_set.h"
#include "run_choices.h"

namespace paralab {

struct MoeFfnShape {
  int hidden = 128;  // H: a token row's width
  int experts = 4;   // E
  int topk = 1;      // experts each token is sent to
  // Expert capacity C = ceil(factor x T x k / E) token rows per expert per step, T the tokens
  // of the GLOBAL batch: the same C and the same dropped tokens whether one rank holds every
  // expert or they are spread over ranks.
  double capacityFactor = 1.25;
  double auxLoss = 0;  // alpha of the Switch loss alpha * E * sum_e f_e P_e (0 = off)
  int64_t expertParameterCount() const;  // one expert: H*4H + 4H + 4H*H + H
  int64_t parameterCount() const;        // router and every expert
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
// (a serial model) the layer copies locally.
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

// What a model with MoE blocks shares between them and with the strategy: where its experts
// are, the buffers every block's layer reuses, the step's routing figures, and the exchange
// the strategy gives it (null: a serial model, every expert here).
struct MoeParts {
  MoeFfnShape shape;
  ExpertPlacement placement;
  int blocks = 0;  // L: blocks with an MoE layer
  ExpertExchange* exchange = nullptr;
  MoeStats stats;
  // Ranges [begin, end) of the model's flat buffers: the expert weights, and everything else
  // (expert weights are summed over the expert's replicas, the rest over every replica).
  std::vector<std::pair<int64_t, int64_t>> expertRanges, denseRanges;
  // Workspace grown as the routing needs: rows in flight and gradients.
  struct Workspace {
    Tensor send, recv, rows, wide;  // [rows, H] x 3, [rows, 4H]
    Tensor dtmp, dprobs;            // [tokens, H], [tokens, E]
    Tensor dgate;                   // GPU: [S] gate gradients, copied back for the router
    std::vector<float> dprobsHost;  // GPU: [tokens, E] dprobs made on the host, then uploaded
  } work;
  int localExperts() const { return shape.experts / placement.shards; }
  int firstExpert() const { return placement.shard * localExperts(); }
  // Fills expertRanges and denseRanges from `ps`: weights named "...expertN..." are experts'.
  void findRanges(const ParamSet& ps);
  // Clears the stats for a training step's forward.
  void beginStep() { stats = MoeStats{std::vector<int64_t>(size_t(blocks) * shape.experts, 0)}; }
};

class MoeFfn {
 public:
  // Declares the router and this rank's experts in `ps` (in the current unit), named
  // `name`.router and `name`.expertN.fc1/fc2. std::invalid_argument when the experts do not
  // split evenly over the placement's shards.
  MoeFfn(ParamSet& ps, const std::string& name, MoeParts& parts, int block);
  // Host parameters: the router from `rng`, each expert from a stream of its own drawn from
  // `seed`, so a rank holding experts 2..3 builds exactly the weights the serial model holds
  // for them without drawing the others.
  void init(Rng& rng, uint64_t seed);

  // x: [N, H] this rank's normalised token rows; out: [N, H], holding the residual, gets
  // += sum_j gate_j expert_j(x). train: with the capacity limit and the step's stats; else
  // every choice is kept. Memory of the model's device. N may be 0 (a rank that only runs its
  // experts for others).
  void forward(const float* x, float* out, int N, bool train, MemoryTracker* tracker);
  // dout: [N, H] dLoss/d(out); writes dx: [N, H] dLoss/dx through the experts and the router,
  // and accumulates the layer's parameter gradients. After forward(train = true) on the same x.
  void backward(const float* x, const float* dout, float* dx, MemoryTracker* tracker);
  const BlockRouting& routing() const { return m_acts.route; }
  // Mixed precision (train/precision.h): the experts' hidden and GELU rows and their outputs
  // are rounded to `d` where they are written (their input rows are the block's 16-bit
  // LayerNorm output); the router's probabilities stay fp32, a softmax.
  void storeIn(Dtype d) { m_stored = d; }

 private:
  struct Expert {
    Linear fc1, fc2;
  };
  // The layer's activations and routing plan, kept for backward. Rows: N tokens of this rank,
  // S token choices it sends out, R rows its experts receive. Tensors are memory of the
  // model's device, vectors host memory.
  struct Acts {
    int N = 0;
    // [N, E]: the router's probabilities (CPU: the softmax in place), or its logits (GPU: the
    // softmax runs on their host copy, probsHost).
    Tensor probs;
    Tensor xin, h, g, ycomb;       // [R, H], [R, 4H], [R, 4H] expert side; [S, H] outputs back
    std::vector<float> probsHost;  // GPU: [N, E] router probabilities on the host
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
  const Compute& compute() const { return m_ps->compute(); }
  bool onGpu() const;
  ExpertExchange& exchange();
  float* hostProbs() { return onGpu() ? m_acts.probsHost.data() : m_acts.probs.data(); }
  void uploadPlan(MemoryTracker* tracker);  // GPU: the plan's index arrays and gates up
  void routeAndPlan(int N, bool train, ExpertExchange& ex);
  long receivedRows() const;
  void stored(float* values, int64_t n) const;  // rounded to m_stored (nothing in fp32)

  ParamSet* m_ps;
  MoeParts* m_parts;
  int m_block;
  Linear m_router;
  std::vector<Expert> m_experts;  // the local ones, firstExpert() onwards
  Acts m_acts;
  Dtype m_stored = Dtype::Fp32;
};

}  // namespace paralab
