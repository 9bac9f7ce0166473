// The choices of a run that code branches on, as enums: the model, the device, the backend, the
// GPT's recomputation and FFN, the gradient sync, the context chunks' order, the scaling and
// whom ZeRO shards over.
// Each has ONE table naming its values as the command line, --config JSON, checkpoints, the
// --json lines and the window write them ("gpt", "cuda", "nccl"), with the window's label and
// tooltip; the settings table binds a RunConfig member of such a type through it (schema.h
// field()). See tests/engine/tst_schema.cpp (enumChoicesComeFromTheirTable).
#pragma once
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "model/recompute.h"

namespace paralab {

enum class ModelKind { Mlp, Moe, Gpt };
enum class Device { Cpu, Cuda };  // where a rank's tensors live and its math runs
enum class Backend { Thread, Mpi, Nccl, Slurm };
enum class Ffn { Dense, Moe };                 // the GPT blocks' feed-forward network
enum class DpVersion { Bucket, PerTensor };    // how sync all-reduces the gradients
enum class CpOrder { Zigzag, Contiguous };     // which chunks of a window a cp rank holds
enum class CpKind { Ring, Ulysses };           // how cp's attention sees every key: ring | all-to-all
enum class Scaling { Strong, Weak };           // the batch as ranks are added
// Whom ZeRO shards over: every data-parallel rank, or the ranks of one node, replicated across
// nodes (HSDP: PyTorch FSDP's HYBRID_SHARD; parallel/data/grad_sync.h)
enum class ZeroShard { All, Node };
// What the run's parameters, activations and gradients are stored as (train/precision.h);
// tf32 is --project's alone (fp32 storage, tensor cores at TF32).
enum class Dtype { Fp32, Bf16, Fp16, Tf32, Fp8 };

// One value of a choice: its word ("gpt"), the window's label and what it means.
template <class E>
struct ChoiceName {
  E value;
  const char* name;     // as typed on the command line and written to JSON
  const char* label;    // as the window lists it
  const char* summary;  // the entry's tooltip
};

inline constexpr ChoiceName<ModelKind> kModelKinds[] = {
    {.value = ModelKind::Mlp,
     .name = "mlp",
     .label = "MLP",
     .summary = "Residual blocks of LayerNorm, H→4H, GELU, 4H→H"},
    {.value = ModelKind::Moe,
     .name = "moe",
     .label = "Mixture of experts",
     .summary = "Each block's FFN becomes E experts behind a router"},
    {.value = ModelKind::Gpt,
     .name = "gpt",
     .label = "GPT (characters)",
     .summary = "Blocks of causal self-attention and the FFN, predicting the next character"},
};

inline constexpr ChoiceName<Device> kDevices[] = {
    {.value = Device::Cpu,
     .name = "cpu",
     .label = "CPU",
     .summary = "The ranks compute on this machine's CPU cores"},
    {.value = Device::Cuda,
     .name = "cuda",
     .label = "GPU (CUDA)",
     .summary = "Tensors in GPU memory, CUDA kernels"},
};

inline constexpr ChoiceName<Backend> kBackends[] = {
    {.value = Backend::Thread,
     .name = "thread",
     .label = "Threads",
     .summary = "Ranks as threads of this process"},
    {.value = Backend::Mpi,
     .name = "mpi",
     .label = "MPI processes",
     .summary = "One process per rank, launched by mpirun"},
    {.value = Backend::Nccl,
     .name = "nccl",
     .label = "NCCL, a process per GPU",
     .summary = "One process per GPU under mpirun, talking through NCCL"},
    {.value = Backend::Slurm,
     .name = "slurm",
     .label = "Slurm job",
     .summary = "MPI processes of a batch job: sbatch queues it, Slurm picks the nodes"},
};

inline constexpr ChoiceName<Recompute> kRecomputes[] = {
    {.value = Recompute::None, .name = "none", .label = "None", .summary = "Keep every activation"},
    {.value = Recompute::Selective,
     .name = "selective",
     .label = "Selective",
     .summary = "Recompute attention's probabilities"},
    {.value = Recompute::Full,
     .name = "full",
     .label = "Full",
     .summary = "Keep block inputs only; recompute each block"},
};

inline constexpr ChoiceName<Ffn> kFfns[] = {
    {.value = Ffn::Dense, .name = "dense", .label = "Dense", .summary = "One FFN for every token"},
    {.value = Ffn::Moe,
     .name = "moe",
     .label = "Mixture of experts",
     .summary = "Each token to its top-k experts"},
};

inline constexpr ChoiceName<DpVersion> kDpVersions[] = {
    {.value = DpVersion::Bucket,
     .name = "bucket",
     .label = "bucketed, overlapped",
     .summary = "Buckets all-reduced during backward"},
    {.value = DpVersion::PerTensor,
     .name = "per-tensor",
     .label = "per tensor, after backward",
     .summary = "One all-reduce per gradient tensor once backward is done"},
};

inline constexpr ChoiceName<CpOrder> kCpOrders[] = {
    {.value = CpOrder::Zigzag,
     .name = "zigzag",
     .label = "Zig-zag (balanced)",
     .summary = "Chunks i and 2cp − 1 − i of 2cp: every rank as much causal attention"},
    {.value = CpOrder::Contiguous,
     .name = "contiguous",
     .label = "Contiguous (unbalanced)",
     .summary = "Chunk i of cp: the last rank computes the most"},
};

inline constexpr ChoiceName<CpKind> kCpKinds[] = {
    {.value = CpKind::Ring,
     .name = "ring",
     .label = "Ring (pass K/V around)",
     .summary = "Keys and values passed around the ring, cp − 1 steps each way"},
    {.value = CpKind::Ulysses,
     .name = "ulysses",
     .label = "Ulysses (all-to-all over heads)",
     .summary = "An all-to-all turns sequence shards into head shards for attention, and back"},
};

inline constexpr ChoiceName<Scaling> kScalings[] = {
    {.value = Scaling::Strong,
     .name = "strong",
     .label = "Strong (fixed global batch)",
     .summary = "The same global batch at every rank count"},
    {.value = Scaling::Weak,
     .name = "weak",
     .label = "Weak (batch per rank)",
     .summary = "Each rank adds its own batch"},
};

inline constexpr ChoiceName<ZeroShard> kZeroShards[] = {
    {.value = ZeroShard::All,
     .name = "all",
     .label = "Every rank (ZeRO / FSDP)",
     .summary = "ZeRO cuts the model states into one chunk per data-parallel rank"},
    {.value = ZeroShard::Node,
     .name = "node",
     .label = "One node, replicated across (HSDP)",
     .summary = "ZeRO cuts the model states over the ranks of a node; each node holds a "
                "replica, and only the gradient shards' all-reduce crosses nodes"},
};

inline constexpr ChoiceName<Dtype> kDtypes[] = {
    {.value = Dtype::Fp32, .name = "fp32", .label = "fp32", .summary = "fp32 everywhere"},
    {.value = Dtype::Bf16,
     .name = "bf16",
     .label = "bf16 mixed",
     .summary = "bf16 parameters, activations and gradients; fp32 master weights"},
    {.value = Dtype::Fp16,
     .name = "fp16",
     .label = "fp16 mixed",
     .summary = "fp16 storage with a loss scale; fp32 master weights"},
    {.value = Dtype::Tf32,
     .name = "tf32",
     .label = "TF32 (--project)",
     .summary = "fp32 storage, tensor cores at TF32 (projected runs only)"},
    {.value = Dtype::Fp8,
     .name = "fp8",
     .label = "FP8 (--project)",
     .summary = "FP8 linear layers, bf16 elsewhere, fp32 master weights (projected runs only)"},
};

// The table of an enum, found by its type (overloads, so field() can ask for any of them).
constexpr std::span<const ChoiceName<ModelKind>> choiceTable(ModelKind) { return kModelKinds; }
constexpr std::span<const ChoiceName<Device>> choiceTable(Device) { return kDevices; }
constexpr std::span<const ChoiceName<Backend>> choiceTable(Backend) { return kBackends; }
constexpr std::span<const ChoiceName<Recompute>> choiceTable(Recompute) { return kRecomputes; }
constexpr std::span<const ChoiceName<Ffn>> choiceTable(Ffn) { return kFfns; }
constexpr std::span<const ChoiceName<DpVersion>> choiceTable(DpVersion) { return kDpVersions; }
constexpr std::span<const ChoiceName<CpOrder>> choiceTable(CpOrder) { return kCpOrders; }
constexpr std::span<const ChoiceName<CpKind>> choiceTable(CpKind) { return kCpKinds; }
constexpr std::span<const ChoiceName<Scaling>> choiceTable(Scaling) { return kScalings; }
constexpr std::span<const ChoiceName<Dtype>> choiceTable(Dtype) { return kDtypes; }
constexpr std::span<const ChoiceName<ZeroShard>> choiceTable(ZeroShard) { return kZeroShards; }

// "gpt" for ModelKind::Gpt.
template <class E>
std::string nameOf(E value) {
  for (const ChoiceName<E>& c : choiceTable(E{}))
    if (c.value == value) return c.name;
  return "";
}
// ModelKind::Gpt for "gpt"; nothing for a word the table does not hold.
template <class E>
std::optional<E> fromName(std::string_view name) {
  for (const ChoiceName<E>& c : choiceTable(E{}))
    if (name == c.name) return c.value;
  return std::nullopt;
}

}  // namespace paralab
