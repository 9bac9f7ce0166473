// IDX reader (LeCun's MNIST format, which Fashion-MNIST keeps), synthetic data and sampling.
// See tests/engine/tst_dataset.cpp.
#include "data/dataset.h"

#include <zlib.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <numeric>
#include <tuple>

#include "config.h"
#include "data/text_corpus.h"
#include "rng.h"

namespace paralab {

namespace {

const char* kFiles[4] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                         "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};

std::vector<unsigned char> readGz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw DataError("cannot open " + path);
  std::vector<unsigned char> out;
  unsigned char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  const bool failed = n < 0;
  gzclose(f);
  if (failed) throw DataError("cannot decompress " + path + " (not a valid .gz file)");
  return out;
}

uint32_t bigEndian(const unsigned char* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

// IDX: magic (0x00000801 labels, 0x00000803 images), dims as big-endian uint32, then bytes.
void readIdx(const std::string& path, bool images, std::vector<float>* x, std::vector<int>* y) {
  const std::vector<unsigned char> d = readGz(path);
  const uint32_t magic = d.size() >= 4 ? bigEndian(d.data()) : 0;
  const size_t header = images ? 16 : 8;
  if (d.size() < header || magic != (images ? 0x803u : 0x801u))
    throw DataError(path + " is not an IDX " + (images ? "image" : "label") + " file");
  const size_t n = bigEndian(d.data() + 4);
  const size_t per = images ? size_t(bigEndian(d.data() + 8)) * bigEndian(d.data() + 12) : 1;
  if (images && per != 784) throw DataError(path + ": expected 28x28 images");
  if (d.size() != header + n * per) throw DataError(path + " is truncated");
  if (images) {
    x->resize(n * per);
    for (size_t i = 0; i < n * per; ++i) (*x)[i] = float(d[header + i]) / 255.f;
  } else {
    y->resize(n);
    for (size_t i = 0; i < n; ++i) {
      if (d[header + i] > 9) throw DataError(path + ": label out of range 0..9");
      (*y)[i] = d[header + i];
    }
  }
}

}  // namespace

std::string missingFashionMnistFile(const std::string& dir) {
  for (const char* f : kFiles) {
    const std::string p = (std::filesystem::path(dir) / f).string();
    if (!std::filesystem::is_regular_file(p)) return p;
  }
  return "";
}

Dataset loadFashionMnist(const std::string& dir, const ProgressFn& progress) {
  if (const std::string missing = missingFashionMnistFile(dir); !missing.empty())
    throw DataError("Fashion-MNIST file not found: " + missing +
                    " (install dataset-fashion-mnist or pass --data-dir)");
  Dataset d;
  d.name = "fashion-mnist";
  auto path = [&](int i) { return (std::filesystem::path(dir) / kFiles[i]).string(); };
  std::vector<float>* images[4] = {&d.trainX, nullptr, &d.testX, nullptr};
  std::vector<int>* labels[4] = {nullptr, &d.trainY, nullptr, &d.testY};
  for (int i = 0; i < 4; ++i) {
    if (progress) progress(std::string("reading Fashion-MNIST: ") + kFiles[i], i, 4);
    readIdx(path(i), images[i] != nullptr, images[i], labels[i]);
  }
  if (d.trainX.size() != d.trainY.size() * 784 || d.testX.size() != d.testY.size() * 784)
    throw DataError("Fashion-MNIST in " + dir + ": image and label counts differ");
  return d;
}

Dataset makeSynthetic(uint64_t seed, int numTrain, int numTest) {
  // Gaussian blobs seen through a fixed random projection: each class k has a centre c_k in a
  // 16-dimensional latent space; a sample is z = c_k + noise, shown as 784 "pixels"
  // x = 0.3 + 0.3 A z / 4 (A fixed, Gaussian): mean 0.3 and spread ~0.37 per pixel, close to
  // Fashion-MNIST's 0.29 and 0.35, so the same learning rates suit both (a 0.5 offset with a
  // narrow spread made lr 0.05 with momentum diverge at H = 128). Overlapping blobs:
  // learnable, not trivial.
  Rng rng(seed ^ 0x5EED5EEDull);
  const int D = 784, Z = 16, C = 10;
  const double separation = 0.7;
  std::vector<double> centres(size_t(C) * Z), A(size_t(D) * Z);
  for (double& c : centres) c = separation * rng.normal();
  for (double& a : A) a = rng.normal();
  Dataset d;
  d.name = "synthetic";
  auto fill = [&](int n, std::vector<float>& X, std::vector<int>& Y) {
    X.resize(size_t(n) * D);
    Y.resize(size_t(n));
    std::vector<double> z(Z);
    for (int i = 0; i < n; ++i) {
      const int k = int(rng.below(C));
      for (int j = 0; j < Z; ++j) z[size_t(j)] = centres[size_t(k) * Z + j] + rng.normal();
      for (int p = 0; p < D; ++p) {
        double s = 0;
        for (int j = 0; j < Z; ++j) s += A[size_t(p) * Z + j] * z[size_t(j)];
        X[size_t(i) * D + p] = float(0.3 + 0.3 * s / 4.0);
      }
      Y[size_t(i)] = k;
    }
  };
  fill(numTrain, d.trainX, d.trainY);
  fill(numTest, d.testX, d.testY);
  return d;
}

std::shared_ptr<const Dataset> loadDataset(const std::string& dataset, const std::string& dir,
                                           uint64_t seed, const ProgressFn& progress) {
  static std::mutex mutex;
  // Weak: a data set lives as long as a run uses it (a synthetic set per seed would otherwise
  // add 32 MB for every seed tried), plus the last one loaded, ready for the next run.
  static std::map<std::tuple<std::string, std::string, uint64_t>, std::weak_ptr<const Dataset>>
      cache;
  static std::shared_ptr<const Dataset> last;
  // Fashion-MNIST does not depend on the seed; the synthetic set does not depend on the dir.
  const auto key = dataset == "synthetic" ? std::make_tuple(dataset, std::string(), seed)
                                          : std::make_tuple(dataset, dir, uint64_t(0));
  std::lock_guard lock(mutex);
  if (auto d = cache[key].lock()) return last = d;
  if (progress && dataset == "synthetic") progress("making the synthetic data set", 0, 1);
  auto d = std::make_shared<const Dataset>(
      dataset == "synthetic" ? makeSynthetic(seed) : loadFashionMnist(dir, progress));
  std::erase_if(cache, [](const auto& entry) { return entry.second.expired(); });
  cache[key] = d;
  return last = d;
}

std::string dataFolder(const RunConfig& config) {
  return config.dataset == "fortunes" && config.dataDir == RunConfig{}.dataDir ? kFortunesDir
                                                                               : config.dataDir;
}

std::shared_ptr<const Dataset> loadRunData(const RunConfig& config, const ProgressFn& progress) {
  if (config.model != ModelKind::Gpt)
    return loadDataset(config.dataset, config.dataDir, config.seed, progress);
  static std::mutex mutex;
  static std::map<std::tuple<std::string, std::string, uint64_t, int>,
                  std::weak_ptr<const Dataset>>
      cache;
  static std::shared_ptr<const Dataset> last;  // as loadDataset: ready for the next run
  const std::string dir = dataFolder(config);
  const bool synthetic = config.dataset == "synthetic";
  const auto key = std::make_tuple(config.dataset, synthetic ? std::string() : dir,
                                   synthetic ? config.seed : 0, config.seq);
  std::lock_guard lock(mutex);
  if (auto d = cache[key].lock()) return last = d;
  if (progress && synthetic) progress("making the synthetic text", 0, 1);
  auto d = std::make_shared<const Dataset>(windowDataset(
      synthetic ? makeSyntheticText(config.seed, 400000) : loadFortunes(dir, progress),
      config.seq));
  std::erase_if(cache, [](const auto& entry) { return entry.second.expired(); });
  cache[key] = d;
  return last = d;
}

BatchSampler::BatchSampler(int64_t datasetSize, int batch, uint64_t seed)
    : m_n(datasetSize), m_batch(batch), m_seed(seed) {}

void BatchSampler::shuffleEpoch(int64_t epoch) {
  m_perm.resize(size_t(m_n));
  std::iota(m_perm.begin(), m_perm.end(), 0);
  Rng rng(m_seed * 0x9E3779B97F4A7C15ull + uint64_t(epoch));
  for (int64_t i = m_n - 1; i > 0; --i) std::swap(m_perm[i], m_perm[rng.below(uint64_t(i + 1))]);
  m_epoch = epoch;
}

void BatchSampler::globalBatch(int64_t step, std::vector<int>& out) {
  // Sample k of the stream is permutation(k / n)[k % n]: epochs follow one another, and a
  // batch that straddles two epochs takes the end of one and the start of the next.
  out.resize(size_t(m_batch));
  for (int i = 0; i < m_batch; ++i) {
    const int64_t k = step * m_batch + i;
    const int64_t epoch = k / m_n;
    if (epoch != m_epoch) shuffleEpoch(epoch);
    out[size_t(i)] = m_perm[size_t(k % m_n)];
  }
}

}  // namespace paralab
