// Megatron's tensor-parallel pair, once for every model's stage (Shoeybi et al. 2019): a
// column-parallel layer then a row-parallel one over the tp group, with sequence parallelism's
// split of the rest of the block by rows (Korthikanti et al. 2022). The MLP's stage
// (tensor_parallel.cpp) and the GPT's (gpt_parallel.cpp) call these for every exchange.
// See tests/engine/tst_model_parallel.cpp and tst_gpt.cpp (equal to serial; traffic).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "parallel/pipeline/stage.h"

namespace paralab {

// The column-parallel layer (rank t keeps output columns t of T) reads every row of its input
// and leaves the rank's own columns, on which elementwise work (GELU, attention on the rank's
// heads) runs alone; the row-parallel layer (the matching input rows) leaves a partial sum of
// the output. Only that sum is exchanged, per pair and micro-batch of `full` rows of `width`:
//   TP: forward an all-reduce of the row-parallel layer's partial outputs ("g" in the paper);
//       backward an all-reduce of the column-parallel layer's partial input gradients ("f").
//       The region outside the pair (LayerNorm, residual) is replicated: every rank computes
//       the same values there, so its weights' gradients agree without an exchange.
//   SP: that region is split by rows, rank t keeping rows t of T (`local` = full / T from
//       `first`), and each all-reduce becomes its two halves where the split begins and ends:
//       forward an all-gather before the column-parallel layer and a reduce-scatter after the
//       row-parallel one; backward an all-gather of the output gradient before the row-parallel
//       layer and a reduce-scatter after the column-parallel one. The same bytes as TP's
//       all-reduces (ring: all-reduce = reduce-scatter + all-gather); the split region takes
//       1/T of the memory. Megatron drops the gathered input and gathers it again in backward;
//       the stages keep it, so the bytes stay equal to TP's. The split region's LayerNorm
//       weights see the rank's rows only: their gradients are summed over the group once per
//       step (sumNormGradients).
class ColumnRowStage : public Stage {
 public:
  using Stage::Stage;
  // --tp-overlap (with SP): the pair's collectives cut into ring steps beside their GEMMs
  // (tp_overlap.cpp).
  void setTpOverlap(bool on);

 protected:
  // [SECTION] Each exchange with the layer beside it (tp_overlap.cpp). Without --tp-overlap:
  // the exchange, then the layer on every row at once; with it, the layer row block by row
  // block, each block's compute under the next block's transfer.
  // The column-parallel side: `use(all, row0, rows)` computes on rows [row0, row0 + rows) of
  // `all` [full, width], which gatherRows(mine, all, ...) fills; returns `all` (TP: `mine`).
  using OnRows = std::function<void(const float* all, int64_t row0, int rows)>;
  // `at`: where the layer's compute spans go (the stage's step, forward or backward work — a
  // recomputed forward is backward work — and the micro-batch).
  struct SpanAt {
    int64_t step = 0;
    SpanKind kind = SpanKind::Forward;
    int micro = 0;
  };
  const float* gatherThenCompute(const SpanAt& at, const float* mine, float* all,
                                 const MicroRows& r, int64_t width, const OnRows& use);
  // The row-parallel side: `make(row0, rows, dst)` writes this rank's partial sums of rows
  // [row0, row0 + rows) at `dst` (`rows` x `width`); their sum over the group, this rank's rows,
  // ends in `local`, which it returns. `partial` [full, width] is scratch (TP: it is `local`,
  // summed in place) — the buffers sumRows and sumPartialGradient take.
  using MakeRows = std::function<void(int64_t row0, int rows, float* dst)>;
  float* computeThenSum(const SpanAt& at, float* partial, float* local, const MicroRows& r,
                        int64_t width, const MakeRows& make);

  // SP: the split of a micro-batch's `full` rows, rounded up to a multiple of T so that
  // reduce-scatter gets equal blocks (padding rows are zero and get zero gradients): `local`
  // = full / T from `first` = tp rank x local. Else `r` as it is.
  MicroRows splitRows(MicroRows r) const;
  // SP: this rank's rows of a whole [full, width] buffer every rank computed alike, into
  // `mine` [local, width]; else nothing (`all` is `mine`).
  void keepOwnRows(float* mine, const float* all, const MicroRows& r, int64_t width) const;
  // Every row of a split region for the column-parallel layer (or the replicated layers at a
  // region's end): SP all-gathers the rank's `local` rows of `width` floats at `mine` into
  // `all` and returns it (in place when `mine` is the rank's block of `all`); else `mine`.
  const float* gatherRows(const float* mine, float* all, const MicroRows& r, int64_t width) const;
  // The gradient rows `mine` [local, width] as the GEMM that reads every row wants them, kept
  // at `keep` [full, width] for its weight gradient (the backward's W, which may run after B
  // has moved on): SP all-gathers them there, else copies them. Returns `keep`.
  float* keepRows(const float* mine, float* keep, const MicroRows& r, int64_t width) const;
  // Where the row-parallel layer writes its partial output: SP `scratch` [full, width], to be
  // reduce-scattered into `out`; else `out` itself, summed in place.
  float* partialOutput(float* out, float* scratch) const { return m_sp ? scratch : out; }
  // The sum over the group of the partial rows at `partial`, this rank's rows of it in `local`:
  // SP reduce-scatters [full] into [local]; TP all-reduces `local` (= `partial`) in place.
  void sumRows(float* partial, float* local, const MicroRows& r, int64_t width) const;
  // The same for a partial gradient the column-parallel layer wrote at `partial` [full, width]:
  // returns where the rank's rows of the sum are (SP: `scratch`, else `partial`).
  float* sumPartialGradient(float* partial, float* scratch, const MicroRows& r,
                            int64_t width) const;
  // SP, after the data-parallel sum: each LayerNorm at `offsets` of the ParamSet (gamma then
  // beta, `width` floats each) has gradients of the rank's rows only; sum them over the group
  // where `sync` holds them (ZeRO: the owned chunk's share, the same on every tp rank).
  void sumNormGradients(GradSync& sync, const std::vector<int64_t>& offsets, int64_t width) const;

 private:
  // One ring step of --tp-overlap: pass `count` floats at `send` to the next tp rank, take the
  // previous rank's into `recv` (tp_overlap.cpp).
  void ringSend(const float* send, int64_t count, int64_t step, const char* label) const;
  void ringRecv(float* recv, int64_t count) const;
  void ringExchange(const float* send, float* recv, int64_t count, int64_t step,
                    const char* label) const;
  bool m_tpOverlap = false;
  bool m_posted = false;  // sends return at once (thread ranks): the ring overlaps the compute
};

}  // namespace paralab
