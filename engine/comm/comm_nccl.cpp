// NcclComm: one rank per GPU through NCCL — in one process (ncclCommInitAll, a thread per GPU)
// or a process per GPU under mpirun (ncclGetUniqueId on rank 0, MPI_Bcast, ncclCommInitRank).
// Device buffers (and host all-reduces, staged through the GPU); a host communicator beside
// it checks arguments, runs barriers and gathers strings. Calls follow the NCCL user guide: one
// stream per rank, polled with ncclCommGetAsyncError and ended with ncclCommAbort on error or
// timeout.
// See tests/engine/tst_comm_nccl.cpp (skips without enough GPUs).
#include "comm/communicator.h"

#ifdef PARALAB_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdlib>
#include <thread>

#include "comm/comm_thread.h"  // StagingBuffer
#include "cuda/device.h"
#include "metrics/span_recorder.h"
#endif

namespace paralab {

#ifndef PARALAB_HAVE_NCCL

bool ncclAvailable() { return false; }
std::unique_ptr<ThreadWorld> ThreadWorld::nccl(int, CommOptions) {
  throw CommError("backend: ParaLab was built without NCCL (it needs CUDA and libnccl)");
}
std::unique_ptr<Communicator> makeNcclMpiWorld(CommOptions) {
  throw CommError("backend: ParaLab was built without NCCL (it needs CUDA and libnccl)");
}

#else

bool ncclAvailable() { return true; }

namespace {

void checkNccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess && r != ncclInProgress)
    throw CommError(std::string("nccl: ") + what + ": " + ncclGetErrorString(r));
}

void checkCuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw CommError(std::string("nccl: ") + what + ": " + cudaGetErrorString(e));
}

ncclRedOp_t ncclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Avg: return ncclAvg;  // NCCL >= 2.10
    case ReduceOp::Max: return ncclMax;
  }
  return ncclSum;
}

}  // namespace

