// Elastic data parallelism (--elastic) where it reaches past one process: the exit code an
// mpirun job ends with when one of its replicas failed, and the run a launcher starts next (one
// process fewer, from the job's last checkpoint); and --rejoin's check. Thread ranks re-form in
// place (train/elastic.cpp). See tests/engine/tst_elastic.cpp, tests/app/tst_window_elastic.cpp.
#pragma once
#include <optional>
#include <string>

#include "config.h"

namespace paralab {

// EX_TEMPFAIL of sysexits.h ("a temporary failure; the user is invited to retry"): an mpirun
// job under --elastic ends with it when a replica failed, so that its launcher starts it again
// on the survivors instead of reporting a failed run.
inline constexpr int kRelaunchExitCode = 75;

// The run the launcher starts after kRelaunchExitCode, with --resume of the job's checkpoint:
// the survivors' count (one process fewer; --dp with it), and the failure that happened not
// injected again.
RunConfig relaunchConfig(const RunConfig& failed);

// --rejoin against the rest of the run: why it cannot be ("rejoin: ...", naming what is
// allowed), or nothing. It needs --elastic thread ranks, the --fail rank, and a step after the
// failure's and within --steps.
std::optional<std::string> rejoinProblem(const RunConfig& c);

}  // namespace paralab
