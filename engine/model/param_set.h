// ParamSet: all of a model's parameters in one flat buffer, and their gradients in another
// of the same layout. Each weight is a named range. Flat buffers are what data parallelism
// all-reduces, buckets and ZeRO shards. See tests/engine/tst_model.cpp.
#pragma once
#include <string>
#include <vector>

#include "tensor.h"

namespace paralab {

struct ParamRef {
  std::string name;   // "block1.fc1.weight"
  int64_t offset = 0; // floats from the start of the flat buffer
  Shape shape;
  int64_t numel() const { return numelOf(shape); }
};

class ParamSet {
 public:
  // Declare the layout first, then allocate once.
  int add(std::string name, Shape shape);
  void allocate(MemoryTracker* tracker);

  float* param(int i) { return m_params.data() + m_refs[i].offset; }
  float* grad(int i) { return m_grads.data() + m_refs[i].offset; }
  const ParamRef& ref(int i) const { return m_refs[i]; }
  const std::vector<ParamRef>& refs() const { return m_refs; }
  int64_t numel() const { return m_numel; }
  Tensor& params() { return m_params; }
  Tensor& grads() { return m_grads; }
  void zeroGrads() { m_grads.zero(); }

 private:
  std::vector<ParamRef> m_refs;
  int64_t m_numel = 0;
  Tensor m_params, m_grads;
};

}  // namespace paralab
