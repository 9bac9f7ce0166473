// The chart colours (Tableau 10, readable on light and dark backgrounds), one place for all
// charts so a metric keeps its colour everywhere: forward blue, backward cyan, communication
// orange, optimizer purple, data olive, idle grey, fp32 master copy pink: alike in the latency
// stack, the timeline, the memory bars and the holdings map (tests/app/tst_holdings_precision).
#pragma once
#include <QColor>
#include <QString>

#include "memory/memory_tracker.h"
#include "metrics/span_recorder.h"

namespace paralab::chartcolors {

inline const QColor kBlue{31, 119, 180};
inline const QColor kOrange{255, 127, 14};
inline const QColor kGreen{44, 160, 44};
inline const QColor kRed{214, 39, 40};
inline const QColor kPurple{148, 103, 189};
inline const QColor kBrown{140, 86, 75};
inline const QColor kPink{227, 119, 194};
inline const QColor kGrey{127, 127, 127};
inline const QColor kOlive{188, 189, 34};
inline const QColor kCyan{23, 190, 207};

// The same hue, see-through: raw per-step values under their mean.
inline QColor faint(QColor c) {
  c.setAlpha(80);
  return c;
}

// [SECTION] Categories

// What a rank spends its step on (span_recorder.h). Compute = data + forward + backward.
inline QColor spanColor(SpanKind k) {
  switch (k) {
    case SpanKind::Data:
      return kOlive;
    case SpanKind::Forward:
      return kBlue;
    case SpanKind::Backward:
      return kCyan;
    case SpanKind::Optimizer:
      return kPurple;
    case SpanKind::Comm:
      return kOrange;
    case SpanKind::Idle:
      return kGrey;
  }
  return kGrey;
}

// Memory categories (memory_tracker.h): parameters as forward, gradients as backward, the
// optimizer's state as its step, communication buffers as communication. The master copy has
// the one hue no other memory or holdings category takes (olive is the batch's in the holdings
// map, red the memory chart's peak line, grey its reference).
inline QColor memoryColor(MemCategory c) {
  switch (c) {
    case MemCategory::Params:
      return kBlue;
    case MemCategory::Grads:
      return kCyan;
    case MemCategory::Optimizer:
      return kPurple;
    case MemCategory::Activations:
      return kGreen;
    case MemCategory::Comm:
      return kOrange;
    case MemCategory::Workspace:
      return kBrown;
    case MemCategory::Master:
      return kPink;
  }
  return kGrey;
}

// Collective kinds by the communicator's names (comm_accounting.h: commOpName).
inline QColor commOpColor(const QString& op) {
  if (op == "allreduce") return kOrange;
  if (op == "reducescatter") return kRed;
  if (op == "allgather") return kPink;
  if (op == "broadcast") return kBrown;
  if (op == "reduce") return kOlive;
  if (op == "alltoall" || op == "alltoallv") return kCyan;
  if (op == "send" || op == "recv") return kPurple;
  if (op == "barrier") return kGrey;
  return kBlue;
}

// Theory drawn beside a measurement (docs/architecture.md §9): grey, dashed, never a category
// colour.
inline const QColor kReference = kGrey;

// Earlier runs kept on the loss chart, in the order they were kept.
inline QColor overlayColor(int i) {
  static const QColor colors[] = {kPurple, kBrown, kPink, kOlive, kCyan, kRed};
  QColor c = colors[i % 6];
  c.setAlpha(150);
  return c;
}

}  // namespace paralab::chartcolors
