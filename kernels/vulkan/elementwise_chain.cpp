// ElementwiseChain (ai.porta) on vulkan: elementwise_chain.comp runs the whole program in one
// dispatch, reading every input as vec4 texels (one vectorized gather each on lavapipe) and
// writing vec4s. The program's steps become specialization constants (each program its own
// pipeline, its op switches folded away); immediates and attribute values travel as push
// constants, so programs that differ only in constants share a pipeline. Calls it cannot take
// (an input broadcast other than texel_read's ways, sizes past the texel limits) decline, and
// the dispatcher runs the op's decomposition: the original nodes, each its own kernel.
#include <algorithm>
#include <memory>
#include <string_view>

#include "kernels/vulkan/elementwise.hpp"
#include "ops/common.hpp"
#include "ops/elementwise_chain.hpp"

namespace porta::vk {
namespace {

namespace chain = opdef::chain;

// What one dispatch of elementwise_chain.comp takes (the kernel's KernelDef::limits): the
// inputs it binds (X0..X3), the steps it unrolls (S0..S11: registers 4..15) and the floats of
// its push constants (c[]).
constexpr int kInputs = 4;
constexpr int kStepConstants = 12;
constexpr size_t kFloatWords = 23;
constexpr int kUnaryBase = 32;   // elementwise_chain.comp: op codes from 32 are unary_fn's
constexpr int kRegisters = 16;   // operand codes from 16 are immediates

// The shader's op code of a chain op.
int op_code(std::string_view name) {
  struct Code {
    std::string_view name;
    int code;
  };
  static constexpr Code codes[] = {
      {"Add", kAdd},
      {"Sub", kSub},
      {"Mul", kMul},
      {"Div", kDiv},
      {"Pow", kPow},
      {"Max", kMax},
      {"Min", kMin},
      {"PRelu", kPRelu},
      {"Relu", kUnaryBase + kRelu},
      {"Abs", kUnaryBase + kAbs},
      {"Neg", kUnaryBase + kNeg},
      {"Exp", kUnaryBase + kExp},
      {"Log", kUnaryBase + kLog},
      {"Sqrt", kUnaryBase + kSqrt},
      {"Reciprocal", kUnaryBase + kReciprocal},
      {"Tanh", kUnaryBase + kTanh},
      {"Sigmoid", kUnaryBase + kSigmoid},
      {"Erf", kUnaryBase + kErf},
      {"Sin", kUnaryBase + kSin},
      {"Cos", kUnaryBase + kCos},
      {"Tan", kUnaryBase + kTan},
      {"Floor", kUnaryBase + kFloor},
      {"Ceil", kUnaryBase + kCeil},
      {"Round", kUnaryBase + kRound},
      {"Sign", kUnaryBase + kSign},
      {"Softplus", kUnaryBase + kSoftplus},
      {"Softsign", kUnaryBase + kSoftsign},
      {"HardSwish", kUnaryBase + kHardSwish},
      {"LeakyRelu", kUnaryBase + kLeakyRelu},
      {"Elu", kUnaryBase + kElu},
      {"Celu", kUnaryBase + kCelu},
      {"HardSigmoid", kUnaryBase + kHardSigmoid},
      {"Selu", kUnaryBase + kSelu},
      {"Clip", kUnaryBase + kClip},
  };
  for (const Code& c : codes)
    if (c.name == name) return c.code;
  return -1;
}

// A program's launch: its specialization constants and float push constants.
struct Encoded {
  std::vector<int32_t> spec;
  std::vector<float> floats;
  std::string error;
};

// The broadcast shape of the inputs: the output's (supports runs before outputs exist).
Shape output_shape(const KernelContext& ctx) {
  Shape out = ctx.in(0).shape();
  for (size_t k = 1; k < ctx.inputs.size(); ++k) out = opdef::broadcast_shapes(out, ctx.in(k).shape(), "ElementwiseChain");
  return out;
}

Encoded encode(const KernelContext& ctx) {
  Encoded e;
  const chain::Program prog = chain::parse(*ctx.attrs, static_cast<int>(ctx.inputs.size()));
  e.floats.assign(prog.constants.begin(), prog.constants.end());
  auto reg = [&](int64_t v) -> int32_t {
    if (chain::is_immediate(v)) return kRegisters + static_cast<int32_t>(chain::immediate_index(v));
    if (v < prog.inputs) return static_cast<int32_t>(v);
    return kInputs + static_cast<int32_t>(v - prog.inputs);
  };
  if (prog.inputs > kInputs) {
    e.error = str(prog.inputs, " inputs, more than the shader binds (", kInputs, ")");
    return e;
  }
  if (prog.steps.size() > static_cast<size_t>(kStepConstants)) {
    e.error = str(prog.steps.size(), " steps, more than the shader unrolls (", kStepConstants, ")");
    return e;
  }
  std::vector<int32_t> steps;
  for (const chain::Step& s : prog.steps) {
    const int op = op_code(s.op->name);
    if (op < 0) {
      e.error = str("no shader code for ", s.op->name);
      return e;
    }
    int32_t q = 0;
    if (s.op->params > 0) {
      q = static_cast<int32_t>(e.floats.size());
      e.floats.push_back(static_cast<float>(s.alpha));
      e.floats.push_back(static_cast<float>(s.beta));
    }
    const int32_t b = s.op->arity == 2 ? reg(s.b) : 0;
    steps.push_back(op | (reg(s.a) << 8) | (b << 14) | (q << 20));
  }
  if (e.floats.size() > kFloatWords) {
    e.error = str(e.floats.size(), " constants and attribute values, more than the shader's ", kFloatWords);
    return e;
  }
  const Shape out = output_shape(ctx);
  int32_t modes = 0;
  for (size_t k = 0; k < ctx.inputs.size(); ++k) {
    const TexelRead r = texel_read(ctx.in(k).shape(), out);
    if (r.kind == TexelRead::none) {
      e.error = str("input ", k, " (", shape_str(ctx.in(k).shape()), ") broadcasts to ", shape_str(out),
                    " in none of the texel reads (the same elements, one element, repeating over the leading axes "
                    "with a multiple of 4 elements, or one element per block of a multiple of 4 trailing elements)");
      return e;
    }
    modes |= static_cast<int32_t>(r.kind) << (2 * k);
  }
  e.spec = {static_cast<int32_t>(ctx.inputs.size()), static_cast<int32_t>(steps.size()), modes};
  steps.resize(kStepConstants, 0);
  e.spec.insert(e.spec.end(), steps.begin(), steps.end());
  return e;
}

std::string chain_supports(const KernelContext& ctx) {
  const DType t = ctx.in(0).dtype();
  if (auto why = texel_formats_ok(ctx, t); !why.empty()) return why;  // every device type: GPUs read texels too
  const DeviceCaps& caps = device_caps(ctx);
  if (ctx.inputs.size() > static_cast<size_t>(kInputs))
    return str(ctx.inputs.size(), " inputs, more than the shader binds (", kInputs, ")");
  int64_t n = 0;
  try {
    n = shape_numel(output_shape(ctx));
  } catch (const Error&) {
    return "";  // inputs that do not broadcast: the op's inference reports it
  }
  if (n >= (int64_t{1} << 31)) return "more than 2^31 elements";
  for (size_t k = 0; k < ctx.inputs.size(); ++k)
    if (static_cast<uint64_t>(ctx.in(k).numel() + 3) / 4 > caps.max_texels)
      return str("input ", k, " has ", (ctx.in(k).numel() + 3) / 4, " texels, more than the device's maxTexelBufferElements (",
                 caps.max_texels, ")");
  if (static_cast<uint64_t>(n) * dtype_size(t) > binding_limit(ctx))
    return str("the output has ", static_cast<uint64_t>(n) * dtype_size(t), " bytes, more than one binding (",
               binding_limit(ctx), ")");
  try {
    return encode(ctx).error;
  } catch (const Error&) {
    return "";  // an invalid program: the kernel reports it
  }
}

// A call site's encoding (KernelContext::state: a session step keeps it for its plan), made
// again only when its inputs' shapes change.
struct ChainState {
  std::vector<Shape> shapes;
  Encoded encoded;
};

const Encoded& encoded_for(KernelContext& ctx) {
  std::vector<Shape> shapes;
  for (const Tensor& t : ctx.inputs) shapes.push_back(t.shape());
  auto* s = static_cast<ChainState*>(ctx.state.get());
  if (!s || s->shapes != shapes) {
    auto fresh = std::make_shared<ChainState>();
    fresh->shapes = std::move(shapes);
    fresh->encoded = encode(ctx);
    s = fresh.get();
    ctx.state = std::move(fresh);
  }
  return s->encoded;
}

void chain_vulkan(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  const int64_t n = y.numel();
  Encoded e = encoded_for(ctx);
  if (!e.error.empty()) throw BackendError(str("[ElementwiseChain] ", e.error, " (supports should decline)"));
  if (n == 0) return;
  Launch l;
  l.shader = "elementwise_chain";
  l.variant = variant_for(y.dtype());
  l.spec = std::move(e.spec);
  for (int k = 0; k < kInputs; ++k)
    l.args.push_back(texels(ctx.in(k < static_cast<int>(ctx.inputs.size()) ? static_cast<size_t>(k) : 0)));
  l.args.push_back(output(y));
  l.args.push_back(output(y));
  l.push_u(n);
  std::vector<TexelRead> reads(kInputs);
  for (size_t k = 0; k < ctx.inputs.size(); ++k) reads[k] = texel_read(ctx.in(k).shape(), y.shape());
  for (const TexelRead& r : reads) l.push_u(static_cast<uint64_t>(std::max<int64_t>(r.period, 1)));
  for (const TexelRead& r : reads) l.push_u(static_cast<uint64_t>(std::max<int64_t>(r.count, 1)));
  e.floats.resize(kFloatWords, 0.0f);
  for (float f : e.floats) l.push_f(f);
  set_grid(l, device_caps(ctx), (static_cast<uint64_t>(n + 3) / 4 + 255) / 256);
  launch(ctx, std::move(l));
}

}  // namespace

namespace {
const bool chain_registered = [] {
  KernelDef k;
  k.op = "ElementwiseChain";
  k.backend = DeviceType::vulkan;
  k.impl = {"texel", 1};
  k.dtypes = kF32 | kF16;
  k.fn = chain_vulkan;
  k.supports = chain_supports;
  k.limits = {{"inputs", kInputs}, {"steps", kStepConstants}, {"floats", static_cast<int64_t>(kFloatWords)}};
  return register_kernel_at_load(std::move(k));
}();
}  // namespace

}  // namespace porta::vk
