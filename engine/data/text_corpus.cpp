// The fortunes reader, the synthetic text, window sampling and the unigram baseline.
// See tests/engine/tst_text_corpus.cpp.
#include "data/text_corpus.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <string_view>

#include "read_file.h"
#include "rng.h"

namespace paralab {

namespace {

const char* kInstall =
    "install Debian's fortunes package, which puts plain-text files with % lines between "
    "entries in /usr/share/games/fortunes";

// Which directory entries are fortune text. Next to each text file, strfile(1) leaves a binary
// index NAME.dat, and Debian adds NAME.u8, a symlink to the same text: both are skipped by
// name, as are hidden files and anything that is not a regular file (after following links).
// What remains is read, and kept only if it holds no NUL byte (text never does, binary files
// nearly always do).
bool fortuneFileName(const std::filesystem::directory_entry& e) {
  const std::string name = e.path().filename().string();
  const std::string ext = e.path().extension().string();
  return e.is_regular_file() && !name.starts_with('.') && ext != ".dat" && ext != ".u8";
}

std::string readFile(const std::filesystem::path& p) {
  std::string why;
  std::optional<std::string> bytes = readWholeFile(p.string(), why);
  if (!bytes) throw DataError("cannot read " + p.string() + " (" + why + "; " + kInstall + ")");
  return std::move(*bytes);
}

// Appends the lines of a fortune file to out, leaving out the "%" lines between entries (a
// CR before the newline is tolerated). Each entry's last line keeps its newline, so entries
// end up separated by one newline; a file whose last line lacks one gets it.
void appendEntries(const std::string& file, std::string& out) {
  size_t pos = 0;
  while (pos < file.size()) {
    size_t end = file.find('\n', pos);
    end = end == std::string::npos ? file.size() : end + 1;  // one past the line's newline
    std::string_view line(file.data() + pos, end - pos);
    if (line.ends_with('\n')) line.remove_suffix(1);
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line != "%") out.append(file, pos, end - pos);
    pos = end;
  }
  if (!out.empty() && out.back() != '\n') out += '\n';
}

}  // namespace

int TextCorpus::idOf(char c) const {
  const size_t i = vocab.find(c);
  return i == std::string::npos ? -1 : int(i);
}

std::string TextCorpus::decode(const std::vector<int>& ids) const {
  std::string s;
  s.reserve(ids.size());
  for (int id : ids) s += charOf(id);
  return s;
}

TextCorpus corpusFromText(const std::string& name, const std::string& text) {
  if (text.empty()) throw DataError(name + ": the text is empty (needs at least one character)");
  std::array<bool, 256> seen{};
  for (char c : text) seen[static_cast<unsigned char>(c)] = true;
  TextCorpus corpus;
  corpus.name = name;
  std::array<int, 256> idOfByte{};  // a table: idOf() searches, too slow for megabytes
  for (int b = 0; b < 256; ++b) {   // ascending byte values: the vocabulary comes out sorted
    if (!seen[size_t(b)]) continue;
    idOfByte[size_t(b)] = int(corpus.vocab.size());
    corpus.vocab += char(b);
  }
  // The last 10% by position is held out: text read in order, so the held-out part is whole
  // entries the model never saw, not characters scattered among the ones it trains on.
  const size_t split = text.size() - text.size() / 10;
  corpus.train.reserve(split);
  corpus.heldOut.reserve(text.size() - split);
  for (size_t i = 0; i < text.size(); ++i)
    (i < split ? corpus.train : corpus.heldOut)
        .push_back(idOfByte[static_cast<unsigned char>(text[i])]);
  return corpus;
}

TextCorpus loadFortunes(const std::string& dir, const ProgressFn& progress) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw DataError("fortunes directory not found: " + dir + " (" + kInstall + ")");
  std::vector<fs::path> files;
  fs::directory_iterator it(dir, ec);
  if (ec) throw DataError("cannot list " + dir + ": " + ec.message() + " (" + kInstall + ")");
  for (const fs::directory_entry& e : it)
    if (fortuneFileName(e)) files.push_back(e.path());
  std::sort(files.begin(), files.end());  // directory order differs between file systems
  std::string text;
  int used = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    if (progress)
      progress("reading fortunes: " + files[i].filename().string(), int64_t(i),
               int64_t(files.size()));
    const std::string bytes = readFile(files[i]);
    if (bytes.find('\0') != std::string::npos) continue;  // binary, not a fortune file
    appendEntries(bytes, text);
    ++used;
  }
  if (used == 0) throw DataError("no fortune text files in " + dir + " (" + kInstall + ")");
  if (text.empty())
    throw DataError("the fortune files in " + dir + " hold no text (" + kInstall + ")");
  return corpusFromText("fortunes", text);
}

