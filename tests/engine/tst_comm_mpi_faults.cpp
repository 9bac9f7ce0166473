// MpiComm's fault paths end the job in bounded time with a message, run by CTest under
// mpirun (np 2) and passing when the message appears:
//   tst_comm_mpi_faults timeout  rank 1 never calls the all-reduce; rank 0 times out after 1 s
//   tst_comm_mpi_faults abort    rank 1 fails and aborts; rank 0, waiting, is ended with it
//   tst_comm_mpi_faults recorder rank 1 stops before its second all-reduce (an emulated hang);
//                                rank 0's watchdog prints its flight recorder: #2 issued
#include <cstdio>
#include <string>
#include <thread>

#include "comm/communicator.h"
#include "comm/flight_recorder.h"

using namespace paralab;

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  CommOptions o;
  o.timeoutSeconds = mode == "timeout" || mode == "recorder" ? 1.0 : 30.0;
  auto world = makeMpiWorld(o);
  float x = 1;
  FlightRecorder recorder;
  if (mode == "recorder") {
    recorder.setRank(world->rank());
    if (world->rank() == 1) recorder.armHang(2);
    world->setFlightRecorder(&recorder);
    world->setStep(1);
    world->allReduce(&x, &x, 1);
    world->setStep(2);
    world->allReduce(&x, &x, 1);  // rank 1 stops here, printing its recorder; rank 0 waits
  } else if (mode == "timeout") {
    if (world->rank() == 0) world->allReduce(&x, &x, 1);
  } else if (mode == "abort") {
    try {
      if (world->rank() == 1) throw std::runtime_error("boom in backward");
      world->allReduce(&x, &x, 1);
    } catch (const std::exception& e) {
      world->abort(e.what());
    }
  } else {
    std::fprintf(stderr, "usage: tst_comm_mpi_faults timeout|abort|recorder\n");
    return 2;
  }
  // Rank 1 of the timeout case is meant to get here (it skipped the call); no one else is.
  if (mode == "timeout" && world->rank() == 1) return 0;
  std::fprintf(stderr, "rank %d returned: the fault did not end the job\n", world->rank());
  return 1;
}
