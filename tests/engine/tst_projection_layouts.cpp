// The projection's layouts (engine/projection/projection.h): sweeps, what each axis costs, the
// layouts it refuses, one validation with the engine (every GPT layout of up to 16 ranks that
// RunConfig::validate() accepts, --project accepts, and no other), and paralab-run --project as
// a user meets it. Run: ctest -R tst_projection_layouts
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>
#include <cmath>

#include "config.h"
#include "json_lines.h"
#include "projection/projection.h"
#include "projection/projection_settings.h"
#include "projection_fixtures.h"

using namespace paralab;
using namespace paralab::projection;
using namespace paralab::projection::fixtures;

class TstProjectionLayouts : public QObject {
  Q_OBJECT

  using Result = paralab::test::ProgramResult;
  static Result run(const QStringList& args) {
    return paralab::test::runProgram(PARALAB_RUN, args);
  }

 private slots:
  // [SECTION] Layouts: sweeps and refusals

  void tensorParallelismStaysInsideANode() {
    const ModelSpec m = ModelSpec::megatronGpt(32, 8192, 64, 2048, 51200);
    Layout l;
    l.pp = 2;
    l.globalBatch = 256;
    l.recompute = Recompute::Full;
    const std::vector<SweepPoint> points =
        sweep(m, l, a100s(64), SweepAxis::Tp, {1, 2, 4, 8, 16, 3});
    QCOMPARE(int(points.size()), 6);
    for (int i = 0; i < 5; ++i) QVERIFY2(points[i].projection, points[i].refused.c_str());
    QVERIFY(!points[5].projection);
    QVERIFY2(QString::fromStdString(points[5].refused)
                 .startsWith("project: 64 GPUs are not divisible by tp x pp = 6"),
             points[5].refused.c_str());
    const Projection& tp8 = *points[3].projection;
    const Projection& tp16 = *points[4].projection;
    QVERIFY(!tp8.tpLink.interNode);
    QVERIFY(tp16.tpLink.interNode);
    // Across two nodes a tp group's rings cross the network: eight adapters per node instead of
    // NVLink, while each GPU's share of the work halves, so the all-reduces weigh more.
    QVERIFY(tp16.tpLink.bytesPerS < tp8.tpLink.bytesPerS);
    QVERIFY(tp16.split.tpComm / tp16.stepSeconds > 1.5 * tp8.split.tpComm / tp8.stepSeconds);
    QVERIFY(tp16.tflopsPerGpu < tp8.tflopsPerGpu);
    // Over Ethernet (one 10 GbE port per node) the same layout is hopeless.
    Cluster ethernet = a100s(64);
    ethernet.nodeLink = NodeLink::Ethernet;
    Layout l16 = l;
    l16.tp = 16;
    QVERIFY(project(m, l16, ethernet).split.tpComm > 20 * tp16.split.tpComm);
    // More tensor parallelism, less memory per GPU.
    QVERIFY(tp8.memory.total() < points[0].projection->memory.total());
  }

  void moreMicroBatchesShrinkTheBubble() {
    const ModelSpec m = ModelSpec::megatronGpt(48, 8192, 64, 2048, 51200);
    Layout l = table1Layout(kTable1[4]);
    l.microBatchSize = 0;
    const auto points = sweep(m, l, a100s(512), SweepAxis::MicroBatches, {1, 4, 16, 48});
    double previous = INFINITY;
    for (const SweepPoint& point : points) {
      QVERIFY2(point.projection, point.refused.c_str());
      const double share = point.projection->split.ppBubble / point.projection->stepSeconds;
      QVERIFY(share < previous);
      previous = share;
    }
  }

  // Interleaving (Narayanan et al. 2021 §2.2.2) divides the bubble by the chunks per GPU and
  // multiplies the pipeline sends by them.
  void interleavingTradesBubbleForSends() {
    const Table1Row& row = kTable1[6];  // 145.6B: pp 8, 96 micro-batches per replica
    const ModelSpec m = ModelSpec::megatronGpt(row.layers, row.hidden, row.heads, 2048, 51200);
    Layout l = table1Layout(row);
    const Projection plain = project(m, l, a100s(row.gpus));
    l.virtualStages = 2;
    const Projection interleaved = project(m, l, a100s(row.gpus));
    // The bubble is the other stages' fill and drain over v: half, but of slots that now hold
    // twice the sends.
    QVERIFY(interleaved.split.ppBubble < 0.6 * plain.split.ppBubble);
    QVERIFY(near(interleaved.split.ppComm, 2 * plain.split.ppComm, 1e-9));
    QVERIFY(interleaved.memory.activations > plain.memory.activations);
    l.virtualStages = 3;  // 80 blocks in 24 chunks: uneven chunks are allowed
    QVERIFY(!validate(m, l, a100s(row.gpus)));
    l.virtualStages = 2;
    l.microBatchSize = 0;
    l.microBatches = 12;  // 96 / 12 = 8 per micro-batch, 12 not a multiple of pp 8
    const auto why = validate(m, l, a100s(row.gpus));
    QVERIFY(why &&
            QString::fromStdString(*why).startsWith("microbatches: the interleaved schedule"));
  }

