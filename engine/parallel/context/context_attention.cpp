// The attention context parallelism runs, by kind (see context_attention.h).
// See tests/engine/tst_context_ulysses.cpp.
#include "parallel/context/context_attention.h"

#include "parallel/context/ring_attention.h"
#include "parallel/context/ulysses_attention.h"

namespace paralab {

std::unique_ptr<ContextAttention> makeContextAttention(CpKind kind, Communicator& cp, int seq,
                                                       bool zigzag, int heads, int width,
                                                       Compute& compute, MemoryTracker* memory,
                                                       SpanRecorder* spans) {
  if (kind == CpKind::Ulysses)
    return std::make_unique<UlyssesAttention>(cp, seq, zigzag, heads, width, compute, memory,
                                              spans);
  return std::make_unique<RingAttention>(cp, seq, zigzag, heads, width, compute, memory, spans);
}

}  // namespace paralab
