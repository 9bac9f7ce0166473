// What the pipeline tests share: a rank's point-to-point traffic on the pipeline group.
// Used by tst_pipeline_interleaved and tst_pipeline_zero_bubble.
#pragma once
#include <cstdint>

#include "comm/comm_traffic.h"

namespace paralab::test {

// Bytes of `op` (Send or Recv) on the "pp" group in `t`; adds its calls to *calls.
inline int64_t pipelineBytes(const CommTraffic& t, CommOp op, int64_t* calls) {
  int64_t bytes = 0;
  for (const CommOpTotals& o : t.ops)
    if (o.op == op && o.group == "pp") bytes += o.bytes, *calls += o.calls;
  return bytes;
}

}  // namespace paralab::test
