// A checkpoint save killed mid-write (kill -9) leaves the previous checkpoint whole: the save
// writes FILE.tmp, syncs it and renames it over FILE (train/checkpoint.cpp), so FILE is always a
// complete checkpoint, the old one or the new. A child process saves a large state again and
// again; it is killed while FILE.tmp is half written. Run: ctest -R tst_checkpoint_crash
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <QTemporaryDir>
#include <QtTest>
#include <chrono>
#include <filesystem>
#include <thread>

#include "config.h"
#include "train/checkpoint.h"

using namespace paralab;

namespace {

// `floats` parameters all equal to `value`, at step `step`.
TrainingState stateOf(int64_t step, float value, size_t floats) {
  TrainingState s;
  s.step = step;
  s.params.assign(floats, value);
  s.optM.assign(floats, value);
  return s;
}

}  // namespace

class TstCheckpointCrash : public QObject {
  Q_OBJECT
 private slots:
  void killDuringSaveLeavesThePreviousWhole() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath("run.ckpt").toStdString(), tmp = path + ".tmp";
    RunConfig config;
    config.dataset = "synthetic";
    constexpr size_t kFloats = 16u << 20;  // 2 x 64 MB: each save takes a while to write
    writeCheckpoint(path, stateOf(1, 1.0f, 1024), config, 1024);

    const pid_t child = fork();
    QVERIFY(child >= 0);
    if (child == 0) {  // the saving process: saves a new state until it is killed
      const TrainingState big = stateOf(2, 2.0f, kFloats);
      for (int i = 0; i < 1000; ++i) writeCheckpoint(path, big, config, int64_t(kFloats));
      _exit(0);
    }
    // Kill it while FILE.tmp is partly written (the first save's, or a later one's).
    namespace fs = std::filesystem;
    bool caught = false;
    for (int i = 0; i < 20000 && !caught; ++i) {
      std::error_code ec;
      const auto size = fs::file_size(tmp, ec);
      caught = !ec && size > 0 && size < 2 * kFloats * sizeof(float);
      if (!caught) std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    QVERIFY2(caught, "the save was never seen half written");
    QVERIFY(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    // FILE reads whole: the first checkpoint, or a later complete one; never a torn one.
    Checkpoint c;
    try {
      c = readCheckpoint(path);
    } catch (const ConfigError& e) {
      QFAIL(e.what());
    }
    if (c.state.step == 1) {
      QCOMPARE(c.state.params, std::vector<float>(1024, 1.0f));
    } else {
      QCOMPARE(c.state.step, int64_t(2));
      QCOMPARE(c.state.params.size(), kFloats);
      QCOMPARE(c.state.params.back(), 2.0f);
    }
  }
};

QTEST_GUILESS_MAIN(TstCheckpointCrash)
#include "tst_checkpoint_crash.moc"
