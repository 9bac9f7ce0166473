// The choices of a run that code branches on, as enums: the model, the device, the backend.
// Each has ONE table naming its values as the command line, --config JSON, checkpoints, the
// --json lines and the window write them ("gpt", "cuda", "nccl"), with the window's label and
// tooltip; the settings table binds a RunConfig member of such a type through it (schema.h
// field()). See tests/engine/tst_schema.cpp (enumChoicesComeFromTheirTable).
#pragma once
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace paralab {

enum class ModelKind { Mlp, Moe, Gpt };
enum class Device { Cpu, Cuda };  // where a rank's tensors live and its math runs
enum class Backend { Thread, Mpi, Nccl };

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
};

// The table of an enum, found by its type (overloads, so field() can ask for any of them).
constexpr std::span<const ChoiceName<ModelKind>> choiceTable(ModelKind) { return kModelKinds; }
constexpr std::span<const ChoiceName<Device>> choiceTable(Device) { return kDevices; }
constexpr std::span<const ChoiceName<Backend>> choiceTable(Backend) { return kBackends; }

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
