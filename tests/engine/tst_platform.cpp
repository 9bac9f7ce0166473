// Where the programs find their data (platform.h: dataDir) — beside an installed program, in
// the source tree from a build tree, or where the environment says — and the version.
// Run: ctest -R tst_platform --output-on-failure   (the installed case: scripts/test-installed.sh)
#include <QtTest>

#include "comm/link_model.h"
#include "platform.h"

using namespace paralab;

class TstPlatform : public QObject {
  Q_OBJECT
 private slots:
  void versionIsTheProjectVersion() {
    QCOMPARE(QString(version()), QString(PARALAB_PROJECT_VERSION));
  }

  void executableIsThisProgram() {
    QCOMPARE(QFileInfo(QString::fromStdString(executablePath())).fileName(),
             QString("tst_platform"));
  }

  // /tmp/x/bin/paralab reads /tmp/x/share/paralab/lessons, as /usr/bin/paralab reads
  // /usr/share/paralab/lessons.
  void installedProgramReadsItsShare() {
    QTemporaryDir root;
    QVERIFY(QDir(root.path()).mkpath("bin") && QDir(root.path()).mkpath("share/paralab/lessons"));
    const std::string exe = root.filePath("bin/paralab").toStdString();
    QCOMPARE(QString::fromStdString(dataDir("lessons", exe)),
             root.filePath("share/paralab/lessons"));
    // What is not installed there comes from the source tree.
    QCOMPARE(QString::fromStdString(dataDir("resources", exe)),
             QString(PARALAB_SOURCE_DIR "/resources"));
  }

  void buildTreeReadsTheSourceTree() {
    QCOMPARE(QString::fromStdString(dataDir("resources")),
             QString(PARALAB_SOURCE_DIR "/resources"));
    QCOMPARE(QString::fromStdString(dataDir("lessons")), QString(PARALAB_SOURCE_DIR "/lessons"));
    QVERIFY(!linkProfileNames().empty());  // the link profiles are read from there
  }

  void environmentWins() {
    QTemporaryDir links;
    QVERIFY(QDir(links.path()).mkpath("links"));
    QFile f(links.filePath("links/slow.json"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"title": "Slow", "latency_us": 100, "bandwidth_GBps": 0.1})");
    f.close();
    QCOMPARE(QString::fromStdString(dataDirVariable("resources")),
             QString("PARALAB_RESOURCES_DIR"));
    qputenv("PARALAB_RESOURCES_DIR", links.path().toUtf8());
    const auto names = linkProfileNames();
    qunsetenv("PARALAB_RESOURCES_DIR");
    QCOMPARE(names, std::vector<std::string>{"slow"});
  }
};

QTEST_GUILESS_MAIN(TstPlatform)
#include "tst_platform.moc"
