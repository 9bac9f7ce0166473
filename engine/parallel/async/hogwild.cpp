// Hogwild! (`--strategy hogwild`; Recht et al. 2011, "HOGWILD!: a lock-free approach to
// parallelizing stochastic gradient descent"): thread ranks train one shared model with no
// locks. Each reads the shared parameters while others write them, and writes its update over
// theirs. It converges; it does not reproduce the serial run. Thread backend only.
// With --device cuda the shared parameters are device memory on rank 0's GPU and each rank's
// kernels read and write them from its own stream: the same race, between streams.
// See tests/engine/tst_async_strategies.cpp and tst_cuda_training.cpp.
#include <atomic>
#include <map>
#include <mutex>

#include "comm/communicator.h"
#include "cuda/runtime.h"
#include "memory/device_allocator.h"
#include "parallel/data/replica.h"

namespace paralab {

namespace {

// The one parameter buffer all ranks of a run read and write. On the GPU it has an allocator
// and a stream of its own (the stream only zero-fills it), not rank 0's: whichever rank lets go
// of it last frees it, and rank 0's allocator may be gone by then.
struct SharedModel {
  int gpu = -1;  // -1: host memory
  void* stream = nullptr;
  std::unique_ptr<DeviceAllocator> alloc;
  Tensor params;                    // P floats, counted as rank 0's "params" memory
  std::atomic<int64_t> updates{0};  // updates finished, by any rank
  bool onGpu() const { return gpu >= 0; }

  SharedModel(int64_t P, MemoryTracker* memory, int onGpu) : gpu(onGpu) {
    if (gpu >= 0) {
      gpu::setDevice(gpu);
      stream = gpu::streamCreate();
      alloc = std::make_unique<DeviceAllocator>(gpu, stream);
    }
    params = Tensor({P}, MemCategory::Params, memory, alloc.get());
    if (stream) gpu::streamSync(stream);  // zero-filled before rank 0's stream copies into it
  }
  ~SharedModel() {
    params = Tensor();
    alloc.reset();  // waits for its stream, gives the memory back to the GPU
    if (stream) gpu::streamDestroy(stream);
  }
  SharedModel(const SharedModel&) = delete;
  SharedModel& operator=(const SharedModel&) = delete;
};

// The shared floats, read and written as relaxed atomics (see the comment on Hogwild below).
void readShared(float* shared, float* mine, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    mine[i] = std::atomic_ref(shared[i]).load(std::memory_order_relaxed);
}
void addToShared(float* shared, const float* delta, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    std::atomic_ref x(shared[i]);
    x.store(x.load(std::memory_order_relaxed) + delta[i], std::memory_order_relaxed);
  }
}

// How ranks find rank 0's SharedModel: rank 0 files it here under a fresh id and broadcasts
// the id (one float). Ranks are threads of one process, so the others look it up and share
// ownership; the entry itself is weak and goes when the model does.
std::mutex g_mutex;
std::map<int, std::weak_ptr<SharedModel>> g_models;
int g_nextId = 1;

int publish(const std::shared_ptr<SharedModel>& model) {
  std::lock_guard lock(g_mutex);
  std::erase_if(g_models, [](const auto& e) { return e.second.expired(); });
  const int id = g_nextId;
  g_nextId = g_nextId % (1 << 24) + 1;  // a float holds it exactly
  g_models[id] = model;
  return id;
}

std::shared_ptr<SharedModel> lookUp(int id) {
  std::lock_guard lock(g_mutex);
  auto it = g_models.find(id);
  return it == g_models.end() ? nullptr : it->second.lock();
}

// Every rank keeps its own model object (its activations) and its own gradient buffer. On the
// CPU a step is Recht et al.'s loop: read the shared parameters into the rank's own copy (x,
// possibly half of another rank's update), forward and backward on that copy, then add the
// update to the shared floats (x_v <- x_v - lr g_v). No lock, no ordering: every shared float
// is read and written as a std::atomic_ref<float> with memory_order_relaxed, which compiles to
// the same plain loads and stores on the CPUs ParaLab runs on, but makes the race the algorithm
// wants defined behaviour in C++ (a plain-float race is undefined, and ThreadSanitizer says so).
// An update may still overwrite part of another's (two read-modify-writes of one float):
// Recht et al.'s analysis bounds the harm when updates are sparse; ours are dense, so expect a
// cost. On the GPU the units are bound to the shared buffer itself: the streams race on device
// memory, where C++'s rules do not reach.
//
// Optimizer state (momentum, Adam's moments) is per rank, as in PyTorch's Hogwild example where
// each process builds its optimizer over the shared parameters: shared state would be one more
// racy read-modify-write per float, and Adam's step count has no meaning across ranks.
// Each rank's gradient is scaled by 1 / global batch, so the N updates of one step together
// are one step of the serial run's size.
//
// Staleness (RankStep.staleness): other ranks' updates that finished between this rank's first
// read of the parameters (its forward) and the end of its own update: how much the model moved
// under it. Measured with one atomic counter; 0 when ranks take turns, up to N-1 and beyond
// when they overlap. Traffic: none after the 4-byte broadcast at start. On the GPU the host
// only enqueues the step, so the rank waits for its stream after the update: the counter then
// counts updates done, not queued (the step would wait for them at its end anyway).
class Hogwild final : public ReplicaStrategy {
 public:
  explicit Hogwild(RankContext& ctx) : ReplicaStrategy(ctx) {
    const std::string backend = nameOf(ctx.comm->backend());
    if (ctx.comm->backend() != Backend::Thread)
      throw ConfigError("strategy: hogwild needs ranks that share memory (--backend thread); this "
                        "rank's communicator is '" + backend + "', whose ranks are separate processes");
    ParamSet& ps = m_model->params();
    const int64_t P = ps.numel();
    float id = 0;
    if (m_ctx.rank == 0) {
      m_shared = std::make_shared<SharedModel>(P, ctx.memory, compute().gpu());
      compute().copy(m_shared->params.data(), ps.params().data(), P);
      compute().sync();  // the others read it as soon as they have the id
      id = float(publish(m_shared));
    }
    m_ctx.comm->broadcast(&id, 1, 0);  // where the shared model is: its id
    if (m_ctx.rank != 0 && !(m_shared = lookUp(int(id))))
      throw std::runtime_error("hogwild: rank 0's shared model is gone (rank 0 stopped)");
    m_opt = makeOptimizer(P);
    m_faults.deferSlowness();
    if (!m_shared->onGpu()) return;  // the CPU: the rank's own copy and gradients stay
    // The GPU: drop this rank's own parameter copy; keep a gradient buffer of its own.
    ps.releaseFlat();
    m_grads = compute().tensor({P}, MemCategory::Grads, ctx.memory);
    for (int u = 0; u < int(ps.units().size()); ++u) {
      const int64_t b = ps.units()[size_t(u)].begin;
      ps.bindUnit(u, m_shared->params.data() + b, m_grads.data() + b);
    }
  }

