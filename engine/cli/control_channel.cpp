// The command channel of paralab-run --control stdin | FILE (see control_channel.h).
// See tests/engine/tst_control.cpp.
#include "cli/control_channel.h"

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>

#include "comm/communicator.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

namespace paralab {

// Lines read from standard input by a thread of their own, so training never waits on a read.
// The thread is detached (a read cannot be cancelled): it keeps the inbox alive until the
// process exits.
struct ControlChannel::Inbox {
  std::mutex mutex;
  std::condition_variable arrived;
  std::deque<std::string> lines;
  bool closed = false;  // the end of the input
};

namespace {

std::string trimmed(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return {};
  return s.substr(a, s.find_last_not_of(" \t\r\n") + 1 - a);
}

void say(bool quiet, const std::string& text) {
  if (quiet) return;
  std::printf("%s\n", text.c_str());
  std::fflush(stdout);
}

}  // namespace

// POSIX getline on stdin rather than std::cin: std::cin is tied to std::cout, and a read would
// flush std::cout from this thread while the main thread writes to it.
void ControlChannel::readLines(std::shared_ptr<Inbox> inbox) {
  char* buffer = nullptr;
  size_t capacity = 0;
  while (getline(&buffer, &capacity, stdin) >= 0) {
    std::lock_guard lock(inbox->mutex);
    inbox->lines.emplace_back(buffer);
    inbox->arrived.notify_all();
  }
  std::free(buffer);
  std::lock_guard lock(inbox->mutex);
  inbox->closed = true;
  inbox->arrived.notify_all();
}

// Complete lines only: a writer's line may arrive in two reads (its end is kept for the next).
void ControlChannel::tailFile(std::shared_ptr<Inbox> inbox, std::string path, long offset) {
  std::string partial;
  char buffer[4096];
  for (;;) {
    if (FILE* f = std::fopen(path.c_str(), "r")) {
      if (std::fseek(f, offset, SEEK_SET) == 0) {
        size_t n;
        while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) {
          partial.append(buffer, n);
          offset += long(n);
        }
      }
      std::fclose(f);
    }
    {
      std::lock_guard lock(inbox->mutex);
      for (size_t nl; (nl = partial.find('\n')) != std::string::npos; partial.erase(0, nl + 1)) {
        inbox->lines.push_back(partial.substr(0, nl));
        inbox->arrived.notify_all();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kFilePollMs));
  }
}

std::string ControlChannel::sourceProblem(const std::string& source) {
  if (source == "stdin" || ::access(source.c_str(), R_OK) == 0) return "";
  return "control: '" + source +
         "' is not a channel (allowed: stdin, or the path of an existing file)";
}

ControlChannel::ControlChannel(bool root, bool relay, bool quiet, const std::string& source)
    : m_inbox(std::make_shared<Inbox>()), m_root(root), m_relay(relay), m_quiet(quiet) {
  if (!m_root) return;
  if (source != "stdin") {
    // What is in the file already (a job submitted paused: "pause") is obeyed before the first
    // step; the thread reads what is appended after.
    long offset = 0;
    if (FILE* f = std::fopen(source.c_str(), "r")) {
      std::string text;
      char buffer[4096];
      for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) text.append(buffer, n);
      std::fclose(f);
      const size_t end = text.rfind('\n');
      if (end != std::string::npos) {
        offset = long(end + 1);
        for (size_t a = 0, nl; (nl = text.find('\n', a)) != std::string::npos && nl <= end;
             a = nl + 1)
          m_inbox->lines.push_back(text.substr(a, nl - a));
      }
    }
    std::thread(tailFile, m_inbox, source, offset).detach();
    return;
  }
  std::thread(readLines, m_inbox).detach();
  // Commands written before training began (a window that starts a job paused writes "pause"
  // at once) are obeyed before the first step: when input is already waiting, the reader is
  // given a moment to take its first line.
  pollfd in{0, POLLIN, 0};
  if (::poll(&in, 1, 0) > 0) {
    std::unique_lock lock(m_inbox->mutex);
    m_inbox->arrived.wait_for(lock, std::chrono::seconds(1),
                              [&] { return !m_inbox->lines.empty() || m_inbox->closed; });
  }
}

ControlChannel::~ControlChannel() = default;

// Rank 0 alone: the commands in arrival order, up to the first that ends this boundary's
// decision. "step" behaves as in the window (Session::stepOnce): one more step, then paused.
std::string ControlChannel::decide(int64_t stepsDone) {
  std::unique_lock lock(m_inbox->mutex);
  for (;;) {
    while (!m_inbox->lines.empty()) {
      const std::string line = trimmed(m_inbox->lines.front());
      m_inbox->lines.pop_front();
      if (line.empty()) continue;
      if (line == "pause") {
        if (!m_paused) say(m_quiet, "control: paused after step " + std::to_string(stepsDone));
        m_paused = true;
        m_granted = 0;
      } else if (line == "resume") {
        if (m_paused) say(m_quiet, "control: resumed after step " + std::to_string(stepsDone));
        m_paused = false;
      } else if (line == "step") {
        m_paused = true;
        ++m_granted;
      } else if (line == "stop") {
        return "stop";
      } else if (line.rfind("save ", 0) == 0 && !trimmed(line.substr(5)).empty()) {
        // Checked here, by the one process that writes: a path refused skips the save on every
        // rank alike (the others must not enter its collective alone).
        const std::string path = trimmed(line.substr(5));
        if (auto why = checkpointPathProblem(path)) {
          std::fprintf(stderr, "paralab-run: %s\n", why->c_str());
          std::fflush(stderr);
          continue;
        }
        return "save " + path;
      } else {
        // A typo must not end a run someone is watching: one line on stderr, and go on.
        std::fprintf(stderr, "paralab-run: control: '%s' is not a command (allowed: %s)\n",
                     line.c_str(), commandsText());
        std::fflush(stderr);
      }
    }
    if (m_inbox->closed) return "stop";
    if (!m_paused) return "";
    if (m_granted > 0) {
      --m_granted;
      return "";
    }
    m_inbox->arrived.wait(lock);
  }
}

bool ControlChannel::beforeStep(Trainer& trainer) {
  for (;;) {
    std::string decision = m_root ? decide(trainer.stepsDone()) : std::string();
    if (m_relay) decision = mpiBroadcastText(decision);
    if (decision.empty()) return true;
    if (decision == "stop") {
      say(m_quiet || !m_root, "control: stopped after step " + std::to_string(trainer.stepsDone()));
      return false;
    }
    save(trainer, decision.substr(5));  // "save FILE"; then the next command
  }
}

// Every rank hands its share of the state to rank 0 (collective), which writes the checkpoint.
// A failure is said in one line and the run goes on: the training itself is unharmed.
void ControlChannel::save(Trainer& trainer, const std::string& path) {
  const auto problem = [this](const std::string& why) {
    if (!m_root) return;
    std::fprintf(stderr, "paralab-run: %s\n", why.c_str());
    std::fflush(stderr);
  };
  TrainingState state;
  try {
    state = trainer.saveState();
  } catch (const std::exception& e) {
    return problem(std::string("save: ") + e.what());
  }
  if (!m_root) return;
  try {
    writeCheckpoint(path, state, trainer.config(), trainer.parameterCount());
  } catch (const std::exception& e) {
    return problem(e.what());
  }
  say(m_quiet, "checkpoint: " + path + " (step " + std::to_string(state.step) + ")");
}

}  // namespace paralab
