// NcclComm in one process (ThreadWorld::nccl: one thread and one GPU per rank) against the
// serial references. Compiled wherever NCCL is; rows needing more GPUs than present skip.
// Run: ctest -R tst_comm_nccl --output-on-failure
#include <QtTest>

#include <cmath>
#include <mutex>

#include "comm/communicator.h"
#include "cuda/device.h"
#include "cuda/reduce.h"
#include "tst_comm_reference.h"

using namespace paralab;
using namespace paralab::commtest;

namespace {

// A device buffer of this rank, filled from / read back to host vectors.
struct DeviceBuffer {
  explicit DeviceBuffer(int64_t count) : count(count) {
    data = static_cast<float*>(kernels::reduce_device_alloc(std::max<int64_t>(count, 1) * 4));
    stream = kernels::reduce_stream_create();
  }
  ~DeviceBuffer() {
    kernels::reduce_device_free(data);
    kernels::reduce_stream_destroy(stream);
  }
  void put(const std::vector<float>& v) {
    kernels::reduce_device_copy(data, v.data(), int64_t(v.size()) * 4, stream);
    kernels::reduce_stream_sync(stream);
  }
  std::vector<float> get() {
    std::vector<float> v(count);
    kernels::reduce_device_copy(v.data(), data, count * 4, stream);
    kernels::reduce_stream_sync(stream);
    return v;
  }
  float* data;
  int64_t count;
  void* stream;
};

// NCCL may average as a sum of x/n terms: compare within float rounding.
std::string near(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  for (size_t i = 0; i < got.size(); ++i)
    if (std::fabs(got[i] - want[i]) > 1e-5f * std::max(1.0f, std::fabs(want[i])))
      return std::string(what) + ": element " + std::to_string(i) + " is " +
             std::to_string(got[i]) + ", expected " + std::to_string(want[i]);
  return {};
}

}  // namespace

class TstCommNccl : public QObject {
  Q_OBJECT

 private slots:
  void inProcess_data() {
    QTest::addColumn<int>("n");
    for (int n : {1, 2, 4, 8}) QTest::addRow("n=%d", n) << n;
  }
  void inProcess() {
    QFETCH(int, n);
    if (!ncclAvailable()) QSKIP("built without NCCL");
    const kernels::GpuInfo gpus = kernels::cuda_query_devices();
    if (gpus.count < n)
      QSKIP(qPrintable(QString("%1 ranks need %1 GPUs, found %2 %3")
                           .arg(n).arg(gpus.count).arg(QString::fromStdString(gpus.reason))));
    auto world = ThreadWorld::nccl(n);
    std::mutex mutex;
    std::vector<std::string> errors;
    world->run([&](Communicator& comm) {
      const int r = comm.rank();
      const int64_t m = 1000;
      std::string err;
      auto note = [&](const std::string& e) {
        if (err.empty() && !e.empty()) err = "rank " + std::to_string(r) + ": " + e;
      };
      DeviceBuffer a(n * m), b(n * m);
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max}) {
        a.put(inputs(r, m));
        comm.allReduce(a.data, a.data, m, op, AllReduceAlgo::Default, Device::Cuda);
        std::vector<float> want(m);
        for (int64_t i = 0; i < m; ++i) want[i] = reduced(n, i, op);
        std::vector<float> got = a.get();
        got.resize(m);
        note(near(got, want, "allreduce"));
      }
      a.put(inputs(r, n * m));
      comm.reduceScatter(a.data, b.data, m, ReduceOp::Sum, Device::Cuda);
      {
        std::vector<float> got = b.get(), want(m);
        got.resize(m);
        for (int64_t i = 0; i < m; ++i) want[i] = reduced(n, r * m + i, ReduceOp::Sum);
        note(near(got, want, "reducescatter"));
      }
      a.put(inputs(r, m));
      comm.allGather(a.data, b.data, m, Device::Cuda);
      {
        std::vector<float> want(n * m);
        for (int q = 0; q < n; ++q)
          for (int64_t i = 0; i < m; ++i) want[q * m + i] = inputValue(q, i);
        note(near(b.get(), want, "allgather"));
      }
      a.put(inputs(r, n * m));
      comm.broadcast(a.data, m, 0, Device::Cuda);
      {
        std::vector<float> got = a.get();
        got.resize(m);
        note(near(got, inputs(0, m), "broadcast"));
      }
      a.put(inputs(r, n * m));
      comm.allToAll(a.data, b.data, m, Device::Cuda);
      {
        std::vector<float> want(n * m);
        for (int q = 0; q < n; ++q)
          for (int64_t i = 0; i < m; ++i) want[q * m + i] = inputValue(q, r * m + i);
        note(near(b.get(), want, "alltoall"));
      }
      comm.barrier();
      // Counted bytes: NCCL's own algorithms, modelled on the ring behind busbw.
      comm.accounting().reset();
      comm.allReduce(a.data, a.data, 8 * m, ReduceOp::Sum, AllReduceAlgo::Default, Device::Cuda);
      const CommTraffic t = comm.accounting().take();
      if (n > 1 && (!t.modelled || t.bytesSent != 2 * (n - 1) * 8 * m * 4 / n))
        note("modelled bytes");
      // A host all-reduce (a strategy's scalar) is staged through the GPU; the teaching
      // algorithms belong to the thread backend.
      float x = float(r);
      comm.allReduce(&x, &x, 1, ReduceOp::Max);
      if (x != float(n - 1)) note("host all-reduce Max gave " + std::to_string(x));
      try {
        comm.allReduce(a.data, a.data, 1, ReduceOp::Sum, AllReduceAlgo::Ring, Device::Cuda);
        note("ring accepted");
      } catch (const CommError&) {
      }
      if (n >= 2) {
        auto half = comm.split(r % 2, r);
        a.put(std::vector<float>(m, float(r)));
        half->allReduce(a.data, a.data, m, ReduceOp::Sum, AllReduceAlgo::Default, Device::Cuda);
        float want = 0;
        for (int q = r % 2; q < n; q += 2) want += q;
        std::vector<float> got = a.get();
        got.resize(m);
        note(near(got, std::vector<float>(m, want), "split allreduce"));
      }
      std::lock_guard lock(mutex);
      if (!err.empty()) errors.push_back(err);
    });
    QString all;
    for (const std::string& e : errors) all += QString::fromStdString(e) + "\n";
    QVERIFY2(errors.empty(), qPrintable(all));
  }

  void tooFewGpusIsAClearError() {
    if (!ncclAvailable()) QSKIP("built without NCCL");
    const int have = kernels::cuda_query_devices().count;
    try {
      ThreadWorld::nccl(have + 1);
      QFAIL("a world with more ranks than GPUs was made");
    } catch (const CommError& e) {
      QVERIFY2(QString(e.what()).contains("GPUs"), e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TstCommNccl)
#include "tst_comm_nccl.moc"