  // --straggler (train/faults.h): the slowed rank computes its gradient on the parameters it
  // read, is then busy for FACTOR - 1 times as long (emulated), and adds its update once free:
  // late, on parameters the others have moved meanwhile. Until then its steps deliver nothing
  // and the others go on at their own pace; nobody waits for it.
  // On the CPU the rank's own copy holds its last update, not the model: evaluation reads the
  // shared parameters into it first (safe while a gradient is held: the copy has served).
  Model& beginEval() override {
    if (!m_shared->onGpu())
      readShared(m_shared->params.data(), m_model->params().params().data(),
                 m_model->params().numel());
    return *m_model;
  }

  RankStep step(int64_t step, const std::vector<int>& globalBatch) override {
    RankStep out;
    if (!m_held.held()) {
      const int samples = takeSlice(step, globalBatch);
      m_seen = m_shared->updates.load(std::memory_order_relaxed);
      if (m_shared->onGpu())
        m_grads.zero();  // backward accumulates (the flat buffer forwardBackward would zero is gone)
      else
        readShared(m_shared->params.data(), m_model->params().params().data(),
                   m_model->params().numel());
      m_held.computed(samples, forwardBackward(step));
    }
    if (!m_held.deliver(m_faults, step + 1, m_ctx.spans)) return out;  // still computing (emulated)
    if (m_shared->onGpu()) {
      update(step, *m_opt, m_shared->params.data(), m_grads.data());  // no lock
      compute().sync();  // the update is done, not only queued
    } else {
      ParamSet& ps = m_model->params();
      float* mine = ps.params().data();
      // The copy has served: the update lands in it from zero (no optimizer here reads the
      // parameters, only gradients and its own state), then on the shared floats.
      ps.params().zero();
      update(step, *m_opt, mine, ps.grads().data());
      addToShared(m_shared->params.data(), mine, ps.numel());
    }
    const int64_t before = m_shared->updates.fetch_add(1, std::memory_order_relaxed);
    out.samples = m_held.samples();
    out.lossSum = m_held.lossSum();
    out.staleness = double(before - m_seen);
    return out;
  }

 private:
  std::shared_ptr<SharedModel> m_shared;  // owned jointly: outlives whichever rank stops first
  Tensor m_grads;                         // GPU: this rank's gradients (P floats)
  // Live reconfiguration carries rank 0's model and optimizer state.
  Optimizer* fullOptimizer() override { return m_opt.get(); }
  float* fullParams() override { return m_shared->params.data(); }
  std::unique_ptr<Optimizer> m_opt;       // this rank's own state over the shared parameters
  // A gradient computed and not yet added (the straggler, busy with its emulated compute), and
  // the update count when its parameters were read.
  HeldGradient m_held;
  int64_t m_seen = 0;
};

}  // namespace

std::unique_ptr<Strategy> makeHogwild(RankContext& ctx) { return std::make_unique<Hogwild>(ctx); }

}  // namespace paralab
