// porta runtime — the compute-precision policy table and the per-session weight conversions.
// The planner applies the policy while it compiles (runtime/session_compile.cpp).
#include "runtime/precision.hpp"

#include <unordered_map>

#include "porta/error.hpp"
#include "porta/util.hpp"

namespace porta {

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::f32: return "f32";
    case Precision::bf16: return "bf16";
    case Precision::f16: return "f16";
    case Precision::automatic: return "auto";
  }
  return "?";
}

Precision parse_precision(std::string_view name) {
  for (Precision p : {Precision::f32, Precision::bf16, Precision::f16, Precision::automatic})
    if (precision_name(p) == name) return p;
  throw InvalidArgument(str("[precision] should be one of f32, bf16, f16, auto; got '", name, "'"));
}

namespace detail {
namespace {

using C = PrecisionClass;

// Keyed by OpSchema::qualified_name(). A kernel registered for bf16 or f16 of a `lower` op
// accumulates in f32 (cpu: oneDNN matmul; vulkan and cuda/hip: float accumulators).
// The RNN gates are `lower_inside`: their products go low only in a kernel that keeps the gates'
// arithmetic and the cell and hidden state in f32 (the cpu's, in bf16); where no kernel of the
// device does that (vulkan's f16 sequence kernel would hold the state in f16) they stay f32.
const std::unordered_map<std::string_view, C>& table() {
  static const std::unordered_map<std::string_view, C> t = {
      // Products: the work that low formats speed up.
      {"MatMul", C::lower},
      {"Gemm", C::lower},
      {"Conv", C::lower},
      {"ConvTranspose", C::lower},
      // Fused attention: its two products low, its softmax in f32 inside the kernel (cpu), or
      // by this table over the composite's parts.
      {"ai.porta::ScaledDotProductAttention", C::lower},
      // A gated linear unit: two products, the gate's activation and the Mul on their f32 sums.
      {"ai.porta::GatedLinear", C::lower},
      // An RMS norm's rows times W: the product low, the rows' sums of squares in the kernel's
      // f32 accumulators.
      {"ai.porta::RmsNormMatMul", C::lower},
      // A pointwise conv of X's channels mapped by a scale, a shift and an activation: the
      // product low, the map in the kernel's f32 arithmetic.
      {"ai.porta::PreActConv", C::lower},
      // Exact in any format: data movement, selection, Relu, and ops reading only shapes.
      {"Reshape", C::follow},
      {"Flatten", C::follow},
      {"Squeeze", C::follow},
      {"Unsqueeze", C::follow},
      {"Transpose", C::follow},
      {"Slice", C::follow},
      {"Gather", C::follow},
      {"GatherElements", C::follow},
      {"GatherND", C::follow},
      {"Concat", C::follow},
      {"Split", C::follow},
      {"Expand", C::follow},
      {"Tile", C::follow},
      {"Identity", C::follow},
      {"Dropout", C::follow},
      {"Relu", C::follow},
      {"MaxPool", C::follow},
      {"Shape", C::follow},
      // Numerically sensitive: exponentials, normalisations, sums over many elements, state.
      {"Softmax", C::keep_f32},
      {"LogSoftmax", C::keep_f32},
      {"LayerNormalization", C::keep_f32},
      {"ai.porta::RmsNorm", C::keep_f32},
      {"BatchNormalization", C::keep_f32},
      {"InstanceNormalization", C::keep_f32},
      {"ReduceMean", C::keep_f32},
      {"ReduceSum", C::keep_f32},
      {"ReduceMax", C::keep_f32},
      {"ReduceMin", C::keep_f32},
      {"ReduceProd", C::keep_f32},
      {"ReduceL2", C::keep_f32},
      {"ReduceLogSumExp", C::keep_f32},
      {"CumSum", C::keep_f32},
      {"Exp", C::keep_f32},
      {"Log", C::keep_f32},
      {"Pow", C::keep_f32},
      {"Erf", C::keep_f32},
      {"Sqrt", C::keep_f32},
      {"Reciprocal", C::keep_f32},
      {"Softplus", C::keep_f32},
      {"AveragePool", C::keep_f32},
      {"GlobalAveragePool", C::keep_f32},
      {"ai.porta::SqueezeExcite", C::keep_f32},  // a mean over each channel, then a gate
      // Arithmetic rounds in any format; in f32 it adds no error of its own (autocast runs
      // these in the widest type of their inputs).
      {"Add", C::keep_f32},
      {"Sub", C::keep_f32},
      {"Mul", C::keep_f32},
      {"Div", C::keep_f32},
      {"Sigmoid", C::keep_f32},
      {"Tanh", C::keep_f32},
      {"Gelu", C::keep_f32},
      {"HardSigmoid", C::keep_f32},
      {"HardSwish", C::keep_f32},
      // Elementwise chains (fused on vulkan) compute every step in f32 registers.
      {"ai.porta::ElementwiseChain", C::keep_f32},
      {"LSTM", C::lower_inside},
      {"GRU", C::lower_inside},
  };
  return t;
}

}  // namespace

PrecisionClass precision_class(const OpSchema& op) {
  auto it = table().find(op.qualified_name());
  return it == table().end() ? C::keep_f32 : it->second;
}

bool precision_listed(const OpSchema& op) { return table().count(op.qualified_name()) != 0; }

std::string_view precision_class_name(PrecisionClass c) {
  switch (c) {
    case C::lower: return "lower";
    case C::lower_inside: return "lower inside";
    case C::follow: return "follow";
    case C::keep_f32: return "keep f32";
  }
  return "?";
}

int64_t product_macs(const OpSchema& op, const std::vector<Shape>& in, const Attributes& attrs) {
  auto numel = [](const Shape& s) { return shape_numel(s); };
  const std::string name = op.qualified_name();
  if (name == "MatMul" && in.size() >= 2 && !in[0].empty() && !in[1].empty()) {
    const Shape &a = in[0], &b = in[1];
    const int64_t k = a.back();
    const int64_t m = a.size() >= 2 ? a[a.size() - 2] : 1;
    const int64_t n = b.size() >= 2 ? b.back() : 1;
    const int64_t batch_a = a.size() > 2 ? numel(a) / (m * k > 0 ? m * k : 1) : 1;
    const int64_t batch_b = b.size() > 2 ? numel(b) / (b[b.size() - 2] * n > 0 ? b[b.size() - 2] * n : 1) : 1;
    return std::max(batch_a, batch_b) * m * n * k;
  }
  if (name == "Gemm" && in.size() >= 2 && in[0].size() == 2 && in[1].size() == 2) {
    const bool ta = attrs.get_int("transA", 0) != 0, tb = attrs.get_int("transB", 0) != 0;
    return (ta ? in[0][1] : in[0][0]) * (ta ? in[0][0] : in[0][1]) * (tb ? in[1][0] : in[1][1]);
  }
  if ((name == "Conv" || name == "ConvTranspose") && in.size() >= 2 && in[0].size() >= 3 && in[1].size() >= 3) {
    int64_t pixels = in[0][0];
    for (size_t i = 2; i < in[0].size(); ++i) pixels *= in[0][i];
    if (name == "Conv" && attrs.has("strides"))
      for (int64_t st : attrs.get_ints("strides")) pixels /= std::max<int64_t>(st, 1);
    return pixels * numel(in[1]);
  }
  // X [S, N, I] (or [N, S, I]), W [D, G*H, I], R [D, G*H, H]: every row of X times W and R.
  if ((name == "LSTM" || name == "GRU") && in.size() >= 3 && in[0].size() == 3 && in[1].size() == 3 &&
      in[2].size() == 3 && in[0][2] > 0)
    return numel(in[0]) / in[0][2] * (numel(in[1]) + numel(in[2]));
  if (name == "ai.porta::ScaledDotProductAttention" && in.size() >= 3 && in[0].size() == 4 && in[1].size() == 4 &&
      in[2].size() == 4)
    return in[0][0] * in[0][1] * in[0][2] * in[1][2] * (in[0][3] + in[2][3]);
  // X [..., K] times Wg and Wu [K, F].
  if (name == "ai.porta::GatedLinear" && in.size() >= 3 && !in[0].empty() && in[1].size() == 2)
    return 2 * numel(in[0]) * in[1][1];
  // X [..., K] times W [K, N].
  if (name == "ai.porta::RmsNormMatMul" && in.size() >= 2 && !in[0].empty() && in[1].size() == 2)
    return numel(in[0]) * in[1][1];
  // X [N, C, spatial...] times W [M, C, 1...] at every position.
  if (name == "ai.porta::PreActConv" && in.size() >= 4 && in[0].size() >= 3 && !in[3].empty())
    return numel(in[0]) * in[3][0];
  return -1;
}

DType low_precision_dtype(Precision p, Device device) {
  switch (p) {
    case Precision::f32: return DType::f32;
    case Precision::bf16: return DType::bf16;
    case Precision::f16: return DType::f16;
    case Precision::automatic: {
      DTypeSet fast = backend_for(device).capabilities(device.index).fast_dtypes;
      if (dtype_in(fast, DType::bf16)) return DType::bf16;
      if (dtype_in(fast, DType::f16)) return DType::f16;
      return DType::f32;
    }
  }
  throw InvalidArgument(str("[session] unknown precision value ", static_cast<int>(p)));
}

std::string low_precision_not_fast(DType low, Device device) {
  if (low == DType::f32 || dtype_in(backend_for(device).capabilities(device.index).fast_dtypes, low)) return "";
  return str(device.str(), " has no fast ", dtype_name(low),
             " arithmetic (not among its fast formats: `porta devices --caps`): its kernels compute such products in "
             "f32 or emulate the format, no faster than f32 (--precision auto keeps f32 there)");
}

std::string low_precision_in_f32(DType low, Device device) {
  if (low == DType::f32 || !dtype_in(backend_for(device).capabilities(device.index).products_in_f32, low)) return "";
  return str(device.str(), " computes ", dtype_name(low), " products in f32: it has no ", dtype_name(low),
             " arithmetic (`porta devices --caps`)");
}

Tensor PrecisionCache::converted(const Tensor& weight, DType to) {
  auto key = std::make_pair(weight.raw_data(), to);
  auto it = entries_.find(key);
  // Views of one storage at one offset share the key: the shape and dtype tell them apart.
  if (it != entries_.end() && it->second.source.shape() == weight.shape() &&
      it->second.source.dtype() == weight.dtype())
    return it->second.result;
  Entry e{weight, weight.to(Device::cpu()).cast(to)};
  return entries_.insert_or_assign(key, std::move(e)).first->second.result;
}

}  // namespace detail
}  // namespace porta
