// What every rank holds, as the window's map reads it (Trainer::holdings): the slices of each
// weight add up to the whole model on every data-parallel replica; tensor-parallel slices are
// the columns of fc1 and the rows of fc2; replicated weights sit on every tp rank; each stage
// holds its units; ZeRO chunks cover each unit once; batch slices cover the batch; the GPT's
// activations are split into what the forward keeps and what the backward recomputes
// (--recompute, also per pipeline stage); the last step's traffic is the communicator's.
// Run: ctest -R tst_holdings
#include <QtTest>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "metrics/step_views.h"
#include "parallel/process_grid.h"
#include "tiles.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

RunConfig config() {
  RunConfig c;
  c.dataset = "synthetic";
  c.hidden = 32;
  c.layers = 4;
  c.batch = 48;
  c.evalEvery = 0;
  c.optimizer = "adam";
  c.lr = 0.002;
  return c;
}

using test::tiles;

}  // namespace

class TstHoldings : public QObject {
  Q_OBJECT
 private slots:
  void modelParallelHoldingsCoverTheModel() {
    RunConfig c = config();
    c.dp = 2, c.tp = 2, c.pp = 2, c.ranks = 8, c.sp = true, c.zero = 1, c.microbatches = 2;
    Trainer t(c);
    t.step();
    const std::vector<RankHoldings> held = t.holdings();
    QCOMPARE(int(held.size()), 8);
    MlpShape shape;
    shape.hidden = c.hidden;
    shape.layers = c.layers;
    Mlp whole(shape, c.seed, nullptr);
    const GridShape grid{2, 2, 2};
    for (int d = 0; d < 2; ++d) {
      // Per weight: the slices held by this replica's ranks.
      std::map<std::string, std::vector<const HeldSlice*>> byName;
      for (const RankHoldings& h : held) {
        QCOMPARE(h.coords.dp, ProcessGrid::coordsOf(grid, h.rank).dp);
        QCOMPARE(h.coords.tp, ProcessGrid::coordsOf(grid, h.rank).tp);
        QCOMPARE(h.coords.pp, ProcessGrid::coordsOf(grid, h.rank).pp);
        if (h.coords.dp != d) continue;
        for (const HeldSlice& s : h.items)
          if (s.kind == HoldingKind::Params) {
            byName[s.tensor].push_back(&s);
            // Stage 0 holds the input projection, stage 1 the classifier.
            if (s.tensor.starts_with("in_proj")) QCOMPARE(h.coords.pp, 0);
            if (s.tensor.starts_with("classifier")) QCOMPARE(h.coords.pp, 1);
          }
      }
      QCOMPARE(byName.size(), whole.params().refs().size());
      for (const ParamRef& r : whole.params().refs()) {
        const auto& slices = byName[r.name];
        QCOMPARE(int(slices.size()), 2);  // the two tp ranks of its stage
        const bool fc1 = r.name.ends_with("fc1.weight") || r.name.ends_with("fc1.bias");
        const bool fc2 = r.name.ends_with("fc2.weight");
        std::vector<std::pair<int64_t, int64_t>> parts;
        for (const HeldSlice* s : slices) {
          QCOMPARE(s->dim, fc1 ? (r.name.ends_with("weight") ? 1 : 0) : fc2 ? 0 : -1);
          parts.push_back({s->begin, s->end});
          QCOMPARE(s->rows * s->cols * 4, s->bytes);
        }
        if (fc1 || fc2) {  // Megatron's cut: 4H split in two
          QVERIFY(tiles(parts, 4 * c.hidden));
        } else {  // replicated on both tp ranks
          for (const HeldSlice* s : slices) QCOMPARE(s->rows * s->cols, r.numel());
        }
      }
    }
    for (const RankHoldings& h : held) {
      // ZeRO-1 on dp: the two dp ranks' optimizer chunks of each unit tile it.
      for (const HeldSlice& s : h.items) {
        if (s.kind != HoldingKind::Optimizer) continue;
        QCOMPARE(s.cols, int64_t(2));  // Adam: m and v
        const GridCoords o = h.coords;
        const RankHoldings& partner = held[size_t(ProcessGrid::rankOf(grid, 1 - o.dp, o.tp, o.pp))];
        const auto it =
            std::find_if(partner.items.begin(), partner.items.end(), [&](const HeldSlice& x) {
              return x.kind == HoldingKind::Optimizer && x.tensor == s.tensor;
            });
        QVERIFY(it != partner.items.end());
        QVERIFY(tiles({{s.begin, s.end}, {it->begin, it->end}}, s.total));
      }
      // Groups: the tp partner shares (dp, pp); the pp partner shares (dp, tp).
      for (const HeldGroup& g : h.groups) {
        QCOMPARE(int(g.worldRanks.size()), 2);
        for (int r : g.worldRanks) {
          const GridCoords o = ProcessGrid::coordsOf(grid, r);
          if (g.name == "tp") QVERIFY(o.dp == h.coords.dp && o.pp == h.coords.pp);
          if (g.name == "pp") QVERIFY(o.dp == h.coords.dp && o.tp == h.coords.tp);
          if (g.name == "dp") QVERIFY(o.tp == h.coords.tp && o.pp == h.coords.pp);
        }
      }
      // The last step's traffic: per peer adds up to the total; tp, pp and dp all talked.
      int64_t sum = 0;
      for (int64_t b : h.lastStep.sentTo) sum += b;
      QCOMPARE(sum, h.lastStep.bytesSent);
      std::set<std::string> groups;
      for (const CommOpTotals& o : h.lastStep.ops) groups.insert(o.group);
      QVERIFY(groups.count("tp") && groups.count("pp") && groups.count("dp"));
      const nlohmann::json j = toJson(h);
      QCOMPARE(j["rank"].get<int>(), h.rank);
      QVERIFY(j["items"].size() == h.items.size() && j.contains("sent_by_op") &&
              j.contains("sent_to"));
    }
    // The batch: inputs on stage 0, dp slices tile it; SP: each tp rank keeps half the rows of
    // each micro-batch's residual stream, the two halves tile the replica's slice.
    std::vector<std::pair<int64_t, int64_t>> inputs;
    for (const RankHoldings& h : held)
      for (const HeldSlice& s : h.items) {
        if (s.kind == HoldingKind::Batch && s.tensor.find("inputs") != std::string::npos &&
            h.coords.tp == 0)
          inputs.push_back({s.begin, s.end});
      }
    QVERIFY(tiles(inputs, c.batch));
    for (int d = 0; d < 2; ++d) {
      std::vector<std::pair<int64_t, int64_t>> rows;
      for (const RankHoldings& h : held)
        if (h.coords.dp == d && h.coords.pp == 0)
          for (const HeldSlice& s : h.items)
            if (s.kind == HoldingKind::Activations)
              rows.push_back({s.begin - d * 24, s.end - d * 24});
      QVERIFY(tiles(rows, 24));
    }
  }

