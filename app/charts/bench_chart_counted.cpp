// BenchChart's counted GPU kinds and the GIL. GPU counts: each kernel's counts from executing
// its source on this CPU (warp divergence: lanes active per path at the branch; coalescing:
// 128-byte lines and 32-byte sectors per warp load at each stride; the GEMM: global loads per
// output element and the passes of the worst shared-memory access), labelled counted, not
// timed. The GIL: speedup over one worker of a Python loop on threads and on processes, with
// this machine's cores as the dashed bound. See tests/app/tst_window_bench.cpp.
#include <algorithm>
#include <thread>

#include "charts/bench_chart.h"
#include "charts/chart_colors.h"

namespace paralab {

namespace {

QString count(double v) {
  return v == double(long(v)) ? QString("%L1").arg(long(v)) : QString::number(v, 'f', 1);
}

}  // namespace

void BenchChart::showGpuCounts(const teach::GpuCountsResult& r) {
  using namespace chartcolors;
  const QString counted = tr("counted by executing the kernel source, not timed");
  QStringList names;
  double top = 1;
  const double n = double(r.rows.size());
  if (r.experiment == "divergence") {
    for (size_t i = 0; i < r.rows.size(); ++i) {
      const teach::GpuCountRow& k = r.rows[i];
      names << QString::fromStdString(k.kernel);
      m_rungs->addData(double(i + 1), k.activeLanePercent);
      addValueLabel(double(i + 1), k.activeLanePercent,
                    tr("%1 % · %2 path(s) per warp")
                        .arg(count(k.activeLanePercent), count(k.pathsPerWarp)),
                    kBlue);
    }
    m_rungs->setName(tr("lanes active per path at the branch (%1)").arg(counted));
    m_rungs->addToLegend();
    top = 100;
    setAxisLabel(yAxis, tr("lanes active per warp instruction at the branch, % of 32"),
                 tr("% lanes active"));
    setAxisLabel(xAxis, tr("what decides the branch"), tr("branch"));
    setSubtitle(tr("Warp divergence, %1 · %L2 threads, blocks of 256: each warp that reaches "
                   "the branch runs the paths its lanes take, one after the other")
                    .arg(counted)
                    .arg(r.elements));
  } else {
    const bool gemm = r.experiment == "gemm";
    for (size_t i = 0; i < r.rows.size(); ++i) {
      const teach::GpuCountRow& k = r.rows[i];
      const double x = double(i + 1);
      const double a = gemm ? k.loadsPerOutput : k.linesPerLoad;
      const double b = gemm ? double(k.worstPasses) : k.sectorsPerLoad;
      const QString shortName = k.key == "tiled-column"          ? tr("column")
                                : k.key == "tiled-column-padded" ? tr("column, padded")
                                                                 : QString::fromStdString(k.key);
      names << (gemm ? shortName : QString::number(k.stride));
      m_shared->addData(x, a);
      m_padded->addData(x, b);
      addValueLabel(x - 0.2, a, count(a), kRed);
      addValueLabel(x + 0.2, b, count(b), kBlue);
      top = std::max({top, a, b});
    }
    if (gemm) {
      m_shared->setName(tr("global loads per element of C (%1)").arg(counted));
      m_padded->setName(tr("passes of the worst shared-memory access: 1 no bank conflict, 32 a "
                           "32-way one (%1)")
                            .arg(counted));
      setAxisLabel(yAxis, tr("loads per element of C; passes per warp access"), tr("count"));
      setAxisLabel(xAxis,
                   tr("GEMM kernel, %1 × %1 × %1, blocks of 32 × 32 threads (column: tiled, a "
                      "warp's lanes down a column of C; padded: tile rows of 33 floats)")
                       .arg(r.elements),
                   tr("GEMM kernel"));
      setSubtitle(tr("The GEMM on the GPU, %1 · a 32 × 32 tile in shared memory serves each "
                     "float it loads to 32 threads; a bank serves one word per pass")
                      .arg(counted));
    } else {
      m_shared->setName(tr("128-byte lines per warp load (%1)").arg(counted));
      m_padded->setName(tr("32-byte sectors per warp load (%1)").arg(counted));
      setAxisLabel(yAxis, tr("touched by one warp's load of 32 floats"), tr("per warp load"));
      setAxisLabel(xAxis, tr("stride: floats between neighbouring threads' loads"), tr("stride"));
      setSubtitle(tr("Coalescing, %1 · a copy of %L2 floats, the source read at each stride")
                      .arg(counted)
                      .arg(r.elements));
    }
    m_shared->addToLegend();
    m_padded->addToLegend();
  }
  setTickNames(names);
  xAxis->setRange(0.4, n + 0.6);
  yAxis->setRange(0, top * 1.2);
}

void BenchChart::showGil(const teach::GilResult& r, int repeats) {
  using namespace chartcolors;
  if (!r.notRun.empty()) {
    setSubtitle(tr("The GIL: not run · %1").arg(QString::fromStdString(r.notRun)));
    return;
  }
  QStringList names;
  double top = double(r.cores);
  for (size_t i = 0; i < r.points.size(); ++i) {
    const teach::GilPoint& p = r.points[i];
    const double x = double(i + 1);
    names << QString::number(p.workers);
    m_shared->addData(x, p.threadsSpeedup);
    m_padded->addData(x, p.processesSpeedup);
    addValueLabel(x - 0.2, p.threadsSpeedup, QString::number(p.threadsSpeedup, 'f', 2), kRed);
    addValueLabel(x + 0.2, p.processesSpeedup, QString::number(p.processesSpeedup, 'f', 2), kBlue);
    top = std::max({top, p.threadsSpeedup, p.processesSpeedup});
  }
  m_shared->setName(tr("threads (measured)"));
  m_padded->setName(tr("processes (measured)"));
  m_shared->addToLegend();
  m_padded->addToLegend();
  const double n = double(r.points.size());
  m_peak->addData(0.4, r.cores);
  m_peak->addData(n + 0.6, r.cores);
  m_peak->setName(tr("this machine's %n core(s): the most any workers can show", "", r.cores));
  m_peak->addToLegend();
  setTickNames(names);
  xAxis->setRange(0.4, n + 0.6);
  yAxis->setRange(0, top * 1.2);
  setAxisLabel(xAxis, tr("workers (threads or processes)"), tr("workers"));
  setAxisLabel(yAxis, tr("speedup: the one-worker time over this one"), tr("speedup"));
  const double first = r.points.empty() ? 0 : r.points.front().threadsSeconds;
  setSubtitle(tr("The GIL, measured: %L1 steps of a pure-Python loop in all, split over the "
                 "workers, %2 · one worker %3 s · median of %4 runs · %n core(s) here: no count "
                 "of workers above it can run at once",
                 "", r.cores)
                  .arg(r.iterations)
                  .arg(QString::fromStdString(r.python))
                  .arg(first, 0, 'f', 2)
                  .arg(repeats) +
              (r.cancelled ? tr(" · cancelled before the end") : QString()));
}

}  // namespace paralab
