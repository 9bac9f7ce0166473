// FP8 in the projection (`paralab-run --project h100-sxm:8 --precision fp8`): the GPUs' dense
// peaks (never the datasheets' sparse ones) as MFU's denominator, the GPUs without FP8 refused,
// the bytes a parameter FP8 keeps, and the projected speed-up over bf16 against torchtitan's
// published float8 run. Run: ctest -R tst_projection_fp8
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include "config.h"
#include "json_lines.h"
#include "projection/projection.h"
#include "projection_fixtures.h"

using namespace paralab;
using namespace paralab::projection;
using namespace paralab::projection::fixtures;

namespace {

// torchtitan's benchmarks/llama3_h100_202412_torchtitan.md, Table 1: Llama 3.1 8B on 8 H100s,
// FSDP, local batch 2 (global 16) of 8,192 tokens, selective activation checkpointing, with
// torch.compile: 6,667 tokens/s per GPU in bf16, 8,532 with Float8 (torchao's dynamic
// tensorwise float8 on every linear layer but the output head). Their H100s are 96 GB HBM2e
// parts at 500 W, not the SXM datasheet's: the ratio is what is checked, not the tokens.
constexpr double kTorchtitanBf16 = 6667, kTorchtitanFloat8 = 8532;
// The projection's ratio is held within 15% of the published 1.280.
constexpr double kSpeedupTolerance = 0.15;

// Megatron's GPT at Llama 3.1 8B's depth, width, heads, sequence and vocabulary, untied, no
// dropout; its SwiGLU FFN of 14,336 (three matrices) is about the FLOPs of a GELU FFN of 5h;
// grouped-query attention is left out: the ratio is what is checked, not the tokens.
ModelSpec llama8b() {
  ModelSpec m = ModelSpec::megatronGpt(32, 4096, 32, 8192, 128256);
  m.ffnMultiple = 5;
  m.tiedEmbeddings = false;
  m.dropout = false;
  return m;
}

// FSDP over the 8 GPUs as ZeRO-3, one micro-batch of 2 sequences, selective recomputation.
Layout fsdp8(Precision p) {
  Layout l;
  l.zero = 3;
  l.globalBatch = 16;
  l.microBatches = 1;
  l.microBatchSize = 2;
  l.recompute = Recompute::Selective;
  l.attentionKernel = "flash2";  // torchtitan's: PyTorch's scaled_dot_product_attention
  l.precision = p;
  return l;
}

Cluster gpus(const char* name, int count) {
  Cluster c = a100s(count);
  c.gpu = loadGpu(name);
  return c;
}

}  // namespace

class TstProjectionFp8 : public QObject {
  Q_OBJECT

  using Result = paralab::test::ProgramResult;
  static Result run(const QStringList& args) {
    return paralab::test::runProgram(PARALAB_RUN, args);
  }

 private slots:
  // [SECTION] Peaks: dense, from the datasheets

  // The H100 and H200 SXM datasheets print FP8 3,958 and BF16 1,979 TFLOP/s "with sparsity";
  // dense training gets half of each. The A100 has no FP8 tensor cores.
  void peaksAreDense() {
    for (const char* name : {"h100-sxm", "h200"}) {
      const GpuSpec g = loadGpu(name);
      QVERIFY(g.hasFp8());
      QCOMPARE(g.peakFlops(Precision::Fp8Mixed), 1979e12);
      QCOMPARE(g.peakFlops(Precision::Bf16Mixed), 989e12);
      QCOMPARE(g.peakFlops(Precision::Tf32), 494.5e12);
    }
    const GpuSpec a100 = loadGpu("a100-80gb");
    QVERIFY(!a100.hasFp8());
    QCOMPARE(a100.peakFlops(Precision::Bf16Mixed), 312e12);  // 624 with sparsity
    QCOMPARE(a100.peakFlops(Precision::Tf32), 156e12);       // 312 with sparsity
  }

  // MFU and HFU divide by the precision's dense peak: in fp8 the FP8 one, so a faster step in
  // fp8 can show a lower MFU than in bf16.
  void mfuIsOfTheDensePeak() {
    const ModelSpec m = llama8b();
    for (Precision p : {Precision::Bf16Mixed, Precision::Fp8Mixed}) {
      const Projection r = project(m, fsdp8(p), gpus("h100-sxm", 8));
      const double gpuSeconds = r.stepSeconds * 8;
      const double dense = p == Precision::Fp8Mixed ? 1979e12 : 989e12;
      QVERIFY(near(r.mfu, r.modelFlops / (gpuSeconds * dense), 1e-12));
      QVERIFY(near(r.hfu, r.hardwareFlops / (gpuSeconds * dense), 1e-12));
      QVERIFY(r.mfu > 0 && r.mfu < 1);
    }
  }

