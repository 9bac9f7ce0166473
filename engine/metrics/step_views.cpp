// The spans and holdings of a --json line, written and read back (see step_views.h).
// See tests/engine/tst_line_views.cpp.
#include "metrics/step_views.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <istream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>

namespace paralab {

namespace {

double ms(int64_t ns) { return double(ns) / 1e6; }
int64_t ns(double ms) { return int64_t(std::llround(ms * 1e6)); }

// Span::op is a static string: names read from a line are kept here for good.
const char* internOp(const std::string& name) {
  static std::mutex mutex;
  static std::set<std::string> names;
  if (name.empty()) return "";
  std::lock_guard lock(mutex);
  if (auto it = names.find(name); it != names.end()) return it->c_str();
  if (names.size() >= 4096) return "";
  return names.insert(name).first->c_str();
}

SpanKind spanKindOf(const std::string& name) {
  for (int k = 0; k <= int(SpanKind::Idle); ++k)
    if (spanKindName(SpanKind(k)) == name) return SpanKind(k);
  throw std::runtime_error("spans: kind '" + name + "' is not one (allowed: data, forward, "
                           "backward, optimizer, comm, idle)");
}

HoldingKind holdingKindOf(const std::string& name) {
  for (int k = 0; k < kHoldingKinds; ++k)
    if (name == holdingKindName(HoldingKind(k))) return HoldingKind(k);
  throw std::runtime_error("holdings: kind '" + name + "' is not one (allowed: params, grads, "
                           "optimizer, activations, batch, master)");
}

}  // namespace

// [SECTION] Writing

nlohmann::json spansToJson(const std::vector<Span>& spans, int64_t originNs, size_t cap,
                           int64_t* dropped) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < spans.size() && i < cap; ++i) {
    const Span& s = spans[i];
    nlohmann::json j = {{"kind", std::string(spanKindName(s.kind))},
                        {"start_ms", ms(s.startNs - originNs)},
                        {"end_ms", ms(s.endNs - originNs)}};
    if (s.op && *s.op) j["op"] = s.op;
    if (s.bytes) j["bytes"] = s.bytes;
    out.push_back(std::move(j));
  }
  if (dropped) *dropped = spans.size() > cap ? int64_t(spans.size() - cap) : 0;
  return out;
}

nlohmann::json holdingsLayoutJson(const RankHoldings& h) {
  nlohmann::json j = toJson(h);
  j.erase("sent_to");  // the step's traffic: every line's ranks[] carry it
  j.erase("sent_by_op");
  return j;
}

// [SECTION] A line's views, line by line

nlohmann::json LineViewsWriter::rankPart(int rank, const std::vector<Span>* spans, int64_t originNs,
                                         const RankHoldings* holdings, int64_t dropped) {
  nlohmann::json part = {{"rank", rank}};
  if (spans) {
    int64_t past = 0;
    part["spans"] = spansToJson(*spans, originNs, kMaxLineSpans, &past);
    if (past + dropped > 0) part["spans_dropped"] = past + dropped;
  }
  // Sent when it changed (the activations grow to the largest batch; a live change re-shards).
  if (holdings && rank >= 0) {
    if (m_sent.size() <= size_t(rank)) m_sent.resize(size_t(rank) + 1);
    nlohmann::json layout = holdingsLayoutJson(*holdings);
    if (std::string text = layout.dump(); text != m_sent[size_t(rank)]) {
      m_sent[size_t(rank)] = std::move(text);
      part["holdings"] = std::move(layout);
    }
  }
  return part;
}

