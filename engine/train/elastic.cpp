// Elastic data parallelism (--elastic, thread ranks of --strategy sync): when a replica fails
// (--fail), the survivors form a new group of one rank fewer, re-split the global batch over
// themselves and redo the failed step from the state after the last completed one, without a
// restart. After torchft's quorum (github.com/pytorch/torchft): membership is agreed at a step
// boundary, the live replicas' state is the group's. See tests/engine/tst_elastic.cpp and
// `paralab-run --ranks 4 --fail 3@10 --elastic`.
//
// What a real cluster adds that this does not: a lighthouse or store that the replicas ask for
// the quorum (here the failure is seen by the process that runs every rank), heartbeats and
// timeouts to tell a dead replica from a slow one, new communicators over the network (NCCL's
// abort and re-init), the state copied over the network from a live peer (here every replica
// holds the same state and the last completed step's is kept by the trainer), and replicas
// rejoining at a later step.
#include <stdexcept>

#include "train/trainer.h"

namespace paralab {

StepMetrics Trainer::elasticStep() {
  // The state the survivors go on from: every replica holds it after a completed step (data
  // parallelism keeps the replicas equal); the trainer keeps it, since the failed step's
  // ranks have all ended by the time the new group forms.
  if (!m_lastGood) m_lastGood = saveState();
  try {
    StepMetrics m = stepOnce();
    m_lastGood = saveState();
    return m;
  } catch (const std::exception&) {
    const int failed = failedRank();
    if (failed < 0 || m_config.ranks < 2) throw;  // not a replica's failure: the run ends
    m_elasticEvents.push_back({m_step + 1, failed, m_config.ranks, m_config.ranks - 1});
    reform();
    StepMetrics m = stepOnce();
    m_lastGood = saveState();
    return m;
  }
}

void Trainer::reform() {
  // The quorum: the members left. Ranks are renumbered 0..n-2 (a data-parallel replica has no
  // place of its own), and the failure that happened does not happen again.
  RunConfig c = m_config;
  c.ranks -= 1;
  if (c.dp > 0) c.dp = c.ranks;
  c.fail = "none";
  rebuild(c);
  loadState(*m_lastGood);  // the step the failure interrupted is redone by the survivors
}

}  // namespace paralab
