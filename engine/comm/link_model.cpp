// Link profiles from resources/links/*.json (see link_model.h).
// See tests/engine/tst_comm_thread.cpp (linkProfiles, unknownLinkProfile), tst_comm_tiers.cpp.
#include "comm/link_model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "comm/communicator.h"  // CommError
#include "platform.h"           // dataDir

namespace paralab {

namespace fs = std::filesystem;

int64_t LinkProfile::stepNs(int64_t out, int64_t in) const {
  double ns = latencyUs * 1e3;
  // bytes / (GB/s) = bytes / (1e9 B/s) = ns
  if (bandwidthGBps > 0) ns += static_cast<double>(std::max(out, in)) / bandwidthGBps;
  return static_cast<int64_t>(std::ceil(ns));
}

int64_t tieredStepNs(const LinkProfile& intra, const LinkProfile& inter, const TierLoad& load) {
  const LinkProfile* profile[kLinkTiers] = {&intra, &inter};
  int64_t ns = -1;
  for (int t = 0; t < kLinkTiers; ++t)
    if (load.out[t] > 0 || load.in[t] > 0)
      ns = std::max(ns, profile[t]->stepNs(load.out[t], load.in[t]));
  return ns >= 0 ? ns : intra.stepNs(0, 0);
}

std::vector<std::string> linkProfileNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(dataDir("resources")) / "links", ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

LinkProfile loadLinkProfile(const std::string& name) {
  const std::vector<std::string> names = linkProfileNames();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string allowed;
    for (const std::string& n : names) allowed += (allowed.empty() ? "" : ", ") + n;
    if (allowed.empty())
      allowed = "none found in " + (fs::path(dataDir("resources")) / "links").string();
    throw CommError("link: unknown profile '" + name + "' (allowed: " + allowed + ")");
  }
  const fs::path path = fs::path(dataDir("resources")) / "links" / (name + ".json");
  std::ifstream in(path);
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw CommError("link: " + path.string() + " is not valid JSON: " + e.what());
  }
  LinkProfile p;
  p.name = name;
  try {
    p.title = j.at("title").get<std::string>();
    p.latencyUs = j.at("latency_us").get<double>();
    p.bandwidthGBps = j.at("bandwidth_GBps").get<double>();
  } catch (const nlohmann::json::exception& e) {
    throw CommError("link: " + path.string() + ": " + e.what() +
                    " (needs title, latency_us, bandwidth_GBps)");
  }
  if (p.latencyUs < 0 || p.bandwidthGBps < 0)
    throw CommError("link: " + path.string() + ": latency_us and bandwidth_GBps must be >= 0");
  return p;
}

}  // namespace paralab
