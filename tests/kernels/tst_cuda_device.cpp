// The GPU query answers cleanly on machines without a GPU or driver (never a crash).
// Run: ctest -R tst_cuda_device
#include <QtTest>

#include "cuda/device.h"

class TstCudaDevice : public QObject {
  Q_OBJECT
 private slots:
  void answersWithCountOrReason() {
    const auto info = paralab::kernels::cuda_query_devices();
    if (info.count == 0) {
      QVERIFY2(!info.reason.empty(), "no GPU must come with a reason");
      qInfo("no GPU: %s", info.reason.c_str());
    } else {
      QVERIFY(!info.firstName.empty());
      qInfo("%d GPU(s), first: %s", info.count, info.firstName.c_str());
    }
  }
};

QTEST_GUILESS_MAIN(TstCudaDevice)
#include "tst_cuda_device.moc"
