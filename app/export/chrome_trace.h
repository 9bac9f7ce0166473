// The window's Chrome trace export: engine/metrics/chrome_trace.h's JSON as bytes, and saved
// to a file. See tests/app/tst_charts.cpp (chromeTraceParses).
#pragma once
#include <QByteArray>
#include <QString>
#include <vector>

#include "metrics/span_recorder.h"

namespace paralab {

// `spans[r]` are rank r's. Times count from the earliest span; `emulated` names an emulated
// link, recorded in the trace's metadata (docs/architecture.md §9), or is empty.
QByteArray chromeTraceJson(const std::vector<std::vector<Span>>& spans,
                           const QString& emulated = QString());
// Writes it to `path` whole or not at all; returns "" or one line saying what failed.
QString writeChromeTrace(const QString& path, const std::vector<std::vector<Span>>& spans,
                         const QString& emulated = QString());

}  // namespace paralab
