// The flight recorder's ring, the reading of where ranks diverge, and its JSON
// (comm/flight_recorder.h, flight_record.h). See tests/engine/tst_flight_recorder.cpp.
#include "comm/flight_recorder.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

namespace paralab {

// [SECTION] The ring

bool FlightRecorder::hangsAt(int64_t step) {
  std::lock_guard lock(m_mutex);
  if (m_hung || m_hangStep <= 0 || step != m_hangStep) return false;
  m_hung = true;
  return true;
}

uint64_t FlightRecorder::issue(FlightEntry e, const std::vector<int>& members) {
  std::lock_guard lock(m_mutex);
  if (std::none_of(m_groups.begin(), m_groups.end(),
                   [&](const auto& g) { return g.first == e.group; }))
    m_groups.emplace_back(e.group, members);
  if (m_ring.size() == kCapacity) m_ring.pop_front();
  m_ring.emplace_back(m_next, std::move(e));
  return m_next++;
}

void FlightRecorder::done(uint64_t id) {
  std::lock_guard lock(m_mutex);
  // Calls end in the order they began on one thread; two threads: search from the newest.
  for (auto it = m_ring.rbegin(); it != m_ring.rend(); ++it)
    if (it->first == id) {
      it->second.done = true;
      return;
    }
}

RankFlight FlightRecorder::snapshot() const {
  std::lock_guard lock(m_mutex);
  RankFlight f;
  f.rank = m_rank;
  for (const auto& [id, e] : m_ring) f.entries.push_back(e);
  f.groups = m_groups;
  return f;
}

std::string FlightRecorder::dumpLine() const {
  const RankFlight f = snapshot();
  return "paralab: flight recorder of world rank " + std::to_string(f.rank) + ": " +
         flightToJson({f}, HangDiagnosis{}, kCapacity).dump();
}

namespace {
thread_local std::string t_purpose;
}

CommPurpose::CommPurpose(std::string what) : m_before(std::move(t_purpose)) {
  t_purpose = std::move(what);
}
CommPurpose::~CommPurpose() { t_purpose = std::move(m_before); }
const std::string& CommPurpose::current() { return t_purpose; }

// [SECTION] Where the ranks diverge

namespace {

std::string rankWords(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i)
    s += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[i]);
  return s;
}

std::string callWords(const HangDiagnosis& d) {
  std::string s = d.op;
  s.append(" #").append(std::to_string(d.seq));
  std::string what = d.purpose;
  if (d.step > 0)
    what += (what.empty() ? "" : ", ") + std::string("step ") + std::to_string(d.step);
  if (!what.empty()) s += " (" + what + ")";
  return s + " over " + d.group;
}

}  // namespace

HangDiagnosis diagnoseHang(const std::vector<RankFlight>& ranks) {
  struct Key {
    std::string group;
    int64_t seq;
    bool operator<(const Key& o) const { return std::tie(group, seq) < std::tie(o.group, o.seq); }
  };
  std::map<Key, std::pair<std::vector<int>, const FlightEntry*>> waits;
  std::map<std::string, std::vector<int>> members;
  for (const RankFlight& r : ranks) {
    for (const FlightEntry& e : r.entries)
      if (!e.done) {
        auto& w = waits[{e.group, e.seq}];
        w.first.push_back(r.rank);
        w.second = &e;
      }
    for (const auto& [name, world] : r.groups) members.emplace(name, world);
  }
  HangDiagnosis best;
  size_t bestWaiting = 0;
  bool bestHasMissing = false;
  for (auto& [key, w] : waits) {
    std::vector<int> waiting = w.first;
    std::sort(waiting.begin(), waiting.end());
    std::vector<int> missing;
    for (int m : members[key.group])
      if (!std::binary_search(waiting.begin(), waiting.end(), m)) missing.push_back(m);
    const bool hasMissing = !missing.empty();
    // A divergence (someone never came) beats a wait all took part in; then more waiting.
    if (best.found && (bestHasMissing > hasMissing ||
                       (bestHasMissing == hasMissing && bestWaiting >= waiting.size())))
      continue;
    best = HangDiagnosis{};
    best.found = true;
    best.op = w.second->op, best.group = key.group, best.purpose = w.second->purpose;
    best.seq = key.seq, best.step = w.second->step;
    best.waiting = waiting;
    best.missing = missing;
    bestWaiting = waiting.size();
    bestHasMissing = hasMissing;
  }
  if (!best.found) return best;
  for (int m : best.missing) {
    int64_t last = 0;
    for (const RankFlight& r : ranks)
      if (r.rank == m)
        for (const FlightEntry& e : r.entries)
          if (e.group == best.group && e.done) last = std::max(last, e.seq);
    best.lastDone.push_back(last);
  }
  best.line = rankWords(best.waiting) + " wait in " + callWords(best);
  for (size_t i = 0; i < best.missing.size(); ++i) {
    best.line += "; " + rankWords({best.missing[i]}) + " last finished ";
    if (best.lastDone[i] > 0)
      best.line.append("#").append(std::to_string(best.lastDone[i]));
    else
      best.line += "nothing";
    best.line += " there and never issued #" + std::to_string(best.seq);
  }
  return best;
}