  // [SECTION] Refusals

  void gpusWithoutFp8AreRefused() {
    const auto why = validate(llama8b(), fsdp8(Precision::Fp8Mixed), a100s(8));
    QVERIFY(why);
    QVERIFY2(QString::fromStdString(*why).startsWith(
                 "precision: fp8 needs FP8 tensor cores, which the NVIDIA A100 80GB SXM has not"),
             why->c_str());
    QVERIFY2(QString::fromStdString(*why).contains("h100-sxm, h200"), why->c_str());
  }

  void commandLineRefusals_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("names");
    QTest::newRow("fp8 on an A100")
        << QStringList{"--model", "gpt", "--project", "a100-80gb:8", "--precision", "fp8"}
        << "precision: fp8 needs FP8 tensor cores";
    QTest::newRow("fp8 trains nowhere")
        << QStringList{"--precision", "fp8"}
        << "precision: fp8 is for --project (a training run: fp32, bf16 or fp16)";
  }
  void commandLineRefusals() {
    QFETCH(QStringList, args);
    QFETCH(QString, names);
    const Result r = run(args);
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err.count('\n'), 1);  // exactly one line
    QVERIFY2(r.err.contains(names), qPrintable(r.err));
  }

  void commandLineProjection() {
    const Result r =
        run({"--model", "gpt", "--layers", "32", "--hidden", "4096", "--heads", "32", "--seq",
             "2048", "--batch", "64", "--project", "h100-sxm:8", "--precision", "fp8", "--json"});
    QCOMPARE(r.code, 0);
    const QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QCOMPARE(o["precision"].toString(), QString("fp8"));
    QVERIFY(o["mfu"].toDouble() > 0);
  }

  // [SECTION] Memory: what Transformer Engine keeps

  // bf16 weights plus their cached FP8 cast and its transpose (4 bytes), bf16 gradients (2),
  // fp32 master weights and Adam's two states (12): 18 bytes a parameter, where bf16 mixed
  // precision holds ZeRO's 16; ZeRO-1 shards the 12 over the replicas.
  void modelStatesPerParameter() {
    const double P = 1e9;
    QCOMPARE(parameterBytes(Precision::Fp8Mixed), 4);
    QCOMPARE(optimizerBytesPerParameter(Precision::Fp8Mixed, "adam"), 12);
    QCOMPARE(double(modelStates(P, 0, Precision::Fp8Mixed, "adam", 8).total()), 18 * P);
    QCOMPARE(double(modelStates(P, 0, Precision::Bf16Mixed, "adam", 8).total()), 16 * P);
    QCOMPARE(double(modelStates(P, 1, Precision::Fp8Mixed, "adam", 8).total()), (6 + 12.0 / 8) * P);
    // Activations stay bf16: the same bytes in both.
    const Projection bf16 = project(llama8b(), fsdp8(Precision::Bf16Mixed), gpus("h100-sxm", 8));
    const Projection fp8 = project(llama8b(), fsdp8(Precision::Fp8Mixed), gpus("h100-sxm", 8));
    QCOMPARE(fp8.memory.activations, bf16.memory.activations);
    QVERIFY(fp8.memory.params > bf16.memory.params);
  }

  // [SECTION] Speed: against a published FP8 training run

  void speedupMatchesTorchtitan() {
    const ModelSpec m = llama8b();
    const Projection bf16 = project(m, fsdp8(Precision::Bf16Mixed), gpus("h100-sxm", 8));
    const Projection fp8 = project(m, fsdp8(Precision::Fp8Mixed), gpus("h100-sxm", 8));
    const double projected = fp8.tokensPerS / bf16.tokensPerS;
    const double published = kTorchtitanFloat8 / kTorchtitanBf16;
    qInfo(
        "Llama 3.1 8B, 8 H100s, FSDP: fp8 / bf16 tokens/s projected %.3f (%.0f / %.0f per "
        "GPU), published %.3f (torchtitan, Table 1: %.0f / %.0f)",
        projected, fp8.tokensPerS / 8, bf16.tokensPerS / 8, published, kTorchtitanFloat8,
        kTorchtitanBf16);
    QVERIFY2(near(projected, published, kSpeedupTolerance), qPrintable(QString::number(projected)));
    // The GEMMs of the blocks' linear layers take half the time; the rest does not change.
    QVERIFY(fp8.split.compute < bf16.split.compute);
    QVERIFY(fp8.split.compute > bf16.split.compute / 2);
  }
};

QTEST_GUILESS_MAIN(TstProjectionFp8)
#include "tst_projection_fp8.moc"
