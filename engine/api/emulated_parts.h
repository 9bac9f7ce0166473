// What of a run is emulated rather than measured (docs/architecture.md §9): the interconnect
// (--link), a straggler (--straggler), a serial section (--serial-ms), said once here for every
// place that labels a run: paralab-run's header, chart subtitles, CSV comments and the summary. See
// tests/engine/tst_faults.cpp `emulatedPartsSayWhat`.
#pragma once
#include <string>
#include <vector>

namespace paralab {

struct RunConfig;

// `brief` names the part for a chart's subtitle ("straggler 1=3"); `detail` says what the
// emulation does.
struct EmulatedPart {
  std::string brief, detail;
};
// The run's emulated parts, in the order link, straggler, serial section; none when all is real.
std::vector<EmulatedPart> emulatedParts(const RunConfig& config);
// Their briefs joined by " · " ("ethernet · straggler 1=3"), "" when all is real: the "emulated"
// of every JSON line and trace (metrics.md).
std::string emulatedBriefs(const RunConfig& config);

}  // namespace paralab
