// ControlChannel: `paralab-run --control stdin`. Rank 0 reads commands from its standard input
// while it trains, one a line (pause, resume, step, stop, save FILE), and every rank obeys them
// at the next step boundary. Under mpirun rank 0 relays what it decided to the other processes:
// one 4-byte broadcast per step, a second one carrying the text of a command when there is one
// (mpiBroadcastText); thread ranks need no relay.
// Try: printf 'pause\nstep\nstop\n' | paralab-run --steps 100000 --control stdin
// See tests/engine/tst_control.cpp.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace paralab {

class Trainer;

class ControlChannel {
 public:
  // `root`: this process reads the commands (world rank 0); `relay`: the ranks are the
  // processes of an MPI job, so the decision goes to them by broadcast; `quiet`: stdout carries
  // JSON lines only (--json), so a command's acknowledgement is not printed there.
  ControlChannel(bool root, bool relay, bool quiet);
  ~ControlChannel();
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;

  // On every process, before each step: obeys the commands that have arrived, in order, and
  // waits while paused. True: take the next step. False: stop now (a stop command, or the end
  // of the input: whoever drove the run is gone), after which the run ends as it would at its
  // last step, with its summary. Collective under MPI.
  bool beforeStep(Trainer& trainer);

  // The commands, for help texts and messages.
  static const char* commandsText() { return "pause, resume, step, stop, save FILE"; }

 private:
  struct Inbox;
  static void readLines(std::shared_ptr<Inbox> inbox);  // the reader thread
  std::string decide(int64_t stepsDone);  // rank 0: "" (a step), "stop" or "save FILE"
  void save(Trainer& trainer, const std::string& path);

  std::shared_ptr<Inbox> m_inbox;  // shared with the reader thread, which may outlive us
  bool m_root, m_relay, m_quiet;
  bool m_paused = false;
  int64_t m_granted = 0;  // steps that "step" allowed while paused
};

}  // namespace paralab
