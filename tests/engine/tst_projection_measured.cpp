// The projection's kernels at rates measured on the GPU (resources/gpus: matmul_by_shape,
// fused_attention): the tables read back, interpolated between their points, and what a fused
// attention kernel changes in a projected step; `--attention-kernel` refused where it was not
// measured. Run: ctest -R tst_projection_measured
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include "json_lines.h"
#include "projection/projection.h"
#include "projection_fixtures.h"

using namespace paralab;
using namespace paralab::projection;

namespace {

// Megatron-Core's 1.7B row (tst_projection_overlap): one sequence of 4,096 a micro-batch.
ModelSpec small() {
  ModelSpec m = ModelSpec::megatronGpt(24, 2048, 16, 4096, 131072);
  m.tiedEmbeddings = false;
  return m;
}

Projection projectWith(const std::string& attentionKernel) {
  Layout l;
  l.globalBatch = 64;
  l.microBatchSize = 1;
  l.attentionKernel = attentionKernel;
  Cluster c;
  c.gpu = loadGpu("h100-sxm");
  c.gpus = 16;
  return project(small(), l, c);
}

bool hasOp(const Projection& p, const QString& name) {
  for (const OpCost& op : p.blockOps)
    if (QString::fromStdString(op.name) == name) return true;
  return false;
}

}  // namespace

class TstProjectionMeasured : public QObject {
  Q_OBJECT

 private slots:
  // [SECTION] The measured tables

  // At a grid point the GEMM rate is the measured one; between two points it lies between them
  // (log-linear); outside the grid it is the nearest edge's; never above the bf16 peak.
  void gemmRatesInterpolate() {
    for (const char* name : {"h100-sxm", "h200"}) {
      const GpuSpec g = loadGpu(name);
      QVERIFY2(g.gemmRates, name);
      const GemmRates& t = *g.gemmRates;
      QCOMPARE(t.tflops.size(), t.m.size() * t.n.size() * t.k.size());
      const auto at = [&](size_t a, size_t b, size_t c) {
        return t.tflops[(a * t.n.size() + b) * t.k.size() + c];
      };
      QCOMPARE(t.rate(t.m[1], t.n[3], t.k[5]), at(1, 3, 5));
      const double mid = t.rate(t.m[1], std::sqrt(t.n[3] * t.n[4]), t.k[5]);
      QVERIFY(mid >= std::min(at(1, 3, 5), at(1, 4, 5)) - 1e-9);
      QVERIFY(mid <= std::max(at(1, 3, 5), at(1, 4, 5)) + 1e-9);
      QCOMPARE(t.rate(1, 1, 1), at(0, 0, 0));
      QCOMPARE(t.rate(1e9, 1e9, 1e9), t.tflops.back());
      for (double v : t.tflops) QVERIFY(v > 0 && v <= g.bf16Tflops);
      QVERIFY(!t.source.empty());
    }
  }

  // Both fused kernels were measured on both Hopper files, with their sources; cuDNN's is the
  // faster at every head count measured, and more heads a launch never make it slower than
  // the fewest.
  void fusedAttentionRates() {
    for (const char* name : {"h100-sxm", "h200"}) {
      const GpuSpec g = loadGpu(name);
      QCOMPARE(int(g.fusedAttention.size()), 2);
      const FusedAttentionRates& cudnn = *g.fusedAttention.at("cudnn");
      const FusedAttentionRates& flash = *g.fusedAttention.at("flash2");
      QCOMPARE(cudnn.seq, 4096);
      QCOMPARE(cudnn.headDim, 128);
      for (double h : cudnn.heads) {
        QVERIFY(cudnn.forward(h) > flash.forward(h));
        QVERIFY(cudnn.backward(h) > flash.backward(h));
        QVERIFY(cudnn.forward(h) >= cudnn.forward(cudnn.heads.front()) * 0.8);
      }
      QCOMPARE(cudnn.forward(cudnn.heads[3]), cudnn.fwdTflops[3]);
      QVERIFY(!cudnn.source.empty() && !flash.source.empty());
    }
    QVERIFY(loadGpu("a100-80gb").fusedAttention.empty());
  }

  // [SECTION] What a fused kernel changes

  // Fused attention keeps the scores, softmax and dropout on the chip: those passes leave the
  // block; the step is shorter with cuDNN's kernel than with FlashAttention-2's, and with
  // either than with the scores written to memory; the model FLOPs are the same.
  void fusedAttentionShortensTheStep() {
    const Projection written = projectWith(""), cudnn = projectWith("cudnn"),
                     flash = projectWith("flash2");
    QVERIFY(hasOp(written, "scale, mask, softmax"));
    QVERIFY(!hasOp(cudnn, "scale, mask, softmax"));
    QVERIFY(!hasOp(cudnn, "attention dropout"));
    QVERIFY2(cudnn.stepSeconds < flash.stepSeconds,
             qPrintable(QString("%1 %2").arg(cudnn.stepSeconds).arg(flash.stepSeconds)));
    QVERIFY(flash.stepSeconds < written.stepSeconds);
    QCOMPARE(cudnn.modelFlops, written.modelFlops);
  }

  // Megatron's fp32 main gradients: the data-parallel all-reduce carries twice the bytes of
  // bf16 gradients and the gradients take 4 bytes a parameter.
  void fp32MainGradients() {
    Layout l;
    l.globalBatch = 64;
    Cluster c;
    c.gpu = loadGpu("h100-sxm");
    c.gpus = 16;
    const Projection bf16 = project(small(), l, c);
    l.fp32MainGrads = true;
    const Projection fp32 = project(small(), l, c);
    QCOMPARE(fp32.memory.grads, 2 * bf16.memory.grads);
    QVERIFY(fp32.split.dpCommExposed + fp32.split.dpCommHidden >
            1.9 * (bf16.split.dpCommExposed + bf16.split.dpCommHidden));
  }

  // [SECTION] The command line

  // --attention-kernel names the kernel in the JSON line; where it was not measured, or on the
  // MLP, it is refused in one line naming the field and what is allowed.
  void commandLine() {
    const QStringList gpt = {"--model", "gpt", "--layers", "4", "--hidden", "1024", "--heads",
                             "8", "--seq", "2048", "--json"};
    auto r = test::runProgram(PARALAB_RUN, gpt + QStringList{"--project", "h100-sxm:8",
                                                           "--attention-kernel", "flash2"});
    QCOMPARE(r.code, 0);
    const QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QCOMPARE(o["attention_kernel"].toString(), QString("flash2"));
    r = test::runProgram(PARALAB_RUN, gpt + QStringList{"--project", "a100-80gb:8",
                                                      "--attention-kernel", "cudnn"});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err.count('\n'), 1);
    QVERIFY2(r.err.contains("attention-kernel: cudnn was not measured on a100-80gb (allowed "
                            "there: materialised)"),
             qPrintable(r.err));
    r = test::runProgram(PARALAB_RUN, {"--model", "mlp", "--project", "h100-sxm:8",
                                       "--attention-kernel", "cudnn"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("attention-kernel: the MLP has no attention"), qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(TstProjectionMeasured)
#include "tst_projection_measured.moc"
