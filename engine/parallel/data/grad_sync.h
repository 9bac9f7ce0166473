// GradSync: the one gradient synchronisation of every layout with a data-parallel dimension.
// Given the parameters a rank holds (the MLP, a tensor/pipeline shard of it, the MoE's dense
// weights and its experts) and the group of replicas each range of them has, it sums the
// gradients over those groups and owns the optimizer that then updates them:
//   --zero 0 --dp-version per-tensor: an all-reduce per tensor after backward;
//   --zero 0 --dp-version bucket: buckets of --bucket-mb all-reduced while backward goes on;
//   --zero 1|2|3: ZeRO's reduce-scatter / all-gather, shards of the optimizer state, gradients
//     and parameters (zero.h's layout; Rajbhandari et al. 2020);
//   --zero-shard node (HSDP): the same inside each node, and each owned gradient chunk
//     all-reduced across the nodes among the ranks holding it (SyncGroup::replicas).
// Used by sync data parallelism (the world), tensor x pipeline parallelism (the dp group) and
// expert parallelism (dense weights over dp, experts over expert-dp). The collectives are all in
// grad_sync.cpp. See tests/engine/tst_grad_sync.cpp and tst_parallel_equals_serial.cpp.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "device/compute.h"
#include "model/mlp.h"  // UnitHooks
#include "optim/optimizer.h"
#include "parallel/data/zero.h"
#include "parallel/data/zero_policy.h"
#include "parallel/holdings.h"
#include "train/training_state.h"

namespace paralab {

class Communicator;

// A group of replicas: its communicator and its name in the accounting ("dp", "expert-dp").
// HSDP (--zero-shard node) shards over `comm`, the ranks of one node, and names in `replicas`
// the ranks of the other nodes that hold the same chunks: after the group's reduce-scatter each
// owned gradient chunk is all-reduced over them, so every replica updates it alike.
struct SyncGroup {
  Communicator* comm = nullptr;
  std::string name;
  Communicator* replicas = nullptr;  // null (or one rank): no replicas of the shards
};

struct GradSyncSettings {
  ZeroStage zero = ZeroStage::None;  // what ZeRO shards (zero_policy.h)
  DpVersion dpVersion = DpVersion::Bucket;  // stage 0: per tensor | bucket
  double bucketMb = 0.25;            // bucket: MiB of gradients per bucket
  std::string optimizer = "sgd";     // optimizer.h's kinds
  double lr = 0.05;
  // The rank's own thread issues collectives while backward runs (tensor, pipeline and expert
  // parallelism): the buckets then overlap only on thread ranks (grad_sync.cpp says why).
  bool callsDuringBackward = false;
  // --precision: bf16 / fp16 optimizers keep fp32 master copies of what they update
  // (train/precision.h); the gradients are summed in fp32 either way.
  Dtype precision = Dtype::Fp32;
  static GradSyncSettings of(const RunConfig& config);  // --zero, --dp-version, ...
};

// A run of gradients this rank holds summed: `count` floats at `grads` (device memory).
struct HeldGradients {
  float* grads = nullptr;
  int64_t count = 0;
};

class GradSync final : public UnitHooks {
 public:
  // `ranges` say which group each part of `ps`'s flat buffer is summed over (empty: all of it
  // over groups[0]). Collective over each group of size > 1 for the bucketed version (its
  // communication thread gets a communicator of its own). At ZeRO stages the ParamSet's flat
  // buffers give way to this object's (padded, or the shard) and its units are bound there.
  GradSync(ParamSet& ps, std::vector<SyncGroup> groups, std::vector<SyncRange> ranges,
           const GradSyncSettings& settings, Compute& compute, MemoryTracker* memory,
           SpanRecorder* spans);
  ~GradSync() override;
  GradSync(const GradSync&) = delete;
  GradSync& operator=(const GradSync&) = delete;

  // [SECTION] One step: beginStep, the forward and backward passes with this object as their
  // UnitHooks (each unit's backward runs `backwardsPerUnit` times: once per micro-batch),
  // reduce(), then update(). Between reduce() and update() heldGradients() says where the sums
  // are (sequence parallelism adds its LayerNorm gradients over tp there).
  void beginStep(int64_t step, int backwardsPerUnit = 1);
  void beforeForward(int unit) override;
  void afterForward(int unit) override;
  void beforeBackward(int unit) override;
  void afterBackward(int unit) override;
  void reduce();
  // The summed gradients of flat range [begin, end) this rank holds, in order: all of it, or
  // (ZeRO) its owned chunk's part. The same runs on every rank with the same layout.
  std::vector<HeldGradients> heldGradients(int64_t begin, int64_t end);
  void update();

  // [SECTION] Evaluation, collective: ZeRO-3 gathers every unit (Comm memory) until releaseAll.
  void gatherAll();
  void releaseAll();

