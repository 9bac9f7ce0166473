// Text for the character-level GPT: Debian's fortunes read byte by byte, or a synthetic text of
// words with a bigram rule, as token ids (one per byte); the global batch of windows of each
// step, the same on every rank; and the unigram loss a model must beat.
// See tests/engine/tst_text_corpus.cpp (ctest -R tst_text_corpus).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"  // DataError, ProgressFn

namespace paralab {

// Where Debian's fortunes package puts its quotations.
inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";

struct TextCorpus {
  std::string name;
  std::string vocab;                // the distinct bytes of the text, sorted; token id = index
  std::vector<int> train, heldOut;  // token ids; held out = the last 10% of the text

  int vocabSize() const { return int(vocab.size()); }
  char charOf(int id) const { return vocab[size_t(id)]; }
  // The id of byte c, or -1 when c is not in the vocabulary.
  int idOf(char c) const;
  // Token ids back to text (for showing samples).
  std::string decode(const std::vector<int>& ids) const;
};

// A corpus from raw text: the vocabulary is the bytes that occur, the last 10% is held out.
// Throws DataError when text is empty.
TextCorpus corpusFromText(const std::string& name, const std::string& text);

// Every plain-text fortune file in dir, in sorted file-name order, with the "%" lines between
// entries dropped (an entry's last line ends with a newline, so entries follow each other
// separated by one newline). Bytes are kept as they are. Reported file by file. Throws
// DataError naming the directory or file when it is missing, unreadable or holds no text.
TextCorpus loadFortunes(const std::string& dir, const ProgressFn& progress = {});

// A deterministic stand-in text of `chars` bytes (at least 100): lowercase words from a fixed
// list of 32, each followed by one of 3 fixed successors, in sentences ending with ". " and
// lines of about 8 sentences. Its name says it is synthetic.
TextCorpus makeSyntheticText(uint64_t seed, int64_t chars = 200000);

// Global batch `step` as `batch` windows of T tokens: inputs[b*T + t] = tokens[s_b + t] and
// targets[b*T + t] = tokens[s_b + t + 1], the starts s_b drawn from (seed, step) alone, so every
// rank that asks for a step gets the same windows. Throws DataError when the stream is shorter
// than T + 1 tokens or batch or T is below 1.
void sampleWindows(const std::vector<int>& tokens, int64_t step, int batch, int T, uint64_t seed,
                   std::vector<int>& inputs, std::vector<int>& targets);

// The corpus as a Dataset for the GPT: windows of T + 1 ids at a stride of T (each window's last
// id is the next one's first), train from the training text, test from the held-out text, the
// vocabulary and unigramLoss carried along. A window's label is the region of the text it comes
// from, 0..kTextRegions-1 in order (fortunes' files follow their names, so a region is a few
// topics): the model ignores it; FedAvg's label skew gives each client a mix of regions.
// Throws DataError when either text is shorter than one window.
inline constexpr int kTextRegions = 10;
Dataset windowDataset(const TextCorpus& corpus, int T);

// Held-out cross-entropy in nats per character of the best context-free model: character
// frequencies counted on train, add-one smoothed over the vocabulary,
//   p(c) = (count(c) + 1) / (|train| + V),   loss = -mean over held out of ln p(c).
// A GPT that learns anything from context gets below it. Throws DataError when nothing is
// held out.
double unigramLoss(const TextCorpus& corpus);

}  // namespace paralab