class NcclComm final : public Communicator {
 public:
  NcclComm(ncclComm_t comm, int device, std::unique_ptr<Communicator> host, std::string name,
           std::vector<int> worldRanks, CommOptions options, std::shared_ptr<RankContext> ctx,
           int rank, int size)
      : Communicator(rank, size, std::move(name), std::move(worldRanks), std::move(options),
                     LinkProfile{}, std::move(ctx)),
        m_comm(comm), m_device(device), m_host(std::move(host)) {
    checkCuda(cudaSetDevice(m_device), "cudaSetDevice");
    checkCuda(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking), "cudaStreamCreate");
  }

  static std::shared_ptr<RankContext> newContext(int worldRank, int worldSize) {
    return std::make_shared<RankContext>(
        RankContext{std::make_shared<CommAccounting>(worldRank, worldSize)});
  }

  ~NcclComm() override {
    cudaSetDevice(m_device);
    if (m_comm) ncclCommDestroy(m_comm);
    if (m_stream) cudaStreamDestroy(m_stream);
  }

  Backend backend() const override { return Backend::Nccl; }
  std::vector<std::string> gatherToRoot(const std::string& mine, int root) override {
    return m_host->gatherToRoot(mine, root);
  }
  void abort(const std::string& why) override {
    abortNccl();
    m_host->abort(why);
  }
  bool aborted() const override { return m_host->aborted(); }

 protected:
  CommAlgo defaultAlgo() const override { return CommAlgo::Nccl; }

  void doAllReduce(const float* send, float* recv, int64_t count, ReduceOp op, CommAlgo algo,
                   Device device) override {
    if (algo != CommAlgo::Nccl)
      throw CommError(std::string("nccl: all-reduce algorithm '") + commAlgoName(algo) +
                      "' is not offered: NCCL picks its own (ring or tree); the naive and ring "
                      "lessons run on the thread backend");
    begin({CommOp::AllReduce, count, -1, static_cast<int>(op)}, Device::Cuda);
    if (device == Device::Cpu) {
      // A host buffer (a strategy's scalar: the spread's all-reduce Max in local SGD and
      // gossip) is staged through this rank's GPU, in place: copied in on the stream, reduced,
      // and copied back once wait() saw the stream done (a pageable copy back would block on
      // a hung collective where wait() aborts it).
      float* staged = m_staging.get(count, memoryTracker(), Device::Cuda);
      checkCuda(cudaMemcpyAsync(staged, send, count * 4, cudaMemcpyHostToDevice, m_stream),
                "cudaMemcpyAsync");
      checkNccl(ncclAllReduce(staged, staged, count, ncclFloat, ncclOp(op), m_comm, m_stream),
                "ncclAllReduce");
      wait();
      checkCuda(cudaMemcpyAsync(recv, staged, count * 4, cudaMemcpyDeviceToHost, m_stream),
                "cudaMemcpyAsync");
      checkCuda(cudaStreamSynchronize(m_stream), "cudaStreamSynchronize");
    } else {
      checkNccl(ncclAllReduce(send, recv, count, ncclFloat, ncclOp(op), m_comm, m_stream),
                "ncclAllReduce");
      wait();
    }
    countModelled(CommOp::AllReduce, count * 4);
  }

  void doReduceScatter(const float* send, float* recv, int64_t b, ReduceOp op,
                       Device device) override {
    begin({CommOp::ReduceScatter, b, -1, static_cast<int>(op)}, device);
    // In place when recv == send + rank * b: NCCL's own convention, as ours.
    checkNccl(ncclReduceScatter(send, recv, b, ncclFloat, ncclOp(op), m_comm, m_stream),
              "ncclReduceScatter");
    wait();
    countModelled(CommOp::ReduceScatter, b * size() * 4);
  }

  void doAllGather(const float* send, float* recv, int64_t b, Device device) override {
    begin({CommOp::AllGather, b}, device);
    checkNccl(ncclAllGather(send, recv, b, ncclFloat, m_comm, m_stream), "ncclAllGather");
    wait();
    countModelled(CommOp::AllGather, b * size() * 4);
  }

  void doBroadcast(float* buf, int64_t count, int root, Device device) override {
    begin({CommOp::Broadcast, count, root}, device);
    checkNccl(ncclBroadcast(buf, buf, count, ncclFloat, root, m_comm, m_stream), "ncclBroadcast");
    wait();
    countModelled(CommOp::Broadcast, count * 4, root);
  }

  void doReduce(const float* send, float* recv, int64_t count, int root, ReduceOp op,
                Device device) override {
    begin({CommOp::Reduce, count, root, static_cast<int>(op)}, device);
    checkNccl(ncclReduce(send, recv, count, ncclFloat, ncclOp(op), root, m_comm, m_stream),
              "ncclReduce");
    wait();
    countModelled(CommOp::Reduce, count * 4, root);
  }

  void doAllToAll(const float* send, float* recv, int64_t b, Device device) override {
    std::vector<int64_t> counts(size(), b);
    doAllToAllvImpl(CommOp::AllToAll, send, counts.data(), recv, counts.data(), device);
  }

  void doAllToAllv(const float* send, const int64_t* sendCounts, float* recv,
                   const int64_t* recvCounts, Device device) override {
    doAllToAllvImpl(CommOp::AllToAllV, send, sendCounts, recv, recvCounts, device);
  }

  void doSend(const float* buf, int64_t count, int peer, Device device) override {
    deviceOnly(device);
    useDevice();
    checkNccl(ncclSend(buf, count, ncclFloat, peer, m_comm, m_stream), "ncclSend");
    wait();
    countSent(peer, count * 4);
  }

  void doRecv(float* buf, int64_t count, int peer, Device device) override {
    deviceOnly(device);
    useDevice();
    checkNccl(ncclRecv(buf, count, ncclFloat, peer, m_comm, m_stream), "ncclRecv");
    wait();
    countRecv(peer, count * 4);
  }

  void doBarrier() override { barrierVia(*m_host); }

  std::unique_ptr<Communicator> doSplit(int color, int key, const std::string& name) override {
    std::unique_ptr<Communicator> host = m_host->split(color, key, name);
    useDevice();
    ncclComm_t child = nullptr;
    // ncclCommSplit orders ranks by (key, parent rank), as MPI_Comm_split and ThreadComm do.
    checkNccl(ncclCommSplit(m_comm, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &child, nullptr),
              "ncclCommSplit");
    if (!host) return nullptr;
    int r = -1;
    checkNccl(ncclCommUserRank(child, &r), "ncclCommUserRank");
    if (r != host->rank()) throw CommError("nccl: split ranks differ from the host group's");
    std::vector<int> world(host->size());
    for (int q = 0; q < host->size(); ++q) world[q] = host->worldRankOf(q);
    const int n = host->size();
    return std::make_unique<NcclComm>(child, m_device, std::move(host), name, world, m_options,
                                      context(), r, n);
  }

 private:
  void deviceOnly(Device device) const {
    if (device != Device::Cuda)
      throw CommError("nccl: works on device buffers (Device::Cuda); host buffers go through "
                      "the thread or mpi backend");
  }
  void useDevice() { checkCuda(cudaSetDevice(m_device), "cudaSetDevice"); }

  void begin(const CallSignature& sig, Device device) {
    deviceOnly(device);
    agreeVia(*m_host, sig, currentLabel());
    useDevice();
  }

  // All-to-all as grouped point-to-point, the pattern of the NCCL user guide.
  void doAllToAllvImpl(CommOp op, const float* send, const int64_t* sendCounts, float* recv,
                       const int64_t* recvCounts, Device device) {
    int64_t total = 0;
    for (int q = 0; q < size(); ++q) total += sendCounts[q];
    begin({op, op == CommOp::AllToAll ? sendCounts[0] : total}, device);
    int64_t so = 0, ro = 0;
    checkNccl(ncclGroupStart(), "ncclGroupStart");
    for (int q = 0; q < size(); ++q) {
      checkNccl(ncclSend(send + so, sendCounts[q], ncclFloat, q, m_comm, m_stream), "ncclSend");
      checkNccl(ncclRecv(recv + ro, recvCounts[q], ncclFloat, q, m_comm, m_stream), "ncclRecv");
      so += sendCounts[q];
      ro += recvCounts[q];
    }
    checkNccl(ncclGroupEnd(), "ncclGroupEnd");
    wait();
    const std::vector<int64_t> s(sendCounts, sendCounts + size()),
        r(recvCounts, recvCounts + size());
    countModelled(op, so * 4, -1, &s, &r);
  }

  // Waits for this rank's stream, watching for NCCL errors, an abort elsewhere and the deadline;
  // any of them ends the communicator with ncclCommAbort (a hung NCCL kernel needs it).
  void wait() {
    for (;;) {
      const cudaError_t q = cudaStreamQuery(m_stream);
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady) {
        abortNccl();
        checkCuda(q, "stream");
      }
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(m_comm, &async);
      if (async != ncclSuccess && async != ncclInProgress) {
        const std::string msg = std::string(currentLabel()) + " on group '" + group() +
                                "': NCCL error: " + ncclGetErrorString(async);
        abortNccl();
        m_host->abort(msg);
        throw CommAborted(msg);
      }
      if (m_host->aborted()) {
        abortNccl();
        throw CommAborted("nccl: the group was aborted");
      }
      if (nowNs() > deadlineNs()) {
        const std::string msg = std::string(currentLabel()) + " on group '" + group() +
                                "' timed out after " + std::to_string(m_options.timeoutSeconds) +
                                " s (some ranks never arrived)";
        abortNccl();
        m_host->abort(msg);
        throw CommAborted(msg);
      }
      std::this_thread::yield();
    }
  }

  void abortNccl() {
    if (m_comm) ncclCommAbort(m_comm);
    m_comm = nullptr;
  }

  ncclComm_t m_comm;
  int m_device;
  std::unique_ptr<Communicator> m_host;
  cudaStream_t m_stream = nullptr;
  StagingBuffer m_staging;  // host all-reduces pass through it (MemCategory::Comm)
};

