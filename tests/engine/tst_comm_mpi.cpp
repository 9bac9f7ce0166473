// MpiComm against the same serial references as ThreadComm, one rank per process: every
// collective x sizes {0,1,7,1000,2^20+3} x each all-reduce algorithm, counted bytes (exact for
// naive and ring, the ring model for MPI's own), sub-groups, point to point, mismatches.
// Run by CTest through mpirun (np 2 and 4): ctest -R tst_comm_mpi --output-on-failure
#include <QtTest>

#include "comm/communicator.h"
#include "tst_comm_reference.h"

using namespace paralab;
using namespace paralab::commtest;

class TstCommMpi : public QObject {
  Q_OBJECT

  std::unique_ptr<Communicator> m_world;

  // A check fails on every rank when it fails on one (else the ranks would drift apart and
  // wait in different collectives). Returns the local message, or another rank's failure.
  QString agreed(const std::string& localError) {
    float bad = localError.empty() ? 0.0f : 1.0f;
    m_world->allReduce(&bad, &bad, 1, ReduceOp::Max);
    if (!localError.empty()) return QString::fromStdString(localError);
    return bad > 0 ? QString("another rank failed") : QString();
  }

 private slots:
  void initTestCase() {
    CommOptions o;
    o.timeoutSeconds = 60;  // a hang ends the job (the watchdog) rather than CTest's timeout
    m_world = makeMpiWorld(o);
    QVERIFY(m_world->size() >= 2);
    QCOMPARE(QString::fromStdString(paralab::nameOf(m_world->backend())), QString("mpi"));
    QCOMPARE(mpiLaunchSize(), m_world->size());
  }

  void collectives_data() {
    QTest::addColumn<QString>("op");
    QTest::addColumn<qint64>("count");
    for (const std::string& op : allOps())
      for (qint64 m : {qint64(0), qint64(1), qint64(7), qint64(1000), qint64((1 << 20) + 3)})
        QTest::addRow("%s m=%lld", op.c_str(), static_cast<long long>(m))
            << QString::fromStdString(op) << m;
  }
  void collectives() {
    QFETCH(QString, op);
    QFETCH(qint64, count);
    const QString err = agreed(runAndCheck(*m_world, op.toStdString(), count));
    QVERIFY2(err.isEmpty(), qPrintable(err));
  }

  void countedBytes_data() {
    QTest::addColumn<QString>("algo");
    QTest::addColumn<qint64>("count");
    for (const char* a : {"naive", "ring", "default"})
      for (qint64 m : {qint64(12 * 1000), qint64(1001)})
        QTest::addRow("%s m=%lld", a, static_cast<long long>(m)) << a << m;
  }
  void countedBytes() {
    QFETCH(QString, algo);
    QFETCH(qint64, count);
    const int n = m_world->size(), r = m_world->rank();
    std::vector<float> g(count, 1.0f);
    m_world->accounting().reset();
    m_world->allReduce(g.data(), g.data(), count, ReduceOp::Sum,
                       parseAllReduceAlgo(algo.toStdString()));
    const CommTraffic t = m_world->accounting().take();
    std::string err;
    const int64_t m = count * 4;
    auto chunk = [&](int q) {
      q = ((q % n) + n) % n;
      return ((q + 1) * count / n - q * count / n) * 4;
    };
    if (algo == "naive") {
      for (int q = 0; q < n; ++q)
        if (t.sentTo[q] != (q == r ? 0 : m)) err = "naive: not m to every peer";
      if (t.modelled) err = "naive is counted, not modelled";
    } else {  // ring counted; MPI's own modelled on the same ring
      int64_t right = 0;
      for (int s = 0; s < n - 1; ++s) right += chunk(r - s) + chunk(r + 1 - s);
      if (t.sentTo[(r + 1) % n] != right || t.bytesSent != right) err = algo.toStdString() + ": ring bytes";
      if (count % n == 0 && t.bytesSent != 2 * (n - 1) * m / n) err = "not 2(N-1)/N m";
      if (t.modelled != (algo == "default")) err = "modelled flag wrong";
    }
    const QString e = agreed(err);
    QVERIFY2(e.isEmpty(), qPrintable(e));
  }

  void split() {
    const int n = m_world->size(), r = m_world->rank();
    auto half = m_world->split(r % 2, -r, "dp");
    std::string err;
    float v = static_cast<float>(r);
    half->allReduce(&v, &v, 1);
    float want = 0;
    for (int q = r % 2; q < n; q += 2) want += q;
    if (v != want) err = "sum in the group";
    if (half->group() != "dp" || half->worldRank() != r) err = "group name or world rank";
    for (int q = 0; q + 1 < half->size(); ++q)
      if (half->worldRankOf(q) < half->worldRankOf(q + 1)) err = "key order";
    auto none = m_world->split(r == 0 ? -1 : 1, 0);
    if ((r == 0) != (none == nullptr)) err = "color < 0";
    const QString e = agreed(err);
    QVERIFY2(e.isEmpty(), qPrintable(e));
  }

  void pointToPointAndGather() {
    const int n = m_world->size(), r = m_world->rank();
    std::string err;
    // A pipeline from rank 0 to the last rank.
    std::vector<float> act(333, 0.0f);
    if (r == 0)
      for (int i = 0; i < 333; ++i) act[i] = float(i);
    else
      m_world->recv(act.data(), 333, r - 1);
    if (r + 1 < n) m_world->send(act.data(), 333, r + 1);
    for (int i = 0; i < 333; ++i)
      if (act[i] != float(i)) err = "pipeline data";
    // A receive of the wrong size is an error.
    if (r == 0) {
      float x[3] = {1, 2, 3};
      m_world->send(x, 3, 1);
    } else if (r == 1) {
      float y[2];
      try {
        m_world->recv(y, 2, 0);
        err = "size mismatch not caught";
      } catch (const CommError&) {
      }
    }
    const auto all = m_world->gatherToRoot("{\"rank\": " + std::to_string(r) + "}", 0);
    if (r == 0 && (int(all.size()) != n || all[n - 1] != "{\"rank\": " + std::to_string(n - 1) + "}"))
      err = "gather";
    const QString e = agreed(err);
    QVERIFY2(e.isEmpty(), qPrintable(e));
  }

  void mismatchedSizesAreAnError() {
    std::string err;
    std::vector<float> g(10, 1.0f);
    try {
      m_world->allReduce(g.data(), g.data(), m_world->rank() == 1 ? 8 : 7);
      err = "no error";
    } catch (const CommError& e) {
      if (std::string(e.what()).find("rank 1: allreduce of 8 floats") == std::string::npos)
        err = std::string("message: ") + e.what();
    }
    m_world->allReduce(g.data(), g.data(), 10);  // still usable
    if (g[0] != float(m_world->size())) err = "unusable after the error";
    const QString e = agreed(err);
    QVERIFY2(e.isEmpty(), qPrintable(e));
  }

  void hostOnlyAndNoEmulation() {
    float x = 0;
    QVERIFY_THROWS_EXCEPTION(CommError, m_world->allReduce(&x, &x, 1, ReduceOp::Sum,
                                                            AllReduceAlgo::Default, Device::Cuda));
    CommOptions o;
    o.link = "pcie";
    QVERIFY_THROWS_EXCEPTION(CommError, makeMpiWorld(o));
  }

  void cleanupTestCase() { m_world.reset(); }
};

QTEST_GUILESS_MAIN(TstCommMpi)
#include "tst_comm_mpi.moc"
