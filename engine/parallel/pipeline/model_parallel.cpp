// Model parallelism composed with data parallelism (`--dp D --tp T --pp P [--sp] [--zero Z]`):
// every rank holds one pipeline stage's slice of the model (--virtual-stages V: V chunks of it,
// blocks far apart; --schedule zb-v: two, in a V), tensor-parallel within the stage, and runs its
// dp replica's slice of the global batch through the stage in micro-batches.
// Try: paralab-run --dp 2 --tp 2 --pp 2 --layers 4 --microbatches 4 --json
// The model is the MLP or the GPT: each rank builds its shard (model.h) and runs it through
// the model's Stage (stage.h: tensor_parallel.cpp, gpt_parallel.cpp); everything here is the
// same for both. See tests/engine/tst_model_parallel.cpp, tst_gpt.cpp and tst_holdings.cpp.
//
// Ranks sit in ProcessGrid's pp x dp x cp x tp mesh (process_grid.h, the only place the layout
// is). Context parallelism (--cp, the GPT only): the cp ranks of a dp index take the same slice
// of the batch, each its pieces of every window's tokens (ring_attention.h); their gradients
// are shares over tokens, so the dp sum below runs over dp x cp.
// Per step, the collectives, in order:
//   1. the stage's list of the pipeline schedule (schedule.h) over micro-batches, executed in
//      order, with point-to-point send/recv to the neighbouring stages on the pp group, and the
//      tensor-parallel exchanges inside each stage's forward and backward on the tp group
//      (tensor_parallel.cpp);
//   2. data parallelism over the dp group: each chunk's gradients summed by its GradSync
//      (grad_sync.cpp) as --zero and --dp-version say: all-reduce (per tensor, or buckets started
//      during the last micro-batch's backward), or ZeRO-1/2/3's reduce-scatter (stages 2-3 per
//      unit and micro-batch during backward, stage 3 gathering each unit before it runs);
//   3. SP only: one all-reduce of each block's LayerNorm gradients over tp (where the rank
//      holds their sum over dp: all of them, or with ZeRO its owned chunk's share);
//   4. the optimizer on what the rank holds (ZeRO-1/2: the parameters all-gathered after it).
// The loss: each micro-batch's loss is computed on the stage holding the last virtual stage (the
// last stage; stage 0 in a V), counted by its tp rank 0 only (the others computed the same
// numbers), so the trainer's sum counts each sample once.
// With --device cuda the shard's parameters, gradients, optimizer state, activations and
// messages are device memory of the rank's Compute; the batch rows stay on the host and are
// uploaded per micro-batch. Every collective and send/recv is given that device and waits for
// the rank's stream first (ready()): the communicator works on its own stream.
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "comm/communicator.h"
#include "device/compute.h"
#include "model/gpt.h"
#include "parallel/data/accumulation.h"
#include "parallel/data/grad_sync.h"
#include "parallel/data/replica.h"  // shardBegin, shardLen
#include "parallel/pipeline/pipeline.h"
#include "parallel/pipeline/schedule_file.h"
#include "parallel/pipeline/stage.h"
#include "parallel/process_grid.h"
#include "parallel/tensor/gpt_parallel.h"
#include "train/precision.h"