  // ZB-H1 (Qi et al. 2023) fills its drain with weight gradients: its fill and drain are a
  // third of 1F1B's with equal forward, B and W times, at 1F1B's peak of micro-batches.
  void zeroBubbleProjectsAThirdOfTheBubble() {
    const Table1Row& row = kTable1[6];  // 145.6B: pp 8, 96 micro-batches per replica
    const ModelSpec m = ModelSpec::megatronGpt(row.layers, row.hidden, row.heads, 2048, 51200);
    Layout l = table1Layout(row);
    const Projection plain = project(m, l, a100s(row.gpus));
    l.schedule = Schedule::ZbH1;
    const Projection zb = project(m, l, a100s(row.gpus));
    QVERIFY(near(zb.split.ppBubble, plain.split.ppBubble / 3, 1e-9));
    QVERIFY(zb.stepSeconds < plain.stepSeconds);
    // 1F1B's peak of micro-batches in flight, P on stage 0, held by every ZB-H1 stage (each
    // waits with its W's), so the stages after the first hold more than under 1F1B.
    const int pp = l.pp, micros = zb.layout.microBatches;
    for (int k = 0; k < pp; ++k) {
      QCOMPARE(microBatchesInFlight(Schedule::ZbH1, pp, micros, k), double(std::min(pp, micros)));
      QVERIFY(microBatchesInFlight(Schedule::ZbH1, pp, micros, k) <=
              microBatchesInFlight(Schedule::OneFOneB, pp, micros, 0));
    }
  }

  // The one published measurement of interleaved against plain 1F1B on the same run: torchtitan's
  // benchmarks/llama3_h100_202412_torchtitan.md, Table 5: Llama 3.1 405B on 512 H100s (FSDP 8,
  // TP 8, PP 8), local batch 32, global 256, full recomputation, 100 TPS/GPU with 1F1B and 128
  // with interleaved 1F1B. At that commit (9dec370) torchtitan split a step into as many
  // micro-batches as pipeline stages (8) and gave each rank 2 chunks, so the bubble goes from
  // 7/15 to 3.5/11.5 of the step. The model is Megatron's GPT of Llama's depth, width and
  // sequence (its SwiGLU FFN of 53,248 is about the FLOPs of a 5h GELU one; grouped-query
  // attention is left out): the ratio is what is checked, not the tokens.
  void interleavingMatchesTorchtitansLlama405B() {
    ModelSpec m = ModelSpec::megatronGpt(126, 16384, 128, 8192, 128256);
    m.ffnMultiple = 5;
    m.tiedEmbeddings = false;
    Cluster h100s = a100s(512);
    h100s.gpu = loadGpu("h100-sxm");
    Layout l;
    l.tp = 8;
    l.pp = 8;
    l.zero = 3;
    l.globalBatch = 256;
    l.microBatches = 8;
    l.recompute = Recompute::Full;
    l.schedule = Schedule::OneFOneB;
    const Projection plain = project(m, l, h100s);
    l.schedule = Schedule::Interleaved;
    l.virtualStages = 2;
    const Projection interleaved = project(m, l, h100s);
    const double ratio = interleaved.tokensPerS / plain.tokensPerS, published = 128.0 / 100.0;
    qInfo("Llama 3.1 405B, 512 H100s, tp 8 pp 8 dp 8, M 8: interleaved / 1F1B tokens/s "
          "projected %.3f, published %.3f (torchtitan, Table 5)",
          ratio, published);
    QVERIFY2(near(ratio, published, 0.10), qPrintable(QString::number(ratio)));
  }

