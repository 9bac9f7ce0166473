// LineViews: what paralab-run --json adds to each step's line for the window's timeline and
// holdings map (metrics/step_views.h): every rank's spans of the step, and every rank's holdings
// on the first line and whenever they change. Under mpirun each process holds only its own
// rank's, so they are gathered to rank 0 after the step, like the per-rank figures: one
// MPI_Gather of lengths and one MPI_Gatherv of text per step (and, before the first, a few round
// trips to rank 0 that put every rank's times on rank 0's clock), outside the measured steps and
// the traffic counts. See tests/engine/tst_line_views.cpp.
// Try: paralab-run --steps 2 --ranks 2 --json
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "metrics/step_views.h"

namespace paralab {

class Trainer;
struct StepMetrics;

class LineViews {
 public:
  // `mpi`: this process is one rank of an MPI job (the others call the same, in step).
  explicit LineViews(bool mpi) : m_mpi(mpi) {}

  // On every process, right before trainer.step(): the step's start on this rank's clock. The
  // first call takes the run's origin: rank 0's, on this process's clock (collective under MPI).
  void stepBegins();
  // On every process after each step (collective under MPI): rank 0's `line` (null elsewhere)
  // receives "started_ms" (rank 0's step start), each ranks[] object its "spans" (times in ms
  // from the origin; "spans_dropped" past kMaxLineSpans), and "holdings" when some rank's
  // changed since the last line: as LineViewsWriter writes them (the window's export too).
  void addTo(Trainer& trainer, nlohmann::json* line);

 private:
  // This process's parts: per local rank, LineViewsWriter::rankPart.
  std::vector<nlohmann::json> local(Trainer& trainer);

  bool m_mpi;
  int64_t m_runStartNs = -1, m_stepStartNs = 0;
  // Each process: its ranks' parts (the layout each last sent); rank 0: the lines.
  LineViewsWriter m_writer;
};

}  // namespace paralab
