// Blockwise causal attention (cpu/attention_blocks.h) against the whole-sequence kernels of
// cpu/attention.h: the sequence cut into query chunks and K/V blocks of every size (1 included,
// and the two cuts need not line up), the blocks folded in forward, reverse, the zig-zag ring's
// and random orders; out and lse, then dq, dk, dv summed over blocks, in double and float; a
// finite-difference check of the blockwise forward; the future blocks skipped without a read.
// Run: ctest -R tst_attention_blocks
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "cpu/attention.h"
#include "cpu/attention_blocks.h"
#include "gradcheck.h"

using namespace paralab::kernels;
using namespace gradcheck;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Compares two arrays of equal size, relative to max(1, |want|); tol 0 means bit-for-bit.
template <typename A, typename W>
void checkClose(const A& got, const W& want, double tol, const QString& what) {
  QCOMPARE(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    QVERIFY2(std::abs(double(got[i]) - double(want[i])) <=
                 tol * std::max(1.0, std::abs(double(want[i]))),
             qPrintable(QString("%1[%2]: %3, expected %4")
                            .arg(what)
                            .arg(i)
                            .arg(double(got[i]), 0, 'g', 17)
                            .arg(double(want[i]), 0, 'g', 17)));
}

// A cut of T positions into consecutive chunks: "3+4+5", and "1x12" for twelve chunks of 1.
struct Split {
  std::vector<int> size, start;
  int T = 0;
  explicit Split(const std::vector<int>& sizes) : size(sizes) {
    for (int n : size) {
      start.push_back(T);
      T += n;
    }
  }
  static Split parse(const QString& s) {
    std::vector<int> sizes;
    for (const QString& part : s.split('+')) {
      const QStringList rep = part.split('x');
      for (int r = 0; r < (rep.size() == 2 ? rep[1].toInt() : 1); ++r)
        sizes.push_back(rep[0].toInt());
    }
    return Split(sizes);
  }
  int count() const { return int(size.size()); }
  int last(int c) const { return start[c] + size[c] - 1; }
};

// Every cut of T into chunks: the 2^(T-1) compositions.
std::vector<Split> allSplits(int T) {
  std::vector<Split> out;
  for (unsigned cuts = 0; cuts < (1u << (T - 1)); ++cuts) {
    std::vector<int> sizes{1};
    for (int p = 1; p < T; ++p) {
      if (cuts & (1u << (p - 1)))
        sizes.push_back(1);
      else
        ++sizes.back();
    }
    out.emplace_back(sizes);
  }
  return out;
}

enum class Order { Forward, Reverse, ZigZag, Random };
const char* name(Order o) {
  switch (o) {
    case Order::Forward:
      return "forward";
    case Order::Reverse:
      return "reverse";
    case Order::ZigZag:
      return "zig-zag";
    default:
      return "random";
  }
}

// The order in which query chunk qc folds in the K/V blocks. Zig-zag (the load-balanced causal
// ring; the query and K/V cuts are the same, n chunks): R = ceil(n / 2) ranks, rank r holds the
// chunks r and n-1-r (the middle one alone when n is odd), so every rank gets an early and a
// late chunk. At ring step s rank r receives the K/V of rank (r - s) mod R, both its chunks.
std::vector<int> blockOrder(Order order, int qc, const Split& ks, std::mt19937& gen) {
  const int n = ks.count();
  std::vector<int> o(n);
  std::iota(o.begin(), o.end(), 0);
  if (order == Order::Reverse) std::reverse(o.begin(), o.end());
  if (order == Order::Random) std::shuffle(o.begin(), o.end(), gen);
  if (order == Order::ZigZag) {
    const int R = (n + 1) / 2, r = std::min(qc, n - 1 - qc);
    o.clear();
    for (int s = 0; s < R; ++s) {
      const int src = ((r - s) % R + R) % R;
      o.push_back(src);
      if (n - 1 - src != src) o.push_back(n - 1 - src);
    }
  }
  return o;
}

// Rows t0 .. t0+n-1 of every sequence of src [B*T, width], columns col0 .. col0+cols-1, as
// dst [B*n, cols]: a rank's chunk, as it would hold or receive it.
template <typename Real>
std::vector<Real> gather(const std::vector<Real>& src, int B, int T, int width, int t0, int n,
                         int col0, int cols) {
  std::vector<Real> dst((size_t)B * n * cols);
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < n; ++i)
      for (int c = 0; c < cols; ++c)
        dst[((size_t)b * n + i) * cols + c] = src[((size_t)b * T + t0 + i) * width + col0 + c];
  return dst;
}
// The inverse: chunk [B*n, cols] into those rows and columns of dst [B*T, width].
template <typename Real>
void scatter(std::vector<Real>& dst, const std::vector<Real>& src, int B, int T, int width, int t0,
             int n, int col0, int cols) {
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < n; ++i)
      for (int c = 0; c < cols; ++c)
        dst[((size_t)b * T + t0 + i) * width + col0 + c] = src[((size_t)b * n + i) * cols + c];
}