  // The GPT under tp 2 with SP: each tp rank holds its heads' slice of q, k and v (columns of
  // qkv), the matching rows of proj, fc1's columns and fc2's rows; the rest on both. Activations
  // are token rows: the two ranks' halves tile each micro-batch's tokens.
  // ZeRO-3 under tensor parallelism: each rank's flat chunk of a block is a chunk of its own tp
  // shard of the block, and says which (the two tp ranks of a replica hold chunks of different
  // shards at the same offsets); a recorded run keeps it.
  void zero3ChunksNameTheirTensorParallelShard() {
    RunConfig c = config();
    c.ranks = 4, c.dp = 2, c.tp = 2, c.zero = 3, c.layers = 2;
    Trainer t(c);
    t.step();
    int flats = 0;
    for (const RankHoldings& h : t.holdings()) {
      const RankHoldings again = holdingsFromJson(toJson(h));
      for (size_t i = 0; i < h.items.size(); ++i) {
        const HeldSlice& s = h.items[i];
        if (s.tensor != "block0 (flat)" || s.kind != HoldingKind::Params) continue;
        ++flats;
        QCOMPARE(s.tpShards, 2);
        QCOMPARE(s.tpShard, h.coords.tp);
        QCOMPARE(s.begin, h.coords.dp == 0 ? int64_t(0) : s.total - (s.end - s.begin));
        QCOMPARE(again.items[i].tpShard, s.tpShard);
        QCOMPARE(again.items[i].tpShards, s.tpShards);
      }
    }
    QCOMPARE(flats, 4);
  }

