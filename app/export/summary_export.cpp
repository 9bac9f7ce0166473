// The run summary in Markdown and HTML (see summary_export.h).
// See tests/app/tst_window.cpp (exportAllWritesEverything).
#include "export/summary_export.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QHash>
#include <QLocale>
#include <QSaveFile>
#include <QTextDocument>
#include <nlohmann/json.hpp>

#include "charts/byte_units.h"
#include "charts/memory_reference.h"
#include "describe.h"
#include "export/chart_export.h"

namespace paralab {

namespace {

QString num(double v, int decimals) { return QLocale::c().toString(v, 'f', decimals); }
QString count(int64_t v) { return QLocale().toString(qlonglong(v)); }
QString str(const std::string& s) { return QString::fromStdString(s); }
std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

// "sync — Synchronous data parallel: ...": the strategy table's row that runs the run.
QString strategyLine(const RunDescription& d) {
  if (d.strategySummary.empty()) return str(d.strategyRow);
  return QString("%1 — %2").arg(str(d.strategyRow), QString::fromStdString(d.strategySummary));
}

// The link as the settings table words it: "none: ..." or the emulated link's figures.
QString linkLine(const RunConfig& c) {
  const SettingWords link = settingWords(c, "link");
  if (c.link == "none") return QObject::tr("none: %1").arg(str(link.summary));
  return QObject::tr("%1 — **emulated**")
      .arg(str(link.summary.empty() ? link.value : link.summary));
}

void settingsSection(QStringList& md, const RunReport& r) {
  const RunConfig& c = r.config;
  const RunDescription d = describeRun(c);
  md << QObject::tr("## What was switched on") << "" << QObject::tr("| Setting | Value |")
     << "|---|---|";
  auto row = [&](const QString& k, const QString& v) { md << QString("| %1 | %2 |").arg(k, v); };
  // The device by its flag value and its words: "cuda — GPU (CUDA), GEMM vendor (cuBLAS)".
  const QString device = QString("%1 — %2, %3").arg(str(d.device), str(d.deviceWords), str(d.gemm));
  row(QObject::tr("Execution"), c.ranks > 1 ? QObject::tr("parallel, %1 ranks (%2 backend), %3")
                                                  .arg(c.ranks)
                                                  .arg(str(nameOf(c.backend)))
                                                  .arg(device)
                                            : QObject::tr("serial, 1 rank, %1").arg(device));
  row(QObject::tr("Strategy"), strategyLine(d));
  if (c.ranks > 1) {
    row(QObject::tr("ZeRO stage"), str(settingWords(c, "zero").words));
    row(QObject::tr("Layout"),
        d.layout.empty()
            ? QObject::tr("dp %1: every rank a replica of the whole model").arg(c.dpDegree())
            : str(joined(d.layout)));
    row(QObject::tr("Scaling"), c.scaling == Scaling::Weak
                                    ? QObject::tr("weak: batch %1 per rank").arg(c.batch)
                                    : QObject::tr("strong: global batch %1").arg(c.batch));
  }
  row(QObject::tr("Interconnect"), linkLine(c));
  QString model = str(settingWords(c, "model").words);
  if (!d.modelParts.empty()) model += " (" + str(joined(d.modelParts)) + ")";
  if (c.model == ModelKind::Gpt)
    model += QObject::tr(", %1 heads, context %2").arg(c.heads).arg(c.seq);
  row(QObject::tr("Model"),
      model + ", " +
          // A job's or a recorded run's lines do not carry P: said, rather than "P = 0".
          (r.parameterCount > 0 ? QObject::tr("H = %1, L = %2, P = %3 parameters")
                                : QObject::tr("H = %1, L = %2, P not in the run's lines%3"))
              .arg(c.hidden)
              .arg(c.layers)
              .arg(r.parameterCount > 0 ? count(r.parameterCount) : QString()));
  row(QObject::tr("Data"), QObject::tr("%1, global batch %2")
                               .arg(str(settingWords(c, "dataset").words))
                               .arg(c.globalBatch()));
  row(QObject::tr("Training"), QObject::tr("%1, lr %2, seed %3")
                                   .arg(str(settingWords(c, "optimizer").words))
                                   .arg(c.lr)
                                   .arg(c.seed));
  md << "";
  if (!r.changes.isEmpty()) {
    md << QObject::tr(
              "Changed while training (live reconfiguration, the same parameters and "
              "optimizer state re-sharded):")
       << "";
    for (const QString& change : r.changes) md << "- " + change;
    md << "";
  }
}

// "; **emulated**: the nvlink link: transfer times ..." for each emulated part of the run.
QString emulatedClauses(const RunConfig& c) {
  QString clauses;
  for (const EmulatedPart& p : describeRun(c).emulated)
    clauses += QObject::tr("; **emulated**: %1").arg(str(p.detail));
  return clauses;
}

void measuredSection(QStringList& md, const RunReport& r) {
  md << QObject::tr("## Measured") << ""
     << QObject::tr(
            "Every number here was measured in this run (clocks, the per-rank tracking "
            "allocator, the communicator's byte counts)%1%2.")
            .arg(emulatedClauses(r.config))
            .arg(r.last && bytesModelled(*r.last)
                     ? QObject::tr("; bytes are **modelled**: the library's collectives move "
                                   "them unseen, so they are the algorithm's count")
                     : QString())
     << "" << QObject::tr("| Metric | Value |") << "|---|---|";
  auto row = [&](const QString& k, const QString& v) { md << QString("| %1 | %2 |").arg(k, v); };
  row(QObject::tr("Steps"), QObject::tr("%1 (%2)").arg(count(r.steps)).arg(r.state));
  if (r.last) {
    row(QObject::tr("Final loss"),
        (r.config.model == ModelKind::Gpt
             ? QObject::tr("%1 nats per character (last step); %2 (mean of the last %3)")
             : QObject::tr("%1 nats (last step); %2 nats (mean of the last %3)"))
            .arg(num(r.last->loss, 4))
            .arg(num(r.lossMean, 4))
            .arg(r.window));
  }
  // The GPT is scored per character: its accuracy is of the next character, its loss per one.
  const bool gpt = r.config.model == ModelKind::Gpt;
  row(gpt ? QObject::tr("Next-character accuracy (held out)") : QObject::tr("Test accuracy"),
      r.accuracyPercent ? QObject::tr("%1 % (at step %2)")
                              .arg(num(*r.accuracyPercent, 2))
                              .arg(qlonglong(*r.accuracyStep))
                        : QObject::tr("not evaluated"));
  if (r.testLoss)
    row(QObject::tr("Held-out loss"),
        (gpt ? QObject::tr("%1 nats per character (at step %2)")
             : QObject::tr("%1 nats (at step %2)"))
            .arg(num(*r.testLoss, 4))
            .arg(qlonglong(*r.accuracyStep)));
  row(QObject::tr("Mean step time"),
      QObject::tr("%1 ms (last %2 steps)").arg(num(r.meanStepMs, 3)).arg(r.window));
  row(QObject::tr("Throughput"),
      QObject::tr("%1 samples/s (last %2 steps)").arg(num(r.samplesPerS, 0)).arg(r.window));
  if (r.last && r.last->modelGflops && r.last->samplesPerS > 0)
    row(QObject::tr("Model arithmetic"),
        QObject::tr("%1 GFLOP/s (last step; the MFU count, lessons/reference/metrics.md)")
            .arg(num(*r.last->modelGflops, 2)));
  if (r.last && r.last->bubble)
    row(QObject::tr("Pipeline bubble"),
        QObject::tr("%1 % of the pipeline's time idle").arg(num(100 * *r.last->bubble, 1)));
  if (r.last && r.last->staleness)
    row(QObject::tr("Staleness"), QObject::tr("%1 updates").arg(num(*r.last->staleness, 2)));
  if (r.last && r.last->spread) row(QObject::tr("Spread"), num(*r.last->spread, 5));
  md << "";

  if (!r.last || r.last->ranks.empty()) return;
  md << QObject::tr("### Per rank, last step") << ""
     << QObject::tr(
            "| Rank | compute ms | comm ms | idle ms | bytes sent | bytes received | "
            "params | grads | optimizer | activations | comm buffers | workspace | peak |")
     << "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|";
  for (const RankMetrics& k : r.last->ranks) {
    QStringList cells = {QString::number(k.rank),
                         num(k.computeMs, 3),
                         num(k.commMs, 3),
                         num(k.idleMs, 3),
                         formatBytes(double(k.bytesSent)),
                         formatBytes(double(k.bytesRecv))};
    for (int i = 0; i < kMemCategories; ++i) cells << formatBytes(double(k.mem.current[size_t(i)]));
    cells << formatBytes(double(k.mem.peakTotal));
    md << "| " + cells.join(" | ") + " |";
  }
  md << "";
}

// Whether the sweep measured the run's own settings, its rank count aside (a sweep varies it).
bool sweptTheRun(const RunReport& r) {
  if (!r.sweepConfig) return true;  // not known: said nowhere, as before a sweep had settings
  RunConfig swept = *r.sweepConfig, run = r.config;
  swept.ranks = run.ranks, swept.dp = run.dp, swept.steps = run.steps;
  return swept.toJson() == run.toJson();
}

// Each rank's overlap meter over the run (metrics/overlap.h): how much communication hid.
void overlapSection(QStringList& md, const RunReport& r) {
  if (r.overlap.empty()) return;
  md << QObject::tr("### Communication hidden behind compute, per rank, over the run") << ""
     << QObject::tr(
            "Unions of each rank's spans (lessons/reference/metrics.md, Overlap): hidden is "
            "communication while the rank computed, exposed what it only communicated.")
     << ""
     << QObject::tr("| Rank | compute ms | comm ms | hidden ms | exposed ms | idle ms | hidden |")
     << "|---:|---:|---:|---:|---:|---:|---:|";
  for (size_t i = 0; i < r.overlap.size(); ++i) {
    const OverlapMeter& o = r.overlap[i];
    md << QString("| %1 | %2 | %3 | %4 | %5 | %6 | %7 % |")
              .arg(i)
              .arg(num(o.computeMs, 3), num(o.commMs, 3), num(o.hiddenMs, 3),
                   num(o.exposedMs, 3), num(o.idleMs, 3), num(100 * o.hiddenShare(), 0));
  }
  md << "";
}

void referenceSection(QStringList& md, const RunReport& r) {
  const RunConfig& c = r.config;
  const int64_t P = r.parameterCount;
  QStringList items;
  if (auto ref = modelStatesReference(c, P)) {
    QString line = QObject::tr(
                       "- **Model states per rank** (ZeRO stage %1, Rajbhandari et al. "
                       "2020; fp32): %2 with P = %3, N = %4 → %5")
                       .arg(c.zero)
                       .arg(ref->formula)
                       .arg(count(P))
                       .arg(c.dpDegree())
                       .arg(formatBytes(ref->total()));
    if (r.last && !r.last->ranks.empty()) {
      const MemorySnapshot& m = r.last->ranks.front().mem;
      const double measured =
          double(m[MemCategory::Params] + m[MemCategory::Grads] + m[MemCategory::Optimizer]);
      line += QObject::tr("; measured on rank 0: %1").arg(formatBytes(measured));
    }
    items << line;
  }
  const int n = c.dpDegree();
  if (c.ranks > 1 && c.strategy == "sync" && c.zero == 0 && c.model == ModelKind::Mlp &&
      c.tp == 1 && c.pp == 1 && P > 0) {
    const bool naive = c.allreduce == "naive";
    const double bytes = naive ? (n - 1) * 4.0 * double(P) : 2.0 * (n - 1) / n * 4.0 * double(P);
    QString line = naive ? QObject::tr(
                               "- **All-reduce traffic per rank** (naive, every rank "
                               "sends its gradients to every other): (N − 1) · 4P = %1")
                               .arg(formatBytes(bytes))
                         : QObject::tr(
                               "- **All-reduce traffic per rank** (ring / direct, "
                               "reduce-scatter + all-gather): 2(N − 1)/N · 4P = %1")
                               .arg(formatBytes(bytes));
    if (r.last && !r.last->ranks.empty())
      line += QObject::tr("; measured bytes sent by rank 0 in the last step: %1")
                  .arg(formatBytes(double(r.last->ranks.front().bytesSent)));
    items << line;
  }
  if (r.last && r.last->bubbleReference)
    items << QObject::tr(
                 "- **Pipeline bubble**: (P − 1)/(M + P − 1) with P = %1 stages, M = %2 "
                 "micro-batches = %3 %%4")
                 .arg(c.pp)
                 .arg(c.microbatches)
                 .arg(num(100 * *r.last->bubbleReference, 1))
                 .arg(r.last->bubble
                          ? QObject::tr("; measured %1 %").arg(num(100 * *r.last->bubble, 1))
                          : QString());
  if (r.sweep && r.sweep->points.size() >= 2) {
    items << (r.sweep->scaling == Scaling::Weak
                  ? QObject::tr("- **Gustafson's law** (scaled speedup S(N) = N − s(N − 1)), "
                                "fitted to the sweep: s = %1, R² = %2")
                        .arg(num(r.sweep->gustafson.s, 3))
                        .arg(QString::fromStdString(r2Text(r.sweep->gustafson.r2)))
                  : QObject::tr("- **Amdahl's law** (S(N) = 1 / ((1 − p) + p/N)), fitted to the "
                                "sweep: p = %1, R² = %2")
                        .arg(num(r.sweep->amdahl.p, 3))
                        .arg(QString::fromStdString(r2Text(r.sweep->amdahl.r2))));
    if (!sweptTheRun(r)) items.last() += QObject::tr(" (on the sweep's settings, not this run's)");
    if (const std::string notes = fitNotes(*r.sweep); !notes.empty())
      items.last() += ". " + QString::fromStdString(notes);
  }
  if (items.isEmpty()) return;
  md << QObject::tr("## Reference formulas") << ""
     << QObject::tr(
            "Theory drawn beside the measurement, labelled as reference (see "
            "lessons/reference/metrics.md).")
     << "" << items << "";
}

void sweepSection(QStringList& md, const RunReport& r) {
  if (!r.sweep || r.sweep->points.empty()) return;
  md << QObject::tr("## Scaling sweep (%1 scaling%2)")
            .arg(str(nameOf(r.sweep->scaling)))
            .arg(r.sweep->cancelled ? QObject::tr(", cancelled") : QString())
     << "";
  if (r.sweepConfig) {
    md << QObject::tr("Swept: %1 · %2.")
              .arg(str(describeRun(*r.sweepConfig).line()))
              .arg(str(describeRun(*r.sweepConfig).brief(false)));
    if (!sweptTheRun(r))
      md << "" << QObject::tr("**Other settings than the run above**: the sweep and its fit "
                              "describe these, not the run.");
    md << "";
  }
  md << QObject::tr("| Ranks | step ms (median) | samples/s | speedup | efficiency |")
     << "|---:|---:|---:|---:|---:|";
  for (const SweepPoint& p : r.sweep->points)
    md << QString("| %1 | %2 | %3 | %4 | %5 % |")
              .arg(p.ranks)
              .arg(num(p.stepMs, 3))
              .arg(num(p.samplesPerS, 0))
              .arg(num(p.speedup, 2))
              .arg(num(100 * p.efficiency, 0));
  md << "";
}

}  // namespace

QString summaryMarkdown(const RunReport& r) {
  QStringList md;
  md << QObject::tr("# ParaLab run summary") << ""
     << QObject::tr(
            "Written %1 by ParaLab %2. Numbers are measured in this run unless marked "
            "*reference* (a formula) or **emulated** (a modelled interconnect).")
            .arg(QDateTime::currentDateTime().toString(Qt::ISODate))
            .arg(QCoreApplication::applicationVersion())
     << "";
  settingsSection(md, r);
  measuredSection(md, r);
  overlapSection(md, r);
  referenceSection(md, r);
  sweepSection(md, r);
  if (!r.files.isEmpty()) {
    // One line per name: "`loss` .png .pdf .svg .csv".
    QStringList stems;
    QHash<QString, QStringList> suffixes;
    for (const QString& f : r.files) {
      const QString stem = f.section('.', 0, 0), suffix = f.section('.', 1);
      if (!suffixes.contains(stem)) stems << stem;
      suffixes[stem] << '.' + suffix;
    }
    md << QObject::tr("## Files") << "";
    for (const QString& stem : stems)
      md << QString("- `%1` %2").arg(stem, suffixes[stem].join(' '));
    md << "";
  }
  if (!r.notExported.isEmpty())
    md << QObject::tr("Not exported, nothing was measured for them in this run: %1.")
              .arg(r.notExported.join(", "))
       << "";
  return md.join('\n');
}

QString writeSummary(const QString& dir, const RunReport& report, QStringList* written) {
  const QString md = summaryMarkdown(report);
  const QString mdPath = QDir(dir).filePath("summary.md");
  if (QString err = writeExportFile(mdPath, md.toUtf8()); !err.isEmpty()) return err;
  if (written) written->push_back(mdPath);
  // One text, two renderings: QTextDocument reads the Markdown and writes HTML.
  QTextDocument doc;
  doc.setMarkdown(md);
  doc.setMetaInformation(QTextDocument::DocumentTitle, QObject::tr("ParaLab run summary"));
  const QString htmlPath = QDir(dir).filePath("summary.html");
  if (QString err = writeExportFile(htmlPath, doc.toHtml().toUtf8()); !err.isEmpty()) return err;
  if (written) written->push_back(htmlPath);
  return {};
}

}  // namespace paralab