// What a ring of ranks computes, here in one process: each query chunk (packed qkv rows,
// ldq = 3C) folds in the K/V blocks (packed k|v rows, ldkv = 2C, as a ring would send them) in
// the given order, then finishes; with dout, the backward runs over the blocks in the same order,
// dq into the query chunk's columns 0..C of a [B*n, 3C] chunk, dk|dv into a [B*n, 2C] block.
// Results in the whole-sequence layouts: out [B*T, C], lse [B, NH, T], dqkv [B*T, 3C].
template <typename Real>
struct Blockwise {
  std::vector<Real> out, lse, dqkv;
  long calls = 0, worked = 0, pairs = 0;  // forward calls, those that did work, pairs they did
};

template <typename Real>
Blockwise<Real> runBlocks(const std::vector<Real>& qkv, const std::vector<Real>* dout, int B,
                          int NH, int hs, const Split& qs, const Split& ks, Order order,
                          unsigned seed) {
  const int C = NH * hs, T = qs.T;
  std::mt19937 gen(seed);
  Blockwise<Real> r;
  r.out.assign((size_t)B * T * C, Real(kNaN));
  r.lse.assign((size_t)B * NH * T, Real(kNaN));
  std::vector<std::vector<Real>> kv;  // the K/V blocks, packed k|v
  for (int kc = 0; kc < ks.count(); ++kc)
    kv.push_back(gather(qkv, B, T, 3 * C, ks.start[kc], ks.size[kc], C, 2 * C));
  std::vector<Real> scratch(T, Real(kNaN));  // >= every block's Tk; NaN: must be written first
  std::vector<std::vector<Real>> dkv(ks.count());
  for (int kc = 0; kc < ks.count(); ++kc) dkv[kc].assign(kv[kc].size(), Real(0));
  if (dout) r.dqkv.assign(qkv.size(), Real(kNaN));
  for (int qc = 0; qc < qs.count(); ++qc) {
    const int q0 = qs.start[qc], Tq = qs.size[qc];
    const std::vector<Real> q = gather(qkv, B, T, 3 * C, q0, Tq, 0, 3 * C);
    std::vector<Real> o((size_t)B * Tq * C, Real(kNaN)), m((size_t)B * NH * Tq, Real(kNaN)),
        l(m.size(), Real(kNaN)), lse(m.size());
    attention_blocks_init(o.data(), m.data(), l.data(), B, Tq, NH, hs);
    const std::vector<int> blocks = blockOrder(order, qc, ks, gen);
    for (int kc : blocks) {
      const long n = attention_block_forward(o.data(), m.data(), l.data(), scratch.data(), q.data(),
                                             3 * C, kv[kc].data(), kv[kc].data() + C, 2 * C, B, NH,
                                             hs, q0, Tq, ks.start[kc], ks.size[kc]);
      ++r.calls;
      r.worked += n > 0;
      r.pairs += n;
    }
    attention_blocks_finish(o.data(), lse.data(), o.data(), m.data(), l.data(), B, Tq, NH, hs);
    scatter(r.out, o, B, T, C, q0, Tq, 0, C);
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < NH; ++h)
        for (int i = 0; i < Tq; ++i)
          r.lse[((size_t)b * NH + h) * T + q0 + i] = lse[((size_t)b * NH + h) * Tq + i];
    if (!dout) continue;
    const std::vector<Real> dO = gather(*dout, B, T, C, q0, Tq, 0, C);
    std::vector<Real> D(m.size(), Real(kNaN)), dq(q.size(), Real(0));
    attention_blocks_delta(D.data(), o.data(), dO.data(), B, Tq, NH, hs);
    for (int kc : blocks)
      attention_block_backward(dq.data(), dkv[kc].data(), dkv[kc].data() + C, dO.data(), lse.data(),
                               D.data(), q.data(), 3 * C, kv[kc].data(), kv[kc].data() + C, 2 * C,
                               B, NH, hs, q0, Tq, ks.start[kc], ks.size[kc]);
    scatter(r.dqkv, gather(dq, B, Tq, 3 * C, 0, Tq, 0, C), B, T, 3 * C, q0, Tq, 0, C);
  }
  if (dout)
    for (int kc = 0; kc < ks.count(); ++kc)
      scatter(r.dqkv, dkv[kc], B, T, 3 * C, ks.start[kc], ks.size[kc], C, 2 * C);
  return r;
}

