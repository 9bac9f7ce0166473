// Chrome trace export of the window (see chrome_trace.h): the engine's writer
// (engine/metrics/chrome_trace.h), saved whole or not at all.
// See tests/app/tst_charts.cpp (chromeTraceParses).
#include "export/chrome_trace.h"

#include <QSaveFile>

#include "metrics/chrome_trace.h"

namespace paralab {

QByteArray chromeTraceJson(const std::vector<std::vector<Span>>& spans, const QString& emulated) {
  return QByteArray::fromStdString(chromeTrace(spans, emulated.toStdString()).dump());
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
