// Must compile: the engine's public headers, as an app/ file sees them (tests/app/door.cmake,
// tst_door_opens_public_api), so the two refusals beside it are the door's and nothing else's.
#include "capabilities.h"
#include "jobs/bench_job.h"
#include "jobs/host_check_job.h"
#include "jobs/sweep_job.h"
#include "metrics/run_record.h"
#include "metrics/step_views.h"
#include "schema.h"
#include "session.h"

int paralabDoorProbe() { return paralab::RunConfig{}.ranks; }
