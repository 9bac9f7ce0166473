// Faults on purpose: a hang (--hang RANK@STEP, parseHang), a straggler (--straggler RANK=FACTOR, one rank's compute FACTOR times as
// long, emulated by sleeping after its real forward and backward) and a failure (--fail
// RANK@STEP, a real exception thrown inside that rank's step) and a serial section (--serial-ms
// MS: rank 0 busy MS ms in every step while the others wait, emulated by sleeping). See
// tests/engine/tst_faults.cpp and `paralab-run --ranks 2 --straggler 1=3`.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "metrics/span_recorder.h"

namespace paralab {

struct RunConfig;

// --straggler RANK=FACTOR: rank `rank` computes `factor` (>= 1) times as long.
struct StragglerSpec {
  int rank = 0;
  double factor = 1;
};
// --fail RANK@STEP: rank `rank` throws in step `step` (1-based, as the JSON lines count).
// --hang RANK@STEP: rank `rank` skips a collective in step `step` (parseHang).
struct FailSpec {
  int rank = 0;
  int64_t step = 1;
};

// The settings' text: "none", or the spec. Reading returns nullopt for "none" and throws
// ConfigError naming the setting and what is allowed for anything malformed or out of range
// (`ranks`: the world, so a rank that does not exist is named).
std::optional<StragglerSpec> parseStraggler(const std::string& text, int ranks);
std::optional<FailSpec> parseFail(const std::string& text, int ranks);
// --hang RANK@STEP: rank `rank` does not issue its first collective of step `step` and stops
// there (emulated); the others wait in it until the watchdog (--timeout) ends the run with the
// flight recorder's reading (comm/flight_recorder.h). The same form as --fail.
std::optional<FailSpec> parseHang(const std::string& text, int ranks);
// --rejoin RANK@STEP (with --elastic): the failed replica comes back at the start of that step
// (train/elastic.h). The same form; whether it names the --fail rank and a later step is the
// settings row's check.
std::optional<FailSpec> parseRejoin(const std::string& text, int ranks);
// The allowed forms in words, for --help, range errors and the window's tooltip.
extern const char* const kStragglerForm;
extern const char* const kFailForm;
extern const char* const kHangForm;
extern const char* const kRejoinForm;

// The exception --fail throws: its message names the rank, what it was doing and the step, and
// is the one line the run ends with (thread ranks, the Session, mpirun alike).
struct RankFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The op of the straggler's sleep span: compute, emulated (a Backward span, so the rank's
// compute time is FACTOR times its real one, and the timeline shows it busy, not idle).
extern const char* const kStragglerSpanOp;
// The op of the serial section's sleep span (a Forward span: rank 0 is busy, not idle).
extern const char* const kSerialSpanOp;

// One rank's faults for a run. Called after the rank's real forward and backward of a step.
//
// Synchronous strategies: the straggler sleeps there, so its step is FACTOR times as long and
// every collective after it waits. Asynchronous ones (ps-async, local SGD, Hogwild) call
// deferSlowness(): the straggler then sleeps not at once but is busy() until its emulated
// compute would end, skipping work meanwhile (the other ranks go on), and sleeps what is left
// only where it must meet the others (waitUntilFree before local SGD's averaging).
class RankFaults {
 public:
  RankFaults(const RunConfig& config, int rank);
  bool any() const { return m_slowBy > 0 || m_failStep > 0 || m_serialNs > 0; }
  bool straggles() const { return m_slowBy > 0; }
  void deferSlowness() { m_defer = true; }
  // Step `step` (1-based) of this rank computed for `computeNs`: throws RankFailure at the
  // --fail step; the straggler then sleeps (FACTOR - 1) x computeNs in a span of its own, or
  // with deferSlowness() becomes busy for that long; rank 0 then sleeps its serial section.
  void afterBackward(int64_t step, int64_t computeNs, SpanRecorder* spans);
  // Deferred: whether the emulated compute is still going on. Each call records a span under
  // `step` of the emulated compute since the last call (or since the real compute ended), up to
  // now or, once it has ended, to its end.
  bool busy(int64_t step, SpanRecorder* spans);
  // Deferred: sleeps until the emulated compute ends, and records its span.
  void waitUntilFree(int64_t step, SpanRecorder* spans);

 private:
  void closeBusy(int64_t step, SpanRecorder* spans);
  int m_rank = 0;
  double m_slowBy = 0;     // FACTOR - 1 on the straggler, else 0
  int64_t m_failStep = 0;  // 0: never
  int64_t m_serialNs = 0;  // rank 0's serial section, else 0
  std::string m_failSpec;  // "1@3", for the message
  bool m_defer = false;
  int64_t m_busyFromNs = 0, m_busyUntilNs = 0;  // deferred emulated compute (0: none open)
};

// Deferred slowness in an asynchronous strategy (ps-async, Hogwild): the rank's gradient from
// the moment it is computed until it is delivered, with the samples and loss of the step that
// computed it. A straggler holds it while busy(); any other rank delivers it in the same step.
//   if (!held.held()) held.computed(samples, forwardBackward(step));
//   if (held.deliver(faults, step + 1, spans)) { ...apply it, report held.samples()... }
class HeldGradient {
 public:
  bool held() const { return m_held; }
  void computed(int samples, double lossSum) {
    m_held = true, m_samples = samples, m_lossSum = lossSum;
  }
  // Whether it goes out in `step` (the emulated compute has ended); it is then no longer held.
  bool deliver(RankFaults& faults, int64_t step, SpanRecorder* spans) {
    if (faults.busy(step, spans)) return false;
    m_held = false;
    return true;
  }
  int samples() const { return m_samples; }
  double lossSum() const { return m_lossSum; }

 private:
  bool m_held = false;
  int m_samples = 0;
  double m_lossSum = 0;
};

}  // namespace paralab
