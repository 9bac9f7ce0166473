// The model-parallel tests' layouts, written as words: "dp2 tp2 pp2 sp gpipe M3 zero1 adam" on
// top of a base configuration ("per-tensor" or "bucket0.02" set --dp-version and --bucket-mb);
// "cp2" and "contiguous" set context parallelism and its chunks, "selective" and "full" the
// GPT's recomputation; ranks = dp x tp x pp x cp.
// Used by tst_model_parallel, tst_cuda_model_parallel, tst_grad_sync and tst_context_parallel.
#pragma once
#include <QString>
#include <QtGlobal>
#include <algorithm>

#include "config.h"

namespace paralab::test {

inline RunConfig withLayout(RunConfig c, const QString& spec) {
  for (const QString& w : spec.split(' ', Qt::SkipEmptyParts)) {
    if (w == "tp-overlap")  // before "tp<N>"
      c.tpOverlap = true;
    else if (w.startsWith("dp"))
      c.dp = w.mid(2).toInt();
    else if (w.startsWith("tp"))
      c.tp = w.mid(2).toInt();
    else if (w.startsWith("pp"))
      c.pp = w.mid(2).toInt();
    else if (w.startsWith("M"))
      c.microbatches = w.mid(1).toInt();
    else if (w.startsWith("B"))
      c.batch = w.mid(1).toInt();
    else if (w.startsWith("L"))
      c.layers = w.mid(1).toInt();
    else if (w.startsWith("H"))
      c.hidden = w.mid(1).toInt();
    else if (w == "sp")
      c.sp = true;
    else if (w == "gpipe" || w == "1f1b")
      c.schedule = w.toStdString();
    else if (w.startsWith("zero"))
      c.zero = w.mid(4).toInt();
    else if (w == "per-tensor")
      c.dpVersion = DpVersion::PerTensor;
    else if (w.startsWith("bucket"))  // "bucket0.02": buckets of 0.02 MiB
      c.dpVersion = DpVersion::Bucket, c.bucketMb = w.size() > 6 ? w.mid(6).toDouble() : c.bucketMb;
    else if (w == "ring")
      c.allreduce = "ring";
    else if (w == "adam")
      c.optimizer = "adam", c.lr = 0.002;
    else if (w == "cpu")
      c.device = Device::Cpu;
    else if (w.startsWith("cp"))
      c.cp = w.mid(2).toInt();
    else if (w == "contiguous")
      c.cpOrder = CpOrder::Contiguous;
    else if (w == "selective" || w == "full")  // the GPT's --recompute
      c.recompute = recomputeFromName(w.toStdString());
    else
      qFatal("bad layout word %s", qPrintable(w));
  }
  c.ranks = std::max(c.dp, 1) * c.modelSplit();
  return c;
}

}  // namespace paralab::test