// lse of the full masked score rows, from the definition: log sum_{t2 <= t} exp(S[t, t2]).
Vec referenceLse(const Vec& qkv, int B, int T, int NH, int hs) {
  const int C = NH * hs;
  Vec lse((size_t)B * NH * T);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        double z = 0;
        for (int t2 = 0; t2 <= t; ++t2) {
          double s = 0;
          for (int i = 0; i < hs; ++i)
            s += qkv[((size_t)b * T + t) * 3 * C + h * hs + i] *
                 qkv[((size_t)b * T + t2) * 3 * C + C + h * hs + i];
          z += std::exp(s / std::sqrt(double(hs)));
        }
        lse[((size_t)b * NH + h) * T + t] = std::log(z);
      }
  return lse;
}

// The orders to try for a pair of cuts: zig-zag only where they are the same cut.
std::vector<Order> orders(const Split& qs, const Split& ks) {
  std::vector<Order> o{Order::Forward, Order::Reverse, Order::Random, Order::Random};
  if (qs.size == ks.size) o.push_back(Order::ZigZag);
  return o;
}

}  // namespace

class TstAttentionBlocks : public QObject {
  Q_OBJECT
 private slots:
  void forwardMatchesAttention_data() { shapes(); }
  void forwardMatchesAttention();
  void floatForwardMatchesAttention_data() { shapes(); }
  void floatForwardMatchesAttention();
  void backwardMatchesAttention_data() { shapes(); }
  void backwardMatchesAttention();
  void floatBackwardMatchesAttention_data() { shapes(); }
  void floatBackwardMatchesAttention();
  void blockwiseGradient_data() { shapes(); }
  void blockwiseGradient();
  void futureBlocksSkipped_data() { shapes(); }
  void futureBlocksSkipped();
  void everySplit();
  void packedInPlace();