void LineViewsWriter::addTo(nlohmann::json& line, std::optional<double> startedMs,
                            const std::vector<nlohmann::json>& parts) {
  if (startedMs) line["started_ms"] = *startedMs;
  bool changed = false;
  for (const nlohmann::json& p : parts) {
    const size_t rank = p.at("rank").get<size_t>();
    if (m_holdings.size() <= rank) m_holdings.resize(rank + 1);
    if (p.contains("holdings")) m_holdings[rank] = p.at("holdings"), changed = true;
    if (!p.contains("spans") || !line.contains("ranks")) continue;
    for (nlohmann::json& r : line["ranks"])
      if (r.value("rank", -1) == int(rank)) {
        r["spans"] = p.at("spans");
        if (p.contains("spans_dropped")) r["spans_dropped"] = p.at("spans_dropped");
      }
  }
  if (changed) line["holdings"] = m_holdings;
}

// [SECTION] What the window keeps to write its lines

void StepViewsLog::add(const std::vector<std::vector<Span>>& spans,
                       const std::vector<RankHoldings>& holdings, int64_t firstStep,
                       int64_t lastStep, const std::vector<SpansLeftOut>& leftOut) {
  if (!holdings.empty()) {
    std::string text;
    for (const RankHoldings& h : holdings) text += holdingsLayoutJson(h).dump() + '\n';
    if (text != m_lastHoldings) {
      m_holdings.push_back({m_holdings.empty() ? firstStep : lastStep, holdings});
      for (RankHoldings& h : m_holdings.back().ranks) h.lastStep = {};  // a line has its traffic
      m_lastHoldings = std::move(text);
      while (m_holdings.size() > size_t(kHoldingChanges)) m_holdings.pop_front();
    }
  }
  // The steps done and not kept yet, in order.
  const int64_t after = m_steps.empty() ? 0 : m_steps.back().step;
  std::vector<int64_t> steps;
  for (const auto& rank : spans)
    for (const Span& s : rank)
      if (s.step > after && s.step <= lastStep) steps.push_back(s.step);
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  for (int64_t step : steps) {
    StepSpans kept;
    kept.step = step;
    kept.ranks.resize(spans.size());
    kept.dropped.resize(spans.size());
    for (size_t r = 0; r < spans.size(); ++r)
      for (const Span& s : spans[r]) {
        if (s.step != step) continue;
        if (kept.ranks[r].size() < kMaxLineSpans)
          kept.ranks[r].push_back(s);
        else
          ++kept.dropped[r];
      }
    for (const SpansLeftOut& d : leftOut)
      if (d.step == step && d.rank >= 0 && size_t(d.rank) < spans.size())
        kept.dropped[size_t(d.rank)] += d.count;
    // Rank 0's start of the step (any rank's, where rank 0 recorded none in it).
    int64_t first = INT64_MAX;
    for (const auto& rank : kept.ranks) {
      for (const Span& s : rank) first = std::min(first, s.startNs);
      if (first != INT64_MAX) break;
    }
    kept.startNs = first;
    if (!m_steps.empty() && kept.startNs < m_steps.back().startNs) {  // a new clock
      m_steps.clear();
      m_spanCount = 0;
      m_originNs = -1;
    }
    if (m_originNs < 0) m_originNs = kept.startNs;
    for (const auto& r : kept.ranks) m_spanCount += r.size();
    m_steps.push_back(std::move(kept));
    while (m_steps.size() > size_t(kSteps) || (m_steps.size() > 1 && m_spanCount > kMaxSpans)) {
      for (const auto& r : m_steps.front().ranks) m_spanCount -= r.size();
      m_steps.pop_front();
    }
  }
}

void StepViewsLog::clear() { *this = StepViewsLog(); }

