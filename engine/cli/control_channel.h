// ControlChannel: `paralab-run --control stdin` or `--control FILE`. Rank 0 reads commands while
// it trains, one a line (pause, resume, step, stop, save FILE), from its standard input or from
// the lines appended to FILE (a batch job has no standard input: whoever drives it appends to a
// file on a file system rank 0's node shares), and every rank obeys them at the next step
// boundary. Under mpirun rank 0 relays what it decided to the other processes:
// one 4-byte broadcast per step, a second one carrying the text of a command when there is one
// (mpiBroadcastText); thread ranks need no relay.
// Try: printf 'pause\nstep\nstop\n' | paralab-run --steps 100000 --control stdin
//      touch c; paralab-run --steps 100000 --control c & echo stop >> c
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
  // JSON lines only (--json), so a command's acknowledgement is not printed there. `source`:
  // "stdin", or the path of the file whose appended lines are the commands (it must exist: the
  // lines already in it are obeyed before the first step).
  ControlChannel(bool root, bool relay, bool quiet, const std::string& source = "stdin");
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
  // How often a control file is read for new lines, ms.
  static constexpr int kFilePollMs = 100;
  // Why `source` cannot be a channel: "" when it is stdin or a readable file.
  static std::string sourceProblem(const std::string& source);

 private:
  struct Inbox;
  static void readLines(std::shared_ptr<Inbox> inbox);  // the reader thread of stdin
  // The reader thread of a control file: from `offset` on, every kFilePollMs; never closes.
  static void tailFile(std::shared_ptr<Inbox> inbox, std::string path, long offset);
  std::string decide(int64_t stepsDone);  // rank 0: "" (a step), "stop" or "save FILE"
  void save(Trainer& trainer, const std::string& path);

  std::shared_ptr<Inbox> m_inbox;  // shared with the reader thread, which may outlive us
  bool m_root, m_relay, m_quiet;
  bool m_paused = false;
  int64_t m_granted = 0;  // steps that "step" allowed while paused
};

}  // namespace paralab