  // [SECTION] Live reconfiguration through the serial layout (training_state.h). `toSerial`
  // writes what this rank gives of a host vector laid out like its flat buffer into the serial
  // layout (zero elsewhere: each float from one rank, so summing the ranks' vectors copies);
  // `fromSerial` takes this rank's part of a serial-layout vector.
  using ToSerial = std::function<void(const std::vector<float>& local, std::vector<float>& serial)>;
  using FromSerial =
      std::function<void(const std::vector<float>& serial, std::vector<float>& local)>;
  // The parameters on the host, laid out like the flat buffer (collective at ZeRO-3: gathered).
  std::vector<float> hostParams();
  // Collective over `world`: `sum` (serial floats of this rank's device) gets on world rank 0
  // the sum over ranks of what `toSerial` writes of `local`.
  void sumToRoot(Communicator& world, const std::vector<float>& local, const ToSerial& toSerial,
                 Tensor& sum);
  // Collective over `world` and the groups: the parameters, optimizer moments and (mixed
  // precision) the fp32 master copy (ZeRO: gathered from the groups' chunks; HSDP: from the
  // first replica's) in rank 0's `state`, `serial` floats each.
  void save(TrainingState& state, Communicator& world, int64_t serial, const ToSerial& toSerial);
  // Every rank takes its part of each (a moment of another size is skipped: none was saved).
  // Without a saved master a 16-bit run takes it from the parameters; an fp32 run given one
  // trains on from it (the master, not its 16-bit rounding, is the model).
  void load(const TrainingState& state, int64_t serial, const FromSerial& fromSerial);

  // [SECTION] What this rank holds: `tensors(kind)` lists the weights held whole in the
  // strategy's own terms (names, tensor-parallel slices), called for params and grads where
  // they are whole; this adds the optimizer state and ZeRO's chunks, per unit "<unit> (flat)".
  void addHoldings(std::vector<HeldSlice>& items,
                   const std::function<void(HoldingKind)>& tensors) const;

 private:
  struct Bucket {
    int group = 0;
    std::vector<std::pair<int64_t, int64_t>> ranges;  // of the flat gradient buffer
    int lowestUnit = 0;  // its gradients are final after this model unit's last backward
  };
  void planBuckets();
  void startBuckets(int unit);
  void commLoop();
  void allReduceBucket(Communicator& comm, const Bucket& b);
  Communicator& comm(const ZeroLayout::Unit& u) const;
  Device device() const { return m_compute.device(); }
  void reduceScatter(const ZeroLayout::Unit& u, const float* full, float* owned);
  void sumOverReplicas(const ZeroLayout::Unit& u);  // HSDP: the owned gradient chunk, across
  bool firstReplica() const;  // no replicas, or this rank's node holds the first
  void allGather(const ZeroLayout::Unit& u, const float* owned, float* full);
  float* gatherUnit(int unit, Tensor& into);
  void bindResting(int unit);
  void bindGathered(int unit, float* params, float* grads);
  int64_t ownedFrom(const ZeroLayout::Unit& u) const;  // first float of my chunk in the unit
  float* ownedParams(const ZeroLayout::Unit& u);
  float* ownedGrads(const ZeroLayout::Unit& u);
  // Optimizer i's state k: 0 momentum / Adam's m, 1 Adam's v, 2 the fp32 master copy (taken
  // from the parameters if no step has yet); null if it keeps none.
  float* moment(size_t i, int k);
  std::vector<float> hostMoment(int k);  // state k, laid out like the flat buffer; empty if none
  int64_t unitPadded(int unit) const;

  ParamSet& m_ps;
  std::vector<SyncGroup> m_groups;
  std::vector<int> m_rankIn;  // this rank's index in each group
  GradSyncSettings m_settings;
  const ZeroPolicy& m_zero;  // what this stage shards
  Compute& m_compute;
  MemoryTracker* m_memory;
  SpanRecorder* m_spans;
  ZeroLayout m_layout;
  int64_t m_step = 0;
  int m_backwards = 1;
  std::vector<int> m_seen;  // backwards of each model unit so far this step
  // ZeRO: the padded parameters of every unit, or the owned shard where the stage shards them;
  // the same for the gradients. Stage 0 uses the ParamSet's flat buffers.
  Tensor m_params, m_grads;
  Tensor m_gathered;    // sharded parameters: one model unit's while it runs (Comm)
  Tensor m_staging;     // sharded gradients: one model unit's while backward makes them (Comm)
  Tensor m_evalParams;  // sharded parameters: the whole model for an evaluation (Comm)
  // Stage 0: one optimizer over the flat buffer; ZeRO: one per unit over its owned chunk (Adam
  // and momentum are elementwise: the same update, and owned chunks need no copying).
  std::vector<std::unique_ptr<Optimizer>> m_opts;
  // [SECTION] The bucketed version's communication thread.
  std::vector<Bucket> m_buckets;
  std::vector<std::unique_ptr<Communicator>> m_overlap;  // per group (null: size 1)
  bool m_inline = false;  // all-reduced on this thread as backward completes them (no overlap)
  std::thread m_thread;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::deque<size_t> m_queue;
  int m_done = 0;
  bool m_quit = false;
  std::exception_ptr m_error;
};

}  // namespace paralab
