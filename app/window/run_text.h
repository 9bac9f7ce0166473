// What the window writes about a run in its charts: the subtitle (what was run, and whether any
// of it was emulated), the CSV labels, the sweep's subtitle and a live change in words. See
// tests/app/tst_window.cpp (newSubtitleRedrawsOneChartAPass, liveReconfigurationKeepsLossContinuous).
#pragma once
#include <QString>
#include <QStringList>

#include "config.h"
#include "train/sweep.h"

namespace paralab {

// The chart subtitle: "measured · MLP H=128 L=2 · fashion-mnist · B=256 · 4 ranks sync ...", short
// enough for a chart a third of the window wide (docs/architecture.md §9: emulated parts said).
QString runSubtitle(const RunConfig& c, bool modelledBytes = false);
// What a run's data is besides measured, for the CSV exports (Chart::setLabels): an emulated
// link, straggler or serial section, bytes modelled rather than counted.
QStringList runLabels(const RunConfig& c, bool modelledBytes);
// The speedup chart's subtitle: the settings the sweep measured, at the rank counts it ran.
QString describeSweep(const RunConfig& c, const SweepResult& r);
// "ranks 1 → 2, strategy sync → gossip": the settings that differ, by their flag names ("" none;
// the number of steps is not a change).
QString describeChange(const RunConfig& from, const RunConfig& to);
// A throughput with the digits it needs: "48,120 samples/s", "12.5 samples/s", "0.29
// samples/s" (a slow run is never "0"); "—" for none.
QString samplesPerSText(double perS);

}  // namespace paralab
