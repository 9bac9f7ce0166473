// paralab-bench comm: nccl-tests-style tables (size, time, algbw, busbw) per backend and
// algorithm, with memcpy and raw MPI_Allreduce bandwidth measured in the same run as
// references. Try: paralab-bench comm  |  mpirun -np 2 paralab-bench comm --backend mpi
// (see --help). Bandwidths as nccl-tests defines them (engine/comm/comm_accounting.h).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench_comm_bare.h"
#include "bench_common.h"
#include "comm/communicator.h"

#ifdef PARALAB_HAVE_MPI
#include <mpi.h>
#endif

using namespace paralab;

namespace {

struct Options {
  std::string backend = "all";  // all | thread | mpi
  std::vector<int> ranks = {2};
  std::string ops = "allreduce";  // allreduce | all
  std::string algos = "all";      // naive | ring | default | all
  std::string link = "none";
  int64_t minBytes = 4 << 10, maxBytes = 64 << 20;
  int repeats = 0;  // 0: by size
  bool outOfPlace = false;  // also time send != recv (in place is what gradients use)
  bool noArgCheck = false;  // MpiComm without its per-call argument check
  bool json = false;
};

struct Row {
  std::string backend, algorithm, op;
  int ranks = 0;
  int64_t bytes = 0;
  double timeUs = 0, algbw = 0, busbw = 0;
  std::string link = "none";  // an emulated link profile, or "none"
  bool inPlace = true;
};

const std::vector<CommOp> kAllOps = {CommOp::AllReduce, CommOp::ReduceScatter, CommOp::AllGather,
                                     CommOp::AllToAll, CommOp::Broadcast};

std::vector<int64_t> sizes(const Options& o) {
  std::vector<int64_t> s;
  for (int64_t b = o.minBytes; b <= o.maxBytes; b *= 4) s.push_back(b);
  return s;
}

// Median of several repeats: more for small sizes, where one repeat is short and noisy.
int repeatsFor(const Options& o, int64_t bytes) {
  if (o.repeats > 0) return o.repeats;
  return static_cast<int>(std::clamp<int64_t>((512 << 20) / std::max<int64_t>(bytes, 1), 7, 51));
}

Row makeRow(std::string backend, std::string algorithm, CommOp op, int n, int64_t bytes,
            double seconds, bool inPlace, std::string link = "none") {
  Row r{std::move(backend), std::move(algorithm), commOpName(op), n, bytes, seconds * 1e6};
  r.inPlace = inPlace && (op == CommOp::AllReduce || op == CommOp::ReduceScatter ||
                          op == CommOp::AllGather);
  r.algbw = algBwGBps(bytes, seconds);
  r.busbw = r.algbw * busBwFactor(op, n);
  r.link = std::move(link);
  return r;
}

double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One collective of S = bytes (nccl-tests' size) on this rank's buffers; in place as
// nccl-tests means it (all-reduce: recv == send; reduce-scatter: recv is our block of send;
// all-gather: send is our block of recv). All-to-all and broadcast have one form.
void runOp(Communicator& comm, CommOp op, AllReduceAlgo algo, float* a, float* b, int64_t bytes,
           bool inPlace) {
  const int n = comm.size(), r = comm.rank();
  const int64_t count = bytes / 4;
  switch (op) {
    case CommOp::AllReduce: comm.allReduce(a, inPlace ? a : b, count, ReduceOp::Sum, algo); break;
    case CommOp::ReduceScatter:
      comm.reduceScatter(a, inPlace ? a + r * (count / n) : b, count / n);
      break;
    case CommOp::AllGather: comm.allGather(inPlace ? b + r * (count / n) : a, b, count / n); break;
    case CommOp::AllToAll: comm.allToAll(a, b, count / n); break;
    case CommOp::Broadcast: comm.broadcast(a, count, 0); break;
    default: break;
  }
}

std::vector<std::pair<std::string, AllReduceAlgo>> algorithms(const Options& o, CommOp op) {
  std::vector<std::pair<std::string, AllReduceAlgo>> a;
  if (op != CommOp::AllReduce) return {{"default", AllReduceAlgo::Default}};
  for (const char* name : {"naive", "ring", "default"})
    if (o.algos == "all" || o.algos == name) a.emplace_back(name, parseAllReduceAlgo(name));
  return a;
}

std::vector<CommOp> opsOf(const Options& o) {
  if (o.ops == "all") return kAllOps;
  return {CommOp::AllReduce};
}

// In place first; out of place too when asked, for the ops where the two differ.
std::vector<bool> placements(const Options& o, CommOp op) {
  const bool differ = op == CommOp::AllReduce || op == CommOp::ReduceScatter ||
                      op == CommOp::AllGather;
  if (o.outOfPlace && differ) return {true, false};
  return {true};
}

// [SECTION] References: memcpy of S bytes on one thread.
std::vector<Row> memcpyRows(const Options& o) {
  std::vector<Row> rows;
  std::vector<char> src(static_cast<size_t>(o.maxBytes), 1), dst(src.size(), 0);
  for (int64_t bytes : sizes(o)) {
    const double s = bench::timeMedian([&] { std::memcpy(dst.data(), src.data(), bytes); },
                                       repeatsFor(o, bytes), 2);
    Row r = makeRow("memcpy", "reference", CommOp::Send, 1, bytes, s, false);
    r.op = "memcpy";
    r.busbw = r.algbw;
    rows.push_back(r);
  }
  return rows;
}

// [SECTION] ThreadComm: all ranks time each repeat; a repeat takes as long as its slowest rank.
std::vector<Row> threadRows(const Options& o, int n) {
  CommOptions co;
  co.link = o.link;
  ThreadWorld world(n, co);
  const std::string linkName = world.communicator(0).link().name;
  std::vector<Row> rows;
  std::vector<double> times(n);  // this repeat, per rank
  std::vector<float*> bufs(static_cast<size_t>(n));  // every rank's `a`, for the bare loop
  world.run([&](Communicator& comm) {
    std::vector<float> a(static_cast<size_t>(o.maxBytes / 4), 1.0f), b(a.size(), 0.0f);
    bufs[static_cast<size_t>(comm.rank())] = a.data();
    comm.barrier();
    for (CommOp op : opsOf(o))
    for (bool inPlace : placements(o, op)) {
      auto algos = algorithms(o, op);
      // The bare all-reduce (bench_comm_bare.h) beside the in-place ones, on the same threads
      // and buffers, without an emulated link: ThreadComm's direct as a share of it.
      const bool bare = op == CommOp::AllReduce && inPlace && o.link == "none";
      if (bare) algos.emplace_back("bare", AllReduceAlgo::Default);
      const auto runOne = [&](size_t k, int64_t bytes) {
        if (bare && k + 1 == algos.size()) {
          bench::bareAllReduceSlice(bufs.data(), n, comm.rank(), bytes / 4);
          comm.barrier();  // done when every slice is written everywhere
        } else {
          runOp(comm, op, algos[k].second, a.data(), b.data(), bytes, inPlace);
        }
      };
      for (int64_t bytes : sizes(o)) {
        const int reps = repeatsFor(o, bytes);
        std::vector<std::vector<double>> perAlgo(algos.size());
        for (size_t k = 0; k < algos.size(); ++k) runOne(k, bytes);  // warm-up
        // Interleave the algorithms repeat by repeat, so drift in the machine hits all alike.
        for (int rep = 0; rep < reps; ++rep)
          for (size_t k = 0; k < algos.size(); ++k) {
            comm.barrier();
            const auto t0 = std::chrono::steady_clock::now();
            runOne(k, bytes);
            times[comm.rank()] = seconds(t0);
            comm.barrier();
            if (comm.rank() == 0) {
              double slowest = 0;
              for (int q = 0; q < n; ++q) slowest = std::max(slowest, times[q]);
              perAlgo[k].push_back(slowest);
            }
          }
        if (comm.rank() == 0)
          for (size_t k = 0; k < algos.size(); ++k)
            rows.push_back(makeRow(
                algos[k].first == "bare" ? "bare" : "thread",
                algos[k].first == "default" ? "direct"
                : algos[k].first == "bare"  ? bench::bareAllReduceLevel()
                                            : algos[k].first,
                op, n, bytes, bench::median(perAlgo[k]), inPlace, linkName));
        comm.accounting().reset();
      }
    }
  });
  return rows;
}

// [SECTION] MpiComm under mpirun, against raw MPI_Allreduce interleaved repeat by repeat.
#ifdef PARALAB_HAVE_MPI
std::vector<Row> mpiRows(const Options& o, Communicator& comm) {
  const int n = comm.size();
  std::vector<Row> rows;
  std::vector<float> a(static_cast<size_t>(o.maxBytes / 4), 1.0f), b(a.size(), 0.0f);
  // Each repeat's time is the slowest rank's: reduce with MAX to rank 0.
  auto slowest = [&](std::vector<double> t) {
    std::vector<double> out(t.size());
    MPI_Reduce(t.data(), out.data(), static_cast<int>(t.size()), MPI_DOUBLE, MPI_MAX, 0,
               MPI_COMM_WORLD);
    return out;
  };
  for (CommOp op : opsOf(o))
  for (bool inPlace : placements(o, op)) {
    const auto algos = algorithms(o, op);
    for (int64_t bytes : sizes(o)) {
      const int reps = repeatsFor(o, bytes);
      std::vector<std::vector<double>> t(algos.size() + 1);  // last: raw MPI_Allreduce
      const bool raw = op == CommOp::AllReduce;
      auto rawCall = [&] {
        MPI_Allreduce(inPlace ? MPI_IN_PLACE : a.data(), inPlace ? a.data() : b.data(),
                      static_cast<int>(bytes / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      };
      if (raw) rawCall();
      for (const auto& al : algos)
        runOp(comm, op, al.second, a.data(), b.data(), bytes, inPlace);
      for (int rep = 0; rep < reps; ++rep) {
        for (size_t k = 0; k <= algos.size(); ++k) {
          if (k == algos.size() && !raw) break;
          MPI_Barrier(MPI_COMM_WORLD);
          const auto t0 = std::chrono::steady_clock::now();
          if (k == algos.size())
            rawCall();
          else
            runOp(comm, op, algos[k].second, a.data(), b.data(), bytes, inPlace);
          t[k].push_back(seconds(t0));
        }
      }
      for (size_t k = 0; k <= algos.size(); ++k) {
        if (k == algos.size() && !raw) break;
        const std::vector<double> s = slowest(t[k]);
        if (comm.rank() != 0) continue;
        if (k == algos.size())
          rows.push_back(
              makeRow("mpi-raw", "MPI_Allreduce", op, n, bytes, bench::median(s), inPlace));
        else
          rows.push_back(makeRow("mpi", algos[k].first == "default" ? "mpi" : algos[k].first, op,
                                 n, bytes, bench::median(s), inPlace));
      }
      comm.accounting().reset();
    }
  }
  return rows;
}
#endif

// [SECTION] Output

void printJson(const std::vector<Row>& rows) {
  for (const Row& r : rows) {
    nlohmann::json j = {{"backend", r.backend}, {"algorithm", r.algorithm}, {"op", r.op},
                        {"ranks", r.ranks},     {"bytes", r.bytes},         {"time_us", r.timeUs},
                        {"algbw", r.algbw},     {"busbw", r.busbw},         {"in_place", r.inPlace}};
    if (r.link != "none") j["emulated"] = r.link;
    std::printf("%s\n", j.dump().c_str());
  }
}

// One table per (backend, op, ranks): a row per size, a column group per algorithm, and the
// references of the same run at the right.
void printTables(const std::vector<Row>& rows, const std::vector<Row>& refs,
                 const std::vector<Row>& bare = {}) {
  std::map<std::string, std::vector<const Row*>> tables;
  std::vector<std::string> order;
  for (const Row& r : rows) {
    const std::string key = r.backend + " " + r.op + ", " + std::to_string(r.ranks) + " ranks" +
                            (r.inPlace ? ", in place" : r.op == "allreduce" || r.op == "reducescatter" ||
                                                               r.op == "allgather"
                                                           ? ", out of place"
                                                           : "");
    if (!tables.count(key)) order.push_back(key);
    tables[key].push_back(&r);
  }
  for (const std::string& key : order) {
    const auto& t = tables[key];
    std::vector<std::string> algos;
    std::vector<int64_t> byteList;
    for (const Row* r : t) {
      if (std::find(algos.begin(), algos.end(), r->algorithm) == algos.end())
        algos.push_back(r->algorithm);
      if (std::find(byteList.begin(), byteList.end(), r->bytes) == byteList.end())
        byteList.push_back(r->bytes);
    }
    const bool mpi = t[0]->backend == "mpi";
    std::printf("\n# %s%s\n", key.c_str(),
                t[0]->link != "none" ? (", link emulated: " + t[0]->link).c_str() : "");
    std::printf("# %10s", "size");
    for (const std::string& a : algos) std::printf(" | %-26s", (a + ": time algbw busbw").c_str());
    if (!refs.empty()) std::printf(" | %s", mpi ? "MPI_Allreduce: time busbw  ours/raw" : "memcpy");
    // The bare all-reduce of as many threads, beside the thread all-reduces in place: direct's
    // speed as a share of it (1.0: as fast as the bare loop).
    const Row* bareOf = nullptr;
    for (const Row& b : bare)
      if (!mpi && t[0]->op == "allreduce" && t[0]->inPlace && b.ranks == t[0]->ranks) bareOf = &b;
    if (bareOf)
      std::printf(" | %-26s", ("bare (" + bareOf->algorithm + "): time busbw direct/bare").c_str());
    std::printf("\n# %10s", "(B)");
    for (size_t i = 0; i < algos.size(); ++i) std::printf(" | %8s %8s %8s", "(us)", "(GB/s)", "(GB/s)");
    if (!refs.empty()) std::printf(" | %s", mpi ? "    (us)   (GB/s)" : "(GB/s)");
    if (bareOf) std::printf(" | %8s %8s", "(us)", "(GB/s)");
    std::printf("\n");
    for (int64_t bytes : byteList) {
      std::printf("%12lld", static_cast<long long>(bytes));
      const Row* first = nullptr;
      for (const std::string& a : algos)
        for (const Row* r : t)
          if (r->algorithm == a && r->bytes == bytes) {
            std::printf(" | %8.1f %8.2f %8.2f", r->timeUs, r->algbw, r->busbw);
            if (!first) first = r;
          }
      for (const Row& ref : refs)
        if (ref.bytes == bytes && (mpi ? ref.op == t[0]->op && ref.inPlace == t[0]->inPlace : true)) {
          if (mpi) {
            const Row* ours = nullptr;  // MpiComm's default next to the raw call
            for (const Row* r : t)
              if (r->bytes == bytes && r->algorithm == "mpi") ours = r;
            std::printf(" | %8.1f %8.2f", ref.timeUs, ref.busbw);
            if (ours) std::printf("  %+6.1f%%", 100.0 * (ours->timeUs / ref.timeUs - 1));
          } else {
            std::printf(" | %6.2f", ref.algbw);
          }
        }
      for (const Row& b : bare)
        if (bareOf && b.ranks == bareOf->ranks && b.bytes == bytes) {
          std::printf(" | %8.1f %8.2f", b.timeUs, b.busbw);
          for (const Row* r : t)
            if (r->bytes == bytes && r->algorithm == "direct")
              std::printf("  %6.2fx", b.timeUs / r->timeUs);
        }
      std::printf("\n");
    }
  }
}

const char* kHelp = R"(
Backends:
  thread  ranks as threads of this process (ThreadComm), --ranks N (default 2)
  mpi     one rank per process; launch under mpirun:
            mpirun -np 2 paralab-bench comm --backend mpi
          (as root add --allow-run-as-root, or set OMPI_ALLOW_RUN_AS_ROOT=1 and
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; more ranks than cores need --oversubscribe)
  all     thread here, then mpi by starting this program under mpirun with the same
          flags (the default)
Columns, as nccl-tests defines them: size S in bytes (all-reduce: the buffer; reduce-scatter,
all-gather, all-to-all: the whole buffer of N blocks), time = median over repeats of the
slowest rank, algbw = S / time, busbw = algbw * 2(N-1)/N (all-reduce), (N-1)/N (reduce-
scatter, all-gather, all-to-all), 1 (broadcast). Calls are in place (as gradients are
all-reduced) unless --out-of-place adds send != recv. References measured in the same run:
memcpy of S bytes on one thread; raw MPI_Allreduce (and MpiComm's overhead over it, ours/raw);
for thread all-reduces in place without --link, the bare all-reduce of as many threads (each
sums its 1/N of every buffer and writes it back into all, compiled for the CPU's vector level,
named in the column) and direct/bare, the direct all-reduce's speed as a share of it.
)";

}  // namespace

int benchComm(int argc, char** argv) {
  Options o;
  std::string ranksText = "2";
  CLI::App app{"paralab-bench comm: collective bandwidth per backend and algorithm", "comm"};
  app.footer(kHelp);
  app.add_option("--backend", o.backend, "all | thread | mpi")
      ->check(CLI::IsMember({"all", "thread", "mpi"}));
  app.add_option("--ranks", ranksText, "thread ranks, e.g. 2 or 2,4,8");
  app.add_option("--op", o.ops, "allreduce | all (adds reducescatter, allgather, alltoall, broadcast)")
      ->check(CLI::IsMember({"allreduce", "all"}));
  app.add_option("--algo", o.algos, "all-reduce algorithm: naive | ring | default | all")
      ->check(CLI::IsMember({"naive", "ring", "default", "all"}));
  app.add_option("--link", o.link, "emulated link profile for the thread backend (resources/links)");
  app.add_option("--min-bytes", o.minBytes, "smallest size S (sizes go up by 4x)")
      ->check(CLI::Range(int64_t(64), int64_t(1) << 32));
  app.add_option("--max-bytes", o.maxBytes, "largest size S")
      ->check(CLI::Range(int64_t(64), int64_t(1) << 32));
  app.add_option("--repeats", o.repeats, "repeats per size (default: 7..51 by size; medians)")
      ->check(CLI::Range(1, 10000));
  app.add_flag("--out-of-place", o.outOfPlace,
               "also time send != recv (default: in place, as gradients are all-reduced)");
  app.add_flag("--no-arg-check", o.noArgCheck,
               "mpi: skip MpiComm's check that all ranks called the same collective (one small "
               "MPI_Allreduce per call), to see what it costs");
  app.add_flag("--json", o.json, "one JSON object per row instead of tables");
  try {
    app.parse(argc, argv);
    o.ranks.clear();
    for (size_t at = 0; at <= ranksText.size();) {
      const size_t comma = std::min(ranksText.find(',', at), ranksText.size());
      o.ranks.push_back(std::stoi(ranksText.substr(at, comma - at)));
      if (o.ranks.back() < 1 || o.ranks.back() > 64) throw CLI::ValidationError("--ranks", "1..64");
      at = comma + 1;
    }
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception&) {
    std::fprintf(stderr, "--ranks: a comma-separated list of 1..64, got '%s'\n", ranksText.c_str());
    return 2;
  }
  // Every size must split into whole blocks of floats for N ranks.
  const int64_t align = 4 * 64;
  o.minBytes = std::max<int64_t>(align, o.minBytes / align * align);
  o.maxBytes = std::max(o.minBytes, o.maxBytes / align * align);

  const bool underMpirun = mpiLaunchSize() > 0;
  if (o.backend == "mpi" || (underMpirun && o.backend == "all")) {
#ifdef PARALAB_HAVE_MPI
    std::unique_ptr<Communicator> world;
    try {
      CommOptions co;
      co.checkArgs = !o.noArgCheck;
      world = makeMpiWorld(co);
    } catch (const CommError& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 2;
    }
    const std::vector<Row> rows = mpiRows(o, *world);
    if (world->rank() != 0) return 0;
    if (o.json) {
      printJson(rows);
    } else {
      std::vector<Row> mine, raw;
      for (const Row& r : rows) (r.backend == "mpi-raw" ? raw : mine).push_back(r);
      std::printf("# MpiComm vs raw MPI_Allreduce, %d processes, argument check %s; medians of "
                  "7..51 repeats\n",
                  world->size(), o.noArgCheck ? "off" : "on");
      printTables(mine, raw);
    }
    return 0;
#else
    std::fprintf(stderr, "paralab-bench comm: built without MPI\n");
    return 2;
#endif
  }

  try {
    const std::vector<Row> refs = memcpyRows(o);
    std::vector<Row> rows, bare;
    for (int n : o.ranks)
      for (Row& r : threadRows(o, n)) (r.backend == "bare" ? bare : rows).push_back(std::move(r));
    if (o.json) {
      printJson(refs);
      printJson(bare);
      printJson(rows);
    } else {
      std::printf("# ThreadComm (ranks as threads, %u hardware threads); medians of 7..51 repeats\n",
                  std::thread::hardware_concurrency());
      printTables(rows, refs, bare);
    }
  } catch (const CommError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  std::fflush(stdout);

  // The MPI part runs in processes of its own: this program again, under mpirun.
  if (o.backend == "all" && mpiAvailable()) {
    const int n = o.ranks.front();
    std::string cmd = "mpirun --oversubscribe -np " + std::to_string(n);
    if (geteuid() == 0) cmd += " --allow-run-as-root";
    char self[4096] = {};
    const ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (len <= 0) return 0;
    cmd += std::string(" '") + self + "' comm --backend mpi --op " + o.ops + " --algo " + o.algos +
           " --min-bytes " + std::to_string(o.minBytes) + " --max-bytes " +
           std::to_string(o.maxBytes) + (o.repeats ? " --repeats " + std::to_string(o.repeats) : "") +
           (o.outOfPlace ? " --out-of-place" : "") + (o.noArgCheck ? " --no-arg-check" : "") +
           (o.json ? " --json" : "");
    if (!o.json) std::printf("\n# %s\n", cmd.c_str());
    std::fflush(stdout);
    const int rc = std::system(cmd.c_str());
    if (rc != 0) std::fprintf(stderr, "paralab-bench comm: the MPI part failed (%d)\n", rc);
  }
  return 0;
}
