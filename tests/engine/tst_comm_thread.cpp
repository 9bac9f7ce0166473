// ThreadComm against serial references: every collective x N in {1,2,3,4,8} x sizes
// {0,1,7,1000,2^20+3} x each all-reduce algorithm, counted bytes against each algorithm's
// theory, sub-groups, point to point, link emulation, and the timeout / abort / mismatch paths
// finishing in bounded time. Run: ctest -R tst_comm_thread --output-on-failure
#include <QtTest>

#include <atomic>
#include <chrono>
#include <mutex>

#include "comm/communicator.h"
#include "cuda/device.h"
#include "cuda/reduce.h"
#include "metrics/span_recorder.h"
#include "tst_comm_reference.h"

using namespace paralab;
using namespace paralab::commtest;

namespace {

// Runs rankMain on an n-rank world and returns every rank's non-empty result string.
std::vector<std::string> onRanks(int n, const std::function<std::string(Communicator&)>& rankMain,
                                 CommOptions options = {}) {
  ThreadWorld world(n, options);
  std::mutex mutex;
  std::vector<std::string> errors;
  world.run([&](Communicator& comm) {
    std::string e = rankMain(comm);
    if (!e.empty()) {
      std::lock_guard lock(mutex);
      errors.push_back(e);
    }
  });
  return errors;
}

QString joined(const std::vector<std::string>& v) {
  QString s;
  for (const std::string& e : v) s += QString::fromStdString(e) + "\n";
  return s;
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Chunk q of a ring over m floats (the same cut the algorithms use), in bytes.
int64_t chunkBytes(int q, int n, int64_t m) {
  q = ((q % n) + n) % n;
  return ((q + 1) * m / n - q * m / n) * 4;
}

}  // namespace

class TstCommThread : public QObject {
  Q_OBJECT

 private slots:
  // [SECTION] Results against the serial reference
  void collectives_data() {
    QTest::addColumn<QString>("op");
    QTest::addColumn<int>("n");
    QTest::addColumn<qint64>("count");
    const qint64 sizes[] = {0, 1, 7, 1000, (1 << 20) + 3};
    for (const std::string& op : allOps())
      for (int n : {1, 2, 3, 4, 8})
        for (qint64 m : sizes)
          QTest::addRow("%s n=%d m=%lld", op.c_str(), n, static_cast<long long>(m))
              << QString::fromStdString(op) << n << m;
  }
  void collectives() {
    QFETCH(QString, op);
    QFETCH(int, n);
    QFETCH(qint64, count);
    const std::vector<std::string> errors =
        onRanks(n, [&](Communicator& comm) { return runAndCheck(comm, op.toStdString(), count); });
    QVERIFY2(errors.empty(), qPrintable(joined(errors)));
  }

  // Many calls back to back, the configured algorithm, and a world of one: the same answers.
  void configuredAlgorithmAndRepeats() {
    for (const char* algo : {"naive", "ring", "default"}) {
      CommOptions o;
      o.algorithm = parseAllReduceAlgo(algo);
      const auto errors = onRanks(
          4,
          [&](Communicator& comm) {
            for (int k = 0; k < 50; ++k) {
              const int64_t m = 1 + k * 13;
              std::vector<float> buf = inputs(comm.rank(), m);
              comm.allReduce(buf.data(), buf.data(), m);  // Configured
              for (int64_t i = 0; i < m; ++i)
                if (buf[i] != reduced(4, i, ReduceOp::Sum)) return std::string("wrong sum");
            }
            const auto calls = comm.accounting().recentCalls(1);
            if (calls.empty() || commAlgoName(calls[0].algo) !=
                                     std::string(o.algorithm == AllReduceAlgo::Default
                                                     ? "direct"
                                                     : algo))
              return std::string("algorithm not recorded");
            return std::string();
          },
          o);
      QVERIFY2(errors.empty(), qPrintable(joined(errors)));
    }
  }

