// The model-parallel tests' layouts, written as words: "dp2 tp2 pp2 sp gpipe M3 zero1 adam" on
// top of a base configuration; ranks = dp x tp x pp. Used by tst_model_parallel and
// tst_cuda_model_parallel.
#pragma once
#include <QString>
#include <QtGlobal>
#include <algorithm>

#include "config.h"

namespace paralab::test {

inline RunConfig withLayout(RunConfig c, const QString& spec) {
  for (const QString& w : spec.split(' ', Qt::SkipEmptyParts)) {
    if (w.startsWith("dp"))
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
    else if (w == "zero1")
      c.zero = 1;
    else if (w == "ring")
      c.allreduce = "ring";
    else if (w == "adam")
      c.optimizer = "adam", c.lr = 0.002;
    else if (w == "cpu")
      c.device = "cpu";
    else
      qFatal("bad layout word %s", qPrintable(w));
  }
  c.ranks = std::max(c.dp, 1) * c.tp * c.pp;
  return c;
}

}  // namespace paralab::test