namespace paralab {

namespace {

// One model chunk this rank holds (--virtual-stages V; one without): virtual stage c·P + s of
// P·V for chunk c on pipeline stage s, as Megatron-LM places them (Narayanan et al. 2021
// §2.2.2), so a stage's chunks are blocks far apart and a micro-batch leaving the last stage's
// chunk c enters stage 0's chunk c + 1; or as the schedule's row places them (zb-v: s and
// 2P - 1 - s, schedule.h). Each chunk is a shard with its own Stage and its own gradient sync
// over dp (ZeRO shards each chunk's units on their own).
struct Chunk {
  std::unique_ptr<Model> model;  // its units, its tp slice
  std::unique_ptr<Stage> stage;
  std::unique_ptr<GradSync> sync;  // over dp (x cp): the gradient sum, the optimizer, ZeRO
  std::vector<std::unique_ptr<MicroActs>> pool;  // activation buffers not in use
  int virtualStage = 0;
  PipeSeat next, prev;  // where virtual stages v + 1 and v - 1 sit; stage -1: none
  // --precision bf16|fp16: each micro-batch's weight gradients rounded apart from their fp32
  // sum (MixedPrecision::Hooks; ZeRO-2/3's buffers start at zero anyway), around `sync`.
  std::unique_ptr<MixedPrecision::Hooks> rounding;
  UnitHooks* hooks() const {
    return rounding ? static_cast<UnitHooks*>(rounding.get()) : static_cast<UnitHooks*>(sync.get());
  }
};

class ModelParallel final : public Strategy {
 public:
  explicit ModelParallel(RankContext& ctx)
      : m_ctx(ctx),
        m_grid(GridShape{ctx.config->dpDegree(), ctx.config->tp, ctx.config->pp, 1, ctx.config->cp},
               *ctx.comm),
        m_micros(ctx.config->microbatches),
        m_precision(*ctx.config) {
    ensureCompute(m_ctx, m_ownCompute);
    const RunConfig& c = *ctx.config;
    // Mixed precision (train/precision.h): 16-bit parameters and activations counted at 2 bytes.
    countStoredBytes(ctx.memory, c.precision);
    m_precision.runOn(compute());  // gradients rounded, unscaled and checked on the rank's device
    const GridCoords& at = m_grid.coords();
    const int P = c.pp, s = at.pp, L = c.layers, V = pipelineChunks(c.schedule, P, c.virtualStages);
    const PipePlacement place = pipelinePlacement(c.schedule);
    // Data parallelism: the stage's weights have a replica on every rank of the dp group (x cp).
    GradSyncSettings sync = GradSyncSettings::of(c);
    sync.callsDuringBackward = true;  // tp exchanges and pp messages
    for (int k = 0; k < V; ++k) {
      // Virtual stage v: blocks [b0, b1), balanced; the input layer on the first, the output
      // layer on the last (units: 0 = input, 1..L = blocks, L+1 = output).
      const int v = place(s, k, P), b0 = int(shardBegin(v, P * V, L)),
                b1 = int(shardBegin(v + 1, P * V, L));
      Chunk& ch = m_chunks.emplace_back();
      ch.virtualStage = v;
      // Its neighbours in the model's order: a stage, or this one (a hand-over between chunks).
      if (const auto next = pipeSeat(place, v + 1, P, V)) ch.next = *next;
      if (const auto prev = pipeSeat(place, v - 1, P, V)) ch.prev = *prev;
      // This chunk's shard, on the rank's device (drawn whole on the host, its slices kept).
      ch.model =
          makeModel(c, *ctx.data, ctx.memory, &compute(),
                    ModelShard{at.tp, c.tp, v == 0 ? 0 : b0 + 1, v == P * V - 1 ? L + 1 : b1});
      ch.stage = makeStage(*ch.model, m_grid.tp(), c.sp, compute(), ctx.memory, ctx.spans,
                           m_grid.cp(), c.cpOrder == CpOrder::Zigzag, c.cpKind);
      if (auto* pair = dynamic_cast<ColumnRowStage*>(ch.stage.get()))
        pair->setTpOverlap(c.tpOverlap);  // tensor/tp_overlap.cpp
      if (m_precision.active()) {  // the shard's initial weights rounded into their 16-bit store
        ch.model->storeActivationsIn(c.precision);
        ch.stage->storeActivationsIn(c.precision);
        roundStored(compute(), c.precision, ch.model->params().params().data(),
                    ch.model->params().numel());
      }
      ch.sync = std::make_unique<GradSync>(
          ch.model->params(),
          std::vector<SyncGroup>{{&m_grid.replicas(), c.cp > 1 ? "dp-cp" : "dp"}},
          std::vector<SyncRange>{}, sync, compute(), ctx.memory, ctx.spans);
      if (m_precision.active())
        ch.rounding = std::make_unique<MixedPrecision::Hooks>(m_precision, ch.model->params(),
                                                              ch.sync.get(), ctx.memory);
    }
    m_schedule = pipelineSteps(  // a row of the table or a file (schedule_file.h)
        c.schedule, PipeShape{.stage = s, .stages = P, .micros = m_micros, .chunks = V});
    for (const PipeStep& p : m_schedule)
      if (p.chunk < 0 || p.chunk >= V)
        throw std::invalid_argument("schedule: a chunk this stage lacks");
    // A schedule that runs B and W apart: each micro-batch's buffers keep what W reads.
    const bool split = std::any_of(m_schedule.begin(), m_schedule.end(), [](const PipeStep& p) {
      return p.action == PipeAction::BackwardInput;
    });
    for (Chunk& ch : m_chunks) ch.stage->splitBackward(split);
  }

