// The flight recorder: a ring of one rank's last collectives, written by Communicator as each
// call is issued and done (every communicator of the rank, every thread), read by anyone —
// after PyTorch's Flight Recorder for NCCL process groups. Also --hang's stop (emulated) and
// CommPurpose, how a caller says what a collective is for. See
// tests/engine/tst_flight_recorder.cpp.
#pragma once
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "comm/flight_record.h"

namespace paralab {

class FlightRecorder {
 public:
  static constexpr size_t kCapacity = 64;  // collectives kept per rank

  void setRank(int worldRank) { m_rank = worldRank; }
  // --hang (emulated): the first collective this rank issues in step `step` is not issued;
  // the rank stops there instead (Communicator::stopHere).
  void armHang(int64_t step) { m_hangStep = step; }
  // True once, for the call that is to be skipped.
  bool hangsAt(int64_t step);

  // A call issued on `group` (of world ranks `members`): returns its id for done().
  uint64_t issue(FlightEntry e, const std::vector<int>& members);
  void done(uint64_t id);

  RankFlight snapshot() const;
  // "paralab: flight recorder of world rank R: {...}" (flightToJson of this rank alone): what an
  // MPI process prints beside its output when its watchdog fires or its emulated hang begins,
  // as a hung process cannot take part in a gather.
  std::string dumpLine() const;

 private:
  mutable std::mutex m_mutex;  // the rank's thread and its communication thread write
  int m_rank = 0;
  int64_t m_hangStep = 0;  // 0: none
  bool m_hung = false;
  uint64_t m_next = 0;                                  // id of the next issue
  std::deque<std::pair<uint64_t, FlightEntry>> m_ring;  // oldest first
  std::vector<std::pair<std::string, std::vector<int>>> m_groups;
};

// What the collectives this thread issues while it lives are for ("gradient bucket 3"), read
// into their entries. Thread-local: a communication thread says its own.
class CommPurpose {
 public:
  explicit CommPurpose(std::string what);
  ~CommPurpose();
  CommPurpose(const CommPurpose&) = delete;
  CommPurpose& operator=(const CommPurpose&) = delete;
  static const std::string& current();

 private:
  std::string m_before;
};

}  // namespace paralab
