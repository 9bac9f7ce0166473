// The spans and holdings paralab-run --json writes beside each step's figures, for the window's
// timeline and holdings map: on thread ranks every rank's spans of each step match the spans the
// same run's Trainer records (count, kinds, names), the holdings come on the first line and again
// only when they change and equal the Trainer's; under mpirun -np 2 (--backend mpi) both ranks'
// spans and holdings reach rank 0's lines. RunViews reads them back onto one time axis. The
// window's Export All writes the same lines again (StepViewsLog), bounded however long the run.
// Run: ctest -R tst_line_views
#include <QtTest>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "json_lines.h"
#include "metrics/step_views.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

const QStringList kRun = {"--dataset", "synthetic", "--hidden", "32",    "--batch", "64",
                          "--steps",   "3",         "--seed",   "7",     "--eval-every", "0",
                          "--json"};

RunConfig runConfig(int ranks) {
  RunConfig c;
  c.dataset = "synthetic";
  c.hidden = 32;
  c.batch = 64;
  c.steps = 3;
  c.seed = 7;
  c.evalEvery = 0;
  c.ranks = ranks;
  c.deriveRanks();
  return c;
}

// (kind, op) of each span, sorted: what must match, whatever the order threads recorded them in.
using SpanShape = std::multiset<std::pair<std::string, std::string>>;

SpanShape shapeOf(const std::vector<Span>& spans) {
  SpanShape s;
  for (const Span& sp : spans) s.insert({std::string(spanKindName(sp.kind)), sp.op ? sp.op : ""});
  return s;
}

SpanShape shapeOf(const nlohmann::json& spans) {
  SpanShape s;
  for (const auto& sp : spans) s.insert({sp.at("kind").get<std::string>(), sp.value("op", "")});
  return s;
}

// A step's line of a 2-rank run (toJson of its figures) with what `writer` puts on it.
nlohmann::json twoRankLine(StepViewsLog::Lines& writer, int64_t step) {
  StepMetrics m;
  m.step = step;
  m.ranks.resize(2);
  m.ranks[1].rank = 1;
  nlohmann::json line = toJson(m);
  writer.addTo(line);
  return line;
}

}  // namespace

class TstLineViews : public QObject {
  Q_OBJECT

 private slots:
  void threadLinesCarryTheTimelinesSpans() {
    const auto lines = test::runJsonLines(PARALAB_RUN, QStringList{"--ranks", "2"} + kRun, 4);
    QCOMPARE(lines.size(), size_t(4));  // 3 steps, the summary

    // The same run in this process: the spans its timeline draws (Session: Trainer::spans).
    RunConfig c = runConfig(2);
    QVERIFY(!c.validate());
    Trainer trainer(c);
    std::vector<nlohmann::json> held;
    for (int s = 0; s < 3; ++s) {
      trainer.step();
      nlohmann::json all = nlohmann::json::array();
      for (const RankHoldings& h : trainer.holdings()) all.push_back(holdingsLayoutJson(h));
      held.push_back(all);
    }
    for (int step = 1; step <= 3; ++step) {
      const nlohmann::json& line = lines[size_t(step - 1)];
      QCOMPARE(line.at("step").get<int>(), step);
      QVERIFY(line.contains("started_ms"));
      QCOMPARE(line.at("ranks").size(), size_t(2));
      for (int r = 0; r < 2; ++r) {
        const nlohmann::json& rank = line.at("ranks")[size_t(r)];
        QVERIFY2(rank.contains("spans"), "a rank without spans");
        QVERIFY(!rank.contains("spans_dropped"));
        std::vector<Span> own;
        for (const Span& sp : trainer.spans(r).since(step))
          if (sp.step == step) own.push_back(sp);
        QVERIFY(!own.empty());
        QCOMPARE(rank.at("spans").size(), own.size());
        QVERIFY(shapeOf(rank.at("spans")) == shapeOf(own));
        int forward = 0, backward = 0;
        for (const auto& sp : rank.at("spans")) {
          // Offsets from the step's start: after it, and each span ends after it starts.
          QVERIFY(sp.at("start_ms").get<double>() >= 0);
          QVERIFY(sp.at("end_ms").get<double>() >= sp.at("start_ms").get<double>());
          forward += sp.at("kind") == "forward";
          backward += sp.at("kind") == "backward";
        }
        QVERIFY(forward > 0 && backward > 0);
      }
    }
    // Holdings: on the first line, for both ranks, as the Trainer has them; later lines carry
    // them only when they changed.
    QVERIFY(lines[0].contains("holdings"));
    QCOMPARE(lines[0].at("holdings"), held[0]);
    nlohmann::json latest = lines[0].at("holdings");
    for (int step = 2; step <= 3; ++step)
      if (lines[size_t(step - 1)].contains("holdings")) {
        QVERIFY2(lines[size_t(step - 1)].at("holdings") != latest, "holdings repeated unchanged");
        latest = lines[size_t(step - 1)].at("holdings");
      } else {
        QCOMPARE(held[size_t(step - 1)], held[size_t(step - 2)]);
      }
    QCOMPARE(latest, held[2]);
  }

