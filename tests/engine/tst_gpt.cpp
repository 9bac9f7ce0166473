// The GPT (--model gpt): its parameter count, the whole model's gradient against finite
// differences, sampling, learning beyond a context-free model on text, equality with serial
// under the data-parallel strategies and under tensor (by heads), sequence and pipeline
// parallelism, the tensor-parallel traffic against Megatron's count, full recomputation's
// memory and extra traffic under tp, the GPT with a mixture of experts in its blocks (--ffn moe:
// gradient, equal to serial under expert parallelism), and the settings it refuses.
// Run: ctest -R tst_gpt
#include <QtTest>

#include <cmath>
#include <functional>
#include <map>
#include <random>

#include "layout_spec.h"
#include "loss_trajectory.h"
#include "memory/memory_tracker.h"
#include "model_gradcheck.h"
#include "model/gpt.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

// Windows of T + 1 random ids in [0, V), as a Dataset row holds them.
std::vector<float> randomWindows(int B, int T, int V, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<float> x(size_t(B) * (T + 1));
  for (float& v : x) v = float(gen() % unsigned(V));
  return x;
}

int64_t opBytes(const CommTraffic& t, CommOp op, int64_t* calls) {
  int64_t bytes = 0;
  for (const CommOpTotals& o : t.ops)
    if (o.op == op && o.group == "tp") bytes += o.bytes, *calls += o.calls;
  return bytes;
}

RunConfig gptRun(int batch) { return test::smallGptRun(batch); }

// The GPT with 4 experts per block; capacity factor 4 (C = T k: nothing dropped unless a test
// lowers it).
RunConfig gptMoeRun(int batch, int topk) {
  RunConfig c = gptRun(batch);
  c.ffn = Ffn::Moe;
  c.experts = 4;
  c.topk = topk;
  c.capacityFactor = 4.0;
  return c;
}

// The parallel run is valid and, over 30 steps, follows the serial trajectory (1e-5 relative)
// to the same parameters (1e-5 of the largest); `learns`: and the loss falls by a fifth.
void agreesWithSerial(const RunConfig& serial, const RunConfig& parallel, bool learns) {
  QVERIFY2(!parallel.validate(), parallel.validate().value_or("").c_str());
  const int steps = 30;
  const test::RunRecord a = test::recordRun(serial, steps), b = test::recordRun(parallel, steps);
  VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-5, "parallel vs serial");
  VERIFY_PARAMETERS_AGREE(b.params, a.params, 1e-5, "final parameters, parallel vs serial");
  if (learns) QVERIFY2(a.losses.back() < 0.8 * a.losses.front(), "the run should learn");
}

// Embeddings drawn at 0.02 make LayerNorm's input so small that a finite-difference step of
// 1e-2 is not small: the gradient checks draw them from N(0, 1) instead.
void unitEmbeddings(Gpt& m) {
  std::mt19937 gen(9);
  std::normal_distribution<float> d(0, 1);
  for (int ref : {m.wteRef(), m.wpeRef()})
    for (int64_t i = 0; i < m.params().ref(ref).numel(); ++i) m.params().param(ref)[i] = d(gen);
}

// The parameter gradients of one forward (`loss`) and backward, from zero.
std::vector<float> gradientsOf(Gpt& m, const std::function<double()>& loss) {
  loss();
  m.params().zeroGrads();
  m.backward();
  return {m.params().grads().data(), m.params().grads().data() + m.params().numel()};
}

// Every block's routing (choices and drops) of the model's last forward.
std::vector<int> routingOf(Gpt& m) {
  std::vector<int> r;
  for (int l = 0; l < m.shape().layers; ++l) {
    const BlockRouting& b = m.block(l).moe->routing();
    r.insert(r.end(), b.choice.begin(), b.choice.end());
    r.insert(r.end(), b.kept.begin(), b.kept.end());
  }
  return r;
}

}  // namespace