 private:
  // Batch B, heads NH of size hs, the query and the K/V cuts of T, the inputs' spread (wide
  // scores make the running max move between blocks, which the rescaling must absorb).
  void shapes() {
    QTest::addColumn<int>("B");
    QTest::addColumn<int>("NH");
    QTest::addColumn<int>("hs");
    QTest::addColumn<QString>("qsplit");
    QTest::addColumn<QString>("ksplit");
    QTest::addColumn<double>("spread");
    QTest::newRow("B1 NH1 hs1 3+4+5") << 1 << 1 << 1 << "3+4+5"
                                      << "3+4+5" << 1.0;
    QTest::newRow("B2 NH2 hs3 3+4+5") << 2 << 2 << 3 << "3+4+5"
                                      << "3+4+5" << 1.0;
    QTest::newRow("B2 NH3 hs4 5+4+3") << 2 << 3 << 4 << "5+4+3"
                                      << "5+4+3" << 1.0;
    QTest::newRow("B2 NH2 hs4 3+4+5 wide") << 2 << 2 << 4 << "3+4+5"
                                           << "3+4+5" << 3.0;
    QTest::newRow("B1 NH2 hs2 1x12") << 1 << 2 << 2 << "1x12"
                                     << "1x12" << 1.0;
    QTest::newRow("B3 NH1 hs4 12") << 3 << 1 << 4 << "12"
                                   << "12" << 1.0;
    QTest::newRow("B2 NH2 hs2 1+11") << 2 << 2 << 2 << "1+11"
                                     << "1+11" << 1.0;
    QTest::newRow("B2 NH2 hs3 6+6") << 2 << 2 << 3 << "6+6"
                                    << "6+6" << 1.0;
    QTest::newRow("B2 NH2 hs3 2+3+2+4+1") << 2 << 2 << 3 << "2+3+2+4+1"
                                          << "2+3+2+4+1" << 1.0;
    QTest::newRow("B2 NH2 hs3 2x6 wide") << 2 << 2 << 3 << "2x6"
                                         << "2x6" << 3.0;
    QTest::newRow("B2 NH2 hs3 q 3+4+5 kv 5+1+6") << 2 << 2 << 3 << "3+4+5"
                                                 << "5+1+6" << 1.0;
    QTest::newRow("B2 NH1 hs2 q 12 kv 1x12") << 2 << 1 << 2 << "12"
                                             << "1x12" << 1.0;
    QTest::newRow("B1 NH2 hs3 q 1x12 kv 4x3") << 1 << 2 << 3 << "1x12"
                                              << "4x3" << 1.0;
    QTest::newRow("B2 NH2 hs2 T1") << 2 << 2 << 2 << "1"
                                   << "1" << 1.0;
  }
};

#define PARALAB_SHAPE()                                             \
  QFETCH(int, B);                                                   \
  QFETCH(int, NH);                                                  \
  QFETCH(int, hs);                                                  \
  QFETCH(QString, qsplit);                                          \
  QFETCH(QString, ksplit);                                          \
  QFETCH(double, spread);                                           \
  const Split qs = Split::parse(qsplit), ks = Split::parse(ksplit); \
  QCOMPARE(qs.T, ks.T);                                             \
  const int T = qs.T, C = NH * hs;                                  \
  const unsigned seed = unsigned(B * 1000 + NH * 100 + hs * 10 + qs.count() * 7 + ks.count());

void TstAttentionBlocks::forwardMatchesAttention() {
  // out equals attention_forward's and lse the definition's to 1e-12 (relative), in every order.
  // Each call did work unless its block is wholly after the chunk, and the pairs done add up to
  // the causal triangle, T(T+1)/2 per sequence and head: nothing visited twice or missed.
  PARALAB_SHAPE();
  std::mt19937 gen(seed);
  const Vec qkv = randomVec((size_t)B * T * 3 * C, gen, spread);
  Vec want((size_t)B * T * C), att((size_t)B * NH * T * T);
  attention_forward(want.data(), att.data(), qkv.data(), B, T, C, NH);
  const Vec wantLse = referenceLse(qkv, B, T, NH, hs);
  long present = 0;  // (query chunk, block) pairs with a block not wholly in the future
  for (int qc = 0; qc < qs.count(); ++qc)
    for (int kc = 0; kc < ks.count(); ++kc) present += ks.start[kc] <= qs.last(qc);
  for (Order order : orders(qs, ks)) {
    const Blockwise<double> got = runBlocks<double>(qkv, nullptr, B, NH, hs, qs, ks, order, gen());
    const QString what = QString(name(order));
    checkClose(got.out, want, 1e-12, what + " out");
    checkClose(got.lse, wantLse, 1e-12, what + " lse");
    QCOMPARE(got.calls, long(qs.count()) * ks.count());
    QCOMPARE(got.worked, present);
    QCOMPARE(got.pairs, long(T) * (T + 1) / 2);
  }
}