  // [SECTION] Counted bytes equal each algorithm's theory, exactly
  void countedBytesMatchTheory_data() {
    QTest::addColumn<QString>("op");
    QTest::addColumn<int>("n");
    QTest::addColumn<qint64>("count");
    for (const char* op : {"allreduce-naive", "allreduce-ring", "allreduce-default",
                           "reducescatter", "allgather", "broadcast", "reduce", "alltoall"})
      for (int n : {2, 3, 4, 8})
        for (qint64 m : {qint64(8 * 1000), qint64(1001)})  // divisible by n, and not
          QTest::addRow("%s n=%d m=%lld", op, n, static_cast<long long>(m)) << op << n << m;
  }
  void countedBytesMatchTheory() {
    QFETCH(QString, op);
    QFETCH(int, n);
    QFETCH(qint64, count);
    const std::string o = op.toStdString();
    std::vector<CommTraffic> traffic(n);
    ThreadWorld world(n);
    world.run([&](Communicator& comm) {
      std::vector<float> a(static_cast<size_t>(n * count), 1.0f), b(a.size());
      const int root = n - 1;
      if (o == "allreduce-naive") comm.allReduce(a.data(), b.data(), count, ReduceOp::Sum, AllReduceAlgo::Naive);
      if (o == "allreduce-ring") comm.allReduce(a.data(), b.data(), count, ReduceOp::Sum, AllReduceAlgo::Ring);
      if (o == "allreduce-default") comm.allReduce(a.data(), b.data(), count);
      if (o == "reducescatter") comm.reduceScatter(a.data(), b.data(), count);
      if (o == "allgather") comm.allGather(a.data(), b.data(), count);
      if (o == "broadcast") comm.broadcast(a.data(), count, root);
      if (o == "reduce") comm.reduce(a.data(), b.data(), count, root);
      if (o == "alltoall") comm.allToAll(a.data(), b.data(), count);
      traffic[comm.rank()] = comm.accounting().take();
    });
    const int64_t m = count * 4;  // bytes of the count argument
    int64_t total = 0;
    for (int r = 0; r < n; ++r) {
      const CommTraffic& t = traffic[r];
      QCOMPARE(t.calls, int64_t(1));
      QVERIFY(!t.modelled);
      // Theory, per algorithm: what rank r sends to each peer q.
      std::vector<int64_t> to(n, 0);
      const int right = (r + 1) % n, root = n - 1;
      for (int q = 0; q < n; ++q) {
        if (q == r) continue;
        if (o == "allreduce-naive") to[q] = m;  // the whole buffer to everyone
        // direct: q reads slice q of ours, and we write our finished slice r into q
        if (o == "allreduce-default") to[q] = chunkBytes(q, n, count) + chunkBytes(r, n, count);
        if (o == "reducescatter" || o == "allgather" || o == "alltoall") to[q] = m;
        if (o == "broadcast" && r == root) to[q] = m;
        if (o == "reduce" && q == root) to[q] = m;
      }
      if (o == "allreduce-ring")  // only to the right: chunk r-s, then chunk r+1-s, N-1 times
        for (int s = 0; s < n - 1; ++s)
          to[right] += chunkBytes(r - s, n, count) + chunkBytes(r + 1 - s, n, count);
      int64_t sent = 0;
      for (int q = 0; q < n; ++q) {
        QCOMPARE(t.sentTo[q], to[q]);
        QCOMPARE(traffic[q].recvFrom[r], to[q]);  // what r sent, q received
        sent += to[q];
      }
      QCOMPARE(t.bytesSent, sent);
      total += t.bytesSent;
      // The textbook per-rank figures, exact when n divides the count.
      if (count % n == 0) {
        if (o == "allreduce-ring" || o == "allreduce-default")
          QCOMPARE(t.bytesSent, 2 * (n - 1) * m / n);  // 2(N-1)/N · m
        if (o == "allreduce-naive") QCOMPARE(t.bytesSent, (n - 1) * m);
      }
    }
    if (o == "allreduce-ring" || o == "allreduce-default")
      QCOMPARE(total, 2 * (n - 1) * m);  // every chunk crosses N-1 links twice
  }