// [SECTION] JSON

nlohmann::json flightToJson(const std::vector<RankFlight>& ranks, const HangDiagnosis& d,
                            size_t recent) {
  nlohmann::json j = nlohmann::json::object();
  if (d.found)
    j["divergence"] = {{"op", d.op},           {"group", d.group},        {"purpose", d.purpose},
                       {"seq", d.seq},         {"step", d.step},          {"waiting", d.waiting},
                       {"missing", d.missing}, {"last_done", d.lastDone}, {"line", d.line}};
  nlohmann::json rows = nlohmann::json::array();
  for (const RankFlight& r : ranks) {
    nlohmann::json entries = nlohmann::json::array();
    const size_t from = r.entries.size() > recent ? r.entries.size() - recent : 0;
    for (size_t i = from; i < r.entries.size(); ++i) {
      const FlightEntry& e = r.entries[i];
      entries.push_back({{"seq", e.seq},
                         {"op", e.op},
                         {"group", e.group},
                         {"bytes", e.bytes},
                         {"step", e.step},
                         {"purpose", e.purpose},
                         {"state", e.done ? "done" : "issued"}});
    }
    // The groups' members: a reader (an MPI job's window) needs them to name who never issued.
    nlohmann::json groups = nlohmann::json::object();
    for (const auto& [name, members] : r.groups) groups[name] = members;
    rows.push_back({{"rank", r.rank}, {"entries", std::move(entries)}, {"groups", groups}});
  }
  j["ranks"] = std::move(rows);
  return j;
}

std::string flightFromJson(const nlohmann::json& j, std::vector<RankFlight>* ranks,
                           HangDiagnosis* d) {
  try {
    ranks->clear();
    for (const nlohmann::json& r : j.at("ranks")) {
      RankFlight f;
      f.rank = r.at("rank").get<int>();
      for (const nlohmann::json& e : r.at("entries"))
        f.entries.push_back({e.at("seq").get<int64_t>(), e.at("op").get<std::string>(),
                             e.at("group").get<std::string>(), e.at("bytes").get<int64_t>(),
                             e.at("step").get<int64_t>(), e.at("purpose").get<std::string>(),
                             e.at("state").get<std::string>() == "done"});
      if (const auto g = r.find("groups"); g != r.end())
        for (const auto& [name, members] : g->items())
          f.groups.emplace_back(name, members.get<std::vector<int>>());
      ranks->push_back(std::move(f));
    }
    *d = HangDiagnosis{};
    if (const auto it = j.find("divergence"); it != j.end()) {
      const nlohmann::json& v = *it;
      d->found = true;
      d->op = v.at("op").get<std::string>();
      d->group = v.at("group").get<std::string>();
      d->purpose = v.at("purpose").get<std::string>();
      d->seq = v.at("seq").get<int64_t>();
      d->step = v.at("step").get<int64_t>();
      d->waiting = v.at("waiting").get<std::vector<int>>();
      d->missing = v.at("missing").get<std::vector<int>>();
      d->lastDone = v.at("last_done").get<std::vector<int64_t>>();
      d->line = v.at("line").get<std::string>();
    }
  } catch (const nlohmann::json::exception& e) {
    return std::string("flight_recorder: ") + e.what();
  }
  return {};
}

std::optional<FlightReport> flightFromDumpLines(const std::string& text) {
  static const std::string kPrefix = "paralab: flight recorder of world rank ";
  std::map<int, RankFlight> byRank;  // a rank printed twice (hang, then watchdog): its last
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    const size_t p = line.find(kPrefix);
    const size_t brace = line.find('{', p == std::string::npos ? 0 : p);
    if (p == std::string::npos || brace == std::string::npos) continue;
    const nlohmann::json j = nlohmann::json::parse(line.substr(brace), nullptr, false);
    std::vector<RankFlight> ranks;
    HangDiagnosis none;
    if (j.is_discarded() || !flightFromJson(j, &ranks, &none).empty()) continue;
    for (RankFlight& r : ranks) byRank[r.rank] = std::move(r);
  }
  if (byRank.empty()) return std::nullopt;
  FlightReport report;
  for (auto& [rank, f] : byRank) report.ranks.push_back(std::move(f));
  report.diagnosis = diagnoseHang(report.ranks);
  return report;
}

}  // namespace paralab
