// The character corpus of the GPT: Debian's fortunes (size, vocabulary, no "%" lines, the 10%
// held out, the files it reads and skips), its errors on missing, empty and binary-only
// directories, the synthetic text's determinism, window sampling and the unigram baseline.
// Run: ctest -R tst_text_corpus
#include <QtTest>

#include <QTemporaryDir>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

#include "data/text_corpus.h"

using namespace paralab;

namespace {

void writeFile(const QString& path, const std::string& bytes) {
  std::ofstream(path.toStdString(), std::ios::binary) << bytes;
}

// The DataError message of f(), or "" when it does not throw.
template <typename F>
QString errorOf(F f) {
  try {
    f();
  } catch (const DataError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

std::string wholeText(const TextCorpus& c) { return c.decode(c.train) + c.decode(c.heldOut); }

}  // namespace

class TstTextCorpus : public QObject {
  Q_OBJECT
 private slots:
  void fortunes() {
    if (!std::filesystem::is_directory(kFortunesDir))
      QSKIP("Debian's fortunes package is not installed (no /usr/share/games/fortunes)");
    QStringList said;  // what a progress display shows, file by file
    const TextCorpus c =
        loadFortunes(kFortunesDir, [&](const std::string& stage, int64_t done, int64_t total) {
          said << QString("%1 (%2 of %3)").arg(QString::fromStdString(stage)).arg(done).arg(total);
        });
    QVERIFY2(said.size() >= 10 && said.front().startsWith("reading fortunes: art (0 of "),
             qPrintable(said.join("; ")));
    for (const QString& s : said)  // the .dat indexes and the .u8 links are not read
      QVERIFY2(!s.contains(".dat") && !s.contains(".u8"), qPrintable(s));

    const int64_t n = int64_t(c.train.size() + c.heldOut.size());
    QVERIFY2(n > 1'500'000 && n < 5'000'000, qPrintable(QString::number(n)));
    // Held out: the last 10% by position.
    QCOMPARE(int64_t(c.heldOut.size()), n / 10);

    // The vocabulary: distinct bytes in ascending order, newline and nearly all of printable
    // ASCII among them, no NUL; and the text itself almost entirely printable ASCII.
    for (int i = 1; i < c.vocabSize(); ++i)
      QVERIFY(static_cast<unsigned char>(c.vocab[size_t(i - 1)]) <
              static_cast<unsigned char>(c.vocab[size_t(i)]));
    QVERIFY(c.vocabSize() >= 80 && c.vocabSize() <= 256);
    QVERIFY(c.idOf('\n') >= 0);
    QCOMPARE(c.idOf('\0'), -1);
    int printable = 0;
    for (char ch = ' '; ch <= '~'; ++ch) printable += c.idOf(ch) >= 0;
    QVERIFY2(printable >= 90, qPrintable(QString::number(printable)));
    const std::string text = wholeText(c);
    const int64_t plain = std::count_if(text.begin(), text.end(), [](char ch) {
      return (ch >= ' ' && ch <= '~') || ch == '\n' || ch == '\t';
    });
    QVERIFY2(plain >= n * 999 / 1000, qPrintable(QString::number(n - plain)));

    // No "%" separator lines left; the text starts with the first entry of "art".
    QVERIFY(!text.starts_with("%\n"));
    QVERIFY(text.find("\n%\n") == std::string::npos);
    std::ifstream art(std::string(kFortunesDir) + "/art");
    std::string firstLine;
    std::getline(art, firstLine);
    QVERIFY(!firstLine.empty() && firstLine != "%");
    QVERIFY(text.starts_with(firstLine + "\n"));

    const double loss = unigramLoss(c);
    qInfo("fortunes: %lld characters, vocabulary %d, unigram loss %.4f nats/char (ln V = %.4f)",
          static_cast<long long>(n), c.vocabSize(), loss, std::log(double(c.vocabSize())));
    QVERIFY(loss > 1.0 && loss < std::log(double(c.vocabSize())));
  }

  void readsTextFilesInNameOrderAndSkipsTheRest() {
    // A fortune directory in miniature: two text files (out of order on purpose, one with CRLF
    // separators and no final newline), a .dat index, a .u8 link, a hidden file, a binary file.
    QTemporaryDir dir;
    writeFile(dir.filePath("b"), "bee one\n%\r\nbee two");
    writeFile(dir.filePath("a"), "ay one\nstill ay one\n%\nay two\n%\n");
    writeFile(dir.filePath("a.dat"), std::string("\0\0\0\2\0\0\0\2", 8));
    std::filesystem::create_symlink(dir.filePath("a").toStdString(),
                                    dir.filePath("a.u8").toStdString());
    writeFile(dir.filePath(".hidden"), "not a fortune\n");
    writeFile(dir.filePath("blob"), std::string("PK\0\3binary", 10));
    const TextCorpus c = loadFortunes(dir.path().toStdString());
    QCOMPARE(QString::fromStdString(wholeText(c)),
             QString("ay one\nstill ay one\nay two\nbee one\nbee two\n"));
    QCOMPARE(QString::fromStdString(c.vocab), QString("\n abeilnostwy"));
  }

  void missingDirectoryNamesIt() {
    const QString e = errorOf([] { loadFortunes("/nonexistent-fortunes-dir"); });
    QVERIFY2(e.contains("/nonexistent-fortunes-dir") && e.contains("fortunes package"),
             qPrintable(e));
  }

  void emptyDirectoryNamesIt() {
    QTemporaryDir dir;
    const QString e = errorOf([&] { loadFortunes(dir.path().toStdString()); });
    QVERIFY2(e.contains(dir.path()) && e.contains("fortunes package"), qPrintable(e));
  }

  void directoryOfOnlyIndexFilesThrows() {
    QTemporaryDir dir;
    writeFile(dir.filePath("cookie.dat"), std::string("\0\0\0\2\0\0\x12\x34", 8));
    const QString e = errorOf([&] { loadFortunes(dir.path().toStdString()); });
    QVERIFY2(e.contains(dir.path()) && e.contains("no fortune text files"), qPrintable(e));
  }

  void onlySeparatorsIsEmpty() {
    QTemporaryDir dir;
    writeFile(dir.filePath("nothing"), "%\n%\n");
    const QString e = errorOf([&] { loadFortunes(dir.path().toStdString()); });
    QVERIFY2(e.contains(dir.path()) && e.contains("hold no text"), qPrintable(e));
  }

  void syntheticIsDeterministicBySeed() {
    const TextCorpus a = makeSyntheticText(3, 5000), b = makeSyntheticText(3, 5000);
    QVERIFY(a.vocab == b.vocab && a.train == b.train && a.heldOut == b.heldOut);
    QVERIFY(makeSyntheticText(4, 5000).train != a.train);
    QVERIFY(QString::fromStdString(a.name).contains("synthetic"));
    QCOMPARE(int64_t(a.train.size() + a.heldOut.size()), int64_t(5000));
    QCOMPARE(int64_t(a.heldOut.size()), int64_t(500));
    for (char ch : a.vocab)
      QVERIFY((ch >= 'a' && ch <= 'z') || ch == ' ' || ch == '.' || ch == '\n');
    // Words carry structure: the default-size text is far from uniform over its letters.
    const TextCorpus big = makeSyntheticText(1);
    QVERIFY(unigramLoss(big) < std::log(double(big.vocabSize())) - 0.2);
    QVERIFY(!errorOf([] { makeSyntheticText(1, 10); }).isEmpty());
  }

  void windowsAreShiftedSlicesOfTheStream() {
    // Token k of the stream is k itself, so a window's content says where it starts.
    std::vector<int> tokens(1000);
    std::iota(tokens.begin(), tokens.end(), 0);
    const int B = 8, T = 16;
    std::vector<int> x, y;
    sampleWindows(tokens, 5, B, T, 42, x, y);
    QCOMPARE(int(x.size()), B * T);
    QCOMPARE(int(y.size()), B * T);
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t) {
        QCOMPARE(x[size_t(b * T + t)], x[size_t(b * T)] + t);      // contiguous in the stream
        QCOMPARE(y[size_t(b * T + t)], x[size_t(b * T + t)] + 1);  // the next token
      }
    // The same (seed, step) asked again (another rank, later) gives the same windows; another
    // step or seed gives others.
    std::vector<int> x2, y2;
    sampleWindows(tokens, 5, B, T, 42, x2, y2);
    QVERIFY(x2 == x && y2 == y);
    sampleWindows(tokens, 6, B, T, 42, x2, y2);
    QVERIFY(x2 != x);
    sampleWindows(tokens, 5, B, T, 43, x2, y2);
    QVERIFY(x2 != x);
  }

  void windowsReachBothEndsAndNoFurther() {
    std::vector<int> tokens(20);
    std::iota(tokens.begin(), tokens.end(), 0);
    const int T = 4;
    std::set<int> starts;
    std::vector<int> x, y;
    for (int step = 0; step < 200; ++step) {
      sampleWindows(tokens, step, 4, T, 7, x, y);
      for (int b = 0; b < 4; ++b) starts.insert(x[size_t(b * T)]);
      QVERIFY(*std::max_element(y.begin(), y.end()) <= 19);
    }
    QCOMPARE(int(starts.size()), 20 - T);  // every start 0..15 drawn, none past it
    QCOMPARE(*starts.rbegin(), 20 - T - 1);
    // T + 1 tokens are enough for one window; T are not.
    sampleWindows(std::vector<int>{1, 2, 3, 4, 5}, 0, 2, T, 7, x, y);
    QVERIFY(x == (std::vector<int>{1, 2, 3, 4, 1, 2, 3, 4}));
    const QString e = errorOf([&] { sampleWindows({1, 2, 3, 4}, 0, 2, T, 7, x, y); });
    QVERIFY2(e.contains("too short") && e.contains("T + 1"), qPrintable(e));
    QVERIFY(!errorOf([&] { sampleWindows(tokens, 0, 0, T, 7, x, y); }).isEmpty());
  }

  void unigramLossByHand() {
    // Train "aab", held out "ab", vocabulary {a, b}: add-one counts a 2+1, b 1+1 over 3+2,
    // so p(a) = 3/5, p(b) = 2/5 and the loss is -(ln 0.6 + ln 0.4) / 2 = 0.71355...
    TextCorpus c;
    c.name = "tiny";
    c.vocab = "ab";
    c.train = {0, 0, 1};
    c.heldOut = {0, 1};
    const double expected = -(std::log(0.6) + std::log(0.4)) / 2;
    QVERIFY2(std::abs(unigramLoss(c) - expected) < 1e-12,
             qPrintable(QString("%1 vs %2").arg(unigramLoss(c), 0, 'g', 17).arg(expected)));
    QVERIFY(std::abs(expected - 0.7135581778200728) < 1e-12);
    c.heldOut = {};
    QVERIFY(errorOf([&] { unigramLoss(c); }).contains("held-out"));
    c.heldOut = {2};
    QVERIFY(errorOf([&] { unigramLoss(c); }).contains("outside the vocabulary"));
  }

  void corpusFromTextSplitsAndEncodes() {
    const TextCorpus c = corpusFromText("t", "hello world");
    QCOMPARE(QString::fromStdString(c.vocab), QString(" dehlorw"));
    QCOMPARE(int(c.train.size()), 10);  // 11 - 11 / 10
    QCOMPARE(QString::fromStdString(c.decode(c.heldOut)), QString("d"));
    QCOMPARE(c.idOf('l'), 4);
    QCOMPARE(c.charOf(4), 'l');
    QCOMPARE(c.idOf('z'), -1);
    QVERIFY(errorOf([] { corpusFromText("t", ""); }).contains("empty"));
  }

  // The GPT's Dataset: windows of T + 1 ids at stride T that chain into the text, labelled by
  // region in order, and a text too short for one window refused.
  void windowDatasetChainsTheText() {
    const TextCorpus c = makeSyntheticText(3, 20000);
    const int T = 16;
    const Dataset d = windowDataset(c, T);
    QVERIFY(d.text());
    QCOMPARE(d.inputDim, T + 1);
    QCOMPARE(d.classes, c.vocabSize());
    QCOMPARE(d.numTrain(), int64_t((c.train.size() - 1) / T));
    QCOMPARE(d.numTest(), int64_t((c.heldOut.size() - 1) / T));
    for (int64_t w = 0; w < d.numTrain(); ++w) {
      for (int t = 0; t <= T; ++t)
        QCOMPARE(int(d.trainX[size_t(w * (T + 1) + t)]), c.train[size_t(w * T + t)]);
      QCOMPARE(d.trainY[size_t(w)], int(w * kTextRegions / d.numTrain()));
    }
    QCOMPARE(d.trainY.back(), kTextRegions - 1);
    QCOMPARE(d.unigramLoss, unigramLoss(c));
    QVERIFY(errorOf([&] { windowDataset(c, int(c.heldOut.size())); }).contains("held-out"));
  }
};

QTEST_GUILESS_MAIN(TstTextCorpus)
#include "tst_text_corpus.moc"