  void expertAndContextParallelismCommunicate() {
    ModelSpec moe = ModelSpec::megatronGpt(24, 2048, 16, 2048, 51200);
    moe.experts = 8;
    moe.topk = 2;
    Layout l;
    l.globalBatch = 256;
    l.ep = 8;
    const Projection p = project(moe, l, a100s(32));
    QVERIFY(p.split.epComm > 0);
    QVERIFY(p.epLink.bytesPerS > 0);
    // Each token runs 2 of the 8 experts: model FLOPs count the active parameters only.
    QVERIFY(moe.activeParameterCount() < moe.parameterCount());
    l.ep = 3;
    QVERIFY(QString::fromStdString(*validate(moe, l, a100s(32))).startsWith("ep:"));
    // Context parallelism: half the tokens per GPU, K and V exchanged among the cp ranks.
    const ModelSpec gpt = ModelSpec::megatronGpt(24, 2048, 16, 8192, 51200);
    Layout cp1;
    cp1.globalBatch = 64;
    cp1.recompute = Recompute::Selective;
    Layout cp2 = cp1;
    cp2.cp = 2;
    const Projection one = project(gpt, cp1, a100s(16)), two = project(gpt, cp2, a100s(16));
    QCOMPARE(two.layout.dp, 8);
    QVERIFY(two.memory.activations < 0.6 * one.memory.activations);
    QVERIFY(near(two.hardwareFlops, one.hardwareFlops, 1e-9));  // the same work, split otherwise
    cp2.cp = 3;
    QVERIFY(validate(gpt, cp2, a100s(48)));  // 8192 tokens do not split over 3
  }

  void fasterGpusProjectFasterSteps() {
    const Table1Row& row = kTable1[4];
    const ModelSpec m = ModelSpec::megatronGpt(row.layers, row.hidden, row.heads, 2048, 51200);
    Cluster a100 = a100s(row.gpus), h100 = a100, h200 = a100;
    h100.gpu = loadGpu("h100-sxm");
    h200.gpu = loadGpu("h200");
    const Projection pa = project(m, table1Layout(row), a100),
                     ph = project(m, table1Layout(row), h100),
                     p2 = project(m, table1Layout(row), h200);
    QVERIFY(ph.stepSeconds < 0.6 * pa.stepSeconds);
    QVERIFY(p2.stepSeconds <= ph.stepSeconds);  // same compute, faster memory
    QVERIFY(p2.memoryCapacity > ph.memoryCapacity);
    QVERIFY(ph.mfu < pa.mfu);  // the same links carry a step three times as dense
  }

  void badLayoutsAreNamed_data() {
    QTest::addColumn<int>("gpus");
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("microBatches");
    QTest::addColumn<int>("zero");
    QTest::addColumn<QString>("starts");
    QTest::newRow("count") << 1000 << 8 << 8 << 1000 << 0 << 0
                           << "project: 1000 GPUs are not divisible by tp x pp = 64";
    QTest::newRow("tp and hidden")
        << 80 << 5 << 1 << 80 << 0 << 0 << "tp: 5 must divide the hidden width H = 8208";
    QTest::newRow("tp and heads") << 64 << 8 << 1 << 64 << 0 << 0
                                  << "tp: tensor parallelism splits attention by heads";
    QTest::newRow("pp and layers")
        << 128 << 1 << 64 << 128 << 0 << 0 << "pp: 64 stages but only 48 blocks";
    // The engine's rules: a sample for every data-parallel replica (16 here; its 4 tp ranks
    // share it), at most a replica's samples per micro-batch.
    QTest::newRow("batch and replicas")
        << 64 << 4 << 1 << 8 << 0 << 0
        << "batch: the global batch (8) must hold at least one sample per data-parallel replica (16)";
    QTest::newRow("micro-batches")
        << 64 << 4 << 2 << 128 << 32 << 0 << "microbatches: 32 exceeds the 16 samples";
    QTest::newRow("zero stage") << 64 << 4 << 2 << 128 << 0 << 4 << "zero: 4 is not a ZeRO stage";
  }
  void badLayoutsAreNamed() {
    QFETCH(int, gpus);
    QFETCH(int, tp);
    QFETCH(int, pp);
    QFETCH(int, batch);
    QFETCH(int, microBatches);
    QFETCH(int, zero);
    QFETCH(QString, starts);
    const ModelSpec m = ModelSpec::megatronGpt(48, 8208, 76, 2048, 51200);  // 8208 = 2^4 x 513
    Layout l;
    l.tp = tp;
    l.pp = pp;
    l.globalBatch = batch;
    l.microBatches = microBatches;
    l.zero = zero;
    const auto why = validate(m, l, a100s(gpus));
    QVERIFY(why);
    QVERIFY2(QString::fromStdString(*why).startsWith(starts), why->c_str());
    QVERIFY_THROWS_EXCEPTION(ConfigError, project(m, l, a100s(gpus)));
  }

