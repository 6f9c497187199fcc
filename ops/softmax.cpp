// Softmax and LogSoftmax (opset 13): normalized along one `axis` (default -1), computed as
// exp(x - max) / sum(exp(x - max)) so large inputs do not overflow.
#include <cmath>

#include "ops/common.hpp"

namespace porta::opdef {
namespace {

void infer_softmax(InferContext& ctx) {
  require_dtype(ctx, 0, kFloats);
  normalize_axis(ctx.attrs->get_int("axis"), static_cast<int64_t>(ctx.shape(0).size()), ctx.op->name);
  infer_same_as_input0(ctx);
}

void reference_softmax(KernelContext& ctx, bool log) {
  const Shape& s = ctx.in(0).shape();
  int64_t rank = static_cast<int64_t>(s.size());
  int64_t axis = normalize_axis(ctx.attrs->get_int("axis"), rank, ctx.op->name);
  int64_t len = rank == 0 ? 1 : s[axis], inner = 1;
  for (int64_t i = axis + 1; i < rank; ++i) inner *= s[i];
  int64_t outer = len * inner == 0 ? 0 : ctx.in(0).numel() / (len * inner);
  const double* x = ctx.in(0).data<double>();
  double* y = ctx.out(0).data<double>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const double* px = x + o * len * inner + i;
      double* py = y + o * len * inner + i;
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < len; ++j) mx = std::max(mx, px[j * inner]);
      for (int64_t j = 0; j < len; ++j) sum += std::exp(px[j * inner] - mx);
      for (int64_t j = 0; j < len; ++j)
        py[j * inner] = log ? px[j * inner] - mx - std::log(sum) : std::exp(px[j * inner] - mx) / sum;
    }
}

std::vector<OpCase> softmax_cases() {
  std::vector<OpCase> c;
  c.push_back({"last", {in({3, 17})}, {}, kF32 | kF64 | kBF16});
  c.push_back({"axis0", {in({5, 4})}, {{"axis", int64_t{0}}}, kF32 | kF64});
  c.push_back({"middle", {in({2, 7, 3})}, {{"axis", int64_t{1}}}, kF32 | kF64});
  c.push_back({"neg_axis", {in({2, 3, 5, 4})}, {{"axis", int64_t{-3}}}, kF32});
  c.push_back({"length1", {in({6, 1})}, {}, kF32 | kF64});
  c.push_back({"1d", {in({1})}, {}, kF32});
  c.push_back({"large_values", {in({4, 33}, -80, 80)}, {}, kF32 | kF64});
  c.push_back({"empty", {in({0, 5})}, {}, kF32});
  // Row lengths around the GPU kernels' switch from a thread per row to a block per row (32)
  // and around one and two warps, over many rows.
  for (int64_t len : {1, 2, 31, 32, 33, 63, 64, 65})
    c.push_back({"rows_of_" + std::to_string(len), {in({300, len})}, {}, len == 32 || len == 33 ? kF32 | kF64 : kF32});
  OpCase big{"4096x4096", {in({4096, 4096})}, {}, kF32};
  big.perf = true;
  c.push_back(big);
  return c;
}

OpSchema softmax_schema(const char* name, bool log) {
  OpSchema s;
  s.name = name;
  s.inputs = {"input"};
  s.outputs = {"output"};
  s.attrs = {attr_int("axis", -1)};
  s.infer = infer_softmax;
  s.reference = [log](KernelContext& ctx) { reference_softmax(ctx, log); };
  s.cases = softmax_cases;
  s.flops = flops_per_output_element(log ? 4 : 5);
  return s;
}

}  // namespace

PORTA_REGISTER_OP(Softmax) { return softmax_schema("Softmax", false); }
PORTA_REGISTER_OP(LogSoftmax) { return softmax_schema("LogSoftmax", true); }

}  // namespace porta::opdef