std::unique_ptr<ThreadWorld> ThreadWorld::nccl(int ranks, CommOptions options) {
  if (options.link != "none")
    throw CommError("link: emulation is offered by the thread backend only");
  const kernels::GpuInfo gpus = kernels::cuda_query_devices();
  if (gpus.count < ranks)
    throw CommError("nccl: " + std::to_string(ranks) + " ranks need " + std::to_string(ranks) +
                    " GPUs (NCCL refuses two ranks on one GPU); found " +
                    std::to_string(gpus.count) + (gpus.reason.empty() ? "" : ": " + gpus.reason));
  auto world = std::make_unique<ThreadWorld>(ranks, options);  // the host side
  std::vector<ncclComm_t> comms(ranks);
  std::vector<int> devices(ranks), worldRanks(ranks);
  for (int r = 0; r < ranks; ++r) devices[r] = worldRanks[r] = r;
  checkNccl(ncclCommInitAll(comms.data(), ranks, devices.data()), "ncclCommInitAll");
  for (int r = 0; r < ranks; ++r) {
    std::unique_ptr<Communicator> host = std::move(world->m_comms[r]);
    world->m_comms[r] = std::make_unique<NcclComm>(comms[r], r, std::move(host), "world",
                                                   worldRanks, options,
                                                   NcclComm::newContext(r, ranks), r, ranks);
  }
  return world;
}

std::unique_ptr<Communicator> makeNcclMpiWorld(CommOptions options) {
  std::unique_ptr<Communicator> host = makeMpiWorld(options);  // throws without MPI
  const int rank = host->rank(), n = host->size();
  const kernels::GpuInfo gpus = kernels::cuda_query_devices();
  if (gpus.count == 0) throw CommError("nccl: no GPU: " + gpus.reason);
  // The GPU of this process: its rank on this node, as mpirun numbers them (as Compute::forRank).
  const int device = mpiLocalRank(rank) % gpus.count;
  // Rank 0 makes the id; the host communicator carries its 128 bytes to the others (a float
  // broadcast copies bytes unchanged). Set-up traffic: not part of any step.
  ncclUniqueId id{};
  static_assert(sizeof(id) % sizeof(float) == 0);
  if (rank == 0) checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  host->broadcast(reinterpret_cast<float*>(&id), sizeof(id) / sizeof(float), 0);
  host->accounting().reset();
  checkCuda(cudaSetDevice(device), "cudaSetDevice");
  ncclComm_t comm = nullptr;
  checkNccl(ncclCommInitRank(&comm, n, id, rank), "ncclCommInitRank");
  std::vector<int> world(n);
  for (int r = 0; r < n; ++r) world[r] = r;
  return std::make_unique<NcclComm>(comm, device, std::move(host), "world", world, options,
                                    NcclComm::newContext(rank, n), rank, n);
}

#endif  // PARALAB_HAVE_NCCL

}  // namespace paralab