  // [SECTION] One validation: a layout the engine trains is one the projection projects

  // Every GPT layout of up to 16 ranks over dp, tp, pp, cp (and its chunk order), sequence
  // parallelism, ZeRO, micro-batches and the schedule: RunConfig::validate() accepts it exactly
  // when paralab-run --project (projectRun, one GPU per rank) does.
  void engineAndProjectionAcceptTheSameLayouts() {
    RunConfig base;
    base.model = ModelKind::Gpt;
    base.dataset = "synthetic";
    base.layers = 4;
    base.hidden = 24;  // tp 3 divides it; heads 6 refuse tp 4
    base.heads = 6;
    base.seq = 12;  // zigzag over cp 4 needs 8 chunks: refused; contiguous: 4
    base.batch = 24;
    base.steps = 1;
    base.evalEvery = 0;
    int accepted = 0, refused = 0;
    const auto check = [&](const RunConfig& c) {
      const std::optional<std::string> engine = c.validate();
      std::string projection;
      RunProjection request;
      request.target = "h100-sxm:" + std::to_string(c.ranks);
      request.microBatchesGiven = true;
      try {
        projectRun(c, request);
      } catch (const ConfigError& e) {
        projection = e.what();
      }
      const std::string layout = "dp " + std::to_string(c.dp) + " tp " + std::to_string(c.tp) +
                                 " pp " + std::to_string(c.pp) + " cp " + std::to_string(c.cp) +
                                 " " + nameOf(c.cpOrder) + (c.sp ? " sp" : "") + " zero " +
                                 std::to_string(c.zero) + " M" + std::to_string(c.microbatches) +
                                 " " + c.schedule;
      const std::string says =
          layout + ": the engine " + (engine ? "refuses (" + *engine + ")" : "accepts") +
          ", the projection " + (projection.empty() ? "accepts" : "refuses (" + projection + ")");
      QVERIFY2(engine.has_value() == !projection.empty(), says.c_str());
      (engine ? refused : accepted) += 1;
    };
    for (int dp : {1, 2, 3, 4, 8, 16})
      for (int tp : {1, 2, 3, 4})
        for (int pp : {1, 2, 4, 8})
          for (int cp : {1, 2, 4}) {
            if (dp * tp * pp * cp > 16) continue;
            for (int zero : {0, 1, 2, 3})
              for (int micro : {1, 2, 3, 5})
                for (bool sp : {false, true})
                  for (const char* schedule : {"1f1b", "gpipe"})
                    for (const char* order : {"zigzag", "contiguous"}) {
                      if ((pp == 1 && std::string(schedule) != "1f1b") ||
                          (cp == 1 && std::string(order) != "zigzag"))
                        continue;  // a parameter of a choice not made: no other layout
                      RunConfig c = base;
                      c.dp = dp, c.tp = tp, c.pp = pp, c.cp = cp, c.ranks = dp * tp * pp * cp;
                      c.zero = zero, c.microbatches = micro, c.sp = sp;
                      c.schedule = schedule, c.cpOrder = *fromName<CpOrder>(order);
                      check(c);
                      if (QTest::currentTestFailed()) return;
                    }
          }
    qInfo("%d layouts accepted by both, %d refused by both", accepted, refused);
    QVERIFY(accepted > 100);
    QVERIFY(refused > 100);
  }

  // The layouts the issue named: ZeRO 2 under a pipeline (tst_gpt trains "dp2 pp2 gpipe M2
  // zero2"), and context parallelism's zigzag chunks (2 cp of them per window).
  void namedLayoutsAgree() {
    const ModelSpec gpt = ModelSpec::megatronGpt(24, 2048, 16, 2048, 51200);
    Layout l;
    l.globalBatch = 64;
    l.pp = 2;
    l.schedule = Schedule::GPipe;
    l.microBatches = 2;
    l.zero = 1;
    const double zero1Grads = project(gpt, l, a100s(4)).memory.grads;
    for (int zero : {2, 3}) {
      l.zero = zero;
      const auto why = validate(gpt, l, a100s(4));
      QVERIFY2(!why, why ? why->c_str() : "");
      // Each of the 2 replicas keeps half of its stage's gradients.
      QVERIFY(near(project(gpt, l, a100s(4)).memory.grads, zero1Grads / 2, 1e-9));
    }
    const ModelSpec shortWindows = ModelSpec::megatronGpt(24, 2048, 16, 12, 51200);
    Layout cp;
    cp.globalBatch = 64;
    cp.cp = 4;
    const auto zigzag = validate(shortWindows, cp, a100s(8));
    QVERIFY(zigzag && QString::fromStdString(*zigzag).startsWith("cp: "));
    cp.cpOrder = CpOrder::Contiguous;
    QVERIFY(!validate(shortWindows, cp, a100s(8)));
  }