void TstAttentionBlocks::floatForwardMatchesAttention() {
  // Float inputs (rounded from double), float blockwise against float attention_forward: the two
  // differ only in the order of their roundings (the running max, the rescaling, the sum's
  // order), a few fp32 ulps of outputs of size ~1: 1e-5 relative is ~100 ulps. (Measured over
  // these rows: below 1e-6.)
  PARALAB_SHAPE();
  std::mt19937 gen(seed);
  const Vec qkvD = randomVec((size_t)B * T * 3 * C, gen, spread);
  const std::vector<float> qkv(qkvD.begin(), qkvD.end());
  std::vector<float> want((size_t)B * T * C), att((size_t)B * NH * T * T);
  attention_forward(want.data(), att.data(), qkv.data(), B, T, C, NH);
  const Vec wantLse = referenceLse(Vec(qkv.begin(), qkv.end()), B, T, NH, hs);
  for (Order order : orders(qs, ks)) {
    const Blockwise<float> got = runBlocks<float>(qkv, nullptr, B, NH, hs, qs, ks, order, gen());
    checkClose(got.out, want, 1e-5, QString(name(order)) + " float out");
    checkClose(got.lse, wantLse, 1e-5, QString(name(order)) + " float lse");
  }
}

void TstAttentionBlocks::backwardMatchesAttention() {
  // dq of each chunk and dk, dv of each block, summed over the blocks in every order, equal
  // attention_backward's dqkv to 1e-10 (relative); every element is written (NaN-filled start).
  PARALAB_SHAPE();
  std::mt19937 gen(seed);
  const Vec qkv = randomVec((size_t)B * T * 3 * C, gen, spread);
  const Vec dout = randomVec((size_t)B * T * C, gen);
  Vec out(dout.size()), att((size_t)B * NH * T * T), want(qkv.size()), scratch(T);
  attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
  attention_backward(want.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH);
  for (Order order : orders(qs, ks)) {
    const Blockwise<double> got = runBlocks<double>(qkv, &dout, B, NH, hs, qs, ks, order, gen());
    checkClose(got.dqkv, want, 1e-10, QString(name(order)) + " dqkv");
  }
}

void TstAttentionBlocks::floatBackwardMatchesAttention() {
  // The same in float against float attention_backward. Gradients are sums of up to T products
  // of size ~ a few; their difference is roundings only: 3e-5 relative, the bound
  // tst_attention_gradcheck's floatMatchesDouble derives for these sizes. (Measured: up to 4e-6,
  // in the wide rows, where dP - D cancels more; D = dO . O here, rowsum(P dP) there.)
  PARALAB_SHAPE();
  std::mt19937 gen(seed);
  const Vec qkvD = randomVec((size_t)B * T * 3 * C, gen, spread);
  const Vec doutD = randomVec((size_t)B * T * C, gen);
  const std::vector<float> qkv(qkvD.begin(), qkvD.end()), dout(doutD.begin(), doutD.end());
  std::vector<float> out(dout.size()), att((size_t)B * NH * T * T), want(qkv.size()), scratch(T);
  attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
  attention_backward(want.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH);
  for (Order order : orders(qs, ks)) {
    const Blockwise<float> got = runBlocks<float>(qkv, &dout, B, NH, hs, qs, ks, order, gen());
    checkClose(got.dqkv, want, 3e-5, QString(name(order)) + " float dqkv");
  }
}

void TstAttentionBlocks::blockwiseGradient() {
  // The blockwise backward against central finite differences of the blockwise forward itself
  // (loss = sum(w .* out), so dout = w), in the zig-zag order where it applies, else random.
  PARALAB_SHAPE();
  std::mt19937 gen(seed);
  Vec qkv = randomVec((size_t)B * T * 3 * C, gen, spread);
  const Vec w = randomVec((size_t)B * T * C, gen);
  const Order order = qs.size == ks.size ? Order::ZigZag : Order::Random;
  auto loss = [&] {
    return weighted(runBlocks<double>(qkv, nullptr, B, NH, hs, qs, ks, order, seed).out, w);
  };
  const Vec dqkv = runBlocks<double>(qkv, &w, B, NH, hs, qs, ks, order, seed).dqkv;
  checkGradient(qkv, dqkv, loss, "blockwise dqkv");
}

