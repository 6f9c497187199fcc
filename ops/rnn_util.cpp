// porta ops — LSTM/GRU input checks and shapes.
#include "ops/rnn_util.hpp"

#include <limits>

#include "ops/common.hpp"
#include "ops/shape_util.hpp"

namespace porta::opdef {

std::vector<AttrDef> rnn_attrs() {
  return {attr_optional("activation_alpha", AttrType::Floats), attr_optional("activation_beta", AttrType::Floats),
          attr_optional("activations", AttrType::Strings),     attr_optional("clip", AttrType::Float),
          attr_string("direction", "forward"),                 attr_optional("hidden_size", AttrType::Int),
          attr_int("layout", 0)};
}

static void expect_shape(const InferContext& ctx, size_t i, const Shape& want) {
  if (!ctx.has_input(i)) return;
  if (ctx.shape(i) != want)
    throw ShapeError(str("[", ctx.op->name, "] expected ", ctx.op->inputs[i], " of shape ", shape_str(want),
                         ", got ", shape_str(ctx.shape(i))));
}

void rnn_infer(InferContext& ctx, int gates) {
  const std::string& op = ctx.op->name;
  const Attributes& a = *ctx.attrs;
  int64_t layout = a.get_int("layout");
  if (layout != 0 && layout != 1)
    throw ShapeError(str("[", op, "] expected layout 0 ([seq, batch, ...]) or 1 ([batch, seq, ...]), got ", layout));
  if (a.get_int("input_forget", 0) != 0)
    throw Unsupported(str("[", op, "] expected input_forget 0, got 1 (coupled gates are not implemented)"));
  if (a.has("activations")) {
    std::vector<std::string> want = gates == 4 ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                               : std::vector<std::string>{"Sigmoid", "Tanh"};
    const AttrValue* v = a.find("activations");
    const auto& got = std::get<std::vector<std::string>>(*v);
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i] != want[i % want.size()])
        throw Unsupported(str("[", op, "] expected the default activations (Sigmoid, Tanh",
                              gates == 4 ? ", Tanh" : "", "), got ", got[i], " at position ", i));
  }
  std::string dir = a.get_string("direction");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    throw ShapeError(str("[", op, "] expected direction forward, reverse or bidirectional, got '", dir, "'"));
  for (size_t i = 0; i < 3; ++i)
    if (ctx.shape(i).size() != 3)
      throw ShapeError(str("[", op, "] expected ", ctx.op->inputs[i], " of rank 3, got ", shape_str(ctx.shape(i))));
  require_dtype(ctx, 0, kF32 | kF64 | kF16 | kBF16);
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && i != 4 && ctx.dtype(i) != ctx.dtype(0))
      throw DTypeError(str("[", op, "] expected ", ctx.op->inputs[i], " of X's dtype ", dtype_name(ctx.dtype(0)),
                           ", got ", dtype_name(ctx.dtype(i))));
  if (ctx.has_input(4)) require_dtype(ctx, 4, kI32 | kI64);
  int64_t dirs = dir == "bidirectional" ? 2 : 1;
  int64_t seq = ctx.shape(0)[layout ? 1 : 0], batch = ctx.shape(0)[layout ? 0 : 1], input = ctx.shape(0)[2];
  int64_t hidden = ctx.shape(2)[2];
  if (a.has("hidden_size") && a.get_int("hidden_size") != hidden)
    throw ShapeError(str("[", op, "] expected hidden_size to match R's last dim ", hidden, ", got ",
                         a.get_int("hidden_size")));
  expect_shape(ctx, 1, {dirs, gates * hidden, input});
  expect_shape(ctx, 2, {dirs, gates * hidden, hidden});
  expect_shape(ctx, 3, {dirs, 2 * gates * hidden});
  const Shape state = layout ? Shape{batch, dirs, hidden} : Shape{dirs, batch, hidden};
  expect_shape(ctx, 4, {batch});
  expect_shape(ctx, 5, state);
  if (gates == 4) {
    expect_shape(ctx, 6, state);
    expect_shape(ctx, 7, {dirs, 3 * hidden});
  }
  ctx.set_output(0, layout ? Shape{batch, seq, dirs, hidden} : Shape{seq, dirs, batch, hidden}, ctx.dtype(0));
  ctx.set_output(1, state, ctx.dtype(0));
  if (gates == 4) ctx.set_output(2, state, ctx.dtype(0));
}

RnnDims rnn_dims(const KernelContext& ctx) {
  RnnDims d;
  d.layout = ctx.attrs->get_int("layout", 0);
  d.seq = ctx.in(0).shape()[d.layout ? 1 : 0];
  d.batch = ctx.in(0).shape()[d.layout ? 0 : 1];
  d.input = ctx.in(0).shape()[2];
  d.hidden = ctx.in(2).shape()[2];
  d.directions = ctx.in(1).shape()[0];
  return d;
}

bool rnn_reverse(const Attributes& attrs, int64_t d) {
  std::string dir = attrs.get_string("direction");
  return dir == "reverse" || (dir == "bidirectional" && d == 1);
}

std::vector<int64_t> rnn_lengths(const KernelContext& ctx, const RnnDims& dims) {
  if (!ctx.has_input(4)) return std::vector<int64_t>(static_cast<size_t>(dims.batch), dims.seq);
  std::vector<int64_t> lens = tensor_ints(ctx.in(4));
  for (size_t b = 0; b < lens.size(); ++b)
    if (lens[b] < 0 || lens[b] > dims.seq)
      throw ShapeError(str("[", ctx.op->name, "] expected sequence_lens in [0, ", dims.seq, "], got ", lens[b],
                           " for batch ", b));
  return lens;
}

double rnn_clip(const Attributes& attrs) {
  return attrs.has("clip") ? attrs.get_float("clip") : std::numeric_limits<double>::infinity();
}

}  // namespace porta::opdef
