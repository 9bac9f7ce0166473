// Activation recomputation as a value: the window's settings, the projection's memory model and
// the GPT (model/gpt.h) name it with this one enum. See tests/engine/tst_gpt.cpp.
#pragma once
#include <string>

namespace paralab {

// Activation recomputation (Chen et al. 2016; Korthikanti et al. 2022): what the forward keeps
// for the backward. none: every block's activations. selective: all but attention's
// probabilities (the B NH T^2 term, which grows with the context), recomputed from qkv before
// each block's backward. full: only each block's input, the block's forward run again in its
// backward. What is not kept lives in one block's buffers, counted as workspace.
enum class Recompute { None, Selective, Full };
// "none", "selective", "full"; std::invalid_argument for another name.
Recompute recomputeFromName(const std::string& name);

}  // namespace paralab
