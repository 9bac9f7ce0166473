// Causal multi-head attention one K/V block at a time on the GPU, float, device pointers: the
// same shapes, layouts, formulas and semantics as cpu/attention_blocks.h (read that first),
// for ring attention's folds (engine/parallel/context/ring_attention.h) on a rank's GPU. The first rung
// of a ladder, like the naive kernels of cuda/attention.h: a thread block takes one sequence
// b, one head h and a tile of 32 rows (query rows, or for dK/dV key rows), one thread per row,
// each thread looping over the keys (queries) that row sees in the CPU's order. Nothing is
// shared between threads: no shared memory, no barriers, no atomics, and every sum runs in the
// CPU's order, so results repeat bit for bit from run to run. A thread keeps no row of scores:
// the forward scores each key twice (once for the row's max, once for exp), the backward
// recomputes P from the saved lse as the CPU does. Every launcher enqueues on `stream` (a
// cudaStream_t; nullptr: the default stream), returns without waiting, and throws
// std::runtime_error on a CUDA error. Built as attention_blocks.cu with CUDA, else
// attention_blocks_stub.cpp (every call throws "built without CUDA").
// See tests/kernels/tst_cuda_kernels.cpp (attentionBlocks, against cpu/attention_blocks.h).
#pragma once

namespace paralab::kernels {

// o = 0, m = -inf, l = 0 (cpu: attention_blocks_init).
void attention_blocks_init_cuda(float* o, float* m, float* l, int B, int Tq, int NH, int hs,
                                void* stream = nullptr);

// Folds the K/V block (positions k0 .. k0+Tk-1) into the accumulators of the query chunk
// (positions q0 .. q0+Tq-1), as attention_block_forward does; no scratch (see above). A block
// wholly in the chunk's future launches nothing. Returns the visible (query, key) pairs per
// sequence and head, counted on the host (attention_block_pairs): 0 exactly when skipped.
long attention_block_forward_cuda(float* o, float* m, float* l, const float* q, int ldq,
                                  const float* k, const float* v, int ldkv, int B, int NH, int hs,
                                  int q0, int Tq, int k0, int Tk, void* stream = nullptr);

// out = o / l, lse = m + log(l) (lse may be nullptr); in place allowed (out == o, lse == m).
void attention_blocks_finish_cuda(float* out, float* lse, const float* o, const float* m,
                                  const float* l, int B, int Tq, int NH, int hs,
                                  void* stream = nullptr);

// D [B, NH, Tq] = dout . out per query and head.
void attention_blocks_delta_cuda(float* D, const float* out, const float* dout, int B, int Tq,
                                 int NH, int hs, void* stream = nullptr);

// Adds (+=) the block's share of dq (query chunk's rows) and of dk, dv (the block's rows), as
// attention_block_backward does. Two launches: dq one thread per query row gathering over its
// visible keys, then dk and dv one thread per key row gathering over the queries that see it;
// each output row is written by one thread only, so dq and dk/dv may be columns of one dqkv
// array (the diagonal block). A future block launches nothing; returns the forward's pairs.
long attention_block_backward_cuda(float* dq, float* dk, float* dv, const float* dout,
                                   const float* lse, const float* D, const float* q, int ldq,
                                   const float* k, const float* v, int ldkv, int B, int NH,
                                   int hs, int q0, int Tq, int k0, int Tk, void* stream = nullptr);

// [SECTION] Strided rows, for the ring's K/V pack and the dK/dV that comes home:
// dst[r*ldd + c] = src[r*lds + c] (rows_copy_cuda) or += (rows_add_cuda), for r < rows and
// c < cols; one thread per element. dst and src must not overlap.
void rows_copy_cuda(float* dst, int ldd, const float* src, int lds, long rows, int cols,
                    void* stream = nullptr);
void rows_add_cuda(float* dst, int ldd, const float* src, int lds, long rows, int cols,
                   void* stream = nullptr);

}  // namespace paralab::kernels