  // Read back as the window reads them: one axis, the last 3 steps, every rank, in order.
  void runViewsReadTheLines() {
    const auto lines = test::runJsonLines(PARALAB_RUN, QStringList{"--ranks", "2"} + kRun, 4);
    QCOMPARE(lines.size(), size_t(4));
    std::ostringstream text;
    for (const auto& l : lines) text << l.dump() << '\n';
    std::istringstream in(text.str());
    const RunViews views = readRunViews(in);
    QVERIFY(views.hasSpans() && views.hasHoldings());
    const auto spans = views.spans();
    QCOMPARE(spans.size(), size_t(2));
    for (int r = 0; r < 2; ++r) {
      std::map<int64_t, int64_t> firstStart, lastEnd;
      for (const Span& s : spans[size_t(r)]) {
        firstStart.try_emplace(s.step, s.startNs);
        firstStart[s.step] = std::min(firstStart[s.step], s.startNs);
        lastEnd[s.step] = std::max(lastEnd[s.step], s.endNs);
      }
      QCOMPARE(int(firstStart.size()), 3);
      // Steps follow one another on the axis (rank 0's clock between them).
      QVERIFY(firstStart[2] >= lastEnd[1] && firstStart[3] >= lastEnd[2]);
      size_t count = 0;
      for (int step = 1; step <= 3; ++step)
        count += lines[size_t(step - 1)].at("ranks")[size_t(r)].at("spans").size();
      QCOMPARE(spans[size_t(r)].size(), count);
    }
    // The last step's traffic under each rank of the map, from the step's figures.
    const StepMetrics last = stepMetricsFromJson(lines[2]);
    const auto held = views.holdings(&last);
    QCOMPARE(held.size(), size_t(2));
    for (const RankHoldings& h : held) {
      QVERIFY(!h.items.empty());
      QCOMPARE(h.lastStep.sentTo, last.ranks[size_t(h.rank)].sentTo);
    }
    // A file without them (written before lines carried them): nothing, and no error.
    std::ostringstream old;
    for (auto l : lines) {
      l.erase("holdings");
      l.erase("started_ms");
      if (l.contains("ranks"))
        for (auto& r : l["ranks"]) r.erase("spans");
      old << l.dump() << '\n';
    }
    std::istringstream oldIn(old.str());
    const RunViews none = readRunViews(oldIn);
    QVERIFY(!none.hasSpans() && !none.hasHoldings());
  }

  // A step with more spans than a line keeps: the first kMaxLineSpans, the rest counted.
  void spansAreCapped() {
    std::vector<Span> many(kMaxLineSpans + 5);
    for (size_t i = 0; i < many.size(); ++i)
      many[i] = {SpanKind::Comm, int64_t(i) * 1000, int64_t(i) * 1000 + 500, 8, "allreduce", 1};
    int64_t dropped = -1;
    const nlohmann::json j = spansToJson(many, 0, kMaxLineSpans, &dropped);
    QCOMPARE(j.size(), kMaxLineSpans);
    QCOMPARE(dropped, int64_t(5));
    const std::vector<Span> back = spansFromJson(j, 1, 2'000'000);
    QCOMPARE(back.size(), kMaxLineSpans);
    QCOMPARE(back[3].startNs, int64_t(2'003'000));
    QCOMPARE(back[3].endNs, int64_t(2'003'500));
    QCOMPARE(QString(back[3].op), QString("allreduce"));
    QCOMPARE(back[3].bytes, int64_t(8));
  }