  void gptHoldingsSplitHeadsAndTokens() {
    RunConfig c = config();
    c.model = ModelKind::Gpt;
    c.hidden = 16, c.heads = 4, c.seq = 8, c.layers = 2, c.batch = 6;
    c.tp = 2, c.ranks = 2, c.sp = true, c.microbatches = 2;
    Trainer t(c);
    t.step();
    const std::vector<RankHoldings> held = t.holdings();
    QCOMPARE(int(held.size()), 2);
    std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> parts;
    std::vector<std::pair<int64_t, int64_t>> tokens;
    for (const RankHoldings& h : held)
      for (const HeldSlice& s : h.items) {
        if (s.kind == HoldingKind::Params) {
          parts[s.tensor].push_back({s.begin, s.end});
          QCOMPARE(s.rows * s.cols * 4, s.bytes);
        }
        if (s.kind == HoldingKind::Activations) {
          QVERIFY2(s.tensor.ends_with("activations stored for backward (tokens)"),
                   s.tensor.c_str());
          QVERIFY(!s.recomputed);  // --recompute none: nothing is
          QCOMPARE(s.total, int64_t(c.batch) * c.seq);
          tokens.push_back({s.begin, s.end});
        }
      }
    const int64_t C = c.hidden;
    for (const char* qkv : {"block0.attn.qkv.weight (q)", "block0.attn.qkv.weight (k)",
                            "block1.attn.qkv.bias (v)"}) {
      QVERIFY2(parts.count(qkv), qkv);
      QVERIFY(tiles(parts[qkv], C));  // heads 0-1 on rank 0, 2-3 on rank 1
    }
    QVERIFY(tiles(parts["block0.attn.proj.weight"], C));
    QVERIFY(tiles(parts["block1.fc1.weight"], 4 * C));
    QVERIFY(tiles(parts["block1.fc2.weight"], 4 * C));
    for (const char* whole : {"embed.wte", "block0.ln1.gamma", "block0.attn.proj.bias",
                              "head.out.weight"}) {
      QCOMPARE(int(parts[whole].size()), 2);  // replicated
      QCOMPARE(parts[whole][0], parts[whole][1]);
    }
    QVERIFY(tiles(tokens, int64_t(c.batch) * c.seq));
  }

  // The GPT under --recompute: what the forward keeps and the one block's buffers the backward
  // recomputes into, each rank's share of the batch, against the buffers' shapes (gpt.h):
  // none keeps every block's activations; selective all but attention's probabilities
  // [B, NH, T, T], recomputed into one block's buffer; full only each block's input, a whole
  // block's buffers recomputed. The kept bytes are the tracker's Activations.
  void gptHoldingsSplitStoredAndRecomputed_data() {
    QTest::addColumn<QString>("recompute");
    QTest::addColumn<int>("zero");
    QTest::newRow("none") << "none" << 0;
    QTest::newRow("selective") << "selective" << 0;
    QTest::newRow("full") << "full" << 0;
    QTest::newRow("selective zero-1") << "selective" << 1;
  }
  void gptHoldingsSplitStoredAndRecomputed() {
    QFETCH(QString, recompute);
    QFETCH(int, zero);
    RunConfig c = config();
    c.model = ModelKind::Gpt;
    c.hidden = 16, c.heads = 4, c.seq = 8, c.layers = 3, c.batch = 6;
    c.ranks = 2, c.zero = zero;
    c.recompute = recomputeFromName(recompute.toStdString());
    Trainer t(c);
    t.step();
    const int64_t B = c.batch / 2, T = c.seq, C = c.hidden, NH = c.heads, L = c.layers,
                  V = t.data().classes, R = B * T;  // this rank's windows and tokens
    const int64_t att = B * NH * T * T;             // one block's probabilities
    const int64_t block = R * (C + 3 * C + C + C + C + 4 * C + 4 * C) + 4 * R;  // but att
    const int64_t always = 2 * R + (L + 1) * R * C + R * C + 2 * R + R * V;
    int64_t stored = always + L * (block + att), recomputed = 0;
    QString what;
    if (recompute == "selective")
      stored -= L * att, recomputed = att, what = "attention probabilities";
    if (recompute == "full") stored = always, recomputed = block + att, what = "block internals";

    const std::vector<RankHoldings> held = t.holdings();
    QCOMPARE(int(held.size()), 2);
    for (const RankHoldings& h : held) {
      std::vector<const HeldSlice*> acts;
      for (const HeldSlice& s : h.items)
        if (s.kind == HoldingKind::Activations) acts.push_back(&s);
      QCOMPARE(int(acts.size()), recompute == "none" ? 1 : 2);
      const HeldSlice& kept = *acts[0];
      QCOMPARE(QString::fromStdString(kept.tensor), QString("activations stored for backward"));
      QVERIFY(!kept.recomputed);
      QCOMPARE(kept.bytes, stored * 4);
      // What the forward keeps is what the tracker counts as activations.
      QCOMPARE(kept.bytes, t.memory(h.rank).snapshot()[MemCategory::Activations]);
      // Token rows: the rank's half of the batch's windows.
      QCOMPARE(kept.begin, h.rank * R);
      QCOMPARE(kept.end, (h.rank + 1) * R);
      QCOMPARE(kept.total, 2 * R);
      if (recompute == "none") continue;
      const HeldSlice& redo = *acts[1];
      QCOMPARE(QString::fromStdString(redo.tensor),
               "recomputed in backward: " + what + " (one block's buffers)");
      QVERIFY(redo.recomputed);
      QCOMPARE(redo.bytes, recomputed * 4);
      QCOMPARE(redo.begin, kept.begin);
      QCOMPARE(redo.end, kept.end);
      // It lives in the tracker's workspace, beside the backward's scratch.
      QVERIFY(redo.bytes <= t.memory(h.rank).snapshot()[MemCategory::Workspace]);
      if (recompute == "selective") QCOMPARE(redo.bytes, B * NH * T * T * 4);
      bool inJson = false;
      const nlohmann::json json = toJson(h);
      for (const nlohmann::json& j : json["items"])
        if (j["tensor"] == redo.tensor) inJson = j["recomputed"].get<bool>();
      QVERIFY(inJson);
    }
  }