class TstGpt : public QObject {
  Q_OBJECT
 private slots:
  void parameterCountMatchesLayout() {
    const GptShape s{65, 64, 128, 2, 4};
    const int64_t C = 128, V = 65, T = 64;
    // wte, wpe; per block ln1, qkv, proj, ln2, fc1, fc2; lnf, head
    const int64_t block = 2 * C + (C * 3 * C + 3 * C) + (C * C + C) + 2 * C + (C * 4 * C + 4 * C) +
                          (4 * C * C + C);
    QCOMPARE(s.parameterCount(), V * C + T * C + 2 * block + 2 * C + C * V + V);
    Gpt m(s, 1, nullptr);
    QCOMPARE(m.params().numel(), s.parameterCount());
    QCOMPARE(m.numUnits(), 4);
    QCOMPARE(m.params().units().front().name, std::string("embed"));
    QCOMPARE(m.params().units().back().name, std::string("head"));
  }

  // Every parameter of a tiny GPT: embeddings, attention (its heads and the causal mask),
  // LayerNorms, FFN and head together, in fp32 (the model's precision; the kernels' own checks
  // in double are tst_attention_gradcheck and tst_layers_gradcheck).
  void gradientMatchesFiniteDifferences() {
    const GptShape s{6, 5, 8, 2, 2};
    Gpt m(s, 7, nullptr);
    unitEmbeddings(m);
    const int B = 3;
    const std::vector<float> x = randomWindows(B, s.seq, s.vocab, 3);
    auto loss = [&] { return m.forwardLoss(x.data(), nullptr, B, B) / B; };
    const std::vector<float> analytic = gradientsOf(m, loss);
    const test::GradientCheck c = test::checkModelGradient(m.params(), analytic, loss);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(c.checked, m.params().numel());
    const auto nonzero = std::count_if(analytic.begin(), analytic.end(), [](float g) { return g != 0; });
    QVERIFY2(nonzero > c.checked / 2, "most gradients are not zero");
  }