  void bandwidthFormulas() {
    // nccl-tests: busbw = algbw * factor.
    QCOMPARE(busBwFactor(CommOp::AllReduce, 4), 1.5);
    QCOMPARE(busBwFactor(CommOp::AllReduce, 2), 1.0);
    QCOMPARE(busBwFactor(CommOp::ReduceScatter, 4), 0.75);
    QCOMPARE(busBwFactor(CommOp::AllGather, 8), 0.875);
    QCOMPARE(busBwFactor(CommOp::AllToAll, 2), 0.5);
    QCOMPARE(busBwFactor(CommOp::Broadcast, 8), 1.0);
    QCOMPARE(busBwFactor(CommOp::Reduce, 8), 1.0);
    QCOMPARE(algBwGBps(2'000'000'000, 2.0), 1.0);
    QCOMPARE(std::string(commSpanLabel(CommOp::AllReduce, CommAlgo::Ring)),
             std::string("allreduce ring"));
  }

  // [SECTION] Instrumentation
  void spansAndAccounting() {
    std::vector<SpanRecorder> spans(2);
    std::vector<CommTraffic> perStep(2);
    MemoryTracker mem;
    ThreadWorld world(2);
    world.run([&](Communicator& comm) {
      comm.setSpanRecorder(&spans[comm.rank()]);
      if (comm.rank() == 0) comm.setMemoryTracker(&mem);
      comm.setStep(7);
      std::vector<float> g(1000, 1.0f);
      comm.allReduce(g.data(), g.data(), 1000, ReduceOp::Sum, AllReduceAlgo::Ring);
      comm.allReduce(g.data(), g.data(), 1000, ReduceOp::Sum, AllReduceAlgo::Naive);  // in place: staging
      comm.barrier();
      perStep[comm.rank()] = comm.accounting().take();
      if (comm.accounting().totals().calls != 0) throw std::runtime_error("take() did not reset");
    });
    const std::vector<Span> s = spans[0].recent(10);
    QCOMPARE(int(s.size()), 3);
    QCOMPARE(std::string(s[0].op), std::string("allreduce ring"));
    QCOMPARE(std::string(s[1].op), std::string("allreduce naive"));
    QCOMPARE(std::string(s[2].op), std::string("barrier direct"));
    QCOMPARE(s[0].kind, SpanKind::Comm);
    QCOMPARE(s[0].step, int64_t(7));
    QCOMPARE(s[0].bytes, int64_t(4000));
    QVERIFY(s[0].endNs >= s[0].startNs);
    const CommTraffic& t = perStep[0];
    QCOMPARE(t.calls, int64_t(3));
    QCOMPARE(int(t.ops.size()), 3);
    QCOMPARE(t.ops[0].op, CommOp::AllReduce);
    QCOMPARE(t.ops[0].algo, CommAlgo::Ring);
    QCOMPARE(t.ops[0].group, std::string("world"));
    QCOMPARE(t.ops[0].sent, int64_t(4000));      // ring, n = 2: 2(N-1)/N · m = m
    QCOMPARE(t.ops[1].sent, int64_t(4000));      // naive, n = 2: (N-1) · m
    QCOMPARE(t.bytesSent, int64_t(8000));
    QVERIFY(t.timeNs > 0);
    // The naive in-place staging buffer stays, counted as comm memory.
    QCOMPARE(mem.snapshot()[MemCategory::Comm], int64_t(4000));
  }

  // [SECTION] Sub-groups
  void split() {
    const auto errors = onRanks(8, [](Communicator& world) -> std::string {
      // Two groups by parity, ordered by descending world rank (key = -rank).
      auto half = world.split(world.rank() % 2, -world.rank(), "dp");
      if (!half || half->size() != 4) return "bad group size";
      if (half->group() != "dp") return "bad group name";
      // Rank order follows the key: world ranks 7,5,3,1 and 6,4,2,0.
      for (int q = 0; q < 4; ++q)
        if (half->worldRankOf(q) != (world.rank() % 2) + 2 * (3 - q)) return "bad key order";
      if (half->worldRank() != world.rank()) return "bad world rank";
      float v = static_cast<float>(world.rank());
      half->allReduce(&v, &v, 1, ReduceOp::Sum, AllReduceAlgo::Ring);
      if (v != (world.rank() % 2 ? 1 + 3 + 5 + 7 : 0 + 2 + 4 + 6)) return "bad sum in group";
      // A nested split, and a rank that joins none.
      auto pair = half->split(half->rank() / 2, half->rank());
      if (pair->size() != 2 || pair->group() != "dp:" + std::to_string(half->rank() / 2))
        return "bad nested group";
      auto none = world.split(world.rank() == 3 ? -1 : 0, 0);
      if ((world.rank() == 3) != (none == nullptr)) return "color < 0 must give no group";
      // The child shares the rank's accounting: the group's bytes land on world-rank links.
      const CommTraffic t = world.accounting().totals();
      for (int q = 0; q < 8; ++q)
        if ((q % 2) != (world.rank() % 2) && t.sentTo[q] != 0) return "bytes outside the group";
      bool groupSeen = false;
      for (const CommOpTotals& o : t.ops) groupSeen = groupSeen || o.group == "dp";
      if (!groupSeen) return "group missing from the breakdown";
      return {};
    });
    QVERIFY2(errors.empty(), qPrintable(joined(errors)));
  }

  // [SECTION] Point to point and strings
  void sendRecvPipeline() {
    // A pipeline: rank r receives from r-1 and sends on to r+1, three messages each way.
    const auto errors = onRanks(4, [](Communicator& comm) -> std::string {
      const int r = comm.rank(), n = comm.size();
      for (int k = 0; k < 3; ++k) {
        std::vector<float> act(100 + k);
        if (r == 0)
          for (size_t i = 0; i < act.size(); ++i) act[i] = float(k * 1000 + i);
        else
          comm.recv(act.data(), int64_t(act.size()), r - 1);
        for (size_t i = 0; i < act.size(); ++i)
          if (act[i] != float(k * 1000 + i)) return "message out of order or wrong";
        if (r + 1 < n) comm.send(act.data(), int64_t(act.size()), r + 1);
      }
      const CommTraffic t = comm.accounting().totals();
      const int64_t bytes = (100 + 101 + 102) * 4;
      if (t.bytesSent != (r + 1 < n ? bytes : 0) || t.bytesRecv != (r > 0 ? bytes : 0))
        return "p2p bytes wrong";
      // A receive of the wrong size is an error, not a truncation.
      if (r == 0) {
        float x[3] = {1, 2, 3};
        comm.send(x, 3, 1);
      } else if (r == 1) {
        float y[2];
        try {
          comm.recv(y, 2, 0);
          return "size mismatch not caught";
        } catch (const CommError& e) {
          if (std::string(e.what()).find("expected 2 floats") == std::string::npos)
            return "message does not say what was expected";
        }
      }
      const auto all = comm.gatherToRoot("figures of rank " + std::to_string(r), 0);
      if (r == 0 && (all.size() != 4 || all[3] != "figures of rank 3")) return "gather wrong";
      if (r != 0 && !all.empty()) return "gather gave strings to a non-root";
      return {};
    });
    QVERIFY2(errors.empty(), qPrintable(joined(errors)));
  }

  // [SECTION] Link emulation
  void linkProfiles() {
    const std::vector<std::string> names = linkProfileNames();
    for (const char* want : {"none", "nvlink", "pcie", "infiniband", "ethernet"})
      QVERIFY2(std::find(names.begin(), names.end(), want) != names.end(), want);
    QVERIFY(!loadLinkProfile("none").emulated());
    const LinkProfile nv = loadLinkProfile("nvlink");
    QCOMPARE(nv.bandwidthGBps, 450.0);
    QCOMPARE(loadLinkProfile("pcie").bandwidthGBps, 25.0);
    QCOMPARE(loadLinkProfile("infiniband").bandwidthGBps, 50.0);
    QCOMPARE(loadLinkProfile("ethernet").bandwidthGBps, 1.2);
    // alpha-beta: 1 us + 450 kB / 450 GB/s = 1 us + 1 us
    QCOMPARE(nv.stepNs(450'000, 10), int64_t(2000));
    try {
      loadLinkProfile("tin-can");
      QFAIL("unknown profile accepted");
    } catch (const CommError& e) {
      const QString msg = e.what();
      QVERIFY2(msg.contains("tin-can") && msg.contains("ethernet") && msg.contains("nvlink"),
               qPrintable(msg));
    }
    try {
      ThreadWorld w(2, CommOptions{AllReduceAlgo::Default, 60, "tin-can"});
      QFAIL("a world with an unknown profile was made");
    } catch (const CommError&) {
    }
    try {
      parseAllReduceAlgo("butterfly");
      QFAIL("unknown algorithm accepted");
    } catch (const CommError& e) {
      QVERIFY(QString(e.what()).contains("naive, ring, default"));
    }
  }

  void linkEmulationSlowsTransfers() {
    // 10 GbE: 25 us + bytes / 1.2 GB/s per step. A 2-rank ring of 600k floats (2.4 MB) has 2
    // steps of 1.2 MB each way: 2 x (25 us + 1 ms) = 2.05 ms at least.
    CommOptions o;
    o.link = "ethernet";
    const int64_t m = 600'000;
    std::vector<double> seconds(2);
    ThreadWorld world(2, o);
    world.run([&](Communicator& comm) {
      if (!comm.emulated() || comm.link().name != "ethernet") throw std::runtime_error("not labelled");
      std::vector<float> g(m, 1.0f);
      const auto t0 = std::chrono::steady_clock::now();
      comm.allReduce(g.data(), g.data(), m, ReduceOp::Sum, AllReduceAlgo::Ring);
      seconds[comm.rank()] = secondsSince(t0);
      if (g[0] != 2.0f) throw std::runtime_error("wrong sum under emulation");
    });
    const LinkProfile eth = loadLinkProfile("ethernet");
    const double model = 2 * eth.stepNs(m / 2 * 4, m / 2 * 4) * 1e-9;
    for (double s : seconds) QVERIFY2(s >= model, qPrintable(QString("%1 < %2").arg(s).arg(model)));
    // Without a profile the same call is not labelled.
    ThreadWorld plain(2);
    QVERIFY(!plain.communicator(0).emulated());
  }

  // [SECTION] Faults finish in bounded time
  void timeoutNamesTheMissingRank() {
    CommOptions o;
    o.timeoutSeconds = 0.2;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      ThreadWorld world(3, o);
      world.run([](Communicator& comm) {
        float x = 1;
        if (comm.rank() != 2) comm.allReduce(&x, &x, 1, ReduceOp::Sum, AllReduceAlgo::Ring);
      });
      QFAIL("no timeout");
    } catch (const CommAborted& e) {
      const QString msg = e.what();
      QVERIFY2(msg.contains("allreduce ring") && msg.contains("'world'") &&
                   msg.contains("rank(s) 2 ") && msg.contains("never arrived"),
               qPrintable(msg));
    }
    QVERIFY(secondsSince(t0) < 5.0);
  }

  void timeoutWhenOversubscribed() {
    // 8 ranks on few cores: the timeout still fires, and names both missing ranks.
    CommOptions o;
    o.timeoutSeconds = 0.3;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      ThreadWorld world(8, o);
      world.run([](Communicator& comm) {
        if (comm.rank() != 5 && comm.rank() != 6) comm.barrier();
      });
      QFAIL("no timeout");
    } catch (const CommAborted& e) {
      QVERIFY2(QString(e.what()).contains("rank(s) 5, 6 never arrived"), e.what());
    }
    QVERIFY(secondsSince(t0) < 5.0);
  }

  void exceptionInOneRankAbortsTheOthers() {
    // The others wait with the default 60 s timeout; the failure must release them at once.
    const auto t0 = std::chrono::steady_clock::now();
    try {
      ThreadWorld world(4);
      world.run([](Communicator& comm) {
        std::vector<float> g(1000, 1.0f);
        comm.allReduce(g.data(), g.data(), 1000);
        if (comm.rank() == 1) throw std::runtime_error("boom in backward");
        comm.allReduce(g.data(), g.data(), 1000);  // ranks 0, 2, 3 wait here for rank 1
      });
      QFAIL("no error");
    } catch (const CommError& e) {
      QCOMPARE(QString(e.what()), QString("rank 1: boom in backward"));
    }
    QVERIFY(secondsSince(t0) < 2.0);
  }

  void abortFromOutsideMidCollective() {
    // The window's Stop: abort() while ranks are inside large collectives, reading each other's
    // buffers. The ranks leave cleanly (none frees a buffer another still reads) and quickly.
    ThreadWorld world(4);
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      world.abort("stopped by the user");
    });
    const auto t0 = std::chrono::steady_clock::now();
    try {
      world.run([](Communicator& comm) {
        std::vector<float> g(1 << 20, 1.0f);
        for (int k = 0;; ++k)
          comm.allReduce(g.data(), g.data(), int64_t(g.size()), ReduceOp::Avg,
                         k % 2 ? AllReduceAlgo::Naive : AllReduceAlgo::Ring);
      });
      QFAIL("no abort");
    } catch (const CommAborted& e) {
      QCOMPARE(QString(e.what()), QString("stopped by the user"));
    }
    stopper.join();
    QVERIFY(secondsSince(t0) < 5.0);
    QVERIFY(world.aborted());
  }

