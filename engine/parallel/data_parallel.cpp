// Synchronous data parallelism (`--strategy sync`): every rank holds the whole model, takes
// its slice of the global batch, and the ranks sum their gradients with all-reduce before the
// same update — mini-batch SGD on the global batch, whatever the number of ranks.
//   naive  (`--dp-version naive`): after backward, one all-reduce per parameter tensor.
//   bucket (`--dp-version bucket`, default): gradients grouped into buckets of --bucket-mb,
//          each bucket's all-reduce started on a communication thread as soon as backward has
//          finished its layers, while backward goes on with earlier layers (PyTorch DDP, Li et
//          al. 2020). The overlap shows in the timeline as comm spans beside backward spans.
// Traffic per rank per step with the ring: 2(N-1)/N x 4P bytes sent (lessons/05).
// With --device cuda the gradients are device memory: the naive version waits for the rank's
// stream before its all-reduces; the bucketed one marks each bucket's end in the stream and
// the communication thread waits for that mark only, so backward keeps the GPU busy meanwhile.
// See tests/engine/tst_parallel_equals_serial.cpp and tst_cuda_training.cpp.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "comm/communicator.h"
#include "parallel/replica.h"

namespace paralab {

namespace {

class DataParallelNaive final : public ReplicaStrategy {
 public:
  explicit DataParallelNaive(RankContext& ctx)
      : ReplicaStrategy(ctx), m_opt(makeOptimizer(m_model->params().numel())) {}

  RankStep step(int64_t step, const std::vector<int>& globalBatch) override {
    RankStep out;
    out.samples = takeSlice(step, globalBatch);
    out.lossSum = forwardBackward(step);
    ParamSet& ps = m_model->params();
    if (m_ctx.worldSize > 1) {
      compute().sync();                                // backward's gradients are complete
      for (int i = 0; i < int(ps.refs().size()); ++i)  // one all-reduce per tensor
        m_ctx.comm->allReduce(ps.grad(i), ps.grad(i), ps.ref(i).numel(), ReduceOp::Sum,
                              AllReduceAlgo::Configured, device());
    }
    update(step, *m_opt, ps.params().data(), ps.grads().data());
    return out;
  }

 private:
  Optimizer* fullOptimizer() override { return m_opt.get(); }
  std::unique_ptr<Optimizer> m_opt;
};

class DataParallelBucketed final : public ReplicaStrategy, private UnitHooks {
 public:
  explicit DataParallelBucketed(RankContext& ctx)
      : ReplicaStrategy(ctx), m_opt(makeOptimizer(m_model->params().numel())) {
    planBuckets();
    compute().makeMarks(int(m_buckets.size()));
    // Under MPI the communication thread needs MPI_THREAD_SERIALIZED; without it the buckets
    // are all-reduced on the rank's own thread as backward completes them (no overlap).
    m_inline = std::string(ctx.comm->backend()) == "mpi" && !mpiCallsFromAnyThread();
    if (m_ctx.worldSize > 1 && !m_inline) {
      // A communicator of its own for the communication thread (collective: every rank
      // splits), so its calls never interleave with the rank's other calls.
      m_overlapComm = m_ctx.comm->split(0, m_ctx.rank, "dp-overlap");
      m_thread = std::thread([this] { commLoop(); });
    }
  }

  ~DataParallelBucketed() override {
    if (m_thread.joinable()) {
      {
        std::lock_guard lock(m_mutex);
        m_quit = true;
      }
      m_cv.notify_all();
      m_thread.join();
    }
  }

  RankStep step(int64_t step, const std::vector<int>& globalBatch) override {
    RankStep out;
    out.samples = takeSlice(step, globalBatch);
    {
      std::lock_guard lock(m_mutex);
      m_done = 0;
    }
    out.lossSum = forwardBackward(step, this);  // afterBackward() queues full buckets
    if (m_ctx.worldSize > 1) {
      // Wait for the last bucket (the comm thread's spans cover this wait in the timeline).
      std::unique_lock lock(m_mutex);
      m_cv.wait(lock, [&] { return m_done == int(m_buckets.size()) || m_error; });
      if (m_error) std::rethrow_exception(m_error);
    }
    ParamSet& ps = m_model->params();
    update(step, *m_opt, ps.params().data(), ps.grads().data());
    return out;
  }

 private:
  // Consecutive units, last to first (the order backward finishes them), until a bucket
  // holds at least --bucket-mb.
  void planBuckets() {
    const auto& units = m_model->params().units();
    const int64_t target = std::max<int64_t>(1, int64_t(m_ctx.config->bucketMb * (1 << 20) / 4));
    Bucket b;
    for (int u = int(units.size()) - 1; u >= 0; --u) {
      if (b.units == 0) b.end = units[size_t(u)].end;
      b.begin = units[size_t(u)].begin;
      b.lowestUnit = u;
      ++b.units;
      if (b.end - b.begin >= target || u == 0) {
        m_buckets.push_back(b);
        b = Bucket{};
      }
    }
  }

  Optimizer* fullOptimizer() override { return m_opt.get(); }

  void afterBackward(int unit) override {
    if (m_ctx.worldSize == 1) return;
    for (size_t i = 0; i < m_buckets.size(); ++i)
      if (m_buckets[i].lowestUnit == unit && m_inline) {
        float* grads = m_model->params().grads().data();
        const Bucket& b = m_buckets[i];
        compute().sync();
        m_ctx.comm->allReduce(grads + b.begin, grads + b.begin, b.end - b.begin, ReduceOp::Sum,
                              AllReduceAlgo::Configured, device());
        std::lock_guard lock(m_mutex);
        ++m_done;
      } else if (m_buckets[i].lowestUnit == unit) {
        compute().mark(int(i));  // the bucket's gradients are final once the stream gets here
        {
          std::lock_guard lock(m_mutex);
          m_queue.push_back(i);
        }
        m_cv.notify_all();
      }
  }

  void commLoop() {
    float* grads = m_model->params().grads().data();
    try {
      compute().makeCurrent();  // this thread's device calls go to the rank's GPU
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
        const Bucket& b = m_buckets[i];
        compute().waitMark(int(i));
        m_overlapComm->allReduce(grads + b.begin, grads + b.begin, b.end - b.begin, ReduceOp::Sum,
                                 AllReduceAlgo::Configured, device());
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

  struct Bucket {
    int64_t begin = 0, end = 0;  // range of the flat gradient buffer
    int lowestUnit = 0, units = 0;
  };
  std::unique_ptr<Optimizer> m_opt;
  std::vector<Bucket> m_buckets;
  std::unique_ptr<Communicator> m_overlapComm;
  std::thread m_thread;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::deque<size_t> m_queue;
  int m_done = 0;
  bool m_quit = false;
  std::exception_ptr m_error;
  bool m_inline = false;
};

}  // namespace

std::unique_ptr<Strategy> makeDataParallel(RankContext& ctx) {
  if (ctx.config->dpVersion == "naive") return std::make_unique<DataParallelNaive>(ctx);
  return std::make_unique<DataParallelBucketed>(ctx);
}

}  // namespace paralab
