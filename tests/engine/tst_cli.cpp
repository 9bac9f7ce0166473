// paralab-run as a user meets it: bad input gets one line naming the field and exit code 2;
// a good run prints one JSON object per step with the documented keys.
// Run: ctest -R tst_cli
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSet>
#include <QTemporaryDir>
#include <QTemporaryFile>
#include <QtTest>
#include <algorithm>
#include <sstream>

#include "json_lines.h"
#include "comm/communicator.h"  // ncclAvailable
#include "cuda/device.h"
#include "metrics/run_record.h"

class TstCli : public QObject {
  Q_OBJECT

  using Result = paralab::test::ProgramResult;
  static Result run(const QStringList& args) {
    return paralab::test::runProgram(PARALAB_RUN, args);
  }

 private slots:
  void badInput_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("names");
    QTest::newRow("unknown flag") << QStringList{"--frobnicate"} << "--frobnicate";
    QTest::newRow("batch 0") << QStringList{"--batch", "0"} << "batch";
    QTest::newRow("accumulate not dividing the batch")
        << QStringList{"--batch", "128", "--accumulate", "3"} << "accumulate: 3 does not divide";
    QTest::newRow("hidden -5") << QStringList{"--hidden", "-5"} << "hidden";
    QTest::newRow("lr abc") << QStringList{"--lr", "abc"} << "--lr";
    QTest::newRow("optimizer") << QStringList{"--optimizer", "lamb"} << "optimizer";
    QTest::newRow("missing config")
        << QStringList{"--config", "/nonexistent.json"} << "/nonexistent.json";
    QTest::newRow("missing data dir")
        << QStringList{"--data-dir", "/nonexistent"} << "/nonexistent";
    QTest::newRow("trace unwritable")
        << QStringList{"--trace", "/nonexistent/t.json"} << "trace: cannot write";
    QTest::newRow("trace without spans")
        << QStringList{"--trace", "t.json", "--no-instrument"} << "trace:";
    QTest::newRow("device") << QStringList{"--device", "tpu"} << "device:";
    QTest::newRow("kernel") << QStringList{"--kernel", "fast"} << "kernel: 'fast'";
    QTest::newRow("nccl without cuda") << QStringList{"--backend", "nccl", "--dataset", "synthetic"}
                                       << "backend: nccl moves GPU buffers; it needs --device cuda";
    QTest::newRow("straggler rank") << QStringList{"--ranks", "4", "--straggler", "5=2"}
                                    << "straggler: rank 5 does not exist (allowed: 0..3)";
    QTest::newRow("fail form") << QStringList{"--ranks", "2", "--fail", "1"}
                               << "fail: '1' is not RANK@STEP";
    // Program flags that do not go with the run or with each other (program_settings.cpp).
    QTest::newRow("sample of the mlp")
        << QStringList{"--sample", "5"} << "sample: generates text with --model gpt";
    QTest::newRow("sample out of range")
        << QStringList{"--model", "gpt", "--sample", "100001"} << "sample: 100001 is out of range";
    QTest::newRow("save with a sweep") << QStringList{"--save", "c.ckpt", "--sweep", "ranks=1,2"}
                                       << "save: goes with a training run (not a sweep)";
    QTest::newRow("control with a sweep")
        << QStringList{"--control", "stdin", "--latency-sweep", "batch=1"}
        << "control: drives a training run (not a sweep)";
    QTest::newRow("sweep of mpi ranks") << QStringList{"--backend", "mpi", "--sweep", "ranks=1,2"}
                                        << "sweep: runs thread ranks (--backend thread)";
    QTest::newRow("sweep form") << QStringList{"--sweep", "cores=4"} << "sweep: expected ranks=";
    // A flag that names something, given as "": refused, not read as absent.
    for (const char* flag : {"--config", "--sweep", "--trace", "--save", "--resume", "--control"})
      QTest::newRow(qPrintable(QString("empty %1").arg(flag)))
          << QStringList{flag, ""} << QString("%1: empty (allowed: ").arg(flag);
    // A file that opens but fails as it is read (a stream would throw from inside the library).
    QTest::newRow("config read error")
        << QStringList{"--config", "/proc/self/mem"} << "config: cannot read '/proc/self/mem'";
    // The checkpoint replaces its file whole: a device would be replaced by a file.
    QTest::newRow("save over a device")
        << QStringList{"--dataset", "synthetic", "--steps", "1", "--save", "/dev/null"}
        << "save: '/dev/null' is not a regular file";
    // A pipe opened for the trace would wait for a reader.
    QTest::newRow("trace into a pipe")
        << QStringList{"--dataset", "synthetic", "--trace", "/proc/self/fd/0"}
        << "trace: '/proc/self/fd/0' is not a regular file";
    // A device read to its end would never end.
    QTest::newRow("resume from a device")
        << QStringList{"--dataset", "synthetic", "--resume", "/dev/zero"}
        << "resume: cannot read '/dev/zero' (not a regular file)";
    // One rank more than this machine has GPUs: no GPU (as in CI) is said first, else the count.
    const int gpus = paralab::kernels::cuda_query_devices().count;
    QTest::newRow("nccl on too few GPUs")
        << QStringList{"--backend", "nccl",      "--device", "cuda",
                       "--dataset", "synthetic", "--ranks",  QString::number(gpus + 1)}
        << (!paralab::ncclAvailable() ? "backend: nccl is not in this build"
            : gpus == 0               ? "device: cuda is not available here"
                                      : "backend: nccl runs one rank per GPU");
  }
  void badInput() {
    QFETCH(QStringList, args);
    QFETCH(QString, names);
    const Result r = run(args);
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err.count('\n'), 1);  // exactly one line
    QVERIFY2(r.err.contains(names), qPrintable(r.err));
  }

  // A setting given where the model, strategy or layout does not use it would not act: one
  // line naming it and why (the window's words beside its greyed control), exit 2.
  void settingWhereItDoesNotApply_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("line");
    const auto row = [](const char* name, QStringList args, const char* line) {
      QTest::newRow(name) << args << QString("paralab-run: %1\n").arg(line);
    };
    const char* gpt = "belongs to the GPT (--model gpt)";
    row("recompute on the mlp", {"--recompute", "full"}, qPrintable(QString("recompute: ") + gpt));
    row("heads on the mlp", {"--heads", "8"}, qPrintable(QString("heads: ") + gpt));
    row("heads at its default", {"--heads", "4"}, qPrintable(QString("heads: ") + gpt));
    row("seq on the mlp", {"--seq", "32"}, qPrintable(QString("seq: ") + gpt));
    row("ffn on the moe", {"--model", "moe", "--ffn", "moe"}, qPrintable(QString("ffn: ") + gpt));
    row("cp on the mlp", {"--cp", "2"}, qPrintable(QString("cp: ") + gpt));
    row("cp-order without cp", {"--model", "gpt", "--cp-order", "contiguous"},
        "cp-order: belongs to context parallelism (--cp 2 or more)");
    row("schedule without a pipeline", {"--tp", "2", "--schedule", "gpipe"},
        "schedule: belongs to a pipeline (--pp 2 or more)");
    row("microbatches without model parallelism", {"--ranks", "2", "--microbatches", "4"},
        "microbatches: belongs to tensor, pipeline or context parallelism (--tp, --pp or --cp 2 "
        "or more)");
    row("topology under sync", {"--ranks", "2", "--topology", "random"},
        "topology: applies to --strategy gossip (the strategy is sync)");
    row("sync-every under gossip", {"--strategy", "gossip", "--sync-every", "8"},
        "sync-every: applies to --strategy local-sgd (the strategy is gossip)");
    row("clients under sync", {"--clients", "4"},
        "clients: applies to --strategy fedavg (the strategy is sync)");
    row("experts on the mlp", {"--experts", "8"},
        "experts: belongs to the mixture of experts (--model moe, or --model gpt --ffn moe)");
    row("sp without tp", {"--sp"},
        "sp: sequence parallelism needs tensor parallelism (--tp 2 or more)");
    row("bucket-mb under zero", {"--ranks", "2", "--zero", "1", "--bucket-mb", "1"},
        "bucket-mb: belongs to --dp-version bucket");
  }
  void settingWhereItDoesNotApply() {
    QFETCH(QStringList, args);
    QFETCH(QString, line);
    const Result r = run(QStringList{"--dataset", "synthetic", "--steps", "1"} + args);
    QCOMPARE(r.err, line);
    QCOMPARE(r.code, 2);
  }

  // The projection refuses them too: it projects the model and layout the flags describe.
  void settingWhereItDoesNotApplyToTheProjection() {
    Result r = run({"--project", "h100-sxm:8", "--recompute", "full"});
    QCOMPARE(r.err, QString("paralab-run: recompute: belongs to the GPT (--model gpt)\n"));
    QCOMPARE(r.code, 2);
    r = run({"--project", "h100-sxm:8", "--tp", "2", "--cp-order", "contiguous"});
    QCOMPARE(r.err, QString("paralab-run: cp-order: belongs to context parallelism (--cp 2 or "
                            "more)\n"));
    QCOMPARE(r.code, 2);
    r = run({"--project", "h100-sxm:8", "--model", "gpt", "--recompute", "full"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("recompute full"), qPrintable(r.out));
  }

  // The same keys in a --config file: refused when written by hand with a value of their own;
  // quiet at their default, and in a saved configuration (every setting's key, as the window's
  // Save settings and run-config.json write it), which carries keys for other models.
  void configKeysWhereTheyDoNotApply() {
    QTemporaryDir dir;
    const auto file = [&](const char* name, const std::string& text) {
      QFile f(dir.filePath(name));
      f.open(QIODevice::WriteOnly);
      f.write(text.c_str());
      return f.fileName();
    };
    const QStringList small{"--dataset", "synthetic", "--hidden", "16", "--batch", "8",
                            "--steps", "1", "--json"};
    Result r = run({"--config", file("hand.json", R"({"recompute": "full", "topology": "random"})"),
                    "--dataset", "synthetic"});
    QCOMPARE(r.err, QString("paralab-run: recompute: belongs to the GPT (--model gpt)\n"));
    QCOMPARE(r.code, 2);
    r = run(QStringList{"--config", file("defaults.json", R"({"heads": 4, "schedule": "1f1b"})")} +
            small);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    paralab::RunConfig saved;  // an MLP run's settings, saved with a GPT's heads and a gossip's
    saved.heads = 8;           // topology left in them
    saved.topology = "random";
    r = run(QStringList{"--config", file("saved.json", saved.toJson().dump(2))} + small);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    // A flag is a choice even over a saved configuration.
    r = run(QStringList{"--config", file("saved2.json", saved.toJson().dump(2)), "--seq", "8"} +
            small);
    QCOMPARE(r.err, QString("paralab-run: seq: belongs to the GPT (--model gpt)\n"));
    QCOMPARE(r.code, 2);
  }

  void malformedConfigFile() {
    QTemporaryFile f;
    QVERIFY(f.open());
    f.write("{ not json");
    f.close();
    const Result r = run({"--config", f.fileName()});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(f.fileName()) && r.err.count('\n') == 1, qPrintable(r.err));
  }

  void configFileThenFlagsWin() {
    QTemporaryFile f;
    QVERIFY(f.open());
    f.write(R"({"dataset": "synthetic", "hidden": 16, "batch": 8, "steps": 2})");
    f.close();
    const Result r = run({"--config", f.fileName(), "--steps", "3", "--json"});
    QCOMPARE(r.code, 0);
    const QStringList lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 4);  // 3 steps + summary
    const QJsonObject summary = QJsonDocument::fromJson(lines.last().toUtf8()).object();
    QCOMPARE(summary["steps"].toInt(), 3);
    QCOMPARE(summary["config"].toObject()["hidden"].toInt(), 16);
    // What the window's File > Open Run reads: the steps, then the settings.
    std::istringstream in(r.out.toStdString());
    int steps = 0;
    paralab::RunConfig settings;
    bool hasSettings = false;
    QCOMPARE(paralab::readRecordedRun(
                 in, [&](const paralab::StepMetrics&) { ++steps; }, &settings, &hasSettings),
             std::string());
    QVERIFY(hasSettings);
    QCOMPARE(steps, 3);
    QCOMPARE(settings.hidden, 16);
  }

  void jsonLinesCarryTheDocumentedKeys() {
    const Result r = run(
        {"--dataset", "synthetic", "--hidden", "32", "--batch", "16", "--steps", "2", "--json"});
    QCOMPARE(r.code, 0);
    const QStringList lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 3);
    for (int i = 0; i < 2; ++i) {
      QJsonParseError e;
      const QJsonObject o = QJsonDocument::fromJson(lines[i].toUtf8(), &e).object();
      QCOMPARE(e.error, QJsonParseError::NoError);
      QCOMPARE(o["step"].toInt(), i + 1);
      for (const char* k : {"loss", "step_ms", "samples_per_s"}) QVERIFY2(o[k].toDouble() > 0, k);
      const QJsonObject r0 = o["ranks"].toArray().at(0).toObject();
      for (const char* k : {"rank", "compute_ms", "comm_ms", "idle_ms", "bytes_sent", "bytes_recv"})
        QVERIFY2(r0.contains(k), k);
      const QJsonObject mem = r0["mem"].toObject();
      for (const char* k :
           {"params", "grads", "optimizer", "activations", "comm", "workspace", "peak"})
        QVERIFY2(mem.contains(k), k);
    }
  }

  // --fail on thread ranks: exit non-zero with the one message naming the rank, the op and the
  // step, the other ranks released from their collectives well before the timeout (bounded
  // here by the timeout plus one second, a hang guard rather than a measurement).
  void failingRankEndsTheRun() {
    QProcess p;
    QElapsedTimer t;
    t.start();
    p.start(PARALAB_RUN, {"--dataset", "synthetic", "--hidden", "32", "--batch", "32", "--ranks",
                          "3", "--steps", "6", "--fail", "2@3", "--timeout", "20", "--json"});
    QVERIFY(p.waitForFinished(21000));
    QVERIFY(t.elapsed() < 21000);
    QVERIFY(p.exitCode() != 0);
    QCOMPARE(QString::fromUtf8(p.readAllStandardError()),
             QString("paralab-run: rank 2 failed at step 3 after its backward: injected failure "
                     "(--fail 2@3)\n"));
    QCOMPARE(QString::fromUtf8(p.readAllStandardOutput()).trimmed().split('\n').size(), 2);
  }

  // The same under mpirun: the failing process ends the job (MPI_Abort) with the message; every
  // process exits, none is left behind, and mpirun's own status is non-zero.
  void failingRankEndsTheMpiJob() {
#ifndef PARALAB_MPIRUN
    QSKIP("built without MPI");
#else
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("OMPI_ALLOW_RUN_AS_ROOT", "1");
    env.insert("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    p.setProcessEnvironment(env);
    const QString seed = "917263";  // marks this job's processes
    p.start(PARALAB_MPIRUN,
            {"--oversubscribe", "-np",       "2",        PARALAB_RUN, "--backend", "mpi",
             "--dataset",       "synthetic", "--hidden", "32",        "--batch",   "32",
             "--steps",         "6",         "--fail",   "1@3",       "--timeout", "20",
             "--seed",          seed,        "--json"});
    QVERIFY(p.waitForFinished(60000));
    QVERIFY(p.exitCode() != 0);
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(err.contains("paralab: world rank 1 aborted the job: rank 1 failed at step 3 after "
                          "its backward: injected failure (--fail 1@3)"),
             qPrintable(err));
    QProcess pgrep;
    pgrep.start("pgrep", {"-f", "paralab-run.*--seed " + seed});
    QVERIFY(pgrep.waitForFinished(10000));
    QVERIFY2(pgrep.readAllStandardOutput().trimmed().isEmpty(), "a process was left behind");
#endif
  }

  void mpiBackendMatchesThreads_data() {
    QTest::addColumn<int>("np");
    QTest::newRow("np 2") << 2;
    QTest::newRow("np 4") << 4;
  }
  void mpiBackendMatchesThreads() {
#ifndef PARALAB_MPIRUN
    QSKIP("built without MPI");
#else
    QFETCH(int, np);
    const QStringList common = {"--dataset", "synthetic",    "--hidden", "32",
                                "--batch",   "64",           "--steps",  "4",
                                "--json",    "--eval-every", "0"};
    const Result threads = run(QStringList{"--ranks", QString::number(np)} + common);
    QCOMPARE(threads.code, 0);
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("OMPI_ALLOW_RUN_AS_ROOT", "1");
    env.insert("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    p.setProcessEnvironment(env);
    p.start(PARALAB_MPIRUN, QStringList{"--oversubscribe", "-np", QString::number(np), PARALAB_RUN,
                                        "--backend", "mpi"} +
                                common);
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 0);
    const QStringList a = threads.out.trimmed().split('\n');
    const QStringList b = QString::fromUtf8(p.readAllStandardOutput()).trimmed().split('\n');
    QCOMPARE(b.size(), a.size());  // rank 0 alone prints: 4 steps + summary
    for (int i = 0; i < 4; ++i) {
      const QJsonObject x = QJsonDocument::fromJson(a[i].toUtf8()).object();
      const QJsonObject y = QJsonDocument::fromJson(b[i].toUtf8()).object();
      // Same data, same model, same sums: the losses agree to rounding (the reduction order
      // of MPI_Allreduce may differ from ThreadComm's).
      QVERIFY2(std::abs(x["loss"].toDouble() - y["loss"].toDouble()) <= 1e-5 * x["loss"].toDouble(),
               qPrintable(a[i] + "\n" + b[i]));
      const QJsonArray ranks = y["ranks"].toArray();
      QCOMPARE(ranks.size(), np);  // every rank's figures gathered to rank 0
      for (int r = 0; r < np; ++r) {
        QCOMPARE(ranks[r].toObject()["rank"].toInt(), r);
        QVERIFY(ranks[r].toObject()["bytes_sent"].toDouble() > 0);
      }
    }
#endif
  }

  // [SECTION] --latency-sweep: forward-only time per batch size (issue 6).
  void latencySweepBadInput_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("names");
    const auto sweep = [](const char* spec) { return QStringList{"--latency-sweep", spec}; };
    QTest::newRow("empty list") << sweep("batch=") << "latency-sweep";
    QTest::newRow("empty spec") << sweep("") << "latency-sweep";
    QTest::newRow("not a number") << sweep("batch=1,two,4") << "'two'";
    QTest::newRow("zero") << sweep("batch=0,8") << "'0'";
    QTest::newRow("over 65536") << sweep("batch=1,65537") << "1..65536";
    QTest::newRow("other key") << sweep("ranks=1,2") << "batch=";
    QTest::newRow("bad ellipsis") << sweep("batch=1,...,64") << "'...'";
    QTest::newRow("several ranks")
        << sweep("batch=1,8") + QStringList{"--ranks", "2"} << "--ranks 1";
    QTest::newRow("with --sweep") << sweep("batch=1") + QStringList{"--sweep", "ranks=1,2"}
                                  << "latency-sweep";
    // 65536 windows of 1024 characters at H=512 would hold about 12 TiB of activations; the
    // refusal names the batch sizes that fit this machine.
    QTest::newRow("gpt beyond memory")
        << sweep("batch=1,65536") + QStringList{"--model", "gpt", "--seq", "1024", "--hidden",
                                                  "512", "--layers", "4", "--batch", "1"}
        << "batch sizes up to";
  }
  void latencySweepBadInput() {
    QFETCH(QStringList, args);
    QFETCH(QString, names);
    const Result r = run(args + QStringList{"--dataset", "synthetic"});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err.count('\n'), 1);  // exactly one line
    QVERIFY2(r.err.contains("latency-sweep") && r.err.contains(names), qPrintable(r.err));
    QVERIFY2(r.out.isEmpty(), qPrintable(r.out));  // refused before anything ran
  }

  // A real sweep on the CPU. Latency (ms per forward) at 256 must exceed the small batches' (at
  // 1 and 16 a forward is mostly fixed cost, too close to order on a busy machine), and the larger
  // batches' throughput must beat batch 1 clearly (a single forward's fixed cost shared by more
  // samples: ~10x at 16 on a quiet machine). A busy machine can slow one point several-fold, so
  // the best of 16 and 256 is held to 2x, and no order between them is asserted (one core's
  // throughput is flat within noise there: the batch leaves L2 around 256).
  void latencySweepJson() {
    const Result r = run({"--latency-sweep", "batch=1,16,256", "--dataset", "synthetic", "--hidden",
                          "32", "--layers", "1", "--json"});
    QCOMPARE(r.code, 0);
    QJsonParseError e;
    const QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8(), &e).object();
    QCOMPARE(e.error, QJsonParseError::NoError);
    QCOMPARE(o["device"].toString(), "cpu");
    QCOMPARE(o["kernel"].toString(), "vendor");
    QCOMPARE(o["gemm_threads"].toInt(), 1);
    QVERIFY(o["parameters"].toDouble() > 0);
    const QJsonArray points = o["points"].toArray();
    QCOMPARE(points.size(), 3);
    // The fields agree with each other; which batch is faster is a timing, shown by
    // `paralab-bench latency` rather than asserted here (a loaded machine reorders it).
    const int batches[] = {1, 16, 256};
    for (int i = 0; i < 3; ++i) {
      const QJsonObject p = points[i].toObject();
      const double ms = p["ms_per_forward"].toDouble(), sps = p["samples_per_s"].toDouble();
      QCOMPARE(p["batch"].toInt(), batches[i]);
      QVERIFY(ms > 0 && sps > 0);
      QCOMPARE(sps, batches[i] / (ms * 1e-3));
      QVERIFY(std::abs(p["us_per_sample"].toDouble() - ms * 1e3 / batches[i]) < 1e-9 * ms * 1e3);
    }
  }

  void latencySweepTable() {
    const Result r = run({"--latency-sweep", "batch=1,2,...,8", "--dataset", "synthetic",
                          "--hidden", "16", "--layers", "1"});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.contains("samples/s") && r.out.contains("µs/sample"), qPrintable(r.out));
    const QStringList lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 3 + 4);  // two lines of what was run, the header, rows 1 2 4 8
    for (int i = 0; i < 4; ++i)
      QCOMPARE(lines[3 + i].split(' ', Qt::SkipEmptyParts).value(0), QString::number(1 << i));
  }

  // --kernel reaches the model's layers: the naive triple loop is many times slower than
  // OpenBLAS at batch 64 (about 70x on idle cores; 2x is asked, of the best of three runs
  // each, as other work on the machine slows single runs by 2x and more), and each run
  // reports its kernel.
  void latencySweepHonoursKernel() {
    const auto msAt64 = [](const char* kernel) {
      double best = -1;
      for (int i = 0; i < 3; ++i) {
        const Result r = run({"--latency-sweep", "batch=64", "--dataset", "synthetic", "--hidden",
                              "64", "--layers", "1", "--kernel", kernel, "--json"});
        const QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8()).object();
        if (r.code != 0 || o["kernel"].toString() != kernel) return -1.0;
        const double ms = o["points"].toArray().at(0).toObject()["ms_per_forward"].toDouble();
        best = best < 0 ? ms : std::min(best, ms);
      }
      return best;
    };
    const double naive = msAt64("naive"), vendor = msAt64("vendor");
    QVERIFY(naive > 0 && vendor > 0);
    QVERIFY2(naive > 2 * vendor,
             qPrintable(QString("naive %1 ms, vendor %2 ms").arg(naive).arg(vendor)));
  }

  // The model is built from --model: an MoE sweep runs its router and experts.
  void latencySweepMoe() {
    const Result r = run({"--latency-sweep", "batch=4,32", "--model", "moe", "--experts", "4",
                          "--topk", "2", "--dataset", "synthetic", "--hidden", "16", "--json"});
    QCOMPARE(r.code, 0);
    const QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QCOMPARE(o["model"].toString(), "moe");
    QCOMPARE(o["points"].toArray().size(), 2);
  }

  // The GPT's sweep: a batch is windows of --seq characters on the text the model follows (no
  // --dataset given), each row its tokens and their throughput; a window is T predictions.
  void latencySweepGpt() {
    const Result r = run({"--latency-sweep", "batch=1,2,4", "--model", "gpt", "--hidden", "16",
                          "--heads", "2", "--seq", "8", "--json"});
    QCOMPARE(r.code, 0);
    QJsonParseError e;
    const QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8(), &e).object();
    QCOMPARE(e.error, QJsonParseError::NoError);
    QCOMPARE(o["model"].toString(), "gpt");
    QCOMPARE(o["config"].toObject()["dataset"].toString(), "fortunes");
    QCOMPARE(o["tokens_per_sample"].toInt(), 8);
    QVERIFY(o["parameters"].toDouble() > 0);
    QVERIFY(!o.contains("not_timed"));  // a tiny model's sizes fit the time budget
    const QJsonArray points = o["points"].toArray();
    QCOMPARE(points.size(), 3);
    for (int i = 0; i < 3; ++i) {
      const QJsonObject p = points[i].toObject();
      const double ms = p["ms_per_forward"].toDouble(), tps = p["tokens_per_s"].toDouble();
      QCOMPARE(p["batch"].toInt(), 1 << i);
      QCOMPARE(p["tokens"].toInt(), 8 << i);
      QVERIFY(ms > 0 && tps > 0);
      QVERIFY(std::abs(tps - 8 * p["samples_per_s"].toDouble()) <= 1e-9 * tps);
      QVERIFY(std::abs(p["us_per_token"].toDouble() * 8 - p["us_per_sample"].toDouble()) <=
              1e-9 * p["us_per_sample"].toDouble());
    }
    // The table names windows and tokens, a row per batch size.
    const Result table = run({"--latency-sweep", "batch=1,2", "--model", "gpt", "--hidden", "16",
                              "--heads", "2", "--seq", "8"});
    QCOMPARE(table.code, 0);
    QVERIFY2(table.out.contains("windows of 8 characters") && table.out.contains("tokens/s") &&
                 table.out.contains("µs/token") && !table.out.contains("samples/s"),
             qPrintable(table.out));
    const QStringList lines = table.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 3 + 2);
    QCOMPARE(lines[4].split(' ', Qt::SkipEmptyParts).mid(0, 2), QStringList({"2", "16"}));
  }

  // --model gpt alone trains on text: a dataset nobody gave follows the model. One given that
  // the model cannot read is refused, naming the field.
  void datasetFollowsTheModel() {
    const QStringList tiny{"--model", "gpt",   "--hidden",     "16", "--heads", "2", "--seq",
                           "8",       "--batch", "4",          "--steps", "1", "--eval-every",
                           "0"};
    const Result r = run(tiny);
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.section('\n', 0, 0).contains("fortunes text"), qPrintable(r.out));
    const Result refused = run(tiny + QStringList{"--dataset", "fashion-mnist"});
    QCOMPARE(refused.code, 2);
    QVERIFY2(refused.err.startsWith("paralab-run: dataset: fashion-mnist"), qPrintable(refused.err));
  }

  // The header line names an MoE run by its experts, routing and expert parallelism.
  void moeHeaderDescribesTheExperts() {
    const Result r =
        run({"--model", "moe",  "--experts", "4",         "--topk",       "2",        "--ranks",
             "2",       "--ep", "2",         "--dataset", "synthetic",    "--hidden", "16",
             "--batch", "16",   "--steps",   "1",         "--eval-every", "0"});
    QCOMPARE(r.code, 0);
    const QString header = r.out.section('\n', 0, 0);
    QVERIFY2(header.contains("MoE 4 experts, top-2, ep 2 (2 experts per rank)"),
             qPrintable(header));
    QVERIFY2(!header.contains("sync"), qPrintable(header));
  }

  // --trace writes a Chrome trace that parses, with every rank's spans as complete events.
  void traceHasEveryRank() {
    QTemporaryDir dir;
    const QString path = dir.filePath("trace.json");
    const Result r = run({"--dataset", "synthetic", "--hidden", "16", "--batch", "16", "--ranks",
                          "3", "--steps", "2", "--eval-every", "0", "--trace", path});
    QCOMPARE(r.code, 0);
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonArray events = QJsonDocument::fromJson(f.readAll())["traceEvents"].toArray();
    QSet<int> ranks;
    bool comm = false;
    for (const QJsonValue& e : events)
      if (e["ph"].toString() == "X") {
        ranks.insert(e["pid"].toInt());
        comm = comm || e["cat"].toString() == "comm";
        QVERIFY(e["dur"].toDouble() >= 0);
      }
    QCOMPARE(ranks, (QSet<int>{0, 1, 2}));
    QVERIFY(comm);  // the gradient all-reduce of three ranks
  }

  void helpListsTheFlags() {
    const Result r = run({"--help"});
    QCOMPARE(r.code, 0);
    for (const char* f : {"--model", "--hidden", "--batch", "--optimizer", "--json", "--config",
                          "--latency-sweep", "--trace", "--device", "--kernel"})
      QVERIFY2(r.out.contains(f), f);
  }
};

QTEST_GUILESS_MAIN(TstCli)
#include "tst_cli.moc"
