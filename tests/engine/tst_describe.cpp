// One description of a run (engine/describe.h): made from the settings table, it names what
// applies and is not at its default, the device included, in the words every front end shows.
// Run: ctest -R tst_describe
#include <QtTest>

#include "config.h"
#include "describe.h"

using namespace paralab;

class TstDescribe : public QObject {
  Q_OBJECT

 private slots:
  void defaultRunIsSerialOnTheCpu() {
    const RunDescription d = describeRun(RunConfig{});
    QCOMPARE(QString::fromStdString(d.brief()), QString("serial · momentum lr 0.05"));
    QCOMPARE(QString::fromStdString(d.line()),
             QString("MLP H=128 L=2 · fashion-mnist · B=128 · serial · momentum lr 0.05"));
    QCOMPARE(QString::fromStdString(d.device), QString("cpu"));
    QCOMPARE(QString::fromStdString(d.deviceWords), QString("CPU"));
    // The essential settings, in table order, and nothing at its default besides.
    QStringList keys;
    for (const SettingWords& w : d.settings) keys << QString::fromStdString(w.key);
    QCOMPARE(keys, (QStringList{"device", "model", "layers", "hidden", "dataset", "batch", "lr",
                                "optimizer"}));
    QCOMPARE(QString::fromStdString(d.find("optimizer")->words), QString("SGD with momentum"));
  }

  // A GPU run says so in its line, its device words and its GEMM.
  void cudaRunNamesCuda() {
    RunConfig c;
    c.device = Device::Cuda;
    c.kernel = "vendor";
    const RunDescription d = describeRun(c);
    QCOMPARE(QString::fromStdString(d.device), QString("cuda"));
    QCOMPARE(QString::fromStdString(d.deviceWords), QString("GPU (CUDA)"));
    QVERIFY2(QString::fromStdString(d.line()).contains("cuda"), d.line().c_str());
    QCOMPARE(QString::fromStdString(d.gemm), QString("GEMM vendor (cuBLAS)"));
  }

  void layoutPartsInOrder() {
    RunConfig c;
    c.model = ModelKind::Gpt;
    c.dataset = "synthetic";
    c.ranks = 16;
    c.tp = 2;
    c.sp = true;
    c.pp = 2;
    c.cp = 2;
    c.cpOrder = CpOrder::Contiguous;
    c.microbatches = 4;
    c.schedule = "gpipe";
    c.zero = 1;
    c.recompute = Recompute::Full;
    const RunDescription d = describeRun(c);
    QCOMPARE(QString::fromStdString(d.brief()),
             QString("sync · 16 ranks · ZeRO-1 · dp 2 · tp 2 + sp · pp 2 · gpipe, 4 micro-batches "
                     "· cp 2 contiguous · recompute full · momentum lr 0.05"));
    QCOMPARE(QString::fromStdString(d.model), QString("GPT H=128 L=2 4 heads T=64"));
    QCOMPARE(QString::fromStdString(d.strategyRow), QString("model-parallel"));
    // A sweep varies the ranks: left out.
    QVERIFY(!QString::fromStdString(d.brief(false)).contains("16 ranks"));
  }

  // An interleaved pipeline says how many chunks each rank holds.
  void interleavedChunksAreSaid() {
    RunConfig c;
    c.dataset = "synthetic";
    c.layers = 4, c.pp = 2, c.ranks = 2, c.microbatches = 4;
    c.schedule = "interleaved";
    c.virtualStages = 2;
    QVERIFY(!c.validate());
    QVERIFY2(QString::fromStdString(describeRun(c).brief())
                 .contains("pp 2 · interleaved (2 chunks per rank), 4 micro-batches"),
             describeRun(c).brief().c_str());
  }

  // What does not apply is not said: a pipeline's schedule without a pipeline, a parameter
  // server's count under sync, the strategy of a mixture of experts (its layout trains it).
  void settingsThatDoNotApplyAreLeftOut() {
    RunConfig c;
    c.ranks = 2;
    c.schedule = "gpipe";
    c.servers = 2;
    RunDescription d = describeRun(c);
    QVERIFY(!d.find("schedule"));
    QVERIFY(!d.find("servers"));
    QVERIFY(d.find("strategy"));
    c = RunConfig{};
    c.model = ModelKind::Moe;
    c.ranks = 2;
    c.ep = 2;
    c.topk = 2;
    d = describeRun(c);
    QVERIFY(d.strategy.empty());
    QCOMPARE(QString::fromStdString(d.brief()),
             QString("2 ranks · ep 2 (2 experts per rank) · MoE 4 experts · top-2 · momentum lr "
                     "0.05"));
  }

  void emulatedPartsAreSaid() {
    RunConfig c;
    c.ranks = 2;
    c.link = "nvlink";
    const RunDescription d = describeRun(c);
    QVERIFY2(QString::fromStdString(d.brief()).endsWith("nvlink (emulated)"), d.brief().c_str());
    QCOMPARE(QString::fromStdString(settingWords(c, "link").value), QString("nvlink"));
    QVERIFY(settingWords(c, "link").summary.find("emulated") != std::string::npos);
  }

  // The settings as paralab-run flags: what differs from the default, the model and data set
  // always, switches as --name / --no-name.
  void runFlagsAreWhatDiffers() {
    RunConfig c;
    c.ranks = 4;
    c.zero = 2;
    c.instrument = false;
    const std::vector<std::string> flags = runFlags(c, {"ranks"});
    QStringList words;
    for (const std::string& f : flags) words << QString::fromStdString(f);
    QCOMPARE(words, (QStringList{"--model", "mlp", "--dataset", "fashion-mnist", "--no-instrument",
                                 "--zero", "2"}));
  }
};

QTEST_GUILESS_MAIN(TstDescribe)
#include "tst_describe.moc"
