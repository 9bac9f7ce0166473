// The spans and holdings of paralab-run's --json lines, gathered from every rank (see
// line_views.h). See tests/engine/tst_line_views.cpp.
#include "cli/line_views.h"

#include <climits>
#include <cstdint>
#include <stdexcept>

#include "metrics/span_recorder.h"
#include "metrics/step_views.h"
#include "train/trainer.h"

#ifdef PARALAB_HAVE_MPI
#include <mpi.h>
#endif

namespace paralab {

namespace {

// Every process's text to world rank 0, in rank order (others get nothing).
std::vector<std::string> gatherText(const std::string& mine) {
#ifdef PARALAB_HAVE_MPI
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int len = int(mine.size());
  std::vector<int> lens(static_cast<size_t>(size)), displs(static_cast<size_t>(size));
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string all;
  if (rank == 0) {
    int total = 0;
    for (int q = 0; q < size; ++q) displs[size_t(q)] = total, total += lens[size_t(q)];
    all.resize(size_t(total));
  }
  MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (rank == 0)
    for (int q = 0; q < size; ++q)
      out.push_back(all.substr(size_t(displs[size_t(q)]), size_t(lens[size_t(q)])));
  return out;
#else
  (void)mine;
  throw std::runtime_error("backend: ParaLab was built without MPI");
#endif
}

// Rank 0's origin on this process's clock: rank 0 takes nowNs() as the origin and each other
// rank estimates how far its clock is from rank 0's as NTP does (Cristian's algorithm): it asks
// rank 0 the time, and rank 0's answer was read at about the middle of the round trip; of
// kRounds rounds the shortest round trip is kept (a round in which a process was descheduled
// says little). Collective over the MPI job, once, before the first step.
int64_t sharedOrigin() {
#ifdef PARALAB_HAVE_MPI
  constexpr int kRounds = 16, kTag = 7301;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int64_t origin = nowNs();  // rank 0's; sent to every rank below
  int64_t offset = 0;        // rank 0's clock minus this one
  if (rank == 0) {
    for (int r = 1; r < size; ++r)
      for (int k = 0; k < kRounds; ++k) {
        char ask = 0;
        MPI_Recv(&ask, 1, MPI_CHAR, r, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        const int64_t now = nowNs();
        MPI_Send(&now, 1, MPI_INT64_T, r, kTag, MPI_COMM_WORLD);
      }
  } else {
    int64_t best = INT64_MAX;
    for (int k = 0; k < kRounds; ++k) {
      char ask = 0;
      int64_t theirs = 0;
      const int64_t sent = nowNs();
      MPI_Send(&ask, 1, MPI_CHAR, 0, kTag, MPI_COMM_WORLD);
      MPI_Recv(&theirs, 1, MPI_INT64_T, 0, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      const int64_t back = nowNs();
      if (back - sent < best) best = back - sent, offset = theirs - (sent + back) / 2;
    }
  }
  MPI_Bcast(&origin, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  return origin - offset;
#else
  throw std::runtime_error("backend: ParaLab was built without MPI");
#endif
}

}  // namespace

// Times are offsets from one origin, rank 0's, read on each rank's own clock, not from each
// rank's own step start: under mpirun rank 0 begins each step later than the others (it prints
// the line first), and offsets from every rank's own step start would draw the others' wait for
// it as ending before it began. Each process has its own steady clock (on another host, an
// unrelated one), so before the first step each rank measures how far its clock is from rank 0's
// (sharedOrigin: a few round trips, outside every step; a barrier alone left ranks that share
// cores milliseconds apart). The error is about half the best round trip (microseconds on one
// machine) plus the drift of two hosts' clocks over the run (parts per million). Thread ranks
// share one clock and one origin, so their rows line up exactly.
void LineViews::stepBegins() {
  if (m_runStartNs < 0) m_runStartNs = m_mpi ? sharedOrigin() : nowNs();
  m_stepStartNs = nowNs();
}

std::vector<nlohmann::json> LineViews::local(Trainer& trainer) {
  const int64_t step = trainer.stepsDone();  // the step just taken (1-based)
  const bool instrumented = trainer.config().instrument;
  const std::vector<RankHoldings> held = trainer.holdings();
  std::vector<nlohmann::json> out;
  for (int i = 0; i < trainer.localRankCount(); ++i) {
    std::vector<Span> spans;
    if (instrumented)
      for (const Span& s : trainer.spans(i).since(step))
        if (s.step == step) spans.push_back(s);
    out.push_back(m_writer.rankPart(trainer.rankOfLocal(i), instrumented ? &spans : nullptr,
                                    m_runStartNs, &held.at(size_t(i))));
  }
  return out;
}

void LineViews::addTo(Trainer& trainer, nlohmann::json* line) {
  std::vector<nlohmann::json> parts = local(trainer);
  if (m_mpi) {  // one rank per process: each sends its part to rank 0
    const std::vector<std::string> all = gatherText(parts.at(0).dump());
    parts.clear();
    for (const std::string& s : all) parts.push_back(nlohmann::json::parse(s));
  }
  if (!line) return;
  m_writer.addTo(*line, double(m_stepStartNs - m_runStartNs) / 1e6, parts);
}

}  // namespace paralab