  // [SECTION] The cluster's settings: a table of the schema's Setting

  void clusterSettingsAreATable() {
    QStringList keys;
    for (const Setting& s : projectionSettings()) {
      keys << QString::fromStdString(s.key);
      QVERIFY2(!s.help.empty() && !s.label.empty(), s.key.c_str());
    }
    QCOMPARE(keys,
             (QStringList{"gpu", "gpus", "gpus-per-node", "node-link", "precision", "vocab",
                          "attention-kernel"}));
    QCOMPARE(QString::fromStdString(findProjectionSetting("gpu")->allowedText(RunConfig{})),
             QString::fromStdString(gpuNamesText()));
    RunConfig gpt;
    gpt.model = ModelKind::Gpt;
    RunProjection q;
    QVERIFY(!checkCluster(gpt, q));
    q.gpusPerNode = 2000;
    QCOMPARE(QString::fromStdString(checkCluster(gpt, q).value_or("")),
             QString("gpus-per-node: 2000 is out of range (allowed: 1..1024)"));
    q = RunProjection{};
    q.vocab = 51200;
    QVERIFY(!checkCluster(gpt, q));
    QVERIFY(QString::fromStdString(checkCluster(RunConfig{}, q).value_or(""))
                .startsWith("vocab: the MLP's"));
    q = RunProjection{};
    QVERIFY(!checkCluster(RunConfig{}, q));  // the MLP with attention left at its default
    q.attentionKernel = "cudnn";
    QVERIFY(!checkCluster(gpt, q));
    QVERIFY(QString::fromStdString(checkCluster(RunConfig{}, q).value_or(""))
                .startsWith("attention-kernel: the MLP has no attention"));
    q.attentionKernel = "flash3";
    QVERIFY(QString::fromStdString(checkCluster(gpt, q).value_or(""))
                .startsWith("attention-kernel: 'flash3' is not one of"));
  }

  // [SECTION] paralab-run --project

  void commandLineProjection() {
    const QStringList args = {
        "--model", "gpt",  "--layers",    "80",    "--hidden",  "12288",         "--heads", "96",
        "--seq",   "2048", "--vocab",     "51200", "--batch",   "2304",          "--tp",    "8",
        "--pp",    "8",    "--recompute", "full",  "--project", "a100-80gb:1536"};
    const Result text = run(args);
    QCOMPARE(text.code, 0);
    QVERIFY2(text.err.isEmpty(), qPrintable(text.err));
    for (const char* words :
         {"Projected (not measured) on 1536 x NVIDIA A100 80GB SXM", "dp 24 x tp 8 x pp 8",
          "96 micro-batches of 1", "Step time (projected)", "pipeline bubble", "TFLOP/s per GPU",
          "MFU", "Memory per GPU (projected"})
      QVERIFY2(text.out.contains(words), qPrintable(words + QString(" in:\n") + text.out));

    const Result json = run(args + QStringList{"--json"});
    QCOMPARE(json.code, 0);
    QCOMPARE(json.out.trimmed().count('\n'), 0);  // one object
    const QJsonObject o = QJsonDocument::fromJson(json.out.toUtf8()).object();
    QCOMPARE(o["projected"].toBool(), true);
    QCOMPARE(o["gpus"].toInt(), 1536);
    QCOMPARE(o["dp"].toInt(), 24);
    QCOMPARE(o["microbatches"].toInt(), 96);
    QCOMPARE(o["microbatch_size"].toInt(), 1);
    for (const char* key :
         {"tflops_per_gpu", "model_tflops_per_gpu", "mfu", "step_ms", "tokens_per_s"})
      QVERIFY2(o[key].toDouble() > 0, key);
    const QJsonObject mem = o["mem_per_gpu"].toObject();
    double sum = 0;
    for (const char* key : {"params", "grads", "optimizer", "activations", "workspace"}) {
      QVERIFY2(mem.contains(key), key);
      sum += mem[key].toDouble();
    }
    QVERIFY(near(sum, mem["total"].toDouble(), 1e-9));
    double split = 0;
    const QJsonObject parts = o["split_ms"].toObject();
    for (auto it = parts.begin(); it != parts.end(); ++it) split += it.value().toDouble();
    QVERIFY(near(split, o["step_ms"].toDouble(), 1e-9));
    QVERIFY(o["mfu"].toDouble() < 1);
    // The same figures as the engine's API gives them.
    RunConfig c;
    c.model = ModelKind::Gpt, c.layers = 80, c.hidden = 12288, c.heads = 96, c.seq = 2048,
    c.batch = 2304;
    c.tp = 8, c.pp = 8, c.recompute = Recompute::Full;
    RunProjection request;
    request.target = "a100-80gb:1536";
    request.vocab = 51200;
    const Projection p = projectRun(c, request);
    QVERIFY(near(o["step_ms"].toDouble(), p.stepSeconds * 1e3, 1e-9));
    QCOMPARE(std::string(p.throughputUnit()), std::string("tokens/s"));
    QCOMPARE(p.throughput(), p.tokensPerS);
    QVERIFY(toText(p).find(" tokens/s, ") != std::string::npos);
    // The MLP's sample is an image: its throughput is samples/s, and no tokens are named.
    RunConfig mlp;
    mlp.hidden = 4096, mlp.layers = 8, mlp.batch = 1024;
    const Projection m = projectRun(mlp, RunProjection{.target = "h100-sxm:8"});
    QCOMPARE(std::string(m.throughputUnit()), std::string("samples/s"));
    QCOMPARE(m.throughput(), m.samplesPerS);
    QVERIFY2(toText(m).find("tokens") == std::string::npos, toText(m).c_str());
  }

