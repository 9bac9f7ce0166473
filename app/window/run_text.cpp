// The window's words for a run (see run_text.h). See tests/app/tst_window.cpp.
#include "window/run_text.h"

#include <QObject>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "charts/loss_chart.h"
#include "describe.h"

namespace paralab {

namespace {

// The model and data of a run: "MLP H=128 L=2 · fashion-mnist · B=256"; the GPT adds its heads
// and context ("GPT H=128 L=2 4 heads T=64").
QString describeModel(const RunConfig& c) {
  const RunDescription d = describeRun(c);
  return QString::fromStdString(d.model + " · " + d.data);
}

}  // namespace

// The chart subtitle: what was run, short enough for a chart a third of the window wide, and
// (docs/architecture.md §9) whether any of it was emulated (runLabel says so). The seed and the
// rest are in run-config.json beside every export.
// Under a library's collectives the times are measured but the bytes are the algorithm's model;
// the subtitle then says which is which rather than "measured" for both.
QString runSubtitle(const RunConfig& c, bool modelledBytes) {
  const QString how = modelledBytes ? QObject::tr("times measured, bytes modelled")
                                    : QObject::tr("measured");
  return QObject::tr("%1 · %2 · %3").arg(how, describeModel(c), LossChart::runLabel(c));
}

// What a run's data is besides measured, for the CSV exports (Chart::setLabels): an emulated
// link, straggler or serial section, bytes modelled rather than counted
// (lessons/reference/metrics.md).
QStringList runLabels(const RunConfig& c, bool modelledBytes) {
  QStringList labels;
  for (const EmulatedPart& p : describeRun(c).emulated)
    labels << QObject::tr("emulated: %1").arg(QString::fromStdString(p.detail));
  if (modelledBytes)
    labels << QObject::tr(
                  "bytes modelled: the library's collectives (--backend %1) move them "
                  "unseen; these are the algorithm's counts")
                  .arg(QString::fromStdString(nameOf(c.backend)));
  return labels;
}

// The speedup chart's subtitle: the settings the sweep measured, at the rank counts it ran
// (not the ranks of whatever run is shown beside it).
QString describeSweep(const RunConfig& c, const SweepResult& r) {
  QStringList ranks;
  for (const SweepPoint& p : r.points) ranks << QString::number(p.ranks);
  return QObject::tr("measured sweep · %1 scaling at ranks %2 · %3 · %4")
      .arg(QString::fromStdString(nameOf(r.scaling)), ranks.join(", "), describeModel(c),
           LossChart::runLabel(c, false));
}

// "ranks 1 → 2, strategy sync → gossip": the settings that differ, by their flag names.
QString describeChange(const RunConfig& from, const RunConfig& to) {
  const nlohmann::json a = from.toJson(), b = to.toJson();
  QStringList parts;
  for (const auto& [key, value] : b.items())
    if (key != "steps" && (!a.contains(key) || a[key] != value))
      parts << QString("%1 %2 → %3")
                   .arg(QString::fromStdString(key),
                        QString::fromStdString(a.contains(key) ? a[key].dump() : "—"),
                        QString::fromStdString(value.dump()))
                   .remove('"');
  return parts.join(", ");
}

QString samplesPerSText(double perS) {
  if (!(perS > 0) || !std::isfinite(perS)) return QObject::tr("— samples/s");
  // Whole samples from 100 up, three significant digits from 1, two below 1.
  const int decimals = perS >= 100 ? 0
                       : perS >= 10 ? 1
                       : perS >= 1  ? 2
                                    : 1 - int(std::floor(std::log10(perS)));
  return QObject::tr("%L1 samples/s").arg(perS, 0, 'f', std::clamp(decimals, 0, 6));
}

}  // namespace paralab
