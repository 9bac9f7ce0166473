// Chrome trace writer (see chrome_trace.h). Format: the Trace Event Format document of the
// Chromium project ("JSON Object Format", complete events "ph": "X", metadata "ph": "M").
// See tests/app/tst_charts.cpp (chromeTraceParses).
#include "chrome_trace.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>
#include <limits>

namespace paralab {

namespace {

QJsonObject metadata(const char* name, int pid, int tid, const QString& value) {
  return {{"name", name},
          {"ph", "M"},
          {"pid", pid},
          {"tid", tid},
          {"args", QJsonObject{{"name", value}}}};
}

}  // namespace

QByteArray chromeTraceJson(const std::vector<std::vector<Span>>& spans, const QString& emulated) {
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const auto& rank : spans)
    for (const Span& s : rank) origin = std::min(origin, s.startNs);

  QJsonArray events;
  for (size_t r = 0; r < spans.size(); ++r) {
    const int pid = int(r);
    // Names and order of the rows in the viewer: "rank 0", "rank 1", ... each with its two threads.
    events.append(metadata("process_name", pid, 0, QString("rank %1").arg(r)));
    events.append(QJsonObject{{"name", "process_sort_index"},
                              {"ph", "M"},
                              {"pid", pid},
                              {"args", QJsonObject{{"sort_index", pid}}}});
    events.append(metadata("thread_name", pid, 0, "compute"));
    events.append(metadata("thread_name", pid, 1, "communication"));
    for (const Span& s : spans[r]) {
      const QString kind = QString::fromUtf8(spanKindName(s.kind).data());
      const QString op = QString::fromUtf8(s.op ? s.op : "");
      QJsonObject args{{"op", op}, {"bytes", qint64(s.bytes)}, {"step", qint64(s.step)}};
      events.append(QJsonObject{{"name", op.isEmpty() ? kind : kind + ": " + op},
                                {"cat", kind},
                                {"ph", "X"},
                                {"pid", pid},
                                {"tid", s.kind == SpanKind::Comm ? 1 : 0},
                                {"ts", double(s.startNs - origin) * 1e-3},  // µs
                                {"dur", double(s.endNs - s.startNs) * 1e-3},
                                {"args", args}});
    }
  }
  QJsonObject other{{"source", "ParaLab: measured spans"}};
  if (!emulated.isEmpty()) other["emulated_link"] = emulated;
  const QJsonObject doc{{"traceEvents", events}, {"displayTimeUnit", "ms"}, {"otherData", other}};
  return QJsonDocument(doc).toJson(QJsonDocument::Compact);
}

QString writeChromeTrace(const QString& path, const std::vector<std::vector<Span>>& spans,
                         const QString& emulated) {
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly))
    return QObject::tr("cannot write '%1': %2").arg(path, file.errorString());
  file.write(chromeTraceJson(spans, emulated));
  if (!file.commit()) return QObject::tr("cannot write '%1': %2").arg(path, file.errorString());
  return {};
}

}  // namespace paralab