  // Under tensor and pipeline parallelism the micro-batches keep no probabilities with
  // selective recomputation: each rank recomputes its heads' into one buffer sized for the
  // largest micro-batch.
  void gptModelParallelRecomputesTheProbabilities() {
    RunConfig c = config();
    c.model = ModelKind::Gpt;
    c.hidden = 16, c.heads = 4, c.seq = 8, c.layers = 2, c.batch = 6;
    c.tp = 2, c.pp = 2, c.ranks = 4, c.microbatches = 2;
    c.recompute = Recompute::Selective;
    Trainer t(c);
    t.step();
    const int64_t windows = 3, heads = c.heads / 2, T = c.seq;  // ceil(6 / 2), per tp rank
    for (const RankHoldings& h : t.holdings()) {
      int recomputedItems = 0;
      for (const HeldSlice& s : h.items) {
        if (s.kind != HoldingKind::Activations || !s.recomputed) continue;
        ++recomputedItems;
        QCOMPARE(s.tensor, std::string("recomputed in backward: attention probabilities (one "
                                       "block's buffers)"));
        QCOMPARE(s.bytes, windows * heads * T * T * 4);
        QCOMPARE(s.rows * s.cols * 4, s.bytes);
        QCOMPARE(s.end - s.begin, int64_t(c.batch) * T);  // serves every micro-batch in turn
        QVERIFY(s.bytes <= t.memory(h.rank).snapshot()[MemCategory::Workspace]);
      }
      QCOMPARE(recomputedItems, 1);
    }
  }