TextCorpus makeSyntheticText(uint64_t seed, int64_t chars) {
  if (chars < 100)
    throw DataError("synthetic text length " + std::to_string(chars) +
                    " is too short (at least 100 characters)");
  // Structure a small model can learn at two levels: within a word the letters so far leave
  // few choices for the next; between words, word i is followed by one of words 3i+1, 3i+2,
  // 3i+3 (mod 32), so knowing the last word narrows the next from 32 to 3.
  static const char* kWords[32] = {
      "the",   "a",    "cat",  "dog",  "sat",  "ran", "on",    "under",  "mat",    "tree",  "big",
      "small", "red",  "old",  "and",  "then", "saw", "ate",   "fish",   "bird",   "house", "river",
      "quick", "slow", "over", "near", "moon", "sun", "happy", "sleepy", "jumped", "sang"};
  Rng rng(seed ^ 0x7E47C0A9ull);
  std::string text;
  text.reserve(size_t(chars) + 64);
  while (int64_t(text.size()) < chars) {
    const int words = 4 + int(rng.below(6));  // 4..9 words a sentence
    int w = int(rng.below(32));
    for (int k = 0; k < words; ++k) {
      if (k > 0) {
        w = (3 * w + 1 + int(rng.below(3))) % 32;
        text += ' ';
      }
      text += kWords[w];
    }
    text += rng.below(8) == 0 ? ".\n" : ". ";  // lines of about 8 sentences
  }
  text.resize(size_t(chars));
  return corpusFromText(
      "synthetic text (seed " + std::to_string(seed) + "): 32 words, each followed by one of 3",
      text);
}

void sampleWindows(const std::vector<int>& tokens, int64_t step, int batch, int T, uint64_t seed,
                   std::vector<int>& inputs, std::vector<int>& targets) {
  if (batch < 1 || T < 1)
    throw DataError("window batch " + std::to_string(batch) +
                    " and length T = " + std::to_string(T) + " must both be at least 1");
  const int64_t n = int64_t(tokens.size());
  if (n < int64_t(T) + 1)
    throw DataError("a token stream of " + std::to_string(n) + " tokens is too short for " +
                    "windows of T = " + std::to_string(T) +
                    " (needs at least T + 1 = " + std::to_string(int64_t(T) + 1) + ")");
  // The generator's state is a hash of (seed, step), not seed + step: SplitMix64 steps its state
  // by a constant, so nearby states would replay each other's draws one step later.
  Rng rng(Rng(Rng(seed ^ 0x5A3B1E00ull).next() + uint64_t(step)).next());
  inputs.resize(size_t(batch) * size_t(T));
  targets.resize(size_t(batch) * size_t(T));
  for (int b = 0; b < batch; ++b) {
    const int64_t start = int64_t(rng.below(uint64_t(n - T)));  // start + T <= n - 1
    for (int t = 0; t < T; ++t) {
      inputs[size_t(b) * T + t] = tokens[size_t(start + t)];
      targets[size_t(b) * T + t] = tokens[size_t(start + t + 1)];
    }
  }
}

double unigramLoss(const TextCorpus& corpus) {
  const int V = corpus.vocabSize();
  if (corpus.heldOut.empty())
    throw DataError(corpus.name + ": no held-out text to measure the unigram loss on");
  std::vector<int64_t> count(size_t(V), 0);
  auto check = [&](int id) {
    if (id < 0 || id >= V)
      throw DataError(corpus.name + ": token id " + std::to_string(id) +
                      " outside the vocabulary 0.." + std::to_string(V - 1));
  };
  for (int id : corpus.train) {
    check(id);
    ++count[size_t(id)];
  }
  const double total = double(corpus.train.size()) + V;
  double nats = 0;
  for (int id : corpus.heldOut) {
    check(id);
    nats -= std::log((double(count[size_t(id)]) + 1.0) / total);
  }
  return nats / double(corpus.heldOut.size());
}

Dataset windowDataset(const TextCorpus& corpus, int T) {
  Dataset d;
  d.name = corpus.name;
  d.inputDim = T + 1;
  d.classes = corpus.vocabSize();
  d.vocab = corpus.vocab;
  d.unigramLoss = unigramLoss(corpus);
  auto cut = [&](const std::vector<int>& ids, std::vector<float>& x, std::vector<int>& y,
                 const char* part) {
    if (T < 1 || int64_t(ids.size()) < int64_t(T) + 1)
      throw DataError(corpus.name + ": the " + part + " text holds " + std::to_string(ids.size()) +
                      " characters, fewer than one window of seq + 1 = " + std::to_string(T + 1));
    const int64_t n = (int64_t(ids.size()) - 1) / T;
    x.resize(size_t(n * (T + 1)));
    for (int64_t w = 0; w < n; ++w)
      for (int t = 0; t <= T; ++t) x[size_t(w * (T + 1) + t)] = float(ids[size_t(w * T + t)]);
    y.resize(size_t(n));
    for (int64_t w = 0; w < n; ++w) y[size_t(w)] = int(w * kTextRegions / n);
  };
  cut(corpus.train, d.trainX, d.trainY, "training");
  cut(corpus.heldOut, d.testX, d.testY, "held-out");
  return d;
}

}  // namespace paralab