  // Recomputation changes what is kept, not what is computed: the same ops in the same order,
  // so the loss and every gradient are bit for bit those of keeping everything.
  void recomputationComputesTheSame() {
    const GptShape s{7, 6, 8, 2, 2};
    const std::vector<float> x = randomWindows(4, s.seq, s.vocab, 8);
    std::vector<std::vector<float>> grads;
    std::vector<double> losses;
    for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
      Gpt m(s, 3, nullptr, nullptr, r);
      m.params().zeroGrads();
      losses.push_back(m.forwardLoss(x.data(), nullptr, 4, 4));
      m.backward();
      grads.emplace_back(m.params().grads().data(), m.params().grads().data() + m.params().numel());
    }
    QCOMPARE(losses[1], losses[0]);
    QCOMPARE(losses[2], losses[0]);
    QVERIFY(grads[1] == grads[0]);
    QVERIFY(grads[2] == grads[0]);
  }

  // Activation bytes one block keeps, measured by the memory tracker (a model of 2 blocks less
  // one of 1), against the formula the lesson derives from Korthikanti et al. 2022: their
  // s b h (34 + 5 a s / h) bytes counts 2-byte activations and 1-byte dropout masks; in fp32
  // without dropout the same tensors are s b h (64 + 4 a s / h) bytes (lesson "Activations and
  // recomputation"). The engine also keeps LayerNorm's mean and rstd, 16 s b bytes, which the
  // paper leaves out: within 5% of the formula at h = 64.
  void activationBytesPerBlock_data() {
    QTest::addColumn<QString>("recompute");
    QTest::addColumn<double>("formulaBytesPerToken");  // per token (s b = 1), h = 64, a = 4, s = 32
    const double h = 64, a = 4, s = 32;
    QTest::addRow("none") << "none" << h * (64 + 4 * a * s / h);
    QTest::addRow("selective") << "selective" << h * 64;
    QTest::addRow("full") << "full" << h * 4;  // the block's input only
  }
  void activationBytesPerBlock() {
    QFETCH(QString, recompute);
    QFETCH(double, formulaBytesPerToken);
    const int b = 3, s = 32;
    auto kept = [&](int layers) {
      MemoryTracker tracker;
      Gpt m(GptShape{10, s, 64, layers, 4}, 1, &tracker, nullptr,
            recomputeFromName(recompute.toStdString()));
      const std::vector<float> x = randomWindows(b, s, 10, 2);
      m.forwardLoss(x.data(), nullptr, b, b);
      return tracker.snapshot()[MemCategory::Activations];
    };
    const double perBlock = double(kept(2) - kept(1));
    const double formula = formulaBytesPerToken * s * b;
    qInfo("recompute %s: %.0f bytes per block measured, formula %.0f (%+.2f%%)",
          qPrintable(recompute), perBlock, formula, 100 * (perBlock / formula - 1));
    QVERIFY(std::abs(perBlock / formula - 1) <= 0.05);
  }

  void generateIsSeededAndInRange() {
    const GptShape s{9, 8, 16, 1, 2};
    Gpt m(s, 4, nullptr);
    std::vector<int> a = {1}, b = {1}, c = {1};
    m.generate(a, 40, 11);
    m.generate(b, 40, 11);
    m.generate(c, 40, 12);
    QCOMPARE(int(a.size()), 41);
    QCOMPARE(a, b);
    QVERIFY(a != c);
    for (int id : a) QVERIFY(id >= 0 && id < s.vocab);
  }

  void rejectsIdsOutsideTheVocabulary() {
    const GptShape s{6, 4, 8, 1, 2};
    Gpt m(s, 1, nullptr);
    std::vector<float> x = randomWindows(2, s.seq, s.vocab, 1);
    x[3] = 6;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, m.forwardLoss(x.data(), nullptr, 2, 2));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Gpt(GptShape{6, 4, 8, 1, 3}, 1, nullptr));
  }

  // On the synthetic text (words with a bigram rule) a small GPT gets well below the
  // context-free model's held-out loss within a short run.
  void learnsBeyondTheUnigramModel() {
    RunConfig c = gptRun(32);
    c.hidden = 32;
    c.layers = 1;
    c.lr = 0.005;
    c.steps = 150;
    c.evalEvery = 150;  // the last step evaluates
    c.evalSamples = 200;
    Trainer t(c);
    QVERIFY(t.data().text());
    const double unigram = t.data().unigramLoss;
    StepMetrics last;
    for (int s = 0; s < c.steps; ++s) last = t.step();
    QVERIFY(last.testLoss && last.testAccuracy);
    const double heldOut = *last.testLoss;
    qInfo("synthetic text: unigram %.3f nats/char, the GPT after %d steps %.3f (accuracy %.3f)",
          unigram, c.steps, heldOut, *last.testAccuracy);
    QVERIFY2(heldOut < 0.8 * unigram, "the GPT uses its context");
  }

  // The sacred property for the GPT: the data-parallel strategies reproduce the serial loss and
  // parameters (1e-5) over 30 steps.
  void matchesSerial_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("zero");
    QTest::addColumn<int>("ranks");
    QTest::addRow("sync N=2") << "sync" << 0 << 2;
    QTest::addRow("sync N=3") << "sync" << 0 << 3;
    QTest::addRow("zero-1 N=2") << "sync" << 1 << 2;
    QTest::addRow("zero-2 N=3") << "sync" << 2 << 3;
    QTest::addRow("zero-3 N=4") << "sync" << 3 << 4;
    QTest::addRow("ps-sync N=2") << "ps-sync" << 0 << 2;
  }
  void matchesSerial() {
    QFETCH(QString, strategy);
    QFETCH(int, zero);
    QFETCH(int, ranks);
    const RunConfig serial = gptRun(10);  // 10 windows: uneven slices for 3 and 4 ranks
    RunConfig parallel = serial;
    parallel.ranks = ranks;
    parallel.strategy = strategy.toStdString();
    parallel.zero = zero;
    parallel.bucketMb = 0.01;
    agreesWithSerial(serial, parallel, true);
  }

  // The same under model parallelism: attention split by heads and the FFN column-then-row
  // (tp), the LayerNorm regions split by tokens (sp), blocks over stages (pp, both schedules),
  // composed with data parallelism and ZeRO, and with selective or full recomputation per
  // micro-batch (full: each block's forward rerun, collectives included, before its backward).
  void modelParallelMatchesSerial_data() {
    QTest::addColumn<QString>("layout");
    for (const char* l :
         {"tp2", "tp2 sp", "pp2 gpipe M2", "pp2 1f1b M3", "tp2 pp2 sp 1f1b M2", "dp2 tp2 sp zero1",
          "dp2 pp2 gpipe M2 zero2", "tp2 sp selective", "tp2 full", "tp2 sp full",
          "pp2 1f1b M2 full", "tp2 pp2 sp gpipe M2 full", "dp2 tp2 sp M2 zero3 full"})
      QTest::newRow(l) << QString(l);
  }
  void modelParallelMatchesSerial() {
    QFETCH(QString, layout);
    const RunConfig serial = gptRun(10);
    agreesWithSerial(serial, test::withLayout(serial, layout), false);
  }

  // Megatron's count for a block of attention and FFN: per micro-batch of b windows of s
  // tokens, one all-reduce of b s x C floats each way per sub-block, so 4 per block; SP turns
  // each into a reduce-scatter and an all-gather of the same rows, adds the all-gathers where
  // the token split begins (the embeddings' gradient) and ends (the head), and one all-reduce
  // of LN1's and of LN2's gradients (2C floats each) per block and step.
  void tensorParallelTraffic_data() {
    QTest::addColumn<QString>("layout");
    for (const char* l : {"tp2", "tp2 M2", "tp2 sp", "tp2 sp M2"}) QTest::newRow(l) << QString(l);
  }
  void tensorParallelTraffic() {
    QFETCH(QString, layout);
    const RunConfig c = test::withLayout(gptRun(8), layout);
    Trainer t(c);
    t.step();
    t.step();
    const int64_t L = c.layers, M = c.microbatches, C = c.hidden;
    const int64_t rowBytes = int64_t(c.globalBatch()) * c.seq * C * 4;  // every token x C, fp32
    for (int r = 0; r < t.localRankCount(); ++r) {
      const CommTraffic& tr = t.lastTraffic(r);
      int64_t ar = 0, rs = 0, ag = 0;
      const int64_t arBytes = opBytes(tr, CommOp::AllReduce, &ar);
      const int64_t rsBytes = opBytes(tr, CommOp::ReduceScatter, &rs);
      const int64_t agBytes = opBytes(tr, CommOp::AllGather, &ag);
      if (!c.sp) {
        QCOMPARE(ar, 4 * L * M);
        QCOMPARE(arBytes, 4 * L * rowBytes);
        QCOMPARE(rs + ag, int64_t(0));
      } else {
        QCOMPARE(rs, 4 * L * M);
        QCOMPARE(rsBytes, 4 * L * rowBytes);
        QCOMPARE(ag, 4 * L * M + 2 * M);
        QCOMPARE(agBytes, (4 * L + 2) * rowBytes);
        QCOMPARE(ar, 2 * L);
        QCOMPARE(arBytes, 2 * L * 2 * C * 4);
      }
    }
  }

  // SP keeps 1/T of what lies outside attention and the FFN: the residual stream, the stream
  // after attention and the LayerNorm statistics. Measured by the tracker against the buffers
  // of one micro-batch of n = B s tokens, counted from the model (floats):
  //   both: per block LN1's and LN2's outputs (n C each: SP gathers them), qkv (3 n C/T), the
  //   probabilities (B NH/T s^2), attention's output (n C/T), fc1's and GELU's (4 n C/T each);
  //   token ids and targets (n each); the final LayerNorm (n C + 2 n), logits and their
  //   gradient (n V each);
  //   TP: the residual stream into each block and out (L + 1 times n C), the stream after
  //   attention (n C) and 4 statistics (n each) per block;
  //   SP: those / T, plus the gathered stream for the head (n C).
  void sequenceParallelActivationMemory() {
    std::map<bool, int64_t> peak;
    for (const bool sp : {false, true}) {
      const RunConfig c = test::withLayout(gptRun(8), sp ? "tp2 sp" : "tp2");
      Trainer t(c);
      t.step();
      t.step();
      peak[sp] = t.memory(0).snapshot().peak[int(MemCategory::Activations)];
    }
    const RunConfig c = gptRun(8);
    const int64_t B = c.batch, s = c.seq, C = c.hidden, L = c.layers, NH = c.heads, T = 2;
    Trainer probe(c);
    const int64_t V = probe.data().classes, n = B * s;
    const int64_t both = L * (2 * n * C + 3 * n * C / T + B * NH / T * s * s + n * C / T +
                              8 * n * C / T) +
                         2 * n + n * C + 2 * n + 2 * n * V;
    const int64_t tp = both + (L + 1) * n * C + L * (n * C + 4 * n);
    const int64_t sp = both + (L + 1) * n * C / T + L * (n * C / T + 4 * n / T) + n * C;
    QCOMPARE(peak[false], 4 * tp);
    QCOMPARE(peak[true], 4 * sp);
    qInfo("GPT activation peak per rank, tp 2: TP %lld bytes, TP+SP %lld bytes (%.0f%%)",
          (long long)peak[false], (long long)peak[true],
          100.0 * double(peak[true]) / double(peak[false]));
  }

  // Full recomputation under tensor parallelism keeps only each block's input per micro-batch
  // (and the head's buffers), and pays for it in traffic: the rerun forward's collectives. Per
  // micro-batch of B windows of s tokens, n = B s:
  //   activations (floats): the residual stream into each block and out, (L + 1) n C (SP: / T),
  //   token ids and targets (2 n), the final LayerNorm (n C + 2 n), logits and their gradient
  //   (2 n V), SP the gathered stream for the head (n C); less than none's, which adds every
  //   block's buffers (sequenceParallelActivationMemory);
  //   traffic: each block's forward runs twice, so per block and micro-batch 2 more all-reduces
  //   (proj's and fc2's partial sums) of n C floats each: 2 L M more calls and 2 L M n C x 4 =
  //   2 L x (global batch) s C x 4 more bytes per step; SP: as many more reduce-scatters and
  //   all-gathers (LN1's and LN2's outputs) instead, the same bytes each.
  void fullRecomputationUnderTensorParallelism_data() {
    QTest::addColumn<QString>("layout");
    for (const char* l : {"tp2", "tp2 M2", "tp2 sp M2"}) QTest::newRow(l) << QString(l);
  }
  void fullRecomputationUnderTensorParallelism() {
    QFETCH(QString, layout);
    struct Measured {
      int64_t activations = 0, ar = 0, arBytes = 0, rs = 0, rsBytes = 0, ag = 0, agBytes = 0;
      std::vector<double> losses;
    };
    std::map<std::string, Measured> got;
    RunConfig c = test::withLayout(gptRun(8), layout);
    for (const char* recompute : {"none", "full"}) {
      c.recompute = recomputeFromName(recompute);
      Trainer t(c);
      Measured& m = got[recompute];
      for (int step = 0; step < 2; ++step) m.losses.push_back(t.step().loss);
      m.activations = t.memory(0).snapshot().peak[int(MemCategory::Activations)];
      const CommTraffic& tr = t.lastTraffic(0);
      m.arBytes = opBytes(tr, CommOp::AllReduce, &m.ar);
      m.rsBytes = opBytes(tr, CommOp::ReduceScatter, &m.rs);
      m.agBytes = opBytes(tr, CommOp::AllGather, &m.ag);
    }
    const Measured &none = got["none"], &full = got["full"];
    // The rerun computes what the first run did, the same ops in the same order: so the second
    // step (after an update from the first one's gradients) too, bit for bit.
    QVERIFY(full.losses == none.losses);
    const int64_t L = c.layers, M = c.microbatches, C = c.hidden, s = c.seq, T = c.tp;
    Trainer probe(c);
    const int64_t V = probe.data().classes, n = int64_t(c.globalBatch()) / M * s;
    const int64_t stream = (L + 1) * n * C / (c.sp ? T : 1);
    const int64_t kept = stream + 2 * n + n * C + 2 * n + 2 * n * V + (c.sp ? n * C : 0);
    QCOMPARE(full.activations, 4 * kept);
    QVERIFY(full.activations < none.activations);
    const int64_t extra = 2 * L * M, extraBytes = 2 * L * M * n * C * 4;
    if (!c.sp) {
      QCOMPARE(full.ar - none.ar, extra);
      QCOMPARE(full.arBytes - none.arBytes, extraBytes);
      QCOMPARE(full.rs + full.ag, int64_t(0));
    } else {
      QCOMPARE(full.rs - none.rs, extra);
      QCOMPARE(full.rsBytes - none.rsBytes, extraBytes);
      QCOMPARE(full.ag - none.ag, extra);
      QCOMPARE(full.agBytes - none.agBytes, extraBytes);
      QCOMPARE(full.ar, none.ar);  // the LayerNorms' gradients, once a step either way
    }
    qInfo("GPT activation peak per rank, %s: none %lld bytes, full %lld bytes (%.0f%%)",
          qPrintable(layout), (long long)none.activations, (long long)full.activations,
          100.0 * double(full.activations) / double(none.activations));
  }

  // MFU's count (metrics.md): per token 6P plus attention's 12 L C T, a window's T tokens per
  // sample; each step's model_gflops is that x its samples/s.
  void modelFlopsCountAttention() {
    const RunConfig c = gptRun(4);
    Trainer t(c);
    const double P = double(parameterCountOf(c, t.data()));
    const double perSample = modelFlopsPerSample(c, t.data());
    QCOMPARE(perSample, double(c.seq) * (6 * P + 12.0 * c.layers * c.hidden * c.seq));
    RunConfig mlp = test::smallRun(16, 2, 4);
    Trainer m(mlp);
    QCOMPARE(modelFlopsPerSample(mlp, m.data()), 6.0 * double(parameterCountOf(mlp, m.data())));
    const StepMetrics s = t.step();
    QVERIFY(s.modelGflops && s.samplesPerS > 0);
    QVERIFY(std::abs(*s.modelGflops - perSample * s.samplesPerS * 1e-9) <= 1e-9 * *s.modelGflops);
  }

  // [SECTION] --ffn moe: the blocks' FFN a mixture of experts.
  void moeParameterCount() {
    GptShape s{65, 64, 128, 2, 4};
    const int64_t dense = s.parameterCount(), C = 128, E = 8;
    s.moe = MoeFfnShape{128, int(E), 2};
    // Per block the FFN's 8C^2 + 5C become a router (C E + E) and E experts of 8C^2 + 5C.
    const int64_t ffn = 8 * C * C + 5 * C;
    QCOMPARE(s.parameterCount(), dense + 2 * (C * E + E + (E - 1) * ffn));
    Gpt m(s, 1, nullptr);
    QCOMPARE(m.params().numel(), s.parameterCount());
    QVERIFY(m.moeParts() && m.moeParts()->expertRanges.size() == 2);  // one run per block
    // A shard of 2 of 4 expert groups holds every dense weight and E/4 experts per block.
    Gpt part(s, 1, nullptr, nullptr, Recompute::None, ModelShard{0, 1, 0, -1, 1, 4});
    QCOMPARE(part.params().numel(), s.parameterCount() - 2 * (E - E / 4) * ffn);
  }

  // The whole model's gradient with experts, through the gates into the router and with the
  // load-balancing loss: a finite difference across a routing switch measures the jump, so
  // those entries are skipped (and counted), as in tst_moe.
  void moeGradientMatchesFiniteDifferences_data() {
    QTest::addColumn<int>("topk");
    QTest::addColumn<double>("capacity");
    QTest::addColumn<double>("aux");
    QTest::newRow("k=1") << 1 << 4.0 << 0.0;
    QTest::newRow("k=2 drops + aux loss") << 2 << 0.6 << 0.05;
  }
  void moeGradientMatchesFiniteDifferences() {
    QFETCH(int, topk);
    QFETCH(double, capacity);
    QFETCH(double, aux);
    GptShape s{6, 5, 8, 2, 2};
    s.moe = MoeFfnShape{8, 4, topk, capacity, aux};
    Gpt m(s, 7, nullptr);
    unitEmbeddings(m);
    const int B = 3;
    const std::vector<float> x = randomWindows(B, s.seq, s.vocab, 3);
    auto loss = [&] {
      return m.forwardLoss(x.data(), nullptr, B, B) / B + m.moeParts()->stats.auxLoss;
    };
    const std::vector<float> analytic = gradientsOf(m, loss);
    const std::vector<int> base = routingOf(m);  // the routing the gradients were taken at
    int router = 0;
    const test::GradientCheck c = test::checkModelGradient(
        m.params(), analytic, loss, [&] { return routingOf(m) != base; },
        [&](const ParamRef& ref, double numeric) {
          if (ref.name.find("router") != std::string::npos && std::abs(numeric) > 1e-4) ++router;
        });
    if (QTest::currentTestFailed()) return;
    qInfo("checked %lld parameters, %lld skipped (routing switched), %d router gradients non-zero",
          (long long)c.checked, (long long)c.skipped, router);
    QVERIFY2(c.checked > 9 * m.params().numel() / 10, "most parameters checked");
    QVERIFY2(router > 0, "the router learns through the gates");
  }

  // Expert parallelism over the GPT's tokens (every position of every window routed on its
  // own): the serial trajectory and parameters, with the experts spread over ep ranks inside
  // dp data-parallel ranks, with and without ZeRO and recomputation.
  void moeMatchesSerial_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("ep");
    QTest::addColumn<int>("topk");
    QTest::addColumn<QString>("extra");
    QTest::newRow("ep=2 dp=2 k=1") << 2 << 2 << 1 << "";
    QTest::newRow("ep=2 dp=2 k=2") << 2 << 2 << 2 << "";
    QTest::newRow("ep=4 dp=4 k=2") << 4 << 4 << 2 << "";
    QTest::newRow("ep=1 dp=2 k=2") << 2 << 1 << 2 << "";
    QTest::newRow("ep=2 dp=4 k=2 zero-1") << 4 << 2 << 2 << "zero1";
    QTest::newRow("ep=2 dp=2 k=2 full recompute") << 2 << 2 << 2 << "full";
  }
  void moeMatchesSerial() {
    QFETCH(int, ranks);
    QFETCH(int, ep);
    QFETCH(int, topk);
    QFETCH(QString, extra);
    RunConfig serial = gptMoeRun(10, topk);
    if (extra == "full") serial.recompute = Recompute::Full;
    RunConfig parallel = serial;
    parallel.ranks = ranks;
    parallel.ep = ep;
    if (extra == "zero1") parallel.zero = 1;
    agreesWithSerial(serial, parallel, true);
  }

  // Tokens over an expert's capacity are dropped, the same ones whichever rank holds the
  // expert, and the held-out loss comes from every rank's experts.
  void moeDropsAndEvaluatesLikeSerial() {
    RunConfig serial = gptMoeRun(8, 2);
    serial.capacityFactor = 0.75;
    serial.evalEvery = 2;
    serial.evalSamples = 6;
    RunConfig parallel = serial;
    parallel.ranks = 4;
    parallel.ep = 2;
    Trainer a(serial), b(parallel);
    for (int s = 0; s < 4; ++s) {
      const StepMetrics x = a.step(), y = b.step();
      QVERIFY(x.droppedTokens && y.droppedTokens);
      QCOMPARE(*y.droppedTokens, *x.droppedTokens);
      QVERIFY2(*x.droppedTokens > 0, "capacity 0.75 drops tokens");
      QCOMPARE(x.testLoss.has_value(), y.testLoss.has_value());
      if (x.testLoss) QVERIFY(std::abs(*x.testLoss - *y.testLoss) <= 1e-5 * *x.testLoss);
    }
  }

  // Live changes of the expert layout go through the serial layout (saved by whoever holds
  // each expert, reloaded by whoever will): the loss goes on along the uninterrupted run.
  void moeReconfigureContinuesTheTrajectory() {
    auto layout = [](int ranks, int ep) {
      RunConfig c = gptMoeRun(8, 2);
      c.ranks = ranks, c.ep = ep;
      return c;
    };
    const TrainingState serial = Trainer(layout(1, 1)).saveState();
    QVERIFY2(Trainer(layout(2, 2)).saveState().params == serial.params,
             "ep 2 saves the serial model's weights");
    const int per = 5;
    const std::vector<std::pair<int, int>> layouts = {{2, 2}, {4, 2}, {1, 1}};
    const test::RunRecord ref = test::recordRun(layout(1, 1), per * int(layouts.size() + 1));
    std::vector<double> got;
    auto trainer = std::make_unique<Trainer>(layout(1, 1));
    for (int s = 0; s < per; ++s) got.push_back(trainer->step().loss);
    for (auto [ranks, ep] : layouts) {
      const TrainingState state = trainer->saveState();
      trainer = std::make_unique<Trainer>(layout(ranks, ep));
      trainer->loadState(state);
      for (int s = 0; s < per; ++s) got.push_back(trainer->step().loss);
    }
    VERIFY_TRAJECTORIES_AGREE(got, ref.losses, 1e-5, "reconfigured vs uninterrupted");
  }

  void refusesWhatItCannotRun_data() {
    QTest::addColumn<QString>("change");
    QTest::addColumn<QString>("field");
    QTest::addRow("images") << "dataset=fashion-mnist" << "dataset:";
    QTest::addRow("heads") << "heads=3" << "heads:";
    QTest::addRow("tp over heads") << "tp=3" << "tp:";
    QTest::addRow("sp over tokens") << "tp=2 sp=1 seq=15" << "sp:";
    QTest::addRow("fortunes for the mlp") << "model=mlp dataset=fortunes" << "dataset:";
    QTest::addRow("experts under tp") << "ffn=moe tp=2" << "model:";
    QTest::addRow("experts over ep") << "ffn=moe ep=3 ranks=3" << "ep:";
    QTest::addRow("ep without experts") << "ep=2 ranks=2" << "ep:";
  }
  void refusesWhatItCannotRun() {
    QFETCH(QString, change);
    QFETCH(QString, field);
    RunConfig c = gptRun(16);
    c.heads = 4;
    c.hidden = 16;
    for (const QString& kv : change.split(' ')) {
      const QStringList p = kv.split('=');
      if (p[0] == "dataset") c.dataset = p[1].toStdString();
      if (p[0] == "model") c.model = *fromName<ModelKind>(p[1].toStdString());
      if (p[0] == "heads") c.heads = p[1].toInt();
      if (p[0] == "tp") c.tp = p[1].toInt(), c.ranks = c.tp;
      if (p[0] == "pp") c.pp = p[1].toInt(), c.ranks = c.pp;
      if (p[0] == "sp") c.sp = true;
      if (p[0] == "seq") c.seq = p[1].toInt();
      if (p[0] == "recompute") c.recompute = recomputeFromName(p[1].toStdString());
      if (p[0] == "ffn") c.ffn = *fromName<Ffn>(p[1].toStdString());
      if (p[0] == "ep") c.ep = p[1].toInt();
      if (p[0] == "ranks") c.ranks = p[1].toInt();
    }
    const std::optional<std::string> err = c.validate();
    QVERIFY2(err, "refused");
    QVERIFY2(QString::fromStdString(*err).startsWith(field), err->c_str());
  }
};

QTEST_GUILESS_MAIN(TstGpt)
#include "tst_gpt.moc"