  // Full recomputation under tensor and pipeline parallelism: each micro-batch keeps only its
  // blocks' inputs (the residual stream, SP: the rank's half of its rows) and the ends' buffers;
  // the stage reruns each block into one block's buffers, sized for the largest micro-batch.
  // Bytes from the shape, per tp rank: n tokens of a micro-batch, l of them in the rank's
  // residual stream (SP: n / 2), the rank's C/2 attention columns, 2 heads and 4C/2 FFN columns.
  void gptModelParallelRecomputesWholeBlocks_data() {
    QTest::addColumn<bool>("sp");
    QTest::newRow("tp2 pp2") << false;
    QTest::newRow("tp2 pp2 sp") << true;
  }
  void gptModelParallelRecomputesWholeBlocks() {
    QFETCH(bool, sp);
    RunConfig c = config();
    c.model = ModelKind::Gpt;
    c.hidden = 16, c.heads = 4, c.seq = 8, c.layers = 2, c.batch = 6;
    c.tp = 2, c.pp = 2, c.ranks = 4, c.microbatches = 2, c.sp = sp;
    c.recompute = Recompute::Full;
    Trainer t(c);
    t.step();
    const int64_t windows = 3, T = c.seq, C = c.hidden, V = t.data().classes;  // ceil(6 / 2)
    const int64_t n = windows * T, l = sp ? n / 2 : n, Cl = C / 2, heads = c.heads / 2,
                  F = 4 * C / 2;
    // ln1, ln2 (gathered), their statistics, qkv, the probabilities, attention's output, the
    // stream after attention, fc1's and GELU's outputs.
    const int64_t block =
        2 * n * C + 4 * l + 3 * n * Cl + windows * heads * T * T + n * Cl + l * C + 2 * n * F;
    for (const RankHoldings& h : t.holdings()) {
      const bool first = h.coords.pp == 0;
      // One block per stage: its input and its output; the first stage's token ids, the last's
      // targets, (SP) gathered stream, final LayerNorm, logits and their gradient.
      const int64_t stored =
          2 * l * C + (first ? n : n + (sp ? n * C : 0) + n * C + 2 * n + 2 * n * V);
      int kept = 0, recomputed = 0;
      for (const HeldSlice& s : h.items) {
        if (s.kind != HoldingKind::Activations) continue;
        if (!s.recomputed) {
          ++kept;
          QVERIFY2(s.tensor.ends_with("activations stored for backward (tokens)"),
                   s.tensor.c_str());
          QCOMPARE(s.bytes, stored * 4);
          continue;
        }
        ++recomputed;
        QCOMPARE(s.tensor, std::string("recomputed in backward: block internals (one block's "
                                       "buffers)"));
        QCOMPARE(s.bytes, block * 4);
        QCOMPARE(s.rows, n);
        QCOMPARE(s.end - s.begin, int64_t(c.batch) * T);  // serves every micro-batch in turn
        QVERIFY(s.bytes <= t.memory(h.rank).snapshot()[MemCategory::Workspace]);
      }
      QCOMPARE(kept, c.microbatches);
      QCOMPARE(recomputed, 1);
      // 1F1B keeps P - s micro-batches' buffers at once (the pool), nothing else as activations.
      QCOMPARE(t.memory(h.rank).snapshot()[MemCategory::Activations],
               (2 - h.coords.pp) * stored * 4);
    }
  }

  // Data-parallel strategies: the whole model on every rank (ReplicaStrategy), or ZeRO's
  // chunks; batch slices tile the batch.
  void dataParallelHoldings_data() {
    QTest::addColumn<int>("zero");
    QTest::newRow("sync") << 0;
    QTest::newRow("zero-1") << 1;
    QTest::newRow("zero-3") << 3;
  }
  void dataParallelHoldings() {
    QFETCH(int, zero);
    RunConfig c = config();
    c.ranks = 2;
    c.zero = zero;
    Trainer t(c);
    t.step();
    const std::vector<RankHoldings> held = t.holdings();
    std::vector<std::pair<int64_t, int64_t>> batch;
    std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> owned;  // unit -> chunks
    int64_t paramFloats = 0;
    for (const RankHoldings& h : held) {
      for (const HeldSlice& s : h.items) {
        if (s.kind == HoldingKind::Batch) batch.push_back({s.begin, s.end});
        if (s.kind == HoldingKind::Optimizer && zero > 0)
          owned[s.tensor].push_back({s.begin, s.end});
        if (s.kind == HoldingKind::Params && h.rank == 0) paramFloats += s.rows * s.cols;
        if (s.kind == HoldingKind::Params && zero < 3) QCOMPARE(s.dim, -1);
      }
    }
    QVERIFY(tiles(batch, c.batch));
    const int64_t P = t.parameterCount();
    if (zero < 3)
      QCOMPARE(paramFloats, P);
    else
      QVERIFY(paramFloats < P);
    for (const auto& [unit, chunks] : owned) {
      int64_t total = 0;
      for (const RankHoldings& h : held)
        for (const HeldSlice& s : h.items)
          if (s.tensor == unit) total = s.total;
      QVERIFY2(tiles(chunks, total), unit.c_str());
    }
  }
};

QTEST_GUILESS_MAIN(TstHoldings)
#include "tst_holdings.moc"
