// The host executor's counts of the GPU teaching kernels equal the ones worked by hand: lanes
// active at a branch, 128-byte lines and 32-byte sectors per warp load, the global loads tiling
// saves and the passes a bank conflict costs (kernels/cuda/teach_count.h). Counted by executing
// the kernel source, so exact on any machine. Run: ctest -R tst_cuda_count --output-on-failure
#include <QtTest>

#include "cuda/teach_count.h"

using namespace paralab::kernels;

class TstCudaCount : public QObject {
  Q_OBJECT
 private slots:
  // 4096 threads are 128 warps. Branch on lane parity: every warp runs both paths with 16 of its
  // 32 lanes each, 50 %; branch on the warp index: each warp runs one path with all 32, 100 %.
  void divergenceHalvesTheActiveLanes() {
    const std::vector<KernelCounts> r = count_warp_divergence(4096);
    QCOMPARE(r.size(), size_t(2));
    QCOMPARE(r[0].branchWarps, 128L);
    QCOMPARE(r[0].pathsIssued, 256L);
    QCOMPARE(r[0].activeLanes, 4096L);
    QCOMPARE(r[0].activeLanePercent(), 50.0);
    QCOMPARE(r[1].branchWarps, 128L);
    QCOMPARE(r[1].pathsIssued, 128L);
    QCOMPARE(r[1].activeLanePercent(), 100.0);
  }

  // A partial last warp: 40 threads are one full warp and one of 8 lanes; the parity branch
  // splits both, so 40 lanes over 4 paths of 32 lanes each.
  void aPartialWarpCountsItsLanes() {
    const std::vector<KernelCounts> r = count_warp_divergence(40);
    QCOMPARE(r[0].branchWarps, 2L);
    QCOMPARE(r[0].pathsIssued, 4L);
    QCOMPARE(r[0].activeLanes, 40L);
  }

  // 32 lanes × 4 bytes at a stride of s floats span 128·s bytes: s lines of 128 bytes, and
  // min(32, 4·s) sectors of 32 bytes. Stride 1: 1 line (4 sectors); stride 32: 32 and 32.
  void coalescingCountsLinesAndSectors() {
    const std::vector<KernelCounts> r = count_coalescing({1, 2, 4, 8, 16, 32}, 32768);
    QCOMPARE(r.size(), size_t(6));
    for (const KernelCounts& k : r) {
      QCOMPARE(k.loadRequests, 32768L / 32);
      QCOMPARE(k.threadLoads, 32768L);
      QCOMPARE(k.linesPerLoad(), double(k.stride));
      QCOMPARE(k.sectorsPerLoad(), double(std::min(32, 4 * k.stride)));
    }
    QCOMPARE(r.front().linesPerLoad(), 1.0);
    QCOMPARE(r.back().linesPerLoad(), 32.0);
  }

  // n = 64: the naive kernel loads 2 floats per multiply-add, 2·n³; a 32 × 32 tile is loaded
  // once for the 32 threads of the block that use each float, so 2·n³ / 32. Lanes along a row
  // of C read a row of the A tile (one word: a broadcast) and a row of the B tile (32 banks):
  // no conflict. Lanes down a column read a column of the A tile, words 32 apart, all in one
  // bank: 32 passes, 31 of them extra, on each of the 32 reads of each tile by each warp; a
  // 33-float row puts the column in 32 banks again.
  void tilingSavesLoadsAndPaddingRemovesConflicts() {
    const int n = 64;
    const std::vector<KernelCounts> r = count_gemm(n);
    QCOMPARE(r.size(), size_t(4));
    const long naive = 2L * n * n * n;
    QCOMPARE(r[0].threadLoads, naive);
    QCOMPARE(r[0].sharedRequests, 0L);
    for (int i = 1; i < 4; ++i) QCOMPARE(r[size_t(i)].threadLoads, naive / 32);
    QCOMPARE(r[1].worstWavefronts, 1L);
    QCOMPARE(r[1].bankConflicts(), 0L);
    QCOMPARE(r[2].worstWavefronts, 32L);
    const long blocks = (n / 32) * (n / 32), warps = 32, tiles = n / 32;
    QCOMPARE(r[2].bankConflicts(), blocks * warps * tiles * 32 * 31);
    QCOMPARE(r[3].worstWavefronts, 1L);
    QCOMPARE(r[3].bankConflicts(), 0L);
  }

  void badSizesAreRefused() {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, count_gemm(48));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, count_coalescing({0}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, count_warp_divergence(0));
  }
};

QTEST_GUILESS_MAIN(TstCudaCount)
#include "tst_cuda_count.moc"