void TstAttentionBlocks::futureBlocksSkipped() {
  // Every (query chunk, block) pair on its own. A block wholly after the chunk: forward and
  // backward return 0 and change nothing, bit for bit, with its k, v and the scratch all NaN
  // (so nothing was read). Any other block: the return value is the number of visible pairs
  // counted by hand (> 0), the block's keys after the chunk's last query may be NaN (masked
  // for every query: never read), and the accumulators end finite.
  PARALAB_SHAPE();
  std::mt19937 gen(seed);
  const Vec qkv = randomVec((size_t)B * T * 3 * C, gen, spread);
  const Vec dout = randomVec((size_t)B * T * C, gen);
  for (int qc = 0; qc < qs.count(); ++qc)
    for (int kc = 0; kc < ks.count(); ++kc) {
      const int q0 = qs.start[qc], Tq = qs.size[qc], k0 = ks.start[kc], Tk = ks.size[kc];
      const QString where = QString("queries %1+%2, keys %3+%4").arg(q0).arg(Tq).arg(k0).arg(Tk);
      const bool isFuture = k0 > qs.last(qc);
      long byHand = 0;
      for (int t = q0; t < q0 + Tq; ++t)
        for (int t2 = k0; t2 < k0 + Tk; ++t2) byHand += t2 <= t;
      QCOMPARE(attention_block_pairs(q0, Tq, k0, Tk), byHand);
      QCOMPARE(byHand == 0, isFuture);
      const Vec q = gather(qkv, B, T, 3 * C, q0, Tq, 0, C);
      Vec kv = gather(qkv, B, T, 3 * C, k0, Tk, C, 2 * C);
      for (int b = 0; b < B; ++b)
        for (int j = 0; j < Tk; ++j)
          if (k0 + j > qs.last(qc))
            std::fill_n(kv.begin() + ((size_t)b * Tk + j) * 2 * C, 2 * C, kNaN);
      // Accumulators part-way through: random o and l > 0, m finite, as after earlier blocks.
      Vec o = randomVec((size_t)B * Tq * C, gen), m = randomVec((size_t)B * NH * Tq, gen),
          l(m.size());
      for (double& x : l) x = 1.0 + std::abs(x);
      const Vec o0 = o, m0 = m, l0 = l;
      Vec scratch(Tk, kNaN);
      const long n =
          attention_block_forward(o.data(), m.data(), l.data(), scratch.data(), q.data(), C,
                                  kv.data(), kv.data() + C, 2 * C, B, NH, hs, q0, Tq, k0, Tk);
      QVERIFY2(n == byHand, qPrintable(where + QString(": forward returned %1").arg(n)));
      Vec lse(m.size()), D = randomVec(m.size(), gen), dq((size_t)B * Tq * C, 0.0),
                         dkv((size_t)B * Tk * 2 * C, 0.0);
      for (size_t i = 0; i < lse.size(); ++i) lse[i] = m0[i] + std::log(l0[i]);
      const Vec dO = gather(dout, B, T, C, q0, Tq, 0, C);
      const long nb = attention_block_backward(dq.data(), dkv.data(), dkv.data() + C, dO.data(),
                                               lse.data(), D.data(), q.data(), C, kv.data(),
                                               kv.data() + C, 2 * C, B, NH, hs, q0, Tq, k0, Tk);
      QVERIFY2(nb == byHand, qPrintable(where + QString(": backward returned %1").arg(nb)));
      if (isFuture) {
        checkClose(o, o0, 0.0, where + " o");
        checkClose(m, m0, 0.0, where + " m");
        checkClose(l, l0, 0.0, where + " l");
        checkClose(dq, Vec(dq.size(), 0.0), 0.0, where + " dq");
        checkClose(dkv, Vec(dkv.size(), 0.0), 0.0, where + " dk|dv");
        continue;
      }
      for (const Vec* a : {&o, &m, &l, &dq})
        for (double x : *a) QVERIFY2(std::isfinite(x), qPrintable(where + ": read a masked key"));
      for (int b = 0; b < B; ++b)
        for (int j = 0; j < Tk; ++j)
          for (int c = 0; c < 2 * C; ++c) {
            const double x = dkv[((size_t)b * Tk + j) * 2 * C + c];
            // A key after every query gets no gradient; the others a finite one.
            QVERIFY2(k0 + j > qs.last(qc) ? x == 0.0 : std::isfinite(x),
                     qPrintable(where + QString(": key %1 got %2").arg(k0 + j).arg(x)));
          }
    }
}

