// porta ops — what LSTM and GRU share: input checking, output shapes, directions and
// sequence lengths (ONNX layout 0: X is [seq, batch, input]).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "porta/op.hpp"

namespace porta::opdef {

struct RnnDims {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, directions = 1;
};

/// Checks an LSTM (gates = 4) or GRU (gates = 3) call's inputs and attributes and sets the
/// outputs Y [seq, dirs, batch, hidden], Y_h and (LSTM) Y_c [dirs, batch, hidden].
/// Input order: X, W, R, B, sequence_lens, initial_h, then (LSTM) initial_c, P.
/// Non-default activations, layout 1 and input_forget 1 are Unsupported.
void rnn_infer(InferContext& ctx, int gates);

/// Sizes of a call from its inputs (after rnn_infer accepted them).
RnnDims rnn_dims(const KernelContext& ctx);
/// Whether direction `d` of the call runs backwards in time.
bool rnn_reverse(const Attributes& attrs, int64_t d);
/// Per-batch sequence lengths: sequence_lens (input 4) when given, else seq for all;
/// each must lie in [0, seq] (ShapeError otherwise).
std::vector<int64_t> rnn_lengths(const KernelContext& ctx, const RnnDims& dims);
/// clip attribute, or +infinity when absent.
double rnn_clip(const Attributes& attrs);
/// Attributes shared by LSTM and GRU.
std::vector<AttrDef> rnn_attrs();

}  // namespace porta::opdef
