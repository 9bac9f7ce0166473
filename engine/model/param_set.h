// ParamSet: all of a model's parameters in one flat buffer, and their gradients in another
// of the same layout. Each weight is a named range; consecutive weights form units (a layer
// or block: what hooks, gradient buckets, ZeRO shards and pipeline stages work on). Flat
// buffers are what data parallelism all-reduces; sharding strategies re-point a unit at
// buffers of their own. The buffers live on the device of the rank's Compute, which the layers
// read from here (its GEMM and kernels). See tests/engine/tst_model.cpp.
#pragma once
#include <string>
#include <vector>

#include "tensor.h"

namespace paralab {

class Compute;

struct ParamRef {
  std::string name;   // "block1.fc1.weight"
  int64_t offset = 0; // floats from the start of the flat buffer
  Shape shape;
  int unit = 0;
  int64_t numel() const { return numelOf(shape); }
};

// A contiguous range [begin, end) of the flat buffer holding weights [firstRef, endRef).
struct ParamUnit {
  std::string name;  // "in_proj", "block0", "classifier"
  int64_t begin = 0, end = 0;
  int firstRef = 0, endRef = 0;
  int64_t numel() const { return end - begin; }
};

class ParamSet {
 public:
  // Declare the layout first (units, then their weights), then allocate once.
  void beginUnit(std::string name);
  int add(std::string name, Shape shape);
  // On `compute`'s device (null: the CPU with the vendor GEMM, Compute::host()).
  void allocate(MemoryTracker* tracker, const Compute* compute = nullptr);
  const Compute& compute() const;
  // Frees the flat buffers (a sharding strategy that keeps only its shard); units must then
  // be bound before use.
  void releaseFlat();
  // Points unit u's parameters and gradients at buffers laid out like the unit's range of the
  // flat buffer (either may be null: unbound). bindFlat() returns every unit to the flat buffers.
  void bindUnit(int u, float* params, float* grads);
  // The same for the weights in [begin, end) of the flat layout (a range of whole weights).
  void bindRange(int64_t begin, int64_t end, float* params, float* grads);
  void bindFlat();

  float* param(int i) { return m_paramPtr[size_t(i)]; }
  float* grad(int i) { return m_gradPtr[size_t(i)]; }
  const ParamRef& ref(int i) const { return m_refs[size_t(i)]; }
  const std::vector<ParamRef>& refs() const { return m_refs; }
  const std::vector<ParamUnit>& units() const { return m_units; }
  int64_t numel() const { return m_numel; }
  Tensor& params() { return m_params; }
  Tensor& grads() { return m_grads; }
  void zeroGrads() { m_grads.zero(); }
  // Mixed precision: the dtype the parameters the layers read hold (rounded from the fp32
  // master, train/precision.h) and the layers' kept activations with them; set with the
  // model's (Model::storeActivationsIn). Linear reads it (layers.h: forwardGemmInBf16).
  void storeIn(Dtype d) { m_stored = d; }
  Dtype stored() const { return m_stored; }

 private:
  std::vector<ParamRef> m_refs;
  std::vector<ParamUnit> m_units;
  std::vector<float*> m_paramPtr, m_gradPtr;
  int64_t m_numel = 0;
  Tensor m_params, m_grads;
  const Compute* m_compute = nullptr;  // set by allocate
  Dtype m_stored = Dtype::Fp32;        // storeIn
};

}  // namespace paralab
