// The tracking allocator's counts equal the tensor sizes, per category, current and peak.
// Run: ctest -R tst_tensor
#include <QtTest>

#include "model/mlp.h"
#include "optim/optimizer.h"
#include "tensor.h"

using namespace paralab;

class TstTensor : public QObject {
  Q_OBJECT
 private slots:
  void countsEqualSizes() {
    MemoryTracker t;
    {
      Tensor a({3, 5}, MemCategory::Params, &t);
      Tensor b({7}, MemCategory::Activations, &t);
      QCOMPARE(a.bytes(), 60);
      QCOMPARE(t.snapshot()[MemCategory::Params], 60);
      QCOMPARE(t.snapshot()[MemCategory::Activations], 28);
      QCOMPARE(t.snapshot().total(), 88);
      {
        Tensor c({100}, MemCategory::Workspace, &t);
        QCOMPARE(t.snapshot().peakTotal, 488);
      }
      const MemorySnapshot s = t.snapshot();
      QCOMPARE(s[MemCategory::Workspace], 0);
      QCOMPARE(s.peak[int(MemCategory::Workspace)], 400);  // peak survives the free
      QCOMPARE(s.peakTotal, 488);
      Tensor moved = std::move(a);  // a move transfers the count, it does not double it
      QCOMPARE(t.snapshot()[MemCategory::Params], 60);
    }
    QCOMPARE(t.snapshot().total(), 0);
    t.resetPeaks();
    QCOMPARE(t.snapshot().peakTotal, 0);
  }

  void viewsAreNotCounted() {
    MemoryTracker t;
    Tensor a({10}, MemCategory::Params, &t);
    Tensor v = Tensor::view(a.data() + 2, {2, 4});
    QCOMPARE(v.numel(), 8);
    QVERIFY(!v.owning());
    QCOMPARE(t.snapshot().total(), 40);
  }

  void modelAndOptimizerMemoryIsExact() {
    // fp32: params 4P, grads 4P, Adam 8P bytes, exactly.
    MemoryTracker t;
    MlpShape shape;
    shape.hidden = 32;
    shape.layers = 3;
    Mlp model(shape, 1, &t);
    const int64_t P = shape.parameterCount();
    QCOMPARE(model.params().numel(), P);
    Optimizer adam(OptimizerKind::Adam, {}, P, &t);
    const MemorySnapshot s = t.snapshot();
    QCOMPARE(s[MemCategory::Params], 4 * P);
    QCOMPARE(s[MemCategory::Grads], 4 * P);
    QCOMPARE(s[MemCategory::Optimizer], 8 * P);
    QCOMPARE(s[MemCategory::Activations], 0);  // none until the first forward
  }
};

QTEST_GUILESS_MAIN(TstTensor)
#include "tst_tensor.moc"