  // --accumulate K (accumulation.h): the schedule runs once per accumulation micro-batch, each
  // cut into its own M pipeline micro-batches; the gradients of all K x M add up before 2.
  RankStep step(int64_t step, const std::vector<int>& globalBatch) override {
    const int K = m_ctx.config->accumulate;
    for (Chunk& ch : m_chunks)
      ch.sync->beginStep(step, K * m_micros);  // each unit's backward runs once per micro-batch
    double loss = 0;
    int samples = 0;
    for (int k = 0; k < K; ++k) {
      takeSlice(step, microBatchOf(globalBatch, k, K), int(globalBatch.size()));
      loss += runSchedule(step);  // 1. (and 2. begun: buckets, ZeRO-2/3)
      samples += m_slice;
    }
    for (Chunk& ch : m_chunks) ch.sync->reduce();  // 2.
    for (Chunk& ch : m_chunks) ch.stage->finishBackward(*ch.sync);  // 3.
    // Mixed precision: the summed gradients divided by the loss scale and checked; an inf or
    // NaN on any rank skips the update on every rank (one all-reduce over the world, as
    // Megatron's found_inf is reduced over the model-parallel and data-parallel groups).
    std::vector<HeldGradients> held;
    for (Chunk& ch : m_chunks)
      for (const HeldGradients& h : ch.sync->heldGradients(0, ch.model->params().numel()))
        held.push_back(h);
    if (m_precision.finishGradients(held, m_ctx.comm))
      for (Chunk& ch : m_chunks) ch.sync->update();  // 4.
    RankStep out;
    m_precision.report(out);
    if (reportsLoss()) {
      out.lossSum = loss;  // cp: this rank's tokens' share of its windows' losses
      out.samples = m_grid.coords().cp == 0 ? samples : 0;  // each window counted once
    }
    return out;
  }

  // Collective over the world: the whole model on rank 0 (GradSync::sumToRoot, every chunk's
  // slices in one sum), run there on the rank's device.
  Model& beginEval() override {
    const int64_t P = wholeNumel();
    m_evalBuffer = compute().tensor({P}, MemCategory::Comm, m_ctx.memory);
    std::vector<std::vector<float>> locals;
    for (Chunk& ch : m_chunks) locals.push_back(ch.sync->hostParams());
    m_chunks.front().sync->sumToRoot(
        *m_ctx.comm, locals.front(),
        [&](const auto&, auto& serial) {
          for (size_t k = 0; k < m_chunks.size(); ++k) toSerial(m_chunks[k], locals[k], serial);
        },
        m_evalBuffer);
    if (m_ctx.rank != 0) return *m_chunks.front().model;  // evaluation runs on rank 0 only
    m_eval = makeModel(*m_ctx.config, *m_ctx.data, m_ctx.memory, &compute(), {}, false);
    m_eval->storeActivationsIn(m_precision.dtype());  // evaluated as the serial model is
    compute().copy(m_eval->params().params().data(), m_evalBuffer.data(), P);
    return *m_eval;
  }
  void endEval() override {
    m_eval.reset();
    m_evalBuffer = Tensor();
  }