  void mismatchedSizesAreAnError() {
    const auto errors = onRanks(3, [](Communicator& comm) -> std::string {
      std::vector<float> g(10, 1.0f);
      const int64_t mine = comm.rank() == 1 ? 8 : 7;
      try {
        comm.allReduce(g.data(), g.data(), mine);
        return "no error";
      } catch (const CommError& e) {
        const std::string m = e.what();
        if (m.find("rank 0: allreduce of 7 floats") == std::string::npos ||
            m.find("rank 1: allreduce of 8 floats") == std::string::npos)
          return "message does not name the counts: " + m;
      }
      // Nothing moved, and the group is still usable.
      if (g[0] != 1.0f) return "buffer touched";
      comm.allReduce(g.data(), g.data(), 10);
      if (g[0] != 3.0f) return "group unusable after the error";
      // Different collectives, and all-to-all-v counts that do not pair up.
      try {
        if (comm.rank() == 0) comm.broadcast(g.data(), 10, 0);
        else comm.allReduce(g.data(), g.data(), 10);
        return "op mismatch not caught";
      } catch (const CommError&) {
      }
      std::vector<int64_t> sc(3, 1), rc(3, 1);
      if (comm.rank() == 2) rc[0] = 2;
      std::vector<float> out(4);
      try {
        comm.allToAllv(g.data(), sc, out.data(), rc);
        return "alltoallv count mismatch not caught";
      } catch (const CommError&) {
      }
      return {};
    });
    QVERIFY2(errors.empty(), qPrintable(joined(errors)));
  }