  void commandLineBadInput_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("names");
    const QStringList gpt = {"--model", "gpt", "--tp", "8", "--pp", "8", "--batch", "1536"};
    QTest::newRow("unknown GPU")
        << QStringList{"--project", "v100:8"}
        << "project: unknown GPU 'v100' (allowed: a100-80gb, h100-sxm, h200)";
    QTest::newRow("no count") << QStringList{"--project", "a100-80gb"} << "is not GPU:COUNT";
    QTest::newRow("count not a number")
        << QStringList{"--project", "a100-80gb:many"} << "is not GPU:COUNT";
    QTest::newRow("zero GPUs") << QStringList{"--project", "h200:0"} << "project: 0 GPUs";
    QTest::newRow("not divisible") << gpt + QStringList{"--project", "a100-80gb:1000"}
                                   << "project: 1000 GPUs are not divisible by tp x pp = 64";
    QTest::newRow("node link") << QStringList{"--project", "h100-sxm:16", "--node-link",
                                              "token-ring"}
                               << "node-link: 'token-ring'";
    QTest::newRow("gpus per node")
        << QStringList{"--project", "h100-sxm:16", "--gpus-per-node", "0"}
        << "gpus-per-node: 0 is out of range";
    QTest::newRow("precision") << QStringList{"--project", "h100-sxm:16", "--precision", "fp4"}
                               << "precision: 'fp4'";
    QTest::newRow("vocab without project")
        << QStringList{"--vocab", "100"} << "vocab: goes with --project";
    QTest::newRow("vocab of the mlp")
        << QStringList{"--project", "h100-sxm:8", "--vocab", "100"} << "vocab: the MLP's";
    QTest::newRow("moe mlp") << QStringList{"--project", "h100-sxm:8", "--model", "moe"}
                             << "model: --project";
    QTest::newRow("strategy") << QStringList{"--project", "h100-sxm:8", "--strategy", "hogwild"}
                              << "strategy: --project";
    QTest::newRow("ranks") << QStringList{"--project", "h100-sxm:8", "--ranks", "4"}
                           << "ranks: --project";
    QTest::newRow("schedule") << QStringList{"--project", "h100-sxm:8", "--schedule", "zigzag"}
                              << "schedule:";
    QTest::newRow("with sweep") << QStringList{"--project", "h100-sxm:8", "--sweep", "ranks=1,2"}
                                << "project: projects the configuration instead of running it";
  }
  void commandLineBadInput() {
    QFETCH(QStringList, args);
    QFETCH(QString, names);
    const Result r = run(args);
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err.count('\n'), 1);  // exactly one line
    QVERIFY2(r.err.contains(names), qPrintable(r.err));
    QVERIFY2(r.out.isEmpty(), qPrintable(r.out));
  }
};

QTEST_GUILESS_MAIN(TstProjectionLayouts)
#include "tst_projection_layouts.moc"