  RankHoldings holdings() const override;
  // The activations chunk `ch` keeps of this dp replica's rows [begin, begin + len) of B, each
  // item's name after `tag`.
  void chunkActivations(RankHoldings& h, const Chunk& ch, const std::string& tag, int64_t begin,
                        int64_t len, int64_t B) const;

  // Live reconfiguration through the serial layout (GradSync::save and load): each chunk's
  // slices, from dp replica 0 (replicated weights from tp rank 0 only); the chunks' serial
  // vectors hold disjoint parts (zeros elsewhere), so rank 0 adds them up.
  void saveState(TrainingState& state) override {
    for (size_t k = 0; k < m_chunks.size(); ++k) {
      Chunk& ch = m_chunks[k];
      TrainingState part;
      ch.sync->save(part, *m_ctx.comm, wholeNumel(),
                    [&](const auto& local, auto& serial) { toSerial(ch, local, serial); });
      if (m_ctx.comm->rank() != 0) continue;  // the state is rank 0's to write
      if (k == 0) {
        state.params = std::move(part.params);
        state.optM = std::move(part.optM);
        state.optV = std::move(part.optV);
        state.optimizerSteps = part.optimizerSteps;
        continue;
      }
      const auto add = [](std::vector<float>& to, const std::vector<float>& from) {
        for (size_t i = 0; i < std::min(to.size(), from.size()); ++i) to[i] += from[i];
      };
      add(state.params, part.params);
      add(state.optM, part.optM);
      add(state.optV, part.optV);
    }
  }
  void loadState(const TrainingState& state) override {
    for (Chunk& ch : m_chunks)
      ch.sync->load(
          state, wholeNumel(), [&](const std::vector<float>& serial, std::vector<float>& local) {
            ch.model->copySlices(const_cast<float*>(serial.data()), false, true, local.data());
          });
  }

 private:
  Compute& compute() { return *m_ctx.compute; }
  // The device of this rank's buffers, as collectives take it.
  Device device() const { return m_ctx.compute->device(); }
  // Before a collective or send/recv on this rank's buffers: the kernels that wrote them are
  // done and none still reads what the communicator, on its own stream, is about to write
  // (a pooled buffer's last backward, a new tensor's zero fill). Nothing to wait for on a CPU.
  void ready() { compute().sync(); }
  int64_t wholeNumel() const { return m_chunks.front().model->wholeNumel(); }
  bool reportsLoss() const {
    return std::any_of(m_chunks.begin(), m_chunks.end(),
                       [](const Chunk& ch) { return ch.stage->reportsLoss(); });
  }
  bool readsInputs() const {
    return std::any_of(m_chunks.begin(), m_chunks.end(),
                       [](const Chunk& ch) { return ch.stage->readsInputs(); });
  }

  // The whole model's flat layout of `local` (laid out like the chunk's parameters), from the
  // dp-0, cp-0 ranks (replicated weights from tp rank 0 only, so each float comes from one rank).
  void toSerial(const Chunk& ch, const std::vector<float>& local, std::vector<float>& serial) {
    if (m_grid.coords().dp == 0 && m_grid.coords().cp == 0)
      ch.model->copySlices(serial.data(), true, m_grid.coords().tp == 0,
                           const_cast<float*>(local.data()));
  }

  // This dp replica's slice of `globalBatch` (an accumulation micro-batch of it with
  // --accumulate; each sample's loss divided by `lossOver`, the global batch); micro-batch m is
  // chunk m of the slice.
  void takeSlice(int64_t step, const std::vector<int>& globalBatch, int lossOver) {
    ScopedSpan s(m_ctx.spans, SpanKind::Data, step + 1, "take batch slice");
    const int D = m_grid.shape().dp, d = m_grid.coords().dp;
    const int n = int(globalBatch.size());
    m_globalBatch = lossOver;
    m_sliceBegin = int(shardBegin(d, D, n));
    m_slice = int(shardLen(d, D, n));
    const int Dim = m_ctx.data->inputDim;
    m_x.resize(readsInputs() ? size_t(m_slice) * Dim : 0);
    m_labels.resize(size_t(m_slice));
    for (int i = 0; i < m_slice; ++i) {
      const int sample = globalBatch[size_t(m_sliceBegin + i)];
      if (!m_x.empty())
        std::memcpy(&m_x[size_t(i) * Dim], &m_ctx.data->trainX[size_t(sample) * Dim],
                    sizeof(float) * Dim);
      m_labels[size_t(i)] = m_ctx.data->trainY[size_t(sample)];
    }
  }
  int microBegin(int m) const { return int(shardBegin(m, m_micros, m_slice)); }
  int microRows(int m) const { return int(shardLen(m, m_micros, m_slice)); }

