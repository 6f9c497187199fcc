// Transpose: output axis i is input axis perm[i]; perm defaults to the reversed axes.
#include "ops/common.hpp"
#include "ops/reference_util.hpp"
#include "ops/shape_util.hpp"

namespace porta::opdef {

PORTA_REGISTER_OP(Transpose) {
  OpSchema s;
  s.name = "Transpose";
  s.inputs = {"data"};
  s.outputs = {"transposed"};
  s.attrs = {attr_optional("perm", AttrType::Ints)};
  s.infer = [](InferContext& ctx) {
    const Shape& in = ctx.shape(0);
    std::vector<int64_t> perm = transpose_perm(in.size(), ctx.attrs->get_ints("perm", {}), "Transpose");
    Shape out(in.size());
    for (size_t i = 0; i < in.size(); ++i) out[i] = in[perm[i]];
    ctx.set_output(0, out, ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor &x = ctx.in(0), &y = ctx.out(0);
    std::vector<int64_t> perm = transpose_perm(x.shape().size(), ctx.attrs->get_ints("perm", {}), "Transpose");
    const double* src = x.data<double>();
    double* dst = y.data<double>();
    std::vector<int64_t> src_idx(x.shape().size());
    for_each_index(y.shape(), [&](const std::vector<int64_t>& idx) {
      for (size_t i = 0; i < idx.size(); ++i) src_idx[perm[i]] = idx[i];
      dst[linear_offset(y.shape(), idx)] = src[linear_offset(x.shape(), src_idx)];
    });
  };
  s.cases = [] {
    using P = std::vector<int64_t>;
    std::vector<OpCase> c;
    c.push_back({"default_2d", {in({3, 5})}, {}, kAllTypes});
    c.push_back({"default_3d", {in({2, 3, 4})}, {}, kF32});
    c.push_back({"perm_021", {in({2, 3, 5})}, {{"perm", P{0, 2, 1}}}, kF32 | kF16 | kI64});
    c.push_back({"perm_1203", {in({3, 4, 5, 2})}, {{"perm", P{1, 2, 0, 3}}}, kF32 | kU8});
    c.push_back({"identity", {in({3, 4})}, {{"perm", P{0, 1}}}, kF32});
    c.push_back({"big_odd", {in({67, 45, 3})}, {{"perm", P{2, 1, 0}}}, kF32 | kBool});
    // Past the cpu kernel's threshold for oneDNN's reorder (64Ki elements): an attention-style
    // head swap and a rotation with odd sizes.
    c.push_back({"large_0213", {in({4, 64, 16, 20})}, {{"perm", P{0, 2, 1, 3}}}, kF32});
    c.push_back({"large_odd_201", {in({70, 33, 31})}, {{"perm", P{2, 0, 1}}}, kF32 | kI32});
    c.push_back({"size1", {in({1, 7, 1})}, {{"perm", P{2, 0, 1}}}, kF32});
    c.push_back({"empty", {in({0, 3})}, {}, kF32});
    c.push_back({"scalar", {in({})}, {}, kF32});
    OpCase big{"4096x4096", {in({4096, 4096})}, {}, kF32};
    big.perf = true;
    c.push_back(big);
    return c;
  };
  return s;
}

}  // namespace porta::opdef