  // The window's Export All writes its lines again through StepViewsLog: the same keys as
  // paralab-run's, from what the window saw of each step (its snapshots: the spans of the last
  // steps, the holdings).
  void logWritesTheLinesAgain() {
    RunConfig c = runConfig(2);
    QVERIFY(!c.validate());
    Trainer trainer(c);
    StepViewsLog log;
    std::vector<StepMetrics> steps;
    std::vector<nlohmann::json> held;
    for (int s = 0; s < 3; ++s) {
      steps.push_back(trainer.step());
      std::vector<std::vector<Span>> spans;  // as Session::snapshot(from, 3) hands them out
      for (int r = 0; r < 2; ++r)
        spans.push_back(trainer.spans(r).since(std::max<int64_t>(1, trainer.stepsDone() - 2)));
      log.add(spans, trainer.holdings(), trainer.stepsDone(), trainer.stepsDone());
      nlohmann::json all = nlohmann::json::array();
      for (const RankHoldings& h : trainer.holdings()) all.push_back(holdingsLayoutJson(h));
      held.push_back(all);
    }
    QCOMPARE(log.stepsKept(), int64_t(3));
    StepViewsLog::Lines writer(log);
    std::ostringstream text;
    std::vector<nlohmann::json> lines;
    for (const StepMetrics& m : steps) {
      nlohmann::json line = toJson(m);
      writer.addTo(line);
      text << line.dump() << '\n';
      lines.push_back(line);
    }
    for (int step = 1; step <= 3; ++step) {
      const nlohmann::json& line = lines[size_t(step - 1)];
      QVERIFY(line.contains("started_ms"));
      for (int r = 0; r < 2; ++r) {
        const nlohmann::json& rank = line.at("ranks")[size_t(r)];
        QVERIFY(!rank.contains("spans_dropped"));
        std::vector<Span> own;
        for (const Span& sp : trainer.spans(r).since(step))
          if (sp.step == step) own.push_back(sp);
        QCOMPARE(rank.at("spans").size(), own.size());
        QVERIFY(shapeOf(rank.at("spans")) == shapeOf(own));
      }
    }
    // The first line carries the holdings; the others only where they changed.
    QCOMPARE(lines[0].at("holdings"), held[0]);
    for (int step = 2; step <= 3; ++step)
      QCOMPARE(lines[size_t(step - 1)].contains("holdings"),
               held[size_t(step - 1)] != held[size_t(step - 2)]);
    // Read back: every span, on the run's one axis.
    std::istringstream in(text.str());
    const RunViews views = readRunViews(in);
    QVERIFY(views.hasSpans() && views.hasHoldings());
    QCOMPARE(views.spansDropped(), int64_t(0));
    const auto back = views.spans();
    QCOMPARE(back.size(), size_t(2));
    for (int r = 0; r < 2; ++r) {
      const std::vector<Span> own = trainer.spans(r).since(1);
      QCOMPARE(back[size_t(r)].size(), own.size());
      // The same times, from one origin: every span's offset from rank 0's first is kept.
      const int64_t o0 = trainer.spans(0).since(1).front().startNs, b0 = back[0].front().startNs;
      for (size_t i = 0; i < own.size(); ++i)
        QCOMPARE(back[size_t(r)][i].startNs - b0, own[i].startNs - o0);
    }
  }

  // What the log keeps is bounded: the spans of the last kSteps steps, at most kMaxLineSpans a
  // rank a step (the rest counted in the line's "spans_dropped"), the last kHoldingChanges
  // holdings; older lines go without.
  void logIsBounded() {
    constexpr int64_t kStepsRun = StepViewsLog::kSteps + 40;
    constexpr size_t kPerStep = kMaxLineSpans + 7;
    StepViewsLog log;
    for (int64_t step = 1; step <= kStepsRun; ++step) {
      std::vector<std::vector<Span>> spans(2);
      for (auto& rank : spans)
        for (size_t i = 0; i < kPerStep; ++i) {
          const int64_t t = step * 10'000'000 + int64_t(i) * 1000;
          rank.push_back({SpanKind::Comm, t, t + 500, 8, "allreduce", step});
        }
      // A layout that changes every step: only the last kHoldingChanges are kept.
      RankHoldings h;
      h.items.push_back({"w", HoldingKind::Params, 0, 0, step, step, step, 1, 4 * step});
      RankHoldings h1 = h;
      h1.rank = 1;
      log.add(spans, {h, h1}, step, step);
      QVERIFY(log.stepsKept() <= StepViewsLog::kSteps);
      QVERIFY(log.spansKept() <= StepViewsLog::kMaxSpans);
    }
    QCOMPARE(log.stepsKept(), int64_t(StepViewsLog::kSteps));
    QCOMPARE(log.spansKept(), size_t(StepViewsLog::kSteps) * 2 * kMaxLineSpans);
    StepViewsLog::Lines writer(log);
    int64_t withSpans = 0, withHoldings = 0;
    for (int64_t step = 1; step <= kStepsRun; ++step) {
      const nlohmann::json line = twoRankLine(writer, step);
      const bool kept = step > kStepsRun - StepViewsLog::kSteps;
      QCOMPARE(line.at("ranks")[0].contains("spans"), kept);
      QCOMPARE(line.contains("started_ms"), kept);
      withSpans += kept;
      if (kept)
        for (int r = 0; r < 2; ++r) {
          QCOMPARE(line.at("ranks")[size_t(r)].at("spans").size(), kMaxLineSpans);
          QCOMPARE(line.at("ranks")[size_t(r)].at("spans_dropped").get<int64_t>(),
                   int64_t(kPerStep - kMaxLineSpans));
        }
      QCOMPARE(line.contains("holdings"), step > kStepsRun - StepViewsLog::kHoldingChanges);
      withHoldings += line.contains("holdings");
    }
    QCOMPARE(withSpans, int64_t(StepViewsLog::kSteps));
    QCOMPARE(withHoldings, int64_t(StepViewsLog::kHoldingChanges));
    log.clear();
    QCOMPARE(log.stepsKept(), int64_t(0));
    QCOMPARE(log.spansKept(), size_t(0));
  }

