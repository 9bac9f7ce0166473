// The row-wise math of a mixture-of-experts layer on the CPU: the router's softmax and top-k,
// and moving token rows to and from experts (gather, weighted scatter-add, per-row dot).
// Stateless, float and double, row-major [rows, cols]. Used by engine/model/moe.cpp;
// checked through its gradient test, tests/engine/tst_moe.cpp.
#pragma once

namespace paralab::kernels {

// p[r, :] = softmax(x[r, :]), the row maximum subtracted first. In place allowed (p == x).
template <typename T>
void softmax_rows(T* p, const T* x, int rows, int cols);
// dx[r, c] = p[r, c] (dp[r, c] - sum_c' p[r, c'] dp[r, c']): the softmax Jacobian applied to
// dp. In place allowed (dx == dp).
template <typename T>
void softmax_rows_backward(T* dx, const T* p, const T* dp, int rows, int cols);
// idx[r, 0..k): the columns of the k largest entries of row r, largest first; equal values go
// to the lower column, so every rank that sees the same row picks the same experts.
template <typename T>
void topk_rows(int* idx, const T* x, int rows, int cols, int k);

// Gates of the chosen experts idx[r, 0..k) from the router probabilities p [rows, cols]:
// k = 1 takes the raw probability (Switch, Fedus et al. 2021: the router learns through it);
// k > 1 renormalises the k chosen to sum to 1 (GShard's top-2, Mixtral).
template <typename T>
void topk_gates(T* gate, const T* p, const int* idx, int rows, int cols, int k);
// Adds to dlogits [rows, cols] the gradient that dgate [rows, k] sends back through topk_gates
// and the router's softmax (p = softmax(logits)). k = 1, gate = p_i: dlogit_c += dgate p_i
// (delta_ci - p_c). k > 1: the renormalised gates are a softmax over the k chosen logits alone,
// so dlogit_{i_j} += gate_j (dgate_j - sum_m gate_m dgate_m) and the other logits get exactly
// nothing. (Through the full softmax they would get p_c times a sum that is zero only up to
// rounding: noise that Adam, dividing by its own running size, turns into full steps that
// differ between a serial and a parallel run.)
template <typename T>
void topk_gates_backward(T* dlogits, const T* p, const int* idx, const T* gate, const T* dgate,
                         int rows, int cols, int k);

// [SECTION] Expert capacity (GShard, Lepikhin et al. 2020). Expert e takes at most C of the
// (token, choice) pairs routed to it, by priority: every token's first choice before any second
// choice, then the global token order. counts [groups][k][experts]: pairs of each group of
// tokens (ranks' shards, in global token order) per choice and expert.
// The priority position of the first of group g's choice-j pairs for expert e.
long capacity_ahead(const float* counts, int groups, int k, int experts, int g, int j, int e);
// How many of those pairs expert e keeps: clamp(C - ahead, 0, count).
long capacity_kept(const float* counts, int groups, int k, int experts, int g, int j, int e,
                   long capacity);
// kept[t, j] = 0 for group g's pairs over capacity (choice [rows, k]); returns how many.
long capacity_drop(unsigned char* kept, const int* choice, int rows, int k, const float* counts,
                   int groups, int g, int experts, long capacity);

// [SECTION] Dispatch plans.
// The kept (token, choice) pairs in the order they are sent: by expert (so by the rank holding
// it), then choice, then token. tok[i], slot[i] = t * k + j; count[e] (+=) pairs per expert.
void dispatch_order(int* tok, int* slot, long* count, const int* choice, const unsigned char* kept,
                    int rows, int k, int experts);
// Received rows arrive member by member, each member's rows by expert; from[q * local + i] is
// member q's rows for local expert i. perm[r] = the arrival index of expert-major row r
// (expert, then member); unperm is its inverse.
void expert_major_perm(int* perm, int* unperm, const long* from, int members, int local);

// [SECTION] Moving token rows.
// dst[i, :] = src[index[i], :] for i < n.
template <typename T>
void gather_rows(T* dst, const T* src, const int* index, long n, int cols);
// dst[index[i], :] += scale[i] * src[i, :] for i < n (scale null: 1). Rows of dst may repeat
// in index (a token sent to k experts gets k rows back); they are added in order of i.
template <typename T>
void scatter_add_rows(T* dst, const T* src, const int* index, const T* scale, long n, int cols);
// out[i] = <a[index[i], :], b[i, :]> for i < n, accumulated in double.
template <typename T>
void dot_rows(T* out, const T* a, const int* index, const T* b, long n, int cols);

}  // namespace paralab::kernels
