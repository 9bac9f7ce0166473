// Faults on purpose: the straggler's emulated slowness and the injected failure (faults.h).
// See tests/engine/tst_faults.cpp.
#include "train/faults.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <thread>

#include "config.h"

namespace paralab {

const char* const kStragglerForm = "none, or RANK=FACTOR with FACTOR 1..100, e.g. 1=3";
const char* const kFailForm = "none, or RANK@STEP with STEP 1 or more, e.g. 1@5";
const char* const kHangForm = "none, or RANK@STEP with STEP 1 or more, e.g. 2@5";
const char* const kRejoinForm =
    "none, or RANK@STEP: the --fail rank, and a step after the failure's, e.g. 3@20";
const char* const kStragglerSpanOp = "straggler (emulated)";
const char* const kSerialSpanOp = "serial section (emulated)";

namespace {

constexpr double kMaxFactor = 100;

// "RANK<sep>VALUE" split at `sep`: the rank and the text after it, or nullopt when malformed.
std::optional<std::pair<int64_t, std::string>> splitSpec(const std::string& text, char sep) {
  const size_t at = text.find(sep);
  if (at == std::string::npos || at == 0) return std::nullopt;
  int64_t rank = -1;
  const char* end = text.data() + at;
  const auto [p, ec] = std::from_chars(text.data(), end, rank);
  if (ec != std::errc() || p != end) return std::nullopt;
  return std::make_pair(rank, text.substr(at + 1));
}

void checkRank(const char* key, int64_t rank, int ranks) {
  if (rank < 0 || rank >= ranks)
    throw ConfigError(std::string(key) + ": rank " + std::to_string(rank) +
                      " does not exist (allowed: 0.." + std::to_string(ranks - 1) + ")");
}

}  // namespace

std::optional<StragglerSpec> parseStraggler(const std::string& text, int ranks) {
  if (text == "none") return std::nullopt;
  const auto bad = [&] {
    return ConfigError("straggler: '" + text + "' is not RANK=FACTOR (allowed: " + kStragglerForm +
                       ")");
  };
  const auto spec = splitSpec(text, '=');
  if (!spec) throw bad();
  double factor = 0;
  const std::string& f = spec->second;
  const auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), factor);
  if (f.empty() || ec != std::errc() || p != f.data() + f.size()) throw bad();
  checkRank("straggler", spec->first, ranks);
  if (!(factor >= 1 && factor <= kMaxFactor))
    throw ConfigError("straggler: factor " + f + " is out of range (allowed: 1..100)");
  return StragglerSpec{int(spec->first), factor};
}

namespace {

// RANK@STEP for the setting `key` (fail, hang), in the form `form`.
std::optional<FailSpec> parseRankAtStep(const char* key, const char* form, const std::string& text,
                                        int ranks) {
  if (text == "none") return std::nullopt;
  const auto spec = splitSpec(text, '@');
  int64_t step = 0;
  const std::string s = spec ? spec->second : "";
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), step);
  if (!spec || s.empty() || ec != std::errc() || p != s.data() + s.size())
    throw ConfigError(std::string(key) + ": '" + text + "' is not RANK@STEP (allowed: " + form +
                      ")");
  checkRank(key, spec->first, ranks);
  if (step < 1)
    throw ConfigError(std::string(key) + ": step " + s + " is out of range (allowed: 1 or more)");
  return FailSpec{int(spec->first), step};
}

}  // namespace

std::optional<FailSpec> parseFail(const std::string& text, int ranks) {
  return parseRankAtStep("fail", kFailForm, text, ranks);
}

std::optional<FailSpec> parseHang(const std::string& text, int ranks) {
  return parseRankAtStep("hang", kHangForm, text, ranks);
}

std::optional<FailSpec> parseRejoin(const std::string& text, int ranks) {
  return parseRankAtStep("rejoin", kRejoinForm, text, ranks);
}

RankFaults::RankFaults(const RunConfig& config, int rank) : m_rank(rank) {
  if (const auto s = parseStraggler(config.straggler, config.ranks); s && s->rank == rank)
    m_slowBy = s->factor - 1;
  if (const auto f = parseFail(config.fail, config.ranks); f && f->rank == rank) {
    m_failStep = f->step;
    m_failSpec = config.fail;
  }
  if (rank == 0) m_serialNs = int64_t(config.serialMs) * 1'000'000;
}

void RankFaults::afterBackward(int64_t step, int64_t computeNs, SpanRecorder* spans) {
  if (step == m_failStep)
    throw RankFailure("rank " + std::to_string(m_rank) + " failed at step " + std::to_string(step) +
                      " after its backward: injected failure (--fail " + m_failSpec + ")");
  if (m_serialNs > 0) {
    // The serial section: before the gradients are summed, so every rank waits for it whatever
    // their number. A sleep, so the cores stay free: with ranks <= cores the parallel part
    // shrinks as 1 / N and this part does not (Amdahl).
    ScopedSpan s(spans, SpanKind::Forward, step, kSerialSpanOp);
    std::this_thread::sleep_for(std::chrono::nanoseconds(m_serialNs));
  }
  if (m_slowBy <= 0 || computeNs <= 0) return;
  const int64_t extraNs = int64_t(m_slowBy * double(computeNs));
  if (m_defer) {
    m_busyFromNs = nowNs();
    m_busyUntilNs = m_busyFromNs + extraNs;
    return;
  }
  // The straggler's extra compute: a sleep, so the cores stay free for the other ranks (thread
  // ranks share them) and the slowness is exactly FACTOR x this step's measured compute.
  ScopedSpan s(spans, SpanKind::Backward, step, kStragglerSpanOp);
  std::this_thread::sleep_for(std::chrono::nanoseconds(extraNs));
}

void RankFaults::closeBusy(int64_t step, SpanRecorder* spans) {
  if (spans)
    spans->record({SpanKind::Backward, m_busyFromNs, m_busyUntilNs, 0, kStragglerSpanOp, step});
  m_busyFromNs = m_busyUntilNs = 0;
}

bool RankFaults::busy(int64_t step, SpanRecorder* spans) {
  if (m_busyUntilNs == 0) return false;
  if (const int64_t now = nowNs(); now < m_busyUntilNs) {
    // Still computing: this step's share of the emulated compute is booked in this step, so a
    // step's emulated time is what passed in it, not the whole of it in the step it ends.
    if (spans) spans->record({SpanKind::Backward, m_busyFromNs, now, 0, kStragglerSpanOp, step});
    m_busyFromNs = now;
    return true;
  }
  closeBusy(step, spans);
  return false;
}

void RankFaults::waitUntilFree(int64_t step, SpanRecorder* spans) {
  if (m_busyUntilNs == 0) return;
  std::this_thread::sleep_for(
      std::chrono::nanoseconds(std::max<int64_t>(0, m_busyUntilNs - nowNs())));
  closeBusy(step, spans);
}

}  // namespace paralab