void StepViewsLog::Lines::addTo(nlohmann::json& line) {
  const int64_t step = line.value("step", int64_t(0));
  const auto spans = std::find_if(m_log.m_steps.begin(), m_log.m_steps.end(),
                                  [step](const StepSpans& s) { return s.step == step; });
  const StepSpans* kept = spans == m_log.m_steps.end() ? nullptr : &*spans;
  // The holdings in force at the step: the last kept from it or before. Given to the writer
  // only when they are others than the last line's (it tells a change by their text).
  const Holdings* held = nullptr;
  for (const Holdings& h : m_log.m_holdings)
    if (h.fromStep <= step) held = &h;
  const Holdings* give = held != m_held ? held : nullptr;
  m_held = held;
  std::vector<nlohmann::json> parts;
  const size_t ranks = std::max(kept ? kept->ranks.size() : 0, give ? give->ranks.size() : 0);
  for (size_t r = 0; r < ranks; ++r) {
    const std::vector<Span>* s = kept && r < kept->ranks.size() ? &kept->ranks[r] : nullptr;
    const RankHoldings* h = give && r < give->ranks.size() ? &give->ranks[r] : nullptr;
    if (s || h)
      parts.push_back(m_writer.rankPart(int(r), s, m_log.m_originNs, h, s ? kept->dropped[r] : 0));
  }
  m_writer.addTo(line,
                 kept ? std::optional<double>(ms(kept->startNs - m_log.m_originNs)) : std::nullopt,
                 parts);
}

// [SECTION] Reading

std::vector<Span> spansFromJson(const nlohmann::json& j, int64_t step, int64_t originNs) {
  if (!j.is_array()) throw std::runtime_error("spans: not an array");
  std::vector<Span> out;
  out.reserve(j.size());
  for (const nlohmann::json& s : j) {
    try {
      Span span;
      span.kind = spanKindOf(s.at("kind").get<std::string>());
      span.startNs = originNs + ns(s.at("start_ms").get<double>());
      span.endNs = originNs + ns(s.at("end_ms").get<double>());
      span.op = internOp(s.value("op", std::string()));
      span.bytes = s.value("bytes", int64_t(0));
      span.step = step;
      out.push_back(span);
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(std::string("spans: ") + e.what());
    }
  }
  return out;
}

RankHoldings holdingsFromJson(const nlohmann::json& j) {
  try {
    RankHoldings h;
    h.rank = j.at("rank").get<int>();
    const nlohmann::json& c = j.at("coords");
    h.coords.dp = c.at("dp").get<int>();
    h.coords.tp = c.at("tp").get<int>();
    h.coords.pp = c.at("pp").get<int>();
    h.coords.cp = c.value("cp", 0);
    for (const nlohmann::json& i : j.at("items")) {
      HeldSlice s;
      s.tensor = i.at("tensor").get<std::string>();
      s.kind = holdingKindOf(i.at("kind").get<std::string>());
      s.dim = i.at("dim").get<int>();
      s.begin = i.at("begin").get<int64_t>();
      s.end = i.at("end").get<int64_t>();
      s.total = i.at("total").get<int64_t>();
      s.rows = i.at("rows").get<int64_t>();
      s.cols = i.at("cols").get<int64_t>();
      s.bytes = i.at("bytes").get<int64_t>();
      s.recomputed = i.value("recomputed", false);
      s.inFlight = i.value("in_flight", false);
      s.tpShard = i.value("tp_shard", 0);
      s.tpShards = i.value("tp_shards", 0);
      s.dtype = fromName<Dtype>(i.value("dtype", "fp32")).value_or(Dtype::Fp32);
      h.items.push_back(std::move(s));
    }
    for (const nlohmann::json& g : j.at("groups"))
      h.groups.push_back({g.at("name").get<std::string>(), g.at("ranks").get<std::vector<int>>()});
    return h;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("holdings: ") + e.what());
  }
}

// [SECTION] A run's views, line by line