void TstAttentionBlocks::everySplit() {
  // Exhaustive: every cut of T = 6 for the queries against every cut for the keys (32 x 32),
  // blocks in a random order; out, lse and dqkv as in the tests above.
  const int B = 2, NH = 2, hs = 2, T = 6, C = NH * hs;
  std::mt19937 gen(6);
  const Vec qkv = randomVec((size_t)B * T * 3 * C, gen, 2.0);
  const Vec dout = randomVec((size_t)B * T * C, gen);
  Vec want((size_t)B * T * C), att((size_t)B * NH * T * T), wantD(qkv.size()), scratch(T);
  attention_forward(want.data(), att.data(), qkv.data(), B, T, C, NH);
  attention_backward(wantD.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T, C,
                     NH);
  const Vec wantLse = referenceLse(qkv, B, T, NH, hs);
  const std::vector<Split> splits = allSplits(T);
  QCOMPARE(splits.size(), size_t(32));
  for (const Split& qs : splits)
    for (const Split& ks : splits) {
      const Blockwise<double> got =
          runBlocks<double>(qkv, &dout, B, NH, hs, qs, ks, Order::Random, gen());
      checkClose(got.out, want, 1e-12, "out");
      checkClose(got.lse, wantLse, 1e-12, "lse");
      checkClose(got.dqkv, wantD, 1e-10, "dqkv");
      QCOMPARE(got.pairs, long(T) * (T + 1) / 2);
    }
}

void TstAttentionBlocks::packedInPlace() {
  // One chunk and one block, both the whole packed qkv [B*T, 3C] (ld 3C, k = qkv + C, v =
  // qkv + 2C) and the gradients into one dqkv (dk = dqkv + C: the diagonal block's aliasing),
  // finished in place (out = o, lse = m): the same as attention_forward and attention_backward.
  const int B = 3, NH = 2, hs = 3, T = 7, C = NH * hs;
  std::mt19937 gen(7);
  const Vec qkv = randomVec((size_t)B * T * 3 * C, gen);
  const Vec dout = randomVec((size_t)B * T * C, gen);
  Vec want((size_t)B * T * C), att((size_t)B * NH * T * T), wantD(qkv.size()), scratch(T);
  attention_forward(want.data(), att.data(), qkv.data(), B, T, C, NH);
  attention_backward(wantD.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T, C,
                     NH);
  Vec o(want.size()), m((size_t)B * NH * T), l(m.size()), D(m.size()), dqkv(qkv.size(), 0.0);
  attention_blocks_init(o.data(), m.data(), l.data(), B, T, NH, hs);
  QCOMPARE(
      attention_block_forward(o.data(), m.data(), l.data(), scratch.data(), qkv.data(), 3 * C,
                              qkv.data() + C, qkv.data() + 2 * C, 3 * C, B, NH, hs, 0, T, 0, T),
      long(T) * (T + 1) / 2);
  attention_blocks_finish(o.data(), m.data(), o.data(), m.data(), l.data(), B, T, NH, hs);
  checkClose(o, want, 1e-12, "out");
  checkClose(m, referenceLse(qkv, B, T, NH, hs), 1e-12, "lse");
  attention_blocks_delta(D.data(), o.data(), dout.data(), B, T, NH, hs);
  attention_block_backward(dqkv.data(), dqkv.data() + C, dqkv.data() + 2 * C, dout.data(), m.data(),
                           D.data(), qkv.data(), 3 * C, qkv.data() + C, qkv.data() + 2 * C, 3 * C,
                           B, NH, hs, 0, T, 0, T);
  checkClose(dqkv, wantD, 1e-10, "dqkv");
}

QTEST_GUILESS_MAIN(TstAttentionBlocks)
#include "tst_attention_blocks.moc"