  void badArguments() {
    ThreadWorld world(2);
    Communicator& c = world.communicator(0);
    float x = 0;
    QVERIFY_THROWS_EXCEPTION(CommError, c.allReduce(&x, &x, -1));
    QVERIFY_THROWS_EXCEPTION(CommError, c.broadcast(&x, 1, 2));
    QVERIFY_THROWS_EXCEPTION(CommError, c.send(&x, 1, 0));
    QVERIFY_THROWS_EXCEPTION(CommError, c.allReduce(nullptr, &x, 1));
    QVERIFY_THROWS_EXCEPTION(CommError, ThreadWorld(0));
  }

  // Waiting stays cheap when ranks outnumber cores: 8 ranks, many small calls.
  void oversubscribedSmallCalls() {
    const auto t0 = std::chrono::steady_clock::now();
    const auto errors = onRanks(8, [](Communicator& comm) -> std::string {
      float x = 1;
      for (int k = 0; k < 200; ++k) comm.allReduce(&x, &x, 1, ReduceOp::Max);
      return x == 1 ? std::string() : std::string("wrong");
    });
    QVERIFY2(errors.empty(), qPrintable(joined(errors)));
    qInfo("200 all-reduces of 1 float on 8 ranks: %.1f ms", secondsSince(t0) * 1e3);
  }

