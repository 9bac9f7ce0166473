// Layouts side by side on a cluster (see layout_projection.h): projection::project() at each tp.
// See tests/engine/tst_teach_roofline.cpp and `paralab-bench layouts`.
#include "teach/layout_projection.h"

#include "model/gpt.h"

namespace paralab::teach {

double LayoutPoint::tpShare() const {
  const double step = projection.split.total();
  return projected && step > 0 ? projection.split.tpComm / step : 0;
}

LayoutProjection runLayoutProjection(const LayoutProjectionOptions& o) {
  using namespace projection;
  LayoutProjection out;
  out.cluster.gpu = loadGpu(o.gpu);
  out.cluster.gpus = o.gpus;
  out.cluster.gpusPerNode = o.gpusPerNode;
  out.cluster.nodeLink = parseNodeLink(o.nodeLink);
  ModelSpec& m = out.model;
  m.kind = ModelSpec::Kind::Gpt;
  m.layers = o.layers, m.hidden = o.hidden, m.heads = o.heads, m.seq = o.seq, m.vocab = o.vocab;
  Layout layout;
  layout.pp = o.pp;
  layout.globalBatch = o.batch;
  layout.zero = 1;  // the optimizer's state sharded over the replicas (Megatron's distributed optimizer)
  layout.recompute = recomputeFromName(o.recompute);
  for (int tp : o.tps) {
    LayoutPoint point;
    point.tp = tp;
    Layout l = layout;
    l.tp = tp;
    if (auto why = validate(m, l, out.cluster)) {
      point.refused = *why;
      out.points.push_back(point);
      continue;
    }
    point.projection = project(m, l, out.cluster);
    point.projected = true;
    const Layout& r = point.projection.layout;  // resolved: dp and micro-batches filled in
    const GridShape grid{r.dp, r.tp, r.pp, r.ep, r.cp};
    point.tpNodes = placeGroup(grid, Axis::Tp, out.cluster.gpusPerNode).nodes;
    point.tpAllReduceBytes =
        double(r.microBatchSize) * m.seq / r.cp * m.hidden * elementBytes(r.precision);
    point.tpAllReduceSeconds = collectiveSeconds(Collective::AllReduce, point.tpAllReduceBytes,
                                                 r.tp, point.projection.tpLink);
    out.points.push_back(point);
  }
  return out;
}

}  // namespace paralab::teach
