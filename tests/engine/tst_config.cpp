// RunConfig validation and JSON config files: every error names its field.
// Run: ctest -R tst_config
#include <QtTest>

#include <QTemporaryFile>
#include <nlohmann/json.hpp>

#include "comm/communicator.h"  // ncclAvailable
#include "config.h"
#include "cpu/gemm.h"
#include "cuda/device.h"
#include "memory_estimate.h"

using namespace paralab;

class TstConfig : public QObject {
  Q_OBJECT
 private slots:
  void defaultsAreValid() { QVERIFY(!RunConfig{}.validate()); }

  void badValuesNameTheField_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("field");
    QTest::newRow("batch 0") << R"({"batch": 0})" << "batch:";
    QTest::newRow("hidden -5") << R"({"hidden": -5})" << "hidden:";
    QTest::newRow("lr 0") << R"({"lr": 0})" << "lr:";
    QTest::newRow("optimizer") << R"({"optimizer": "lamb"})" << "optimizer:";
    QTest::newRow("dataset") << R"({"dataset": "cifar"})" << "dataset:";
    QTest::newRow("data-dir") << R"({"data-dir": "/nonexistent"})" << "data-dir:";
    QTest::newRow("model") << R"({"model": "resnet"})" << "model:";
    QTest::newRow("device") << R"({"device": "tpu"})" << "device: 'tpu' is not one of cpu, cuda";
    QTest::newRow("gpu kernel on cpu") << R"({"kernel": "tensor-core"})" << "kernel: 'tensor-core'";
    QTest::newRow("cpu kernel on cuda") << R"({"device": "cuda", "kernel": "simd"})" << "kernel: 'simd'";
    QTest::newRow("backend") << R"({"backend": "gloo"})"
                             << "backend: 'gloo' is not one of thread, mpi, nccl";
    QTest::newRow("nccl on cpu") << R"({"backend": "nccl", "dataset": "synthetic"})"
                                 << "backend: nccl moves GPU buffers; it needs --device cuda";
  }
  void badValuesNameTheField() {
    QFETCH(QString, json);
    QFETCH(QString, field);
    RunConfig c;
    applyJson(c, nlohmann::json::parse(json.toStdString()));
    const auto err = c.validate();
    QVERIFY(err);
    QVERIFY2(QString::fromStdString(*err).startsWith(field), err->c_str());
  }

  void badJsonNamesTheKey_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("needle");
    QTest::newRow("unknown key") << R"({"hiden": 3})" << "hiden";
    QTest::newRow("wrong type") << R"({"batch": "big"})" << "batch: expected an integer";
    QTest::newRow("float for int") << R"({"layers": 2.5})" << "layers: expected an integer";
    QTest::newRow("negative seed") << R"({"seed": -1})" << "seed:";
    QTest::newRow("not an object") << R"([1, 2])" << "config:";
  }
  void badJsonNamesTheKey() {
    QFETCH(QString, json);
    QFETCH(QString, needle);
    RunConfig c;
    try {
      applyJson(c, nlohmann::json::parse(json.toStdString()));
      QFAIL("expected ConfigError");
    } catch (const ConfigError& e) {
      QVERIFY2(QString(e.what()).contains(needle), e.what());
    }
  }

  // Without a GPU, --device cuda is refused in one line naming the reason; with one it validates.
  void cudaNeedsAGpu() {
    RunConfig c;
    c.device = Device::Cuda;
    const auto gpus = kernels::cuda_query_devices();
    const auto err = c.validate();
    if (gpus.count > 0) {
      QVERIFY2(!err, err ? err->c_str() : "");
    } else {
      QVERIFY(err);
      QVERIFY2(QString::fromStdString(*err).startsWith("device: cuda is not available here ("),
               err->c_str());
      QVERIFY2(err->find(gpus.reason) != std::string::npos, err->c_str());
    }
  }

  // --backend nccl: one line for each way it cannot run. Which one a machine shows depends on
  // its build and GPUs, so each row states the case it is in.
  void ncclRefusals() {
    RunConfig c;
    c.dataset = "synthetic";
    c.device = Device::Cuda;
    c.backend = Backend::Nccl;
    const auto gpus = kernels::cuda_query_devices();
    const auto message = [&] { return QString::fromStdString(c.validate().value_or("")); };
    if (!ncclAvailable()) {  // said before looking for a GPU
      QVERIFY2(message().startsWith("backend: nccl is not in this build (ParaLab was built "
                                    "without NCCL"),
               qPrintable(message()));
      return;
    }
    if (gpus.count == 0) {  // the GPU comes first; the nccl rows below need one
      QVERIFY2(message().startsWith("device: cuda is not available here ("), qPrintable(message()));
      QSKIP(qPrintable("no GPU here for the rank-count rows: " +
                       QString::fromStdString(gpus.reason)));
    }
    c.ranks = gpus.count;  // a rank per GPU: valid
    QVERIFY2(message().isEmpty(), qPrintable(message()));
    c.ranks = gpus.count + 1;
    QCOMPARE(message(), QString("backend: nccl runs one rank per GPU: %1 ranks but %2 GPU(s) here "
                                "(--backend thread shares a GPU between ranks)")
                            .arg(gpus.count + 1)
                            .arg(gpus.count));
    c.ranks = 1;
    c.allreduce = "ring";
    QVERIFY2(message().startsWith("allreduce: --backend nccl runs NCCL's own all-reduce"),
             qPrintable(message()));
  }

  void everyCpuKernelValidates() {
    for (const auto& k : kernels::gemm_kernels()) {
      RunConfig c;
      c.kernel = k.name;
      QVERIFY2(!c.validate(), k.name);
    }
  }

  void fileRoundTrip() {
    RunConfig c;
    c.hidden = 64;
    c.optimizer = "adam";
    c.kernel = "tiled";
    QTemporaryFile f;
    QVERIFY(f.open());
    f.write(QByteArray::fromStdString(c.toJson().dump()));
    f.close();
    RunConfig d;
    applyJsonFile(d, f.fileName().toStdString());
    QCOMPARE(d.hidden, 64);
    QCOMPARE(QString::fromStdString(d.optimizer), QString("adam"));
    QCOMPARE(d.toJson(), c.toJson());
  }

  void malformedFileNamesThePath() {
    QTemporaryFile f;
    QVERIFY(f.open());
    f.write("{\"batch\": ");
    f.close();
    RunConfig c;
    try {
      applyJsonFile(c, f.fileName().toStdString());
      QFAIL("expected ConfigError");
    } catch (const ConfigError& e) {
      QVERIFY2(QString(e.what()).contains(f.fileName()) && QString(e.what()).contains("not valid JSON"), e.what());
    }
  }

  // Whatever a --config path holds, the answer is one ConfigError naming what is wrong.
  void configFilesThatAreNotSettings_data() {
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<QString>("needle");
    QTest::newRow("key twice") << QByteArray(R"({"hidden": 64, "hidden": 32})") << "'hidden' is given twice";
    QTest::newRow("object value") << QByteArray(R"({"hidden": {"a": 1}})") << "hidden: expected an integer, got an object";
    QTest::newRow("list value") << QByteArray(R"({"lr": [0.1]})") << "lr: expected a number, got a list";
    QTest::newRow("deep nesting") << QByteArray(100000, '[') << "config:";
    QTest::newRow("invalid UTF-8") << QByteArray("{\"model\": \"ml\xff\"}") << "not valid JSON";
    QTest::newRow("empty") << QByteArray() << "not valid JSON";
    QTest::newRow("true for an integer") << QByteArray(R"({"ranks": true})") << "ranks: expected an integer, got true";
  }
  void configFilesThatAreNotSettings() {
    QFETCH(QByteArray, content);
    QFETCH(QString, needle);
    QTemporaryFile f;
    QVERIFY(f.open());
    f.write(content);
    f.close();
    RunConfig c;
    try {
      applyJsonFile(c, f.fileName().toStdString());
      QFAIL("expected ConfigError");
    } catch (const ConfigError& e) {
      QVERIFY2(QString(e.what()).contains(needle), e.what());
    }
  }

  // A run of thread ranks that cannot fit in the machine is refused before it starts, naming
  // what it needs and what the machine has; the same run with less fits.
  void memoryBeyondTheMachineIsRefused() {
    RunConfig c;
    c.dataset = "synthetic";
    c.ranks = 64;
    c.hidden = 8192;
    const auto err = c.validate();
    QVERIFY(err);
    QVERIFY2(QString::fromStdString(*err).startsWith("ranks: this run needs about ") &&
                 QString::fromStdString(*err).contains("GiB), this machine has "),
             err->c_str());
    const int64_t GiB = int64_t(1) << 30;
    RunConfig small;
    small.dataset = "synthetic";
    QVERIFY(!memoryRefusal(small, GiB));
    QVERIFY(memoryRefusal(small, GiB / 1024));  // 1 MiB holds no run
    // ZeRO-3 over 8 ranks holds one copy of the model states instead of eight.
    RunConfig zero = small;
    zero.ranks = 8;
    const int64_t replicated = estimateMemory(zero).modelStates;
    zero.zero = 3;
    QCOMPARE(estimateMemory(zero).modelStates * 8, replicated);
    // Under mpirun the ranks are processes, perhaps on other machines: not estimated here.
    c.backend = Backend::Mpi;
    QVERIFY(!memoryRefusal(c, GiB));
  }

  // On --device cuda the busiest GPU must hold its ranks' share: the refusal names that GPU's
  // need and memory; two GPUs halve it; an unknown GPU memory checks nothing.
  void memoryBeyondTheGpuIsRefused() {
    RunConfig c;
    c.dataset = "synthetic";
    c.device = Device::Cuda;
    c.ranks = 4;
    c.hidden = 1024;
    const MemoryEstimate e = estimateMemory(c);
    const int64_t perRank = (e.modelStates + e.activations) / c.ranks;
    const int64_t host = int64_t(1) << 40;
    // One GPU holds all four ranks: it needs 4 shares; a GPU of 3.5 shares is refused.
    const auto err = memoryRefusal(c, host, {1, perRank * 7 / 2});
    QVERIFY(err);
    QVERIFY2(QString::fromStdString(*err).startsWith("ranks: this run needs about ") &&
                 QString::fromStdString(*err).contains("on one GPU (4 of its 4 ranks") &&
                 QString::fromStdString(*err).contains("the GPU has "),
             err->c_str());
    // Two GPUs: two ranks each, 2 shares fit in 3.5.
    QVERIFY(!memoryRefusal(c, host, {2, perRank * 7 / 2}));
    // Three GPUs: the busiest holds ceil(4/3) = 2 ranks, which do not fit in 1.5 shares.
    const auto three = memoryRefusal(c, host, {3, perRank * 3 / 2});
    QVERIFY(three && three->find("(2 of its 4 ranks") != std::string::npos);
    QVERIFY(!memoryRefusal(c, host, {1, 0}));  // memory unknown: not checked
    // The host's memory is not the GPU's: a tiny host does not refuse a run on the GPU.
    QVERIFY(!memoryRefusal(c, 1, {1, int64_t(1) << 40}));
  }

  void configPathsThatAreNotFiles() {
    RunConfig c;
    for (const std::string& path : {std::string("/"), std::string("/nonexistent/x.json")}) {
      try {
        applyJsonFile(c, path);
        QFAIL("expected ConfigError");
      } catch (const ConfigError& e) {
        QVERIFY2(QString(e.what()).startsWith("config:") && QString(e.what()).contains(path.c_str()), e.what());
      }
    }
    // A byte-order mark is not an error: editors write one.
    QTemporaryFile f;
    QVERIFY(f.open());
    f.write("\xEF\xBB\xBF{\"hidden\": 48}");
    f.close();
    applyJsonFile(c, f.fileName().toStdString());
    QCOMPARE(c.hidden, 48);
  }
};

QTEST_GUILESS_MAIN(TstConfig)
#include "tst_config.moc"
