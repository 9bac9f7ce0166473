// The holdings map's row names that are not layers, and ZeRO's flat buffers' names: shared by
// its layout (holdings_cells.cpp: the slices laid end to end) and its drawing (holdings_map.cpp).
// See tests/app/tst_charts_ranks.cpp and tst_holdings_layouts.cpp.
#pragma once
#include <QObject>
#include <QString>
#include <string>
#include <utility>
#include <vector>

namespace paralab::holdings_rows {

using Parts = std::vector<std::pair<double, double>>;

inline const QString kBatch = QObject::tr("batch"), kActivations = QObject::tr("activations");
// The GPT's --recompute: the one block's buffers the backward recomputes into, a row of their
// own under the activations the forward kept.
inline const QString kRecomputed = QObject::tr("recomputed");
// Context parallelism: the ring's K/V blocks, other ranks' tokens passing through.
inline const QString kInFlight = QObject::tr("K/V in flight");

// A ZeRO flat buffer's name, "block0 (flat)".
inline bool isFlat(const std::string& tensor) { return tensor.ends_with(" (flat)"); }

}  // namespace paralab::holdings_rows
