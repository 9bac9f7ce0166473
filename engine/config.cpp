// RunConfig validation and its JSON form (see config.h). See tests/engine/tst_config.cpp.
#include "config.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "comm/communicator.h"  // ncclAvailable, mpiLaunchSize, mpiLocalLaunchSize
#include "cpu/gemm.h"
#include "cuda/device.h"
#include "cuda/gemm.h"
#include "data/dataset.h"
#include "memory_estimate.h"
#include "parallel/pipeline/schedule.h"  // pipelineRefusal
#include "parallel/process_grid.h"
#include "parallel/strategy.h"  // cudaRefusal, strategyFor
#include "read_file.h"
#include "schema.h"
#include "train/precision.h"

namespace paralab {

// NCCL refuses two ranks on one GPU (ncclCommInitAll / ncclCommInitRank fail), so --backend nccl
// needs a GPU per rank on each machine: thread ranks all live in this process; under mpirun this
// machine holds the processes mpirun placed here (its local size), each on GPU (local rank).
static std::optional<std::string> ncclRanksProblem(const RunConfig& c, int gpus) {
  if (c.backend != Backend::Nccl) return std::nullopt;
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

// Each setting's own range or choices (the settings table), then what only a combination of
// settings can get wrong (validateRules), then what this machine can hold and read: the
// device, the memory, the data.
std::optional<std::string> RunConfig::validate() const {
  for (const Setting& s : runSettings())
    if (auto err = s.check(*this)) return err;
  if (auto err = validateRules()) return err;
  // What a training run cannot yet do in 16 bits (train/precision.h); a projection can.
  if (auto err = precisionRefusal(*this)) return err;
  if (auto err = validateDevice()) return err;
  GpuMemory gpus;
  if (device == Device::Cuda) {
    const kernels::GpuInfo info = kernels::cuda_query_devices();
    gpus = {info.count, info.memoryBytes};
  }
  if (auto err = memoryRefusal(*this, machineMemoryBytes(), gpus)) return err;
  if (dataset == "fortunes")
    if (std::error_code ec; !std::filesystem::is_directory(dataFolder(*this), ec))
      return "data-dir: " + dataFolder(*this) +
             " not found (install Debian's fortunes package, or pass --data-dir DIR)";
  if (dataset == "fashion-mnist")
    if (const std::string missing = missingFashionMnistFile(dataDir); !missing.empty())
      return "data-dir: " + missing +
             " not found (install dataset-fashion-mnist, or pass --data-dir DIR)";
  return std::nullopt;
}

std::optional<std::string> RunConfig::validateRules() const {
  const StrategyInfo& row = strategyFor(*this);
  if (row.incompatible)
    if (auto err = row.incompatible(*this)) return err;
  for (const Setting& s : runSettings())
    if (auto err = inapplicable(s, *this)) return err;
  if (backend == Backend::Nccl && device != Device::Cuda)
    return "backend: nccl moves GPU buffers; it needs --device cuda";
  if (backend == Backend::Nccl && allreduce != "default")
    return "allreduce: --backend nccl runs NCCL's own all-reduce (it picks ring or tree); the " +
           allreduce + " lesson algorithm runs on --backend thread";
  // Two tiers (comm/link_model.h): whole nodes, and the hierarchical all-reduce over them.
  if (gpusPerNode > 0 && ranks % gpusPerNode != 0)
    return "gpus-per-node: " + std::to_string(gpusPerNode) + " does not divide the ranks (" +
           std::to_string(ranks) + "; allowed: a divisor of it, every node full)";
  if (allreduce == "hierarchical" && gpusPerNode == 0)
    return std::string(
        "allreduce: hierarchical needs nodes to be hierarchical over (--gpus-per-node G)");
  if (allreduce == "hierarchical" && device == Device::Cuda)
    return std::string("allreduce: hierarchical runs on host buffers (--device cpu)");
  // A data-parallel replica needs a sample of the batch; its tensor-, pipeline- and
  // context-parallel ranks share that replica's samples (each holds a part of every one).
  if (globalBatch() < dpDegree())
    return "batch: the global batch (" + std::to_string(globalBatch()) +
           ") must hold at least one sample per data-parallel replica (" +
           std::to_string(dpDegree()) + ")";
  // Gradient accumulation (parallel/data/accumulation.h): K equal micro-batches of the global
  // batch, each split over the ranks as a batch is.
  if (accumulate > 1 && globalBatch() % accumulate != 0)
    return "accumulate: " + std::to_string(accumulate) + " does not divide the global batch (" +
           std::to_string(globalBatch()) +
           "; allowed: a divisor of it, each micro-batch being batch / accumulate)";
  if (accumulate > 1 && globalBatch() / accumulate < dpDegree())
    return "accumulate: each micro-batch (" + std::to_string(globalBatch() / accumulate) +
           " samples) must hold at least one sample per data-parallel replica (" +
           std::to_string(dpDegree()) + ")";
  return validateLayout();
}

std::string gemmKernelNames(Device device) {
  std::string names;
  const auto add = [&](const char* n) { names += (names.empty() ? "" : ", ") + std::string(n); };
  if (device == Device::Cpu)
    for (const kernels::GemmKernel& k : kernels::gemm_kernels()) add(k.name);
  else
    for (const kernels::GemmCudaKernel& k : kernels::kGemmCudaKernels) add(k.name);
  return names;
}

bool isGemmKernel(Device device, const std::string& kernel) {
  return device == Device::Cpu ? kernels::gemm_find(kernel) != nullptr
                               : kernels::gemm_cuda_find(kernel.c_str()) != nullptr;
}

// The device's choices and its kernels are the settings table's; this is whether the machine
// and build can run it.
std::optional<std::string> RunConfig::validateDevice() const {
  if (device == Device::Cuda) {
    if (backend == Backend::Nccl && !ncclAvailable())
      return std::string(
          "backend: nccl is not in this build (ParaLab was built without NCCL; it "
          "needs CUDA and libnccl-dev); --backend thread runs the ranks on the GPU");
    const kernels::GpuInfo gpus = kernels::cuda_query_devices();
    if (gpus.count == 0)
      return "device: cuda is not available here (" + gpus.reason + "); allowed: cpu";
    if (gpus.emulated && backend == Backend::Nccl)
      return std::string(
          "backend: nccl needs real GPUs; this program's GPU is emulated (allowed: thread)");
    if (auto err = ncclRanksProblem(*this, gpus.count)) return err;
    if (auto refused = cudaRefusal(*this)) return refused;
  }
  return std::nullopt;
}

std::optional<std::string> RunConfig::validateLayout() const {
  const auto n = [](int v) { return std::to_string(v); };
  if (ranks % modelSplit() != 0)
    return "ranks: " + n(ranks) + " is not divisible by tp x pp" + (cp > 1 ? " x cp" : "") +
           " = " + n(modelSplit());
  if (const auto err = ProcessGrid::validate({dpDegree(), tp, pp, ep, cp}, ranks)) return *err;
  if (hidden % tp != 0) return "tp: " + n(tp) + " must divide the hidden width H = " + n(hidden);
  if (pp > layers)
    return "pp: " + n(pp) + " stages but only " + n(layers) + " blocks (allowed: pp <= layers)";
  if (pp > 1)
    if (auto err = pipelineRefusal(schedule, pp, microbatches,
                                   pipelineChunks(schedule, pp, virtualStages), layers))
      return err;
  // With --accumulate K each accumulation micro-batch is cut into --microbatches pieces.
  if (const int each = globalBatch() / std::max(1, accumulate) / dpDegree();
      modelParallel() && each < microbatches)
    return "microbatches: " + n(microbatches) + " exceeds the " + n(each) +
           " samples each data-parallel rank gets per " +
           (accumulate > 1 ? "accumulation micro-batch" : "step");
  if (model == ModelKind::Gpt) {
    if (hidden % heads != 0)
      return "heads: " + n(heads) + " must divide the hidden width H = " + n(hidden);
    if (heads % tp != 0)
      return "tp: tensor parallelism splits attention by heads, and " + n(tp) +
             " does not divide --heads " + n(heads);
    if (sp && tp > 1 && seq % tp != 0)
      return "sp: sequence parallelism splits each window's --seq " + n(seq) +
             " tokens over the " + n(tp) + " tensor-parallel ranks (allowed: seq a multiple of tp)";
    // Context parallelism (ring_attention.h): zigzag cuts a window into 2 cp chunks, contiguous
    // into cp.
    const bool zigzag = cpOrder == CpOrder::Zigzag;
    const int chunks = zigzag ? 2 * cp : cp;
    if (cp > 1 && seq % chunks != 0)
      return "cp: context parallelism cuts each window's --seq " + n(seq) + " tokens into " +
             n(chunks) + " equal chunks (" + (zigzag ? "2 per rank, zigzag" : "1 per rank") +
             "; allowed: seq a multiple of " + n(chunks) + ")";
    // Ulysses (ulysses_attention.h) gives each cp rank whole heads: those of its tp rank,
    // heads / tp, split over cp.
    if (cp > 1 && cpKind == CpKind::Ulysses && (heads / tp) % cp != 0)
      return "cp-kind: ulysses splits the " + n(heads / tp) + " heads each tensor-parallel rank " +
             "computes (--heads " + n(heads) + " / --tp " + n(tp) + ") over --cp " + n(cp) +
             " ranks (allowed: heads / tp a multiple of cp, or --cp-kind ring)";
    if (cp > 1 && sp)
      return std::string("sp: sequence parallelism does not compose with context parallelism here "
                         "(allowed: --cp 1 with --sp, or --cp with --no-sp)");
  } else if (cp > 1) {
    return "cp: context parallelism splits the GPT's windows (allowed: --cp 1 with --model " +
           nameOf(model) + ")";
  }
  if (hasExperts()) {
    if (experts % ep != 0)
      return "ep: " + n(ep) + " must divide the number of experts (" + n(experts) + ")";
  }
  return std::nullopt;
}

nlohmann::json RunConfig::toJson() const {
  nlohmann::json j = nlohmann::json::object();
  for (const Setting& s : runSettings()) j[s.key] = paralab::toJson(s.get(*this));
  return j;
}

void applyJson(RunConfig& c, const nlohmann::json& j) {
  if (!j.is_object()) throw ConfigError("config: expected a JSON object of flag names and values");
  for (const auto& [key, v] : j.items()) {
    const Setting* s = findSetting(key);
    if (!s)
      throw ConfigError("config: unknown key '" + key + "' (keys are the flag names, see --help)");
    s->set(c, fromJson(*s, v));
  }
}

// A --config file: a regular, readable file holding one JSON object of settings, each key once
// and each value a plain value. Anything else is one ConfigError naming the path and what is
// wrong, never an exception of the library or a silently dropped key.
std::set<std::string> applyJsonFile(RunConfig& c, const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw ConfigError("config: cannot open '" + path + "' (no such file)");
  if (!std::filesystem::is_regular_file(path, ec))
    throw ConfigError("config: '" + path + "' is not a file (allowed: a JSON file)");
  std::string why;
  const std::optional<std::string> read = readWholeFile(path, why);
  if (!read) throw ConfigError("config: cannot read '" + path + "' (" + why + ")");
  const std::string& text = *read;
  // Duplicate keys would silently keep the last; a value that is an object or array nests,
  // and only one level (the object of settings) is allowed, so parsing stops at depth 2.
  std::string problem, key;
  std::set<std::string> keys;
  const auto check = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (!problem.empty()) return false;
    if (event == E::key && depth == 1) {
      key = parsed.get<std::string>();
      if (!keys.insert(key).second)
        problem = "config: key '" + key + "' is given twice in '" + path + "'";
    } else if (depth >= 1 && (event == E::object_start || event == E::array_start)) {
      if (key.empty())
        problem = "config: '" + path + "' is not a JSON object of flag names and values";
      else {
        const auto s = findSetting(key);
        problem = key + ": expected " + (s ? typeWords(s->type) : "a plain value") + ", got " +
                  (event == E::object_start ? "an object" : "a list");
      }
    }
    return problem.empty();
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, check);
  } catch (const nlohmann::json::parse_error& e) {
    if (problem.empty())
      throw ConfigError("config: '" + path + "' is not valid JSON (byte " + std::to_string(e.byte) +
                        ")");
  }
  if (!problem.empty()) throw ConfigError(problem);
  applyJson(c, j);
  c.deriveRanks();
  return keys;
}

}  // namespace paralab
