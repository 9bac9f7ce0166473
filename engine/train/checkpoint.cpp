// Checkpoint files (checkpoint.h): the layout, the atomic write and the checks on reading.
// See tests/engine/tst_checkpoint.cpp.
#include "train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "read_file.h"

namespace paralab {

// The floats are written as this machine holds them; the format says little-endian.
static_assert(std::endian::native == std::endian::little, "checkpoints are little-endian");

namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'P', 'L', 'C', 'K', 'P', 'T', '\r', '\n'};

uint32_t crcOf(const char* data, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (n > 0) {  // zlib takes uInt lengths: chunks, for files over 4 GiB
    const uInt chunk = uInt(std::min<size_t>(n, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data), chunk);
    data += chunk;
    n -= chunk;
  }
  return uint32_t(crc);
}

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <typename T>
T get(const std::string& in, size_t at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof v);
  return v;
}

std::string systemError() { return std::strerror(errno); }

// Writes all of `data` to `fd`; false (errno set) on failure.
bool writeAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= size_t(w);
  }
  return true;
}

// "mlp, H=128, L=2, fashion-mnist, 109386 parameters": what must match, as a user reads it.
std::string modelText(const nlohmann::json& c, int64_t parameters) {
  const auto s = [&](const char* key) {
    const nlohmann::json& v = c.value(key, nlohmann::json());
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  std::string t = s("model") + ", H=" + s("hidden") + ", L=" + s("layers");
  const bool gpt = s("model") == "gpt";
  if (gpt) t += ", " + s("heads") + " heads, T=" + s("seq");
  if (s("model") == "moe" || (gpt && s("ffn") == "moe")) t += ", " + s("experts") + " experts";
  return t + ", " + s("dataset") + ", " + std::to_string(parameters) + " parameters";
}

}  // namespace

std::optional<std::string> checkpointPathProblem(const std::string& path) {
  std::error_code ec;
  if (path.empty()) return "save: needs a file name";
  if (fs::is_directory(path, ec)) return "save: '" + path + "' is a directory (allowed: a file)";
  // The checkpoint replaces the file whole (a rename), so a device or a pipe would be replaced.
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec))
    return "save: '" + path +
           "' is not a regular file (allowed: a file, which the checkpoint replaces)";
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    return "save: the folder of '" + path + "' does not exist";
  // Trying is the only sure test of "writable" (permissions, read-only mounts, ...).
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return "save: cannot write '" + tmp + "' (" + systemError() + ")";
  ::close(fd);
  ::unlink(tmp.c_str());
  return std::nullopt;
}