  // What lines left out is known per step and rank where they are read (a job's stdout, an
  // opened file), and written again with them: a line's "spans_dropped" read, then the same
  // spans kept and written by the window's log, gives the same count on the same rank.
  void leftOutCountsSurviveAReadAndAWrite() {
    RunViews views;
    for (int64_t step = 1; step <= 4; ++step) {
      nlohmann::json line = {{"step", step}, {"started_ms", double(step)}};
      for (int r = 0; r < 2; ++r) {
        const double t = double(step) + 0.1 * r;
        nlohmann::json part = {
            {"rank", r}, {"spans", {{{"kind", "forward"}, {"start_ms", t}, {"end_ms", t + 0.05}}}}};
        if (step >= 3 && r == 1) part["spans_dropped"] = 10 * step;  // 30 and 40, rank 1 only
        line["ranks"].push_back(part);
      }
      views.add(line);
    }
    const std::vector<SpansLeftOut> left = views.spansLeftOut();  // of the last kSteps: 2, 3, 4
    QCOMPARE(left.size(), size_t(2));
    QCOMPARE(left[0].step, int64_t(3));
    QCOMPARE(left[0].rank, 1);
    QCOMPARE(left[0].count, int64_t(30));
    QCOMPARE(left[1].step, int64_t(4));
    QCOMPARE(left[1].count, int64_t(40));
    QCOMPARE(views.spansDropped(), int64_t(70));

    StepViewsLog log;
    log.add(views.spans(), {}, 2, 4, left);
    StepViewsLog::Lines writer(log);
    for (int64_t step = 2; step <= 4; ++step) {
      const nlohmann::json line = twoRankLine(writer, step);
      QVERIFY(!line.at("ranks")[0].contains("spans_dropped"));
      const nlohmann::json& rank1 = line.at("ranks")[1];
      QCOMPARE(rank1.at("spans").size(), size_t(1));
      QCOMPARE(rank1.value("spans_dropped", int64_t(0)), step >= 3 ? 10 * step : int64_t(0));
    }
  }

  void mpiLinesCarryEveryRanksSpans() {
#ifndef PARALAB_MPIRUN
    QSKIP("built without MPI (or no mpirun)");
#else
    const auto lines = test::runJsonLines(
        PARALAB_MPIRUN,
        QStringList{"--oversubscribe", "-np", "2", PARALAB_RUN, "--backend", "mpi"} + kRun, 4);
    QCOMPARE(lines.size(), size_t(4));
    for (int step = 1; step <= 3; ++step) {
      const nlohmann::json& line = lines[size_t(step - 1)];
      QCOMPARE(line.at("ranks").size(), size_t(2));
      for (int r = 0; r < 2; ++r) {
        const nlohmann::json& rank = line.at("ranks")[size_t(r)];
        QCOMPARE(rank.at("rank").get<int>(), r);
        QVERIFY2(rank.contains("spans") && !rank.at("spans").empty(), "a rank without spans");
        const SpanShape shape = shapeOf(rank.at("spans"));
        QVERIFY(std::any_of(shape.begin(), shape.end(),
                            [](const auto& k) { return k.first == "forward"; }));
        QVERIFY(std::any_of(shape.begin(), shape.end(),
                            [](const auto& k) { return k.first == "comm"; }));
      }
    }
    QVERIFY(lines[0].contains("holdings"));
    QCOMPARE(lines[0].at("holdings").size(), size_t(2));
    for (int r = 0; r < 2; ++r)
      QCOMPARE(lines[0].at("holdings")[size_t(r)].at("rank").get<int>(), r);
    // Both ranks' spans, read back, fill both rows of the timeline.
    std::ostringstream text;
    for (const auto& l : lines) text << l.dump() << '\n';
    std::istringstream in(text.str());
    const RunViews views = readRunViews(in);
    QCOMPARE(views.spans().size(), size_t(2));
    QVERIFY(!views.spans()[1].empty());
#endif
  }
};

QTEST_GUILESS_MAIN(TstLineViews)
#include "tst_line_views.moc"
