// RunConfig validation and its JSON form (see config.h). See tests/engine/tst_config.cpp.
#include "config.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "comm/communicator.h"  // ncclAvailable, mpiLaunchSize, mpiLocalLaunchSize
#include "cpu/gemm.h"
#include "cuda/device.h"
#include "cuda/gemm.h"
#include "data/dataset.h"
#include "parallel/process_grid.h"
#include "parallel/strategy.h"  // cudaRefusal

namespace paralab {

// NCCL refuses two ranks on one GPU (ncclCommInitAll / ncclCommInitRank fail), so --backend nccl
// needs a GPU per rank on each machine: thread ranks all live in this process; under mpirun this
// machine holds the processes mpirun placed here (its local size), each on GPU (local rank).
static std::optional<std::string> ncclRanksProblem(const RunConfig& c, int gpus) {
  if (c.backend != "nccl") return std::nullopt;
  const auto n = [](int v) { return std::to_string(v); };
  if (mpiLaunchSize() == 0) {
    if (c.ranks > gpus)
      return "backend: nccl runs one rank per GPU: " + n(c.ranks) + " ranks but " + n(gpus) +
             " GPU(s) here (--backend thread shares a GPU between ranks)";
    return std::nullopt;
  }
  if (const int here = mpiLocalLaunchSize(); here > gpus)
    return "backend: nccl runs one process per GPU: mpirun started " + n(here) +
           " processes on this machine but it has " + n(gpus) +
           " GPU(s) (start at most that many per machine)";
  return std::nullopt;
}

std::optional<std::string> RunConfig::validate() const {
  auto oneOf = [](const std::string& v, std::initializer_list<const char*> allowed) {
    for (const char* a : allowed)
      if (v == a) return true;
    return false;
  };
  if (model != "mlp" && model != "moe") return "model: '" + model + "' is not one of mlp, moe";
  if (layers < 1 || layers > 64) return "layers: " + std::to_string(layers) + " is out of range (allowed: 1..64)";
  if (hidden < 1 || hidden > 8192) return "hidden: " + std::to_string(hidden) + " is out of range (allowed: 1..8192)";
  if (!oneOf(dataset, {"fashion-mnist", "synthetic"}))
    return "dataset: '" + dataset + "' is not one of fashion-mnist, synthetic";
  if (batch < 1 || batch > 65536) return "batch: " + std::to_string(batch) + " is out of range (allowed: 1..65536)";
  if (steps < 0) return "steps: " + std::to_string(steps) + " is negative (allowed: 0 = until stopped, or more)";
  if (!(lr > 0 && lr <= 10)) return "lr: " + std::to_string(lr) + " is out of range (allowed: 0 < lr <= 10)";
  if (!oneOf(optimizer, {"sgd", "momentum", "adam"}))
    return "optimizer: '" + optimizer + "' is not one of sgd, momentum, adam";
  if (auto err = validateDevice()) return err;
  if (evalEvery < 0) return "eval-every: must be 0 (never) or a positive number of steps";
  if (evalSamples < 0) return "eval-samples: must be 0 (all) or a positive number of samples";
  if (ranks < 1 || ranks > 64) return "ranks: " + std::to_string(ranks) + " is out of range (allowed: 1..64)";
  if (!oneOf(backend, {"thread", "mpi", "nccl"}))
    return "backend: '" + backend + "' is not one of thread, mpi, nccl";
  if (backend == "nccl" && device != "cuda")
    return "backend: nccl moves GPU buffers; it needs --device cuda";
  if (!oneOf(allreduce, {"default", "ring", "naive"}))
    return "allreduce: '" + allreduce + "' is not one of default, ring, naive";
  if (backend == "nccl" && allreduce != "default")
    return "allreduce: --backend nccl runs NCCL's own all-reduce (it picks ring or tree); the " +
           allreduce + " lesson algorithm runs on --backend thread";
  if (!oneOf(link, {"none", "nvlink", "pcie", "infiniband", "ethernet"}))
    return "link: '" + link + "' is not one of none, nvlink, pcie, infiniband, ethernet";
  if (link != "none" && backend != "thread")
    return "link: emulated links need --backend thread (real processes use their real links)";
  if (!(timeoutS > 0)) return "timeout: must be a positive number of seconds";
  if (!oneOf(strategy, {"sync", "ps-sync", "ps-async", "hogwild", "local-sgd", "gossip"}))
    return "strategy: '" + strategy + "' is not one of sync, ps-sync, ps-async, hogwild, local-sgd, gossip";
  if (!oneOf(dpVersion, {"naive", "bucket"})) return "dp-version: '" + dpVersion + "' is not one of naive, bucket";
  if (!(bucketMb > 0)) return "bucket-mb: must be a positive size in MiB";
  if (zero < 0 || zero > 3) return "zero: " + std::to_string(zero) + " is not a ZeRO stage (allowed: 0, 1, 2, 3)";
  if (zero > 0 && strategy != "sync") return "zero: ZeRO stages apply to --strategy sync only";
  if (servers < 1 || servers > ranks)
    return "servers: " + std::to_string(servers) + " is out of range (allowed: 1..ranks)";
  if (syncEvery < 1) return "sync-every: must be at least 1 step";
  if (!oneOf(topology, {"ring", "random"})) return "topology: '" + topology + "' is not one of ring, random";
  if (!oneOf(scaling, {"strong", "weak"})) return "scaling: '" + scaling + "' is not one of strong, weak";
  if (strategy == "hogwild" && backend != "thread")
    return "strategy: hogwild needs ranks that share memory (--backend thread)";
  if (globalBatch() < ranks)
    return "batch: the global batch (" + std::to_string(globalBatch()) +
           ") must hold at least one sample per rank (" + std::to_string(ranks) + " ranks)";
  if (auto err = validateLayout()) return err;
  if (dataset == "fashion-mnist")
    if (const std::string missing = missingFashionMnistFile(dataDir); !missing.empty())
      return "data-dir: " + missing + " not found (install dataset-fashion-mnist, or pass --data-dir DIR)";
  return std::nullopt;
}

std::string gemmKernelNames(const std::string& device) {
  std::string names;
  const auto add = [&](const char* n) { names += (names.empty() ? "" : ", ") + std::string(n); };
  if (device == "cpu")
    for (const kernels::GemmKernel& k : kernels::gemm_kernels()) add(k.name);
  else if (device == "cuda")
    for (const kernels::GemmCudaKernel& k : kernels::kGemmCudaKernels) add(k.name);
  return names;
}

bool isGemmKernel(const std::string& device, const std::string& kernel) {
  return device == "cpu"    ? kernels::gemm_find(kernel) != nullptr
         : device == "cuda" ? kernels::gemm_cuda_find(kernel.c_str()) != nullptr
                            : false;
}

std::optional<std::string> RunConfig::validateDevice() const {
  if (device != "cpu" && device != "cuda") return "device: '" + device + "' is not one of cpu, cuda";
  if (!isGemmKernel(device, kernel))
    return "kernel: '" + kernel + "' is not a " + device + " GEMM (allowed: " +
           gemmKernelNames(device) + ")";
  if (device == "cuda") {
    if (backend == "nccl" && !ncclAvailable())
      return std::string(
          "backend: nccl is not in this build (ParaLab was built without NCCL; it "
          "needs CUDA and libnccl-dev); --backend thread runs the ranks on the GPU");
    const kernels::GpuInfo gpus = kernels::cuda_query_devices();
    if (gpus.count == 0) return "device: cuda is not available here (" + gpus.reason + "); allowed: cpu";
    if (gpus.emulated && backend == "nccl")
      return std::string("backend: nccl needs real GPUs; this program's GPU is emulated (allowed: thread)");
    if (auto err = ncclRanksProblem(*this, gpus.count)) return err;
    if (auto refused = cudaRefusal(*this)) return refused;
  }
  return std::nullopt;
}

std::optional<std::string> RunConfig::validateLayout() const {
  const auto n = [](int v) { return std::to_string(v); };
  if (tp < 1 || tp > 64) return "tp: " + n(tp) + " is out of range (allowed: 1..64)";
  if (pp < 1 || pp > 64) return "pp: " + n(pp) + " is out of range (allowed: 1..64)";
  if (ep < 1 || ep > 64) return "ep: " + n(ep) + " is out of range (allowed: 1..64)";
  if (dp < 0) return "dp: " + n(dp) + " is negative (allowed: 0 = ranks / (tp x pp), or more)";
  if (ranks % (tp * pp) != 0)
    return "ranks: " + n(ranks) + " is not divisible by tp x pp = " + n(tp * pp);
  if (const auto err = ProcessGrid::validate({dpDegree(), tp, pp, ep}, ranks)) return *err;
  if (hidden % tp != 0) return "tp: " + n(tp) + " must divide the hidden width H = " + n(hidden);
  if (sp && tp < 2) return "sp: sequence parallelism needs tensor parallelism (--tp 2 or more)";
  if (pp > layers) return "pp: " + n(pp) + " stages but only " + n(layers) + " blocks (allowed: pp <= layers)";
  if (microbatches < 1) return "microbatches: must be at least 1";
  if (!(schedule == "gpipe" || schedule == "1f1b")) return "schedule: '" + schedule + "' is not one of gpipe, 1f1b";
  if (globalBatch() / dpDegree() < microbatches)
    return "microbatches: " + n(microbatches) + " exceeds the " + n(globalBatch() / dpDegree()) +
           " samples each data-parallel rank gets per step";
  if (model == "moe") {
    if (experts < 1 || experts > 256) return "experts: " + n(experts) + " is out of range (allowed: 1..256)";
    if (topk < 1 || topk > experts) return "topk: " + n(topk) + " is out of range (allowed: 1..experts)";
    if (experts % ep != 0) return "ep: " + n(ep) + " must divide the number of experts (" + n(experts) + ")";
    if (!(capacityFactor > 0)) return "capacity-factor: must be positive";
    if (auxLoss < 0) return "aux-loss: must be 0 or more";
    if (tp > 1 || pp > 1)
      return "model: --model moe composes with data and expert parallelism only (allowed: tp = pp = 1)";
    if (strategy != "sync")
      return "model: --model moe trains with --strategy sync (dp and ep are its axes)";
  } else if (ep > 1) {
    return "ep: expert parallelism needs --model moe";
  }
  if ((tp > 1 || pp > 1) && strategy != "sync")
    return "strategy: tensor and pipeline parallelism compose with --strategy sync only";
  return std::nullopt;
}

nlohmann::json RunConfig::toJson() const {
  return {{"model", model},       {"layers", layers},     {"hidden", hidden},
          {"dataset", dataset},   {"data-dir", dataDir},  {"batch", batch},
          {"steps", steps},       {"lr", lr},             {"optimizer", optimizer},
          {"seed", seed},         {"eval-every", evalEvery}, {"eval-samples", evalSamples},
          {"ranks", ranks},       {"backend", backend},   {"allreduce", allreduce},
          {"link", link},         {"timeout", timeoutS},  {"strategy", strategy},
          {"dp-version", dpVersion}, {"bucket-mb", bucketMb}, {"zero", zero},
          {"servers", servers},   {"sync-every", syncEvery}, {"topology", topology},
          {"scaling", scaling},   {"instrument", instrument},
          {"device", device},     {"kernel", kernel},
          {"dp", dpDegree()},     {"tp", tp},             {"pp", pp},
          {"sp", sp},             {"microbatches", microbatches}, {"schedule", schedule},
          {"experts", experts},   {"topk", topk},         {"capacity-factor", capacityFactor},
          {"aux-loss", auxLoss},  {"ep", ep}};
}

template <typename T>
static void read(const nlohmann::json& j, const std::string& key, T& out, const char* kind) {
  try {
    out = j.get<T>();
  } catch (const nlohmann::json::exception&) {
    throw ConfigError(key + ": expected " + kind + ", got " + j.dump());
  }
}

void applyJson(RunConfig& c, const nlohmann::json& j) {
  if (!j.is_object()) throw ConfigError("config: expected a JSON object of flag names and values");
  for (const auto& [key, v] : j.items()) {
    if (key == "model") read(v, key, c.model, "a string");
    else if (key == "layers") read(v, key, c.layers, "an integer");
    else if (key == "hidden") read(v, key, c.hidden, "an integer");
    else if (key == "dataset") read(v, key, c.dataset, "a string");
    else if (key == "data-dir") read(v, key, c.dataDir, "a string");
    else if (key == "batch") read(v, key, c.batch, "an integer");
    else if (key == "steps") read(v, key, c.steps, "an integer");
    else if (key == "lr") read(v, key, c.lr, "a number");
    else if (key == "optimizer") read(v, key, c.optimizer, "a string");
    else if (key == "seed") read(v, key, c.seed, "a non-negative integer");
    else if (key == "eval-every") read(v, key, c.evalEvery, "an integer");
    else if (key == "eval-samples") read(v, key, c.evalSamples, "an integer");
    else if (key == "ranks") read(v, key, c.ranks, "an integer");
    else if (key == "dp") read(v, key, c.dp, "an integer");
    else if (key == "tp") read(v, key, c.tp, "an integer");
    else if (key == "pp") read(v, key, c.pp, "an integer");
    else if (key == "ep") read(v, key, c.ep, "an integer");
    else if (key == "sp") read(v, key, c.sp, "true or false");
    else if (key == "microbatches") read(v, key, c.microbatches, "an integer");
    else if (key == "schedule") read(v, key, c.schedule, "a string");
    else if (key == "experts") read(v, key, c.experts, "an integer");
    else if (key == "topk") read(v, key, c.topk, "an integer");
    else if (key == "capacity-factor") read(v, key, c.capacityFactor, "a number");
    else if (key == "aux-loss") read(v, key, c.auxLoss, "a number");
    else if (key == "backend") read(v, key, c.backend, "a string");
    else if (key == "allreduce") read(v, key, c.allreduce, "a string");
    else if (key == "link") read(v, key, c.link, "a string");
    else if (key == "timeout") read(v, key, c.timeoutS, "a number");
    else if (key == "strategy") read(v, key, c.strategy, "a string");
    else if (key == "dp-version") read(v, key, c.dpVersion, "a string");
    else if (key == "bucket-mb") read(v, key, c.bucketMb, "a number");
    else if (key == "zero") read(v, key, c.zero, "an integer");
    else if (key == "servers") read(v, key, c.servers, "an integer");
    else if (key == "sync-every") read(v, key, c.syncEvery, "an integer");
    else if (key == "topology") read(v, key, c.topology, "a string");
    else if (key == "scaling") read(v, key, c.scaling, "a string");
    else if (key == "instrument") read(v, key, c.instrument, "true or false");
    else if (key == "device") read(v, key, c.device, "a string");
    else if (key == "kernel") read(v, key, c.kernel, "a string");
    else throw ConfigError("config: unknown key '" + key + "' (keys are the flag names, see --help)");
    if (key == "seed" && v.is_number_integer() && !v.is_number_unsigned())
      throw ConfigError("seed: expected a non-negative integer, got " + v.dump());
    if (v.is_number_float() && key != "lr" && key != "timeout" && key != "bucket-mb" &&
        key != "capacity-factor" && key != "aux-loss")
      throw ConfigError(key + ": expected an integer, got " + v.dump());
  }
}

void applyJsonFile(RunConfig& c, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("config: cannot open '" + path + "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError("config: '" + path + "' is not valid JSON (byte " + std::to_string(e.byte) + ")");
  }
  applyJson(c, j);
  c.deriveRanks();
}

}  // namespace paralab