void writeCheckpoint(const std::string& path, const TrainingState& state, const RunConfig& config,
                     int64_t parameterCount) {
  nlohmann::json header = {
      {"config", config.toJson()},
      {"step", state.step},
      {"optimizerSteps", state.optimizerSteps},
      {"parameters", parameterCount},
      {"globalBatch", config.globalBatch()},
      {"arrays", {{"params", state.params.size()}, {"optM", state.optM.size()},
                  {"optV", state.optV.size()}}},
  };
  // Mixed precision's state (version 2): the fp32 master copy and fp16's loss scale.
  const bool mixed = !state.master.empty() || state.lossScale.scale > 0;
  if (mixed) header["arrays"]["master"] = state.master.size();
  if (state.lossScale.scale > 0)
    header["lossScale"] = {{"scale", state.lossScale.scale},
                           {"clean", state.lossScale.clean},
                           {"skipped", state.lossScale.skipped}};
  const std::string text = header.dump();
  std::string out(kMagic, sizeof kMagic);
  put<uint32_t>(out, mixed ? kCheckpointVersion : 1);
  put<uint64_t>(out, text.size());
  out += text;
  for (const std::vector<float>* a : {&state.params, &state.optM, &state.optV, &state.master})
    out.append(reinterpret_cast<const char*>(a->data()), a->size() * sizeof(float));
  put<uint32_t>(out, crcOf(out.data(), out.size()));

  // FILE.tmp, flushed to the disk, then renamed over FILE: a crash leaves the old file or the
  // new one, never half of one.
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw ConfigError("save: cannot write '" + tmp + "' (" + systemError() + ")");
  const bool ok = writeAll(fd, out.data(), out.size()) && ::fsync(fd) == 0;
  const std::string why = ok ? "" : systemError();
  ::close(fd);
  if (!ok) {
    ::unlink(tmp.c_str());
    throw ConfigError("save: cannot write '" + tmp + "' (" + why + ")");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string err = systemError();
    ::unlink(tmp.c_str());
    throw ConfigError("save: cannot rename '" + tmp + "' to '" + path + "' (" + err + ")");
  }
  // The rename itself is durable once the folder is synced.
  const fs::path parent = fs::path(path).parent_path();
  const int dir = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

Checkpoint readCheckpoint(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw ConfigError("resume: '" + path + "' is a directory");
  std::string why;
  const std::optional<std::string> read = readWholeFile(path, why);
  if (!read) throw ConfigError("resume: cannot read '" + path + "' (" + why + ")");
  const std::string& bytes = *read;

  const size_t fixed = sizeof kMagic + sizeof(uint32_t) + sizeof(uint64_t);
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw ConfigError("resume: '" + path + "' is not a ParaLab checkpoint");
  // The version before the checksum: another version may checksum differently.
  if (bytes.size() >= sizeof kMagic + sizeof(uint32_t)) {
    const uint32_t version = get<uint32_t>(bytes, sizeof kMagic);
    if (version < 1 || version > kCheckpointVersion)
      throw ConfigError("resume: checkpoint format version " + std::to_string(version) +
                        ", this build reads 1 to " + std::to_string(kCheckpointVersion));
  }
  const std::string damaged = "resume: checksum mismatch (the file is truncated or damaged)";
  if (bytes.size() < fixed + sizeof(uint32_t)) throw ConfigError(damaged);
  const size_t body = bytes.size() - sizeof(uint32_t);
  if (crcOf(bytes.data(), body) != get<uint32_t>(bytes, body)) throw ConfigError(damaged);

  // The checksum held, so what follows was written by a writer of this version; still, every
  // size is checked against the file before it is used.
  const auto malformed = [&](const std::string& what) {
    return ConfigError("resume: '" + path + "' is malformed (" + what + ")");
  };
  const uint64_t textSize = get<uint64_t>(bytes, sizeof kMagic + sizeof(uint32_t));
  if (textSize > body - fixed) throw malformed("header size");
  Checkpoint c;
  try {
    const nlohmann::json h = nlohmann::json::parse(bytes.substr(fixed, size_t(textSize)));
    c.config = h.at("config");
    c.parameterCount = h.at("parameters").get<int64_t>();
    c.globalBatch = h.at("globalBatch").get<int>();
    c.state.step = h.at("step").get<int64_t>();
    c.state.optimizerSteps = h.at("optimizerSteps").get<int64_t>();
    if (h.contains("lossScale")) {
      const nlohmann::json& s = h.at("lossScale");
      c.state.lossScale = {s.at("scale").get<double>(), s.at("clean").get<int64_t>(),
                           s.at("skipped").get<int64_t>()};
    }
    size_t at = fixed + size_t(textSize);
    for (auto [key, to] :
         {std::pair{"params", &c.state.params}, std::pair{"optM", &c.state.optM},
          std::pair{"optV", &c.state.optV}, std::pair{"master", &c.state.master}}) {
      const nlohmann::json& arrays = h.at("arrays");
      if (std::string(key) == "master" && !arrays.contains(key)) continue;  // version 1
      const uint64_t n = arrays.at(key).get<uint64_t>();
      if (n > (body - at) / sizeof(float)) throw malformed(std::string("size of ") + key);
      to->resize(size_t(n));
      if (n > 0) std::memcpy(to->data(), bytes.data() + at, size_t(n) * sizeof(float));
      at += size_t(n) * sizeof(float);
    }
    if (at != body) throw malformed("bytes after the arrays");
  } catch (const nlohmann::json::exception& e) {
    throw malformed(std::string("header: ") + e.what());
  }
  if (c.state.params.size() != size_t(c.parameterCount)) throw malformed("parameter count");
  if (!c.state.master.empty() && c.state.master.size() != c.state.params.size())
    throw malformed("master count");
  return c;
}

std::optional<std::string> checkpointMismatch(const Checkpoint& saved, const RunConfig& run,
                                              int64_t parameterCount) {
  const nlohmann::json now = run.toJson();
  const auto differs = [&](const char* key) {
    return saved.config.value(key, nlohmann::json()) != now.value(key, nlohmann::json());
  };
  // The model: whatever shapes the parameters, or what they mean (the data set's classes or
  // characters). The parameter count catches the rest.
  bool model = parameterCount != saved.parameterCount;
  for (const char* key : {"model", "hidden", "layers", "dataset"}) model = model || differs(key);
  if (run.model == ModelKind::Gpt)
    for (const char* key : {"heads", "seq", "ffn"}) model = model || differs(key);
  if (run.hasExperts()) model = model || differs("experts");
  if (model)
    return "resume: the checkpoint's model (" + modelText(saved.config, saved.parameterCount) +
           ") does not match this run's (" + modelText(now, parameterCount) + ")";
  const auto text = [](const nlohmann::json& v) {
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  if (differs("optimizer"))
    return "resume: the checkpoint's optimizer is " + text(saved.config.value("optimizer", "")) +
           ", this run's " + run.optimizer + " (allowed: --optimizer " +
           text(saved.config.value("optimizer", "")) + ")";
  // The data order: step s's global batch is drawn from the seed, s and the global batch size
  // (BatchSampler), so these two keep the resumed run on the uninterrupted run's batches.
  if (differs("seed"))
    return "resume: the checkpoint's seed is " + text(saved.config.value("seed", nlohmann::json())) +
           ", this run's " + std::to_string(run.seed) + "; the seed decides the data order " +
           "(allowed: --seed " + text(saved.config.value("seed", nlohmann::json())) + ")";
  if (saved.globalBatch != run.globalBatch())
    return "resume: the checkpoint's global batch is " + std::to_string(saved.globalBatch) +
           ", this run's " + std::to_string(run.globalBatch()) +
           "; it decides the data order (allowed: a global batch of " +
           std::to_string(saved.globalBatch) + ")";
  return std::nullopt;
}

}  // namespace paralab
