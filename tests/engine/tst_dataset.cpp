// The IDX loader on Debian's Fashion-MNIST (counts, first labels, pixel range, the progress it
// reports file by file), its errors on missing and malformed files, the synthetic set's
// determinism, and batch sampling.
// Run: ctest -R tst_dataset
#include <QtTest>

#include <QTemporaryDir>
#include <algorithm>
#include <fstream>
#include <set>
#include <zlib.h>

#include "data/dataset.h"

using namespace paralab;

class TstDataset : public QObject {
  Q_OBJECT
 private slots:
  void fashionMnist() {
    QStringList said;  // what a progress display shows, file by file
    const Dataset d = loadFashionMnist(
        PARALAB_FMNIST_DIR, [&](const std::string& stage, int64_t done, int64_t total) {
          said << QString("%1 (%2 of %3)").arg(QString::fromStdString(stage)).arg(done).arg(total);
        });
    QCOMPARE(said, (QStringList{"reading Fashion-MNIST: train-images-idx3-ubyte.gz (0 of 4)",
                                "reading Fashion-MNIST: train-labels-idx1-ubyte.gz (1 of 4)",
                                "reading Fashion-MNIST: t10k-images-idx3-ubyte.gz (2 of 4)",
                                "reading Fashion-MNIST: t10k-labels-idx1-ubyte.gz (3 of 4)"}));
    QCOMPARE(d.numTrain(), 60000);
    QCOMPARE(d.numTest(), 10000);
    QCOMPARE(d.trainX.size(), size_t(60000) * 784);
    const std::vector<int> firstTrain = {9, 0, 0, 3, 0, 2, 7, 2, 5, 5};
    const std::vector<int> firstTest = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
    QVERIFY(std::equal(firstTrain.begin(), firstTrain.end(), d.trainY.begin()));
    QVERIFY(std::equal(firstTest.begin(), firstTest.end(), d.testY.begin()));
    const auto [lo, hi] = std::minmax_element(d.trainX.begin(), d.trainX.end());
    QCOMPARE(*lo, 0.0f);
    QCOMPARE(*hi, 1.0f);
    // Ten balanced classes: 6000 each in the training split.
    QCOMPARE(std::count(d.trainY.begin(), d.trainY.end(), 3), 6000L);
  }

  void missingDirectoryNamesThePath() {
    try {
      loadFashionMnist("/nonexistent-dir");
      QFAIL("expected DataError");
    } catch (const DataError& e) {
      QVERIFY2(QString(e.what()).contains("/nonexistent-dir/train-images-idx3-ubyte.gz"), e.what());
    }
  }

  void malformedFileNamesThePath() {
    QTemporaryDir dir;
    const char* names[] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                           "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
    for (const char* n : names) {  // valid gzip, but not IDX inside
      gzFile f = gzopen(qPrintable(dir.filePath(n)), "wb");
      gzputs(f, "hello");
      gzclose(f);
    }
    try {
      loadFashionMnist(dir.path().toStdString());
      QFAIL("expected DataError");
    } catch (const DataError& e) {
      QVERIFY2(QString(e.what()).contains("train-images-idx3-ubyte.gz") &&
                   QString(e.what()).contains("not an IDX"), e.what());
    }
  }

  void syntheticIsDeterministicAndBalancedEnough() {
    const Dataset a = makeSynthetic(3, 1000, 100), b = makeSynthetic(3, 1000, 100);
    QVERIFY(a.trainX == b.trainX && a.trainY == b.trainY);
    QVERIFY(makeSynthetic(4, 1000, 100).trainY != a.trainY);
    std::set<int> classes(a.trainY.begin(), a.trainY.end());
    QVERIFY2(classes.size() >= 5, "the samples should cover most classes");
  }

  void samplerCoversAnEpochWithoutRepeats() {
    BatchSampler s(100, 10, 9);
    std::vector<int> idx, all;
    for (int step = 0; step < 10; ++step) {
      s.globalBatch(step, idx);
      all.insert(all.end(), idx.begin(), idx.end());
    }
    std::sort(all.begin(), all.end());
    for (int i = 0; i < 100; ++i) QCOMPARE(all[size_t(i)], i);
    // Asking again for an earlier step gives the same batch (ranks ask independently).
    std::vector<int> again;
    BatchSampler t(100, 10, 9);
    t.globalBatch(3, again);
    s.globalBatch(3, idx);
    QVERIFY(again == idx);
  }
};

QTEST_GUILESS_MAIN(TstDataset)
#include "tst_dataset.moc"
