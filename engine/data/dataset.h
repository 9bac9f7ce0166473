// Datasets: Fashion-MNIST read from its IDX .gz files, or synthetic Gaussian blobs, both as
// float inputs (pixels in [0, 1]) and int labels. BatchSampler picks the global batch of each
// step, the same on every rank. See tests/engine/tst_dataset.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace paralab {

// Images as rows of pixels with a label each, or (for the GPT) text as windows of T + 1 token
// ids stored as floats: the targets are the window's ids shifted, and the label says which
// region of the text the window comes from (text_corpus.h).
struct Dataset {
  std::string name;
  int inputDim = 784;  // text: T + 1
  int classes = 10;    // text: the vocabulary V
  std::vector<float> trainX, testX;  // [n, inputDim], row-major
  std::vector<int> trainY, testY;
  std::string vocab;       // text: token id -> byte; empty for images
  double unigramLoss = 0;  // text: the held-out loss of the best context-free model (nats/char)
  bool text() const { return !vocab.empty(); }
  int64_t numTrain() const { return int64_t(trainY.size()); }
  int64_t numTest() const { return int64_t(testY.size()); }
};

struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a slow preparation is doing, for a progress display: a stage in words and how far it
// has gone (done of total, in the stage's own units; total 0 while unknown).
using ProgressFn = std::function<void(const std::string& stage, int64_t done, int64_t total)>;

// The four files of Debian's dataset-fashion-mnist (train-images-idx3-ubyte.gz, ...), reported
// file by file. Throws DataError naming the file when one is missing or malformed.
Dataset loadFashionMnist(const std::string& dir, const ProgressFn& progress = {});
// Names the first missing file, or "" when all four are there (cheap: no reading).
std::string missingFashionMnistFile(const std::string& dir);
// Gaussian class blobs in a 16-d latent space, projected to 784 inputs (deterministic by seed).
Dataset makeSynthetic(uint64_t seed, int numTrain = 8192, int numTest = 2048);
struct RunConfig;
// The data of a run (--dataset, --data-dir, --seed): under --model gpt, text as windows of --seq
// + 1 tokens (fortunes from Debian's package, or synthetic text), else images. Shared as
// loadDataset's sets are.
std::shared_ptr<const Dataset> loadRunData(const RunConfig& config, const ProgressFn& progress = {});
// The folder a run reads its files from: --data-dir, except that --dataset fortunes with
// --data-dir at its default (Fashion-MNIST's folder) reads Debian's fortunes folder.
std::string dataFolder(const RunConfig& config);
// Shared per (dataset, dir, seed) while in use, and the last one loaded kept, so a second run
// of the same data starts without re-reading the files; others are freed with their last run.
std::shared_ptr<const Dataset> loadDataset(const std::string& dataset, const std::string& dir,
                                           uint64_t seed, const ProgressFn& progress = {});

// Epoch-wise shuffled sampling without replacement; the global batch of step s is the same
// wherever it is asked for, so ranks can take their slice of it independently.
class BatchSampler {
 public:
  BatchSampler(int64_t datasetSize, int batch, uint64_t seed);
  // Indices of global batch `step` (0-based), `batch` of them.
  void globalBatch(int64_t step, std::vector<int>& out);

 private:
  void shuffleEpoch(int64_t epoch);
  int64_t m_n;
  int m_batch;
  uint64_t m_seed;
  int64_t m_epoch = -1;
  std::vector<int> m_perm;
};

}  // namespace paralab
