// An --elastic run under mpirun: its checkpoints, and the end of the job for a relaunch (see
// elastic_job.h). See tests/app/tst_window_elastic.cpp.
#include "cli/elastic_job.h"

#include <cstdio>
#include <cstdlib>

#include "train/checkpoint.h"
#include "train/elastic.h"
#include "train/faults.h"
#include "train/trainer.h"

namespace paralab {

std::optional<std::string> ElasticJob::problem(const RunConfig& c, bool mpiJob,
                                               const std::string& saveFile) {
  if (!mpiJob || !c.elastic || (c.checkpointEvery > 0 && !saveFile.empty())) return std::nullopt;
  return std::string(
      "elastic: under mpirun the job relaunches on its survivors from its last checkpoint "
      "(allowed: with --checkpoint-every K and --save FILE)");
}

ElasticJob::ElasticJob(const RunConfig& c, bool mpiJob, std::string saveFile, int64_t resumedAt)
    : m_on(mpiJob && c.elastic && c.checkpointEvery > 0),
      m_every(c.checkpointEvery),
      m_file(std::move(saveFile)),
      m_saved(resumedAt) {}

StepMetrics ElasticJob::step(Trainer& t) {
  StepMetrics m;
  try {
    m = t.step();
  } catch (const RankFailure& e) {
    if (!m_on) throw;
    // The other processes wait in a collective MPI cannot interrupt; this one leaves, and
    // mpirun ends the job with its exit code (no MPI_Finalize: the others would wait for it).
    const int survivors = t.config().ranks - 1;
    const std::string from =
        m_saved > 0 ? "its last checkpoint, " + m_file : "step 0 (no checkpoint written yet)";
    std::fprintf(stderr,
                 "paralab-run: %s; --elastic: the job ends for a relaunch on %d processes from "
                 "%s (mpirun -np %d ... --resume %s, without --fail; exit code %d)\n",
                 e.what(), survivors, from.c_str(), survivors, m_file.c_str(), kRelaunchExitCode);
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(kRelaunchExitCode);
  }
  if (!m_on || m.step % m_every != 0 || m.step >= t.config().steps) return m;
  // Every K steps, as --mtbf's checkpoints (train/goodput.h): gathered to rank 0, which writes
  // it atomically, so a failure during the write leaves the previous checkpoint whole.
  const TrainingState state = t.saveState();
  if (t.isRoot()) writeCheckpoint(m_file, state, t.config(), t.parameterCount());
  m_saved = m.step;
  return m;
}

}  // namespace paralab
