// porta ops — what LSTM and GRU share: input checking, output shapes, directions and
// sequence lengths, in both ONNX layouts: 0 (X [seq, batch, input], Y [seq, dirs, batch,
// hidden], states [dirs, batch, hidden]) and 1 (X [batch, seq, input], Y [batch, seq, dirs,
// hidden], states [batch, dirs, hidden]).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "porta/op.hpp"

namespace porta::opdef {

struct RnnDims {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, directions = 1;
  int64_t layout = 0;
  /// Row of X (a row holds `input` elements) at time t of batch entry b.
  int64_t x_row(int64_t t, int64_t b) const { return layout ? b * seq + t : t * batch + b; }
  /// Element offset of Y's hidden vector at time t, direction d, batch entry b.
  int64_t y_offset(int64_t t, int64_t d, int64_t b) const {
    return (layout ? (b * seq + t) * directions + d : (t * directions + d) * batch + b) * hidden;
  }
  /// Element offset of a state's (initial_h/c, Y_h, Y_c) hidden vector of direction d, entry b.
  int64_t state_offset(int64_t d, int64_t b) const {
    return (layout ? b * directions + d : d * batch + b) * hidden;
  }
};

/// Checks an LSTM (gates = 4) or GRU (gates = 3) call's inputs and attributes and sets the
/// outputs Y, Y_h and (LSTM) Y_c in the layout the `layout` attribute names.
/// Input order: X, W, R, B, sequence_lens, initial_h, then (LSTM) initial_c, P.
/// Non-default activations and input_forget 1 are Unsupported.
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