void RunViews::add(const nlohmann::json& line) {
  if (line.contains("holdings")) {
    std::vector<RankHoldings> all;
    for (const nlohmann::json& h : line.at("holdings")) all.push_back(holdingsFromJson(h));
    m_holdings = std::move(all);
  }
  const nlohmann::json& ranks = line.at("ranks");
  bool any = false;
  for (const nlohmann::json& r : ranks) any = any || r.contains("spans");
  if (!any) return;
  StepSpans s;
  s.step = line.at("step").get<int64_t>();
  // The spans' times are from the run's origin; rank 0's start of the step tells a new launch
  // (its origin is new) from the steps before it.
  s.originNs = ns(line.value("started_ms", 0.0));
  if (!m_steps.empty() && s.originNs < m_steps.back().originNs) m_steps.clear();  // a new clock
  s.endNs = s.originNs;
  for (const nlohmann::json& r : ranks) {
    const size_t rank = r.value("rank", s.ranks.size());
    if (rank >= 4096) throw std::runtime_error("spans: rank " + std::to_string(rank));
    if (s.ranks.size() <= rank) s.ranks.resize(rank + 1), s.dropped.resize(rank + 1);
    if (r.contains("spans")) s.ranks[rank] = spansFromJson(r.at("spans"), s.step, 0);
    s.dropped[rank] += std::max<int64_t>(0, r.value("spans_dropped", int64_t(0)));
    for (const Span& sp : s.ranks[rank]) s.endNs = std::max(s.endNs, sp.endNs);
  }
  m_steps.push_back(std::move(s));
  while (m_steps.size() > size_t(kSteps)) m_steps.pop_front();
}

void RunViews::clear() {
  m_steps.clear();
  m_holdings.clear();
}

std::vector<std::vector<Span>> RunViews::spans() const {
  std::vector<std::vector<Span>> out;
  for (const StepSpans& s : m_steps) {
    if (out.size() < s.ranks.size()) out.resize(s.ranks.size());
    for (size_t r = 0; r < s.ranks.size(); ++r)
      out[r].insert(out[r].end(), s.ranks[r].begin(), s.ranks[r].end());
  }
  return out;
}

int64_t RunViews::spansDropped() const {
  int64_t n = 0;
  for (const SpansLeftOut& d : spansLeftOut()) n += d.count;
  return n;
}

std::vector<SpansLeftOut> RunViews::spansLeftOut() const {
  std::vector<SpansLeftOut> out;
  for (const StepSpans& s : m_steps)
    for (size_t r = 0; r < s.dropped.size(); ++r)
      if (s.dropped[r] > 0) out.push_back({s.step, int(r), s.dropped[r]});
  return out;
}

std::vector<RankHoldings> RunViews::holdings(const StepMetrics* last) const {
  std::vector<RankHoldings> out = m_holdings;
  if (!last) return out;
  for (RankHoldings& h : out)
    for (const RankMetrics& r : last->ranks)
      if (r.rank == h.rank) {
        h.lastStep.worldRank = r.rank;
        h.lastStep.worldSize = int(last->ranks.size());
        h.lastStep.bytesSent = r.bytesSent;
        h.lastStep.bytesRecv = r.bytesRecv;
        h.lastStep.sentTo = r.sentTo;
        h.lastStep.modelled = r.bytesModelled;
      }
  return out;
}

RunViews readRunViews(std::istream& in) {
  // Kept as text until the end: the last kSteps lines with spans, the last with holdings.
  std::deque<std::string> withSpans;
  std::string withHoldings, line;
  while (std::getline(in, line)) {
    if (line.find("\"holdings\"") != std::string::npos) withHoldings = line;
    if (line.find("\"spans\"") != std::string::npos) {
      withSpans.push_back(line);
      if (withSpans.size() > size_t(RunViews::kSteps)) withSpans.pop_front();
    }
  }
  RunViews views;
  const auto add = [&views](const std::string& text) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || j.value("summary", false)) return;
    try {
      views.add(j);
    } catch (const std::exception&) {  // skipped: the figures' reader names what is wrong
    }
  };
  if (!withHoldings.empty() &&
      std::find(withSpans.begin(), withSpans.end(), withHoldings) == withSpans.end())
    add(withHoldings);
  for (const std::string& text : withSpans) add(text);
  return views;
}

}  // namespace paralab
