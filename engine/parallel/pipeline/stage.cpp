// The stage of a shard, whichever model it is (see stage.h).
#include "parallel/pipeline/stage.h"

#include <stdexcept>

#include "comm/communicator.h"
#include "device/compute.h"
#include "model/gpt.h"
#include "model/mlp.h"
#include "parallel/tensor/gpt_parallel.h"
#include "parallel/tensor/tensor_parallel.h"
#include "train/precision.h"

namespace paralab {

Stage::Stage(Communicator& tp, bool sp, Compute& compute, MemoryTracker* memory,
             SpanRecorder* spans)
    : m_tp(tp),
      m_sp(sp && tp.size() > 1),
      m_T(tp.size()),
      m_compute(compute),
      m_memory(memory),
      m_spans(spans) {}

std::unique_ptr<MicroActs> Stage::allocate(int micro, int samples, MemoryTracker* memory) const {
  return layout(micro, samples, [&](Shape s) {
    return m_compute.tensor(std::move(s), MemCategory::Activations, memory);
  });
}

int64_t Stage::microBytes(int samples) const {
  return layout(0, samples, [](const Shape&) { return Tensor(); })->bytes;
}

void Stage::begin(MicroActs& m, int micro, int samples) const {
  m.micro = micro;
  m.r = rowsOf(samples);
  m.capacity = samples;
}

void Stage::eachBlock(int blocks, int firstUnit, bool forward, UnitHooks* hooks,
                      const std::function<void(int)>& run) {
  for (int i = 0; i < blocks; ++i) {
    const int j = forward ? i : blocks - 1 - i, unit = firstUnit + j;
    if (hooks) forward ? hooks->beforeForward(unit) : hooks->beforeBackward(unit);
    run(j);
    if (hooks) forward ? hooks->afterForward(unit) : hooks->afterBackward(unit);
  }
}

void Stage::inUnit(int unit, bool weight, UnitHooks* hooks, const std::function<void()>& run) {
  if (hooks) weight ? hooks->beforeBackward(unit) : hooks->beforeForward(unit);
  run();
  if (hooks) weight ? hooks->afterBackward(unit) : hooks->afterForward(unit);
}

void Stage::eachBlockBack(int blocks, int firstUnit, bool weight, UnitHooks* hooks,
                          const std::function<void(int)>& run) {
  for (int j = blocks - 1; j >= 0; --j) inUnit(firstUnit + j, weight, hooks, [&] { run(j); });
}

void Stage::ready() const { m_compute.sync(); }

void Stage::stored(float* values, int64_t n) const {
  roundStored(m_compute, m_stored, values, n);  // on the rank's device
}

Tensor Stage::fp32(const std::function<Tensor(Shape)>& make, Shape s) const {
  Fp32Allocations wide(m_memory);  // allocate() counts on the rank's tracker, as the stage does
  return make(std::move(s));
}

Device Stage::device() const { return m_compute.device(); }

void Stage::reuse(MicroActs& m, int micro, int samples) const {
  if (samples > m.capacity) throw std::logic_error("Stage::reuse: buffers too small");
  m.micro = micro;
  m.r = rowsOf(samples);
}

std::unique_ptr<Stage> makeStage(Model& shard, Communicator& tp, bool sp, Compute& compute,
                                 MemoryTracker* memory, SpanRecorder* spans, Communicator* cp,
                                 bool zigzag, CpKind cpKind) {
  if (cp && cp->size() > 1 && !dynamic_cast<Gpt*>(&shard))
    throw std::invalid_argument("cp: context parallelism splits the GPT's windows only");
  if (auto* mlp = dynamic_cast<Mlp*>(&shard))
    return std::make_unique<TensorParallelStage>(*mlp, tp, sp, compute, memory, spans);
  if (auto* gpt = dynamic_cast<Gpt*>(&shard))
    return std::make_unique<GptStage>(*gpt, tp, sp, compute, memory, spans, cp, zigzag,
                                      cpKind);
  throw std::invalid_argument("makeStage: the model has no pipeline stage");
}

}  // namespace paralab