  // A boundary gradient buffer (Workspace) of the largest micro-batch: one received and one to
  // send suffice while each is used before the next backward (GPipe, 1F1B); a schedule that
  // holds more gets more, kept for the next step.
  Tensor takeGrad(int64_t most) {
    if (m_gradFree.empty()) return compute().tensor({most}, MemCategory::Workspace, m_ctx.memory);
    Tensor t = std::move(m_gradFree.back());
    m_gradFree.pop_back();
    return t;
  }

  // 1. The pipeline: the schedule's actions in order; a micro-batch's activations on a chunk
  // live from its forward to its backward (split: to its W, which reads what its B kept), its
  // gradients from their receive (or backward, B) to their backward (B) (or send).
  double runSchedule(int64_t step) {
    Communicator& pp = m_grid.pp();
    const int s = m_grid.coords().pp, V = int(m_chunks.size());
    // The neighbours are the chunk's next and previous virtual stages (schedule_play.cpp pairs
    // them alike); one on this stage is handed over without a transfer, as no bytes: the
    // activations copied into the next chunk's input at its forward, the gradient passed on.
    const auto here = [&](const PipeSeat& seat) { return seat.stage == s; };
    std::vector<std::unique_ptr<MicroActs>> live(size_t(V) * m_micros);
    std::vector<Tensor> dOut(live.size()), dIn(live.size());
    double loss = 0;
    // A micro-batch's buffers come from its chunk's pool and go back after its backward: the
    // pool grows to the most micro-batches in flight (GPipe M, 1F1B at most P - stage), sized
    // for the largest, and stays for the next step as the serial model's activations do.
    const int largest = (m_slice + m_micros - 1) / m_micros;
    for (Chunk& ch : m_chunks)
      if (!ch.pool.empty() && ch.pool.front()->capacity < largest) ch.pool.clear();
    auto acquire = [&](Chunk& ch, int m, int rows) {
      if (ch.pool.empty()) ch.pool.push_back(ch.stage->allocate(m, largest, m_ctx.memory));
      std::unique_ptr<MicroActs> a = std::move(ch.pool.back());
      ch.pool.pop_back();
      ch.stage->reuse(*a, m, rows);
      return a;
    };
    const int64_t most = m_chunks.front().stage->boundaryFloats(largest);
    if (m_gradFloats < most) {
      m_gradFree.clear();
      m_gradFloats = most;
      for (int k = 0; k < 2; ++k) m_gradFree.push_back(takeGrad(most));
    }
    for (const PipeStep& p : m_schedule) {
      const int m = p.micro, rows = microRows(m), c = p.chunk;
      Chunk& ch = m_chunks[size_t(c)];
      const int64_t n = ch.stage->boundaryFloats(rows);
      const size_t at = size_t(c) * m_micros + m;
      std::unique_ptr<MicroActs>& acts = live[at];
      switch (p.action) {
        case PipeAction::RecvAct:
          acts = acquire(ch, m, rows);
          ready();
          pp.recv(ch.stage->input(*acts), n, ch.prev.stage, device());
          break;
        case PipeAction::Forward: {
          if (!acts) acts = acquire(ch, m, rows);
          if (here(ch.prev)) {
            const Chunk& from = m_chunks[size_t(ch.prev.chunk)];
            compute().copy(ch.stage->input(*acts),
                           from.stage->output(*live[size_t(ch.prev.chunk) * m_micros + m]), n);
          }
          const int first = microBegin(m);
          loss += ch.stage->forward(
              step, *acts, m_x.empty() ? nullptr : &m_x[size_t(first) * m_ctx.data->inputDim],
              &m_labels[size_t(first)], m_precision.normalizer(m_globalBatch), ch.hooks());
          break;
        }
        case PipeAction::SendAct:
          ready();
          pp.send(ch.stage->output(*acts), n, ch.next.stage, device());
          break;
        case PipeAction::RecvGrad:
          dOut[at] = takeGrad(most);
          ready();  // the last backward has read this buffer
          pp.recv(dOut[at].data(), n, ch.next.stage, device());
          break;
        case PipeAction::Backward:
        case PipeAction::BackwardInput: {
          // The last virtual stage receives no gradient; the first sends none.
          if (dOut[at].numel() == 0) dOut[at] = takeGrad(most);
          dIn[at] = takeGrad(most);
          // The gradient hooks (buckets, ZeRO-2/3's reduce-scatter) fire in the backward, or
          // in W: B makes no weight gradient.
          if (p.action == PipeAction::Backward) {
            ch.stage->backward(step, *acts, dOut[at].data(), dIn[at].data(), ch.hooks());
            ch.pool.push_back(std::move(acts));  // 1F1B reuses it next; GPipe holds M
          } else {
            ch.stage->backwardInput(step, *acts, dOut[at].data(), dIn[at].data(), ch.hooks());
          }
          m_gradFree.push_back(std::move(dOut[at]));
          dOut[at] = Tensor();
          if (ch.virtualStage == 0) {
            m_gradFree.push_back(std::move(dIn[at]));
            dIn[at] = Tensor();
          } else if (here(ch.prev)) {  // the previous chunk's output gradient, on this stage
            const size_t to = size_t(ch.prev.chunk) * m_micros + m;
            if (dOut[to].numel() > 0) m_gradFree.push_back(std::move(dOut[to]));
            dOut[to] = std::move(dIn[at]);
            dIn[at] = Tensor();
          }
          break;
        }
        case PipeAction::SendGrad:
          ready();
          pp.send(dIn[at].data(), n, ch.prev.stage, device());
          m_gradFree.push_back(std::move(dIn[at]));
          dIn[at] = Tensor();
          break;
        case PipeAction::BackwardWeight:
          if (!acts) throw std::logic_error("model-parallel: a W before its B");
          ch.stage->backwardWeight(step, *acts, ch.hooks());
          ch.pool.push_back(std::move(acts));
          break;
      }
    }
    return loss;
  }

