// GradSync (see grad_sync.h): every collective of the data-parallel dimension, in the lesson's
// words. N is the size of a unit's group, P the floats this rank holds; bytes sent per rank per
// step, fp32, with the ring:
//   naive, bucket: all-reduce (= reduce-scatter + all-gather), 2(N-1)/N x 4P (lessons/05). The
//     bucketed version all-reduces each bucket on a communication thread as soon as backward has
//     finished its units, while backward goes on with earlier ones (PyTorch DDP, Li et al. 2020):
//     the timeline shows comm spans beside backward spans.
//   ZeRO-1 (optimizer state; Rajbhandari et al. 2020): after backward each unit's gradients are
//     reduce-scattered (rank r keeps the sum of chunk r), the rank updates its chunk, and the
//     parameters are all-gathered: (N-1)/N x 4P each, 2(N-1)/N x 4P as the all-reduce.
//   ZeRO-2 (+ gradients): a unit's gradients are made in a transient full-size buffer and
//     reduce-scattered into the owned shard as soon as backward finishes the unit.
//   ZeRO-3 (+ parameters; FSDP, Zhao et al. 2023): only the owned chunk of the parameters stays;
//     each unit is all-gathered before its forward and again before its backward, and freed
//     after each: 3(N-1)/N x 4P, 1.5x (the paper's 3 Psi against 2 Psi).
//   With M micro-batches (a pipeline, or --accumulate: accumulation.h) each unit's backward runs
//   M times: buckets start after the last; ZeRO-2 and -3 reduce-scatter every micro-batch's
//   gradients and ZeRO-3 gathers the unit 2M times, M x the traffic (why DeepSpeed pairs
//   pipelines with ZeRO-1, and as its ZeRO-2/3 do under gradient accumulation).
// zero_policy.h holds each stage's table row: what it shards (which this file asks), its model
// states per rank (with Adam: 16P; stage 1: 8P + 8P/N; 2: 4P + 12P/N; 3: 16P/N) and its traffic.
// With --device cuda every buffer is device memory of the rank's Compute; each collective waits
// for the rank's stream first (Compute::sync), since the communicator works on its own.
// See tests/engine/tst_grad_sync.cpp, tst_zero.cpp and tst_parallel_equals_serial.cpp.
#include "parallel/data/grad_sync.h"

#include <algorithm>
#include <stdexcept>

#include "comm/communicator.h"
#include "comm/flight_recorder.h"
#include "train/precision.h"

