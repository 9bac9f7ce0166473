// The GIL, measured (see gil.h): gil_loop.py run once per mode, worker count and repeat, its
// JSON line read back. See tests/engine/tst_teach_gil.cpp.
#include "teach/gil.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "platform.h"

namespace paralab::teach {

namespace {

// One run: its seconds, or throws std::runtime_error with the script's own words.
double runOnce(const std::string& script, const char* mode, int workers, long iterations) {
  const std::string command = std::string(gilPython()) + " '" + script + "' --mode " + mode +
                              " --workers " + std::to_string(workers) + " --iterations " +
                              std::to_string(iterations) + " 2>&1";
  FILE* p = popen(command.c_str(), "r");
  if (!p) throw std::runtime_error("could not start " + std::string(gilPython()));
  std::string out;
  char buf[4096];
  while (fgets(buf, sizeof buf, p)) out += buf;
  const int rc = pclose(p);
  const size_t brace = out.rfind('{');
  const nlohmann::json j = brace == std::string::npos
                               ? nlohmann::json()
                               : nlohmann::json::parse(out.substr(brace), nullptr, false);
  if (rc != 0 || !j.is_object() || !j.contains("seconds"))
    throw std::runtime_error("gil_loop.py failed: " + out.substr(0, 200));
  return j["seconds"].get<double>();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int usableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return int(sysconf(_SC_NPROCESSORS_ONLN));
}

}  // namespace

const char* gilPython() { return "/usr/bin/python3"; }

GilResult runGil(const GilOptions& o, const BenchProgress& progress) {
  if (o.maxWorkers < 1 || o.maxWorkers > 16)
    throw std::invalid_argument("max-workers: 1 to 16, not " + std::to_string(o.maxWorkers));
  if (o.iterations < 1000 || o.iterations > 100'000'000)
    throw std::invalid_argument("iterations: 1000 to 100000000, not " +
                                std::to_string(o.iterations));
  if (o.repeats < 1 || o.repeats > 20)
    throw std::invalid_argument("repeats: 1 to 20, not " + std::to_string(o.repeats));
  GilResult r;
  r.iterations = o.iterations;
  r.cores = usableCores();
  r.python = gilPython();
  if (access(gilPython(), X_OK) != 0) {
    r.notRun = "Debian's python3 is not installed (" + r.python + ")";
    return r;
  }
  const std::string script = dataDir("resources") + "/bench/gil_loop.py";
  std::vector<int> counts;
  for (int n = 1; n <= o.maxWorkers; n *= 2) counts.push_back(n);
  const int total = int(counts.size()) * 2 * o.repeats;
  int done = 0;
  // Round by round, every worker count and both modes in each: a change in the machine's load
  // (other programs on the cores) falls on every point alike, not on one worker count.
  std::vector<std::vector<double>> threads(counts.size()), processes(counts.size());
  const auto goOn = [&] { return !progress || progress(++done, total); };
  try {
    bool going = true;
    for (int k = 0; k < o.repeats && going; ++k)
      for (size_t i = 0; i < counts.size() && going; ++i) {
        threads[i].push_back(runOnce(script, "threads", counts[i], o.iterations));
        going = goOn();
        if (!going) break;
        processes[i].push_back(runOnce(script, "processes", counts[i], o.iterations));
        going = goOn();
      }
  } catch (const std::runtime_error& e) {
    r.notRun = e.what();
    return r;
  }
  r.cancelled = progress && done < total;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (threads[i].empty() || processes[i].empty()) break;
    GilPoint p;
    p.workers = counts[i];
    p.threadsSeconds = median(threads[i]);
    p.processesSeconds = median(processes[i]);
    r.points.push_back(p);
  }
  for (GilPoint& p : r.points) {
    p.threadsSpeedup = r.points.front().threadsSeconds / p.threadsSeconds;
    p.processesSpeedup = r.points.front().processesSeconds / p.processesSeconds;
  }
  return r;
}

}  // namespace paralab::teach