  // [SECTION] Ranks sharing one GPU (device copies + the reduction kernel)
  void deviceCollectives_data() {
    QTest::addColumn<int>("n");
    for (int n : {1, 2, 3, 4}) QTest::addRow("n=%d", n) << n;
  }
  void deviceCollectives() {
    QFETCH(int, n);
    const kernels::GpuInfo gpus = kernels::cuda_query_devices();
    if (gpus.count == 0) QSKIP(qPrintable("no GPU: " + QString::fromStdString(gpus.reason)));
    const auto errors = onRanks(n, [](Communicator& comm) -> std::string {
      const int64_t m = 1000;
      const int n = comm.size();
      void* stream = kernels::reduce_stream_create();
      auto* d = static_cast<float*>(kernels::reduce_device_alloc(n * m * 4));
      auto* e = static_cast<float*>(kernels::reduce_device_alloc(n * m * 4));
      std::string err;
      for (AllReduceAlgo a : {AllReduceAlgo::Naive, AllReduceAlgo::Ring, AllReduceAlgo::Default})
        for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max}) {
          const std::vector<float> in = inputs(comm.rank(), m);
          kernels::reduce_device_copy(d, in.data(), m * 4, stream);
          kernels::reduce_stream_sync(stream);
          comm.allReduce(d, d, m, op, a, Device::Cuda);
          std::vector<float> got(m), want(m);
          kernels::reduce_device_copy(got.data(), d, m * 4, stream);
          kernels::reduce_stream_sync(stream);
          for (int64_t i = 0; i < m; ++i) want[i] = reduced(n, i, op);
          if (err.empty()) err = firstMismatch(got, want, "device allreduce");
        }
      const std::vector<float> in = inputs(comm.rank(), m);
      kernels::reduce_device_copy(d, in.data(), m * 4, stream);
      kernels::reduce_stream_sync(stream);
      comm.allGather(d, e, m, Device::Cuda);
      std::vector<float> got(n * m), want(n * m);
      kernels::reduce_device_copy(got.data(), e, n * m * 4, stream);
      kernels::reduce_stream_sync(stream);
      for (int q = 0; q < n; ++q)
        for (int64_t i = 0; i < m; ++i) want[q * m + i] = inputValue(q, i);
      if (err.empty()) err = firstMismatch(got, want, "device allgather");
      kernels::reduce_device_free(d);
      kernels::reduce_device_free(e);
      kernels::reduce_stream_destroy(stream);
      return err;
    });
    QVERIFY2(errors.empty(), qPrintable(joined(errors)));
  }
};

QTEST_GUILESS_MAIN(TstCommThread)
#include "tst_comm_thread.moc"
