// What of a run is emulated rather than measured, said once for every place that labels a run
// (emulated_parts.h). See tests/engine/tst_faults.cpp `emulatedPartsSayWhat`.
#include "emulated_parts.h"

#include <cstdio>

#include "config.h"

namespace paralab {

std::vector<EmulatedPart> emulatedParts(const RunConfig& c) {
  std::vector<EmulatedPart> parts;
  if (c.link != "none")
    parts.push_back({c.link, "the " + c.link +
                                 " link: transfer times are held back to its speed, not measured "
                                 "on one"});
  if (c.gpusPerNode > 0 && c.nodeLink != "none")
    parts.push_back({c.nodeLink + " between nodes",
                     "the " + c.nodeLink +
                         " link between nodes: transfers between ranks of different nodes are "
                         "held back to its speed, not measured on one"});
  if (c.straggler != "none")
    parts.push_back({"straggler " + c.straggler,
                     "the straggler " + c.straggler +
                         " (rank=factor): its compute takes factor times as long, the extra a sleep (asynchronous strategies go on without it)"});
  if (c.hang != "none")
    parts.push_back({"hang " + c.hang,
                     "the hang " + c.hang +
                         " (rank@step): that rank skips a collective and stops, the others "
                         "wait until the watchdog ends the run"});
  if (c.mtbfS > 0) {
    char mtbf[32];
    std::snprintf(mtbf, sizeof mtbf, "%g", c.mtbfS);
    parts.push_back({std::string("failures every ") + mtbf + " s (mean)",
                     "failures at random, a mean gap apart: each loses the steps since the last "
                     "checkpoint, and the run restarts from it"});
  }
  if (c.serialMs > 0)
    parts.push_back({"serial section " + std::to_string(c.serialMs) + " ms",
                     "a serial section of " + std::to_string(c.serialMs) +
                         " ms a step: a sleep on rank 0 that the other ranks wait for"});
  return parts;
}

std::string emulatedBriefs(const RunConfig& c) {
  std::string out;
  for (const EmulatedPart& p : emulatedParts(c)) out += (out.empty() ? "" : " · ") + p.brief;
  return out;
}

}  // namespace paralab