  std::unique_ptr<Compute> m_ownCompute;  // when the context brought none; outlives the rest
  RankContext m_ctx;
  mutable ProcessGrid m_grid;  // mutable: its group accessors are not const
  int m_micros;
  MixedPrecision m_precision;   // --precision bf16|fp16: loss scale, gradient rounding, counts
  std::vector<Chunk> m_chunks;  // chunk c: virtual stage place(s, c, P) (one without chunks)
  std::vector<PipeStep> m_schedule;
  int m_globalBatch = 0, m_sliceBegin = 0, m_slice = 0;
  std::vector<float> m_x;          // host: this dp replica's input rows, uploaded per micro-batch
  std::vector<int> m_labels;       // host: their labels
  std::vector<Tensor> m_gradFree;  // boundary gradient buffers not in use (Workspace)
  int64_t m_gradFloats = 0;        // their size
  std::unique_ptr<Model> m_eval;
  Tensor m_evalBuffer;
};

// [SECTION] What this rank holds, from the shard's own metadata.
RankHoldings ModelParallel::holdings() const {
  RankHoldings h;
  h.rank = m_ctx.rank;
  h.coords = m_grid.coords();
  for (auto [name, comm] : {std::pair<const char*, Communicator*>{"dp", &m_grid.dp()},
                            {"tp", &m_grid.tp()},
                            {"pp", &m_grid.pp()}}) {
    HeldGroup g{name, {}};
    for (int i = 0; i < comm->size(); ++i) g.worldRanks.push_back(comm->worldRankOf(i));
    h.groups.push_back(g);
  }
  if (Communicator* cp = m_grid.cp()) {
    HeldGroup g{"cp", {}};
    for (int i = 0; i < cp->size(); ++i) g.worldRanks.push_back(cp->worldRankOf(i));
    h.groups.push_back(g);
  }
  // The weights as this rank's slices of the whole model's (ZeRO: the chunks instead, flat).
  // A weight cut in parts (the GPT's q, k and v) is one item per part. Every model chunk's.
  for (const Chunk& ch : m_chunks) {
    const ParamSet& ps = ch.model->params();
    const size_t first = h.items.size();
    ch.sync->addHoldings(h.items, [&](HoldingKind k) {
      static const char* const kParts[] = {" (q)", " (k)", " (v)"};
      for (int i = 0; i < int(ps.refs().size()); ++i) {
        const ParamRef& r = ps.ref(i);
        const ParamSlice& s = ch.model->sliceOf(i);
        const int64_t total = (s.dim < 0 ? s.whole.at(0) : s.whole.at(size_t(s.dim))) / s.groups;
        const int64_t rows = r.shape.at(0) / (s.dim == 0 ? s.groups : 1),
                      cols = r.numel() / s.groups / rows;
        for (int g = 0; g < s.groups; ++g)
          h.items.push_back({s.groups == 3 ? r.name + kParts[g] : r.name, k, s.dim,
                             s.dim < 0 ? 0 : s.begin, s.dim < 0 ? total : s.end, total, rows, cols,
                             r.numel() / s.groups * 4});
      }
    });
    // A flat unit whose weights tensor parallelism cuts is this rank's tp shard of the unit.
    for (size_t i = first; i < h.items.size(); ++i) {
      HeldSlice& held = h.items[i];
      if (!held.tensor.ends_with(" (flat)") || m_grid.tp().size() < 2) continue;
      const std::string unit = held.tensor.substr(0, held.tensor.size() - 7) + ".";
      for (int p = 0; p < int(ps.refs().size()); ++p) {
        const ParamSlice& s = ch.model->sliceOf(p);
        if (ps.ref(p).name.starts_with(unit) && s.dim >= 0 &&
            (s.end - s.begin) * s.groups < s.whole.at(size_t(s.dim))) {
          held.tpShard = m_grid.coords().tp;
          held.tpShards = m_grid.tp().size();
          break;
        }
      }
    }
  }
  const RunConfig& c = *m_ctx.config;
  const bool gpt = c.model == ModelKind::Gpt;
  const int64_t B = m_globalBatch > 0 ? m_globalBatch : c.globalBatch();
  const int D = m_grid.shape().dp, input = m_ctx.data->inputDim;
  const int64_t begin = shardBegin(m_grid.coords().dp, D, B),
                len = shardLen(m_grid.coords().dp, D, B);
  // The MLP's first stage reads the images, its last the labels; the GPT's first reads the
  // windows' tokens and its last their targets, from the same windows.
  if (readsInputs())
    h.items.push_back({gpt ? "global batch (windows)" : "global batch (inputs)", HoldingKind::Batch,
                       0, begin, begin + len, B, len, input, len * input * 4});
  const bool labels = std::any_of(m_chunks.begin(), m_chunks.end(),
                                  [&](const Chunk& ch) { return ch.model->hasUnit(c.layers + 1); });
  if (!gpt && labels)
    h.items.push_back(
        {"global batch (labels)", HoldingKind::Batch, 0, begin, begin + len, B, len, 1, len * 4});
  // Each chunk's activations; with several, their names say the chunk. With --accumulate K
  // those of one accumulation micro-batch (its first stands for each in turn).
  const int64_t micro = B / std::max(1, c.accumulate);
  for (size_t k = 0; k < m_chunks.size(); ++k)
    chunkActivations(
        h, m_chunks[k], m_chunks.size() == 1 ? std::string() : "chunk " + std::to_string(k) + " ",
        shardBegin(m_grid.coords().dp, D, micro), shardLen(m_grid.coords().dp, D, micro), B);
  return h;
}

void ModelParallel::chunkActivations(RankHoldings& h, const Chunk& ch, const std::string& tag,
                                     int64_t begin, int64_t len, int64_t B) const {
  const RunConfig& c = *m_ctx.config;
  const bool gpt = c.model == ModelKind::Gpt;
  const Stage* stage = ch.stage.get();
  // The residual stream rows of each micro-batch this rank keeps (SP: its 1/T of them; the
  // GPT's rows are tokens), and the bytes of one micro-batch's buffers (sized for the largest).
  const int64_t microBytes = stage->microBytes(int((len + m_micros - 1) / m_micros));
  const auto* gptStage = dynamic_cast<const GptStage*>(stage);
  if (const ContextAttention* ring = gptStage ? gptStage->contextAttention() : nullptr) {
    // cp: the rank's pieces of every window, by position within the window (0 .. T), each
    // micro-batch's buffers shared out over them; and the ring's two K/V(+dK/dV) blocks.
    const int T = c.seq;
    for (int m = 0; m < m_micros; ++m) {
      const int64_t windows = shardLen(m, m_micros, len);
      for (const auto& [p0, n] : ring->chunks().pieces)
        h.items.push_back({tag + "micro-batch " + std::to_string(m) + " " + kStoredActivations +
                               " (positions " + std::to_string(p0) + "–" +
                               std::to_string(p0 + n - 1) + " of each window)",
                           HoldingKind::Activations, 0, p0, p0 + n, T, windows * n, c.hidden,
                           microBytes * n / ring->rows()});
    }
    const int64_t rows = 2 * ((len + m_micros - 1) / m_micros) * ring->rows();
    h.items.push_back({tag + ring->workspaceName(),
                       HoldingKind::Activations, -1, 0, rows, rows, rows,
                       4 * int64_t(c.hidden) / c.tp, ring->workspaceBytes(), false, true});
  } else {
    for (int m = 0; m < m_micros; ++m) {
      const MicroRows r = stage->rowsOf(int(shardLen(m, m_micros, len)));
      const int64_t per = r.perSample, rows = int64_t(r.rows) * per;
      const int64_t at = (begin + shardBegin(m, m_micros, len)) * per;
      const int64_t a = at + std::min<int64_t>(r.first, rows),
                    b = at + std::min<int64_t>(r.first + r.local, rows);
      h.items.push_back({tag + "micro-batch " + std::to_string(m) +
                             (gpt ? std::string(" ") + kStoredActivations + " (tokens)"
                                  : std::string(" activations")),
                         HoldingKind::Activations, 0, a, b, B * per, b - a, c.hidden, microBytes});
    }
  }
  // The GPT's recomputation: the stage's one set of buffers the backward recomputes into,
  // sized for the largest micro-batch (GptStage::ensureScratch) and used by each in turn, the
  // rank's share of every token of it. Selective: the probabilities of the rank's heads (a row
  // of heads x T per token), which the micro-batches no longer keep; full: a whole block's
  // buffers (the micro-batches keep only the blocks' inputs).
  if (const auto* g = dynamic_cast<const Gpt*>(ch.model.get());
      g && g->recompute() != Recompute::None &&
      stage->recomputedBytes(int((len + m_micros - 1) / m_micros)) > 0) {
    const int T = g->shape().seq, heads = g->shape().heads / m_grid.shape().tp;
    const int64_t windows = (len + m_micros - 1) / m_micros;
    const int64_t cols = g->recompute() == Recompute::Selective ? int64_t(heads) * T : c.hidden;
    h.items.push_back({tag + recomputedActivationsName(g->recompute()), HoldingKind::Activations, 0,
                       begin * T, (begin + len) * T, B * T, windows * T, cols,
                       stage->recomputedBytes(int(windows)), true});
  }
}

}  // namespace

std::unique_ptr<Strategy> makeModelParallel(RankContext& ctx) {
  return std::make_unique<ModelParallel>(ctx);
}

}  // namespace paralab