namespace paralab {

GradSyncSettings GradSyncSettings::of(const RunConfig& c) {
  const std::optional<ZeroStage> stage = zeroStageOf(c.zero);
  if (!stage) throw std::logic_error("GradSyncSettings: --zero " + std::to_string(c.zero));
  return {*stage, c.dpVersion, c.bucketMb, c.optimizer, c.lr, false, c.precision};
}

namespace {

std::vector<int> sizesOf(const std::vector<SyncGroup>& groups) {
  std::vector<int> sizes;
  for (const SyncGroup& g : groups) sizes.push_back(g.comm->size());
  return sizes;
}

std::vector<SyncRange> orWhole(std::vector<SyncRange> ranges, const ParamSet& ps) {
  if (ranges.empty()) ranges.push_back({0, ps.numel(), 0, ""});
  return ranges;
}

}  // namespace

GradSync::GradSync(ParamSet& ps, std::vector<SyncGroup> groups, std::vector<SyncRange> ranges,
                   const GradSyncSettings& settings, Compute& compute, MemoryTracker* memory,
                   SpanRecorder* spans)
    : m_ps(ps),
      m_groups(std::move(groups)),
      m_settings(settings),
      m_zero(zeroPolicy(settings.zero)),
      m_compute(compute),
      m_memory(memory),
      m_spans(spans),
      m_layout(ps, orWhole(std::move(ranges), ps), sizesOf(m_groups)),
      m_seen(ps.units().size(), 0) {
  for (const SyncGroup& g : m_groups) m_rankIn.push_back(g.comm->rank());
  OptimizerHyper hyper;
  hyper.lr = float(settings.lr);
  hyper.stored = settings.precision;
  const OptimizerKind kind = optimizerKind(settings.optimizer);
  if (!m_zero.shardsAnything()) {  // the ParamSet's flat buffers stay; one optimizer over them
    m_opts.push_back(std::make_unique<Optimizer>(kind, hyper, ps.numel(), memory, &compute));
    if (settings.dpVersion == DpVersion::Bucket) planBuckets();
    return;
  }
  // Model states as this stage keeps them (Params / Grads: what ZeRO shards). Every rank built
  // the same initial weights from the seed; keep this stage's part of them.
  const int64_t full = m_layout.paddedNumel, shard = m_layout.shardNumel;
  m_params = compute.tensor({m_zero.shardsParameters ? shard : full}, MemCategory::Params, memory);
  m_grads = compute.tensor({m_zero.shardsGradients ? shard : full}, MemCategory::Grads, memory);
  const float* flat = ps.params().data();
  for (const ZeroLayout::Unit& u : m_layout.units) {
    if (!m_zero.shardsParameters) {
      compute.copy(m_params.data() + u.paddedBegin, flat + u.begin, u.len);
      continue;
    }
    const int64_t n = std::clamp<int64_t>(u.len - ownedFrom(u), 0, u.chunk);
    if (n > 0)  // a tiny unit's last chunks may be padding only
      compute.copy(m_params.data() + u.shardBegin, flat + u.begin + ownedFrom(u), n);
  }
  // The flat buffers go: 8P bytes fewer (on a GPU the copies above are queued ahead of any
  // reuse of that memory, on the same stream).
  ps.releaseFlat();
  for (int m = 0; m < int(ps.units().size()); ++m) bindResting(m);
  for (const ZeroLayout::Unit& u : m_layout.units)  // 8 bytes per owned float with Adam
    m_opts.push_back(std::make_unique<Optimizer>(kind, hyper, u.chunk, memory, &compute));
}

GradSync::~GradSync() {
  if (!m_thread.joinable()) return;
  {
    std::lock_guard lock(m_mutex);
    m_quit = true;
  }
  m_cv.notify_all();
  m_thread.join();
}

// [SECTION] A step

void GradSync::beginStep(int64_t step, int backwardsPerUnit) {
  m_step = step;
  m_backwards = backwardsPerUnit;
  std::fill(m_seen.begin(), m_seen.end(), 0);
  {
    std::lock_guard lock(m_mutex);
    m_done = 0;
  }
  // Sharded gradients need nothing: each unit's staging buffer starts at zero.
  if (!m_zero.shardsAnything())
    m_ps.zeroGrads();
  else if (!m_zero.shardsGradients)
    m_grads.zero();
}

void GradSync::beforeForward(int m) {
  if (m_zero.shardsParameters) bindGathered(m, gatherUnit(m, m_gathered), nullptr);
}

void GradSync::afterForward(int m) {
  if (!m_zero.shardsParameters) return;
  bindResting(m);
  m_gathered = Tensor();
}

void GradSync::beforeBackward(int m) {
  if (!m_zero.shardsGradients) return;
  // The unit's full gradients live only while backward makes them: transient, so Comm.
  // Zero-filled on allocation: backward accumulates into them.
  m_staging = m_compute.tensor({unitPadded(m)}, MemCategory::Comm, m_memory);
  const int64_t base = m_layout.units[size_t(m_layout.firstUnit[size_t(m)])].paddedBegin;
  bindGathered(m, m_zero.shardsParameters ? gatherUnit(m, m_gathered) : m_params.data() + base,
               m_staging.data());
}

void GradSync::afterBackward(int m) {
  const int seen = ++m_seen[size_t(m)];
  if (!m_zero.shardsAnything()) {
    if (seen == m_backwards) startBuckets(m);
    return;
  }
  if (!m_zero.shardsGradients) return;
  const int first = m_layout.firstUnit[size_t(m)], end = m_layout.firstUnit[size_t(m) + 1];
  const int64_t base = m_layout.units[size_t(first)].paddedBegin;
  m_compute.sync();  // backward's gradients are in the staging buffer
  for (int i = first; i < end; ++i) {
    const ZeroLayout::Unit& u = m_layout.units[size_t(i)];
    float* full = m_staging.data() + (u.paddedBegin - base);
    // Rank r keeps the sum over its group of chunk r: (N-1)/N x 4 x padded bytes sent. Later
    // micro-batches reduce-scatter in place and add their sum to the shard.
    if (seen == 1) {
      reduceScatter(u, full, ownedGrads(u));
    } else {
      float* mine = full + ownedFrom(u);
      reduceScatter(u, full, mine);
      m_compute.residualAdd(ownedGrads(u), mine, long(u.chunk));
    }
    // HSDP: the node's sum of the chunk, summed over the nodes once the step's last
    // micro-batch is in: 2(n-1)/n x 4 x chunk bytes per rank, n nodes.
    if (seen == m_backwards) sumOverReplicas(u);
  }
  bindResting(m);  // back to what the unit holds between uses; transient buffers freed
  m_gathered = Tensor();
  m_staging = Tensor();
}

void GradSync::reduce() {
  if (!m_zero.shardsAnything() && m_settings.dpVersion == DpVersion::PerTensor) {
    m_compute.sync();  // backward's gradients are complete
    for (const ZeroLayout::Unit& u : m_layout.units) {
      Communicator& c = comm(u);
      if (c.size() == 1) continue;
      for (int i = 0; i < int(m_ps.refs().size()); ++i) {  // one all-reduce per tensor
        const ParamRef& r = m_ps.ref(i);
        if (r.offset >= u.begin && r.offset < u.begin + u.len)
          c.allReduce(m_ps.grad(i), m_ps.grad(i), r.numel(), ReduceOp::Sum,
                      AllReduceAlgo::Configured, device());
      }
    }
  } else if (!m_zero.shardsAnything() && !m_inline && !m_buckets.empty()) {
    // Wait for the last bucket (the comm thread's spans cover this wait in the timeline).
    std::unique_lock lock(m_mutex);
    m_cv.wait(lock, [&] { return m_done == int(m_buckets.size()) || m_error; });
    if (m_error) std::rethrow_exception(m_error);
  } else if (m_zero.shardsAnything() && !m_zero.shardsGradients) {
    m_compute.sync();
    for (const ZeroLayout::Unit& u : m_layout.units) {  // in place: chunk r gets the sum
      reduceScatter(u, m_grads.data() + u.paddedBegin, ownedGrads(u));
      sumOverReplicas(u);
    }
  }
  // Sharded gradients were reduce-scattered unit by unit as backward finished them.
}

std::vector<HeldGradients> GradSync::heldGradients(int64_t begin, int64_t end) {
  std::vector<HeldGradients> out;
  for (const ZeroLayout::Unit& u : m_layout.units) {
    const bool whole = !m_zero.shardsAnything();
    const int64_t from = whole ? u.begin : u.begin + ownedFrom(u);
    const int64_t to = whole ? u.begin + u.len : std::min(u.begin + u.len, from + u.chunk);
    const int64_t lo = std::max(begin, from), hi = std::min(end, to);
    if (lo >= hi) continue;
    float* at = whole ? m_ps.grads().data() + lo : ownedGrads(u) + (lo - from);
    out.push_back({at, hi - lo});
  }
  return out;
}

void GradSync::update() {
  {
    ComputeSpan s(m_compute, m_spans, SpanKind::Optimizer, m_step + 1, "optimizer");
    if (!m_zero.shardsAnything())
      m_opts.front()->step(m_ps.params().data(), m_ps.grads().data());
    else
      for (size_t i = 0; i < m_layout.units.size(); ++i)
        m_opts[i]->step(ownedParams(m_layout.units[i]), ownedGrads(m_layout.units[i]));
  }
  // Parameters held whole: every rank gets the others' updated chunks (in place).
  if (m_zero.shardsAnything() && !m_zero.shardsParameters) {
    m_compute.sync();
    for (const ZeroLayout::Unit& u : m_layout.units)
      allGather(u, ownedParams(u), m_params.data() + u.paddedBegin);
  }
}

// [SECTION] The bucketed version: buckets, the communication thread

// Per group, consecutive units from the last to the first (the order backward finishes them),
// until a bucket holds at least --bucket-mb; adjacent ranges merge into one all-reduce.
void GradSync::planBuckets() {
  const int64_t target =
      std::max<int64_t>(1, int64_t(m_settings.bucketMb * (1 << 20) / sizeof(float)));
  std::vector<Bucket> open(m_groups.size());
  std::vector<int64_t> floats(m_groups.size(), 0);
  for (int m = int(m_ps.units().size()) - 1; m >= 0; --m) {
    for (int i = m_layout.firstUnit[size_t(m) + 1] - 1; i >= m_layout.firstUnit[size_t(m)]; --i) {
      const ZeroLayout::Unit& u = m_layout.units[size_t(i)];
      if (comm(u).size() == 1) continue;  // nothing to sum
      Bucket& b = open[size_t(u.group)];
      if (!b.ranges.empty() && b.ranges.back().first == u.begin + u.len)
        b.ranges.back().first = u.begin;
      else
        b.ranges.push_back({u.begin, u.begin + u.len});
      b.group = u.group;
      b.lowestUnit = m;
      floats[size_t(u.group)] += u.len;
    }
    for (size_t g = 0; g < open.size(); ++g)
      if (!open[g].ranges.empty() && (floats[g] >= target || m == 0)) {
        m_buckets.push_back(std::move(open[g]));
        open[g] = Bucket{};
        floats[g] = 0;
      }
  }
  if (m_buckets.empty()) return;
  m_compute.makeMarks(int(m_buckets.size()));
  // The communication thread calls the backend while the rank's own thread may too. ThreadComm
  // serves that. MPI needs MPI_THREAD_SERIALIZED and then one call at a time; NCCL would have
  // kernels of two communicators in flight in an order the ranks do not agree on (the NCCL
  // user guide warns that this can deadlock). So under MPI without it, and under MPI and NCCL
  // when the rank's own thread communicates during backward, the buckets are all-reduced on
  // the rank's own thread as backward completes them: the same sums, without the overlap.
  const Backend backend = m_groups.front().comm->backend();
  m_inline = backend != Backend::Thread && (m_settings.callsDuringBackward ||
                                            (backend == Backend::Mpi && !mpiCallsFromAnyThread()));
  if (m_inline) return;
  // A communicator of its own per group for the communication thread (collective: every rank
  // of the group splits), so its calls never interleave with the rank's other calls.
  for (const SyncGroup& g : m_groups)
    m_overlap.push_back(g.comm->size() > 1 ? g.comm->split(0, g.comm->rank(), g.name + "-overlap")
                                           : nullptr);
  m_thread = std::thread([this] { commLoop(); });
}

void GradSync::startBuckets(int m) {
  for (size_t i = 0; i < m_buckets.size(); ++i) {
    if (m_buckets[i].lowestUnit != m) continue;
    if (m_inline) {
      m_compute.sync();
      allReduceBucket(*m_groups[size_t(m_buckets[i].group)].comm, m_buckets[i]);
      continue;
    }
    m_compute.mark(int(i));  // the bucket's gradients are final once the stream gets here
    {
      std::lock_guard lock(m_mutex);
      m_queue.push_back(i);
    }
    m_cv.notify_all();
  }
}

void GradSync::allReduceBucket(Communicator& c, const Bucket& b) {
  const CommPurpose purpose("gradient bucket " + std::to_string(&b - m_buckets.data()));
  float* grads = m_ps.grads().data();
  for (const auto& [begin, end] : b.ranges)
    c.allReduce(grads + begin, grads + begin, end - begin, ReduceOp::Sum, AllReduceAlgo::Configured,
                device());
}

void GradSync::commLoop() {
  try {
    m_compute.makeCurrent();  // this thread's device calls go to the rank's GPU
  } catch (...) {
    std::lock_guard lock(m_mutex);
    m_error = std::current_exception();
  }
  while (true) {
    size_t i;
    {
      std::unique_lock lock(m_mutex);
      m_cv.wait(lock, [&] { return m_quit || !m_queue.empty(); });
      if (m_quit) return;
      i = m_queue.front();
      m_queue.pop_front();
    }
    try {
      m_compute.waitMark(int(i));
      allReduceBucket(*m_overlap[size_t(m_buckets[i].group)], m_buckets[i]);
    } catch (...) {
      std::lock_guard lock(m_mutex);
      m_error = std::current_exception();
    }
    {
      std::lock_guard lock(m_mutex);
      ++m_done;
    }
    m_cv.notify_all();
  }
}

// [SECTION] ZeRO's collectives on one unit, and where its pieces live

Communicator& GradSync::comm(const ZeroLayout::Unit& u) const {
  return *m_groups[size_t(u.group)].comm;
}

// Rank r of N keeps the sum of chunk r (a group of one keeps it all: a copy, no message).
void GradSync::reduceScatter(const ZeroLayout::Unit& u, const float* full, float* owned) {
  Communicator& c = comm(u);
  if (c.size() > 1)
    c.reduceScatter(full, owned, u.chunk, ReduceOp::Sum, device());
  else if (owned != full)
    m_compute.copy(owned, full, u.chunk);
}

// HSDP: the chunk each node's rank of this local index owns, summed over the nodes (the ring
// under --allreduce ring: 2(n-1)/n x 4 x chunk bytes per rank, all between nodes). Every replica
// gets the same bits, so their updates stay equal.
void GradSync::sumOverReplicas(const ZeroLayout::Unit& u) {
  Communicator* across = m_groups[size_t(u.group)].replicas;
  if (!across || across->size() == 1) return;
  m_compute.sync();  // the chunk's last micro-batch was added on the rank's stream
  const CommPurpose purpose("gradient shard " + u.name + " across nodes");
  across->allReduce(ownedGrads(u), ownedGrads(u), u.chunk, ReduceOp::Sum, AllReduceAlgo::Configured,
                    device());
}

bool GradSync::firstReplica() const {
  for (const SyncGroup& g : m_groups)
    if (g.replicas && g.replicas->rank() != 0) return false;
  return true;
}

// Every rank gets every chunk: chunk q from rank q.
void GradSync::allGather(const ZeroLayout::Unit& u, const float* owned, float* full) {
  Communicator& c = comm(u);
  if (c.size() > 1)
    c.allGather(owned, full, u.chunk, device());
  else if (owned != full)
    m_compute.copy(full, owned, u.chunk);
}

// Sharded parameters: model unit m's parameters from every rank's chunks into `into` (Comm), laid
// out like its part of the padded buffer: (N-1)/N x 4 x padded bytes sent.
float* GradSync::gatherUnit(int m, Tensor& into) {
  into = m_compute.tensor({unitPadded(m)}, MemCategory::Comm, m_memory);
  m_compute.sync();  // the owned chunks' update and the buffer's zero fill are done
  const int first = m_layout.firstUnit[size_t(m)];
  const int64_t base = m_layout.units[size_t(first)].paddedBegin;
  for (int i = first; i < m_layout.firstUnit[size_t(m) + 1]; ++i) {
    const ZeroLayout::Unit& u = m_layout.units[size_t(i)];
    allGather(u, ownedParams(u), into.data() + (u.paddedBegin - base));
  }
  return into.data();
}

// The padded parameters unless sharded (gathered on use), the padded gradients unless sharded
// (made in a staging buffer on use).
void GradSync::bindResting(int m) {
  for (int i = m_layout.firstUnit[size_t(m)]; i < m_layout.firstUnit[size_t(m) + 1]; ++i) {
    const ZeroLayout::Unit& u = m_layout.units[size_t(i)];
    m_ps.bindRange(u.begin, u.begin + u.len,
                   m_zero.shardsParameters ? nullptr : m_params.data() + u.paddedBegin,
                   m_zero.shardsGradients ? nullptr : m_grads.data() + u.paddedBegin);
  }
}

// Model unit m's weights at `params` and `grads` (either may be null), buffers laid out like its
// part of the padded buffer.
void GradSync::bindGathered(int m, float* params, float* grads) {
  const int first = m_layout.firstUnit[size_t(m)];
  const int64_t base = m_layout.units[size_t(first)].paddedBegin;
  for (int i = first; i < m_layout.firstUnit[size_t(m) + 1]; ++i) {
    const ZeroLayout::Unit& u = m_layout.units[size_t(i)];
    const int64_t at = u.paddedBegin - base;
    m_ps.bindRange(u.begin, u.begin + u.len, params ? params + at : nullptr,
                   grads ? grads + at : nullptr);
  }
}

int64_t GradSync::unitPadded(int m) const {
  const ZeroLayout::Unit& first = m_layout.units[size_t(m_layout.firstUnit[size_t(m)])];
  const ZeroLayout::Unit& last = m_layout.units[size_t(m_layout.firstUnit[size_t(m) + 1] - 1)];
  return last.paddedBegin + last.padded - first.paddedBegin;
}

int64_t GradSync::ownedFrom(const ZeroLayout::Unit& u) const {
  return int64_t(m_rankIn[size_t(u.group)]) * u.chunk;
}

// This rank's chunk of a unit: inside the full buffer (chunk r of the unit) or the shard.
float* GradSync::ownedParams(const ZeroLayout::Unit& u) {
  return m_zero.shardsParameters ? m_params.data() + u.shardBegin
                                 : m_params.data() + u.paddedBegin + ownedFrom(u);
}
float* GradSync::ownedGrads(const ZeroLayout::Unit& u) {
  return m_zero.shardsGradients ? m_grads.data() + u.shardBegin
                                : m_grads.data() + u.paddedBegin + ownedFrom(u);
}

float* GradSync::moment(size_t i, int k) {
  if (k == 2)
    return const_cast<float*>(m_opts[i]->currentMaster(
        m_zero.shardsAnything() ? ownedParams(m_layout.units[i]) : m_ps.params().data()));
  return k == 0 ? m_opts[i]->momentOne() : m_opts[i]->momentTwo();
}

}  // namespace paralab
