// The input layer of a GPT on the CPU: token embedding plus learned position embedding
// (GPT-2's wte and wpe). Stateless, float and double (the gradient checks run in double).
// See tests/kernels/tst_attention_gradcheck.cpp.
#pragma once

namespace paralab::kernels {

// out[b*T + t, :] = wte[tokens[b*T + t], :] + wpe[t, :]
// out [B*T, C]; tokens [B*T], each in [0, V); wte [V, C]; wpe [maxT, C] with T <= maxT.
template <typename Real>
void embedding_forward(Real* out, const int* tokens, const Real* wte, const Real* wpe, int B, int T,
                       int C);

// Accumulates (+=): dwte[tokens[b*T + t], :] += dout[b*T + t, :] (a token seen twice collects
// twice; rows of tokens not in the batch are left alone) and dwpe[t, :] += sum_b dout[b*T + t, :].
template <typename Real>
void embedding_backward(Real* dwte, Real* dwpe, const Real* dout, const int* tokens, int B, int T,
                        int C);

}  // namespace paralab::kernels
