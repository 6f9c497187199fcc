// NonZero: the coordinates of the elements that are not zero, as an i64 tensor of shape
// [rank, count], in row-major order of the elements (numpy.nonzero stacked). A 0-D input
// counts as one element of rank 1 (shape [1, count]). NaN is not zero; -0.0 is.
//
// The output's shape depends on the input's values, so the input is a host input: sessions
// specialise their plan on its value (the chain that decides the shape is computed when the
// plan is made, docs/ARCHITECTURE.md "Compilation per input shapes") and eager calls read it
// on the host.
#include <cmath>

#include "ops/common.hpp"
#include "ops/nonzero.hpp"

namespace porta::opdef {

std::vector<int64_t> nonzero_positions(const Tensor& x) {
  Tensor h = x.to(Device::cpu()).contiguous();
  size_t elem = dtype_size(h.dtype());
  bool floating = is_floating(h.dtype());
  const unsigned char* p = static_cast<const unsigned char*>(h.raw_data());
  std::vector<int64_t> out;
  for (int64_t i = 0; i < h.numel(); ++i) {
    const unsigned char* e = p + static_cast<size_t>(i) * elem;
    bool nz = false;
    // Every byte but the sign bit for floats (so -0.0 is zero and NaN is not), every bit else.
    for (size_t b = 0; b < elem && !nz; ++b) {
      unsigned char byte = e[b];
      if (floating && b == elem - 1) byte &= 0x7f;  // little-endian: the sign is in the last byte
      nz = byte != 0;
    }
    if (nz) out.push_back(i);
  }
  return out;
}

void check_nonzero_output(const Tensor& x, const Tensor& y, const std::vector<int64_t>& positions) {
  if (y.rank() != 2 || y.shape()[1] != static_cast<int64_t>(positions.size()))
    throw ShapeError(str("[NonZero] expected an output of shape [", std::max<size_t>(x.rank(), 1), ", ",
                         positions.size(), "], got ", shape_str(y.shape())));
}

void write_nonzero_coordinates(const Shape& shape, const std::vector<int64_t>& positions, int64_t* out) {
  size_t rank = std::max<size_t>(shape.size(), 1);
  int64_t count = static_cast<int64_t>(positions.size());
  for (int64_t j = 0; j < count; ++j) {
    int64_t rest = positions[static_cast<size_t>(j)];
    for (size_t d = rank; d-- > 0;) {
      int64_t extent = shape.empty() ? 1 : shape[d];
      out[static_cast<int64_t>(d) * count + j] = rest % extent;
      rest /= extent;
    }
  }
}

PORTA_REGISTER_OP(NonZero) {
  OpSchema s;
  s.name = "NonZero";
  s.inputs = {"X"};
  s.outputs = {"Y"};
  s.host_inputs = {0};
  s.dispatch_input = 0;
  s.infer = [](InferContext& ctx) {
    int64_t rank = std::max<int64_t>(static_cast<int64_t>(ctx.shape(0).size()), 1);
    int64_t count = static_cast<int64_t>(nonzero_positions(ctx.value(0)).size());
    ctx.set_output(0, {rank, count}, DType::i64);
  };
  s.reference = [](KernelContext& ctx) {
    // Inputs arrive as f64: an element is nonzero when it compares unequal to 0 (NaN too).
    const Tensor& x = ctx.in(0);
    std::vector<int64_t> positions;
    const double* v = x.data<double>();
    for (int64_t i = 0; i < x.numel(); ++i)
      if (v[i] != 0.0) positions.push_back(i);
    std::vector<int64_t> coords(static_cast<size_t>(ctx.out(0).numel()));
    write_nonzero_coordinates(x.shape(), positions, coords.data());
    double* y = ctx.out(0).data<double>();
    for (size_t i = 0; i < coords.size(); ++i) y[i] = static_cast<double>(coords[i]);
  };
  s.cases = [] {
    // Small integers so that about a third of the elements are zero in every dtype.
    auto sparse = [](Shape shape) { InputSpec s = in(std::move(shape), -1, 1); s.integers = true; return s; };
    auto bits = [](Shape shape) { InputSpec s = in(std::move(shape), 0, 1); s.integers = true; return s; };
    std::vector<OpCase> c;
    c.push_back({"vector", {sparse({17})}, {}, kNumeric & ~kU8});
    c.push_back({"bytes", {bits({3, 9})}, {}, kU8 | kBool});
    c.push_back({"matrix", {sparse({5, 7})}, {}, kF32 | kI64 | kF16});
    c.push_back({"rank4", {sparse({2, 3, 1, 4})}, {}, kF32 | kI32});
    c.push_back({"scalar", {in_values({}, DType::f32, {3})}, {}, kF32});
    c.push_back({"scalar_zero", {in_values({}, DType::f32, {0})}, {}, kF32});
    c.push_back({"empty", {in({0, 3})}, {}, kF32 | kI64});
    c.push_back({"all_zero", {in_values({2, 2}, DType::f32, {0, -0.0, 0, 0})}, {}, kF32});
    c.push_back({"nan_counts", {in_values({4}, DType::f32, {0, NAN, -0.0, 1})}, {}, kF32});
    c.push_back({"long", {sparse({3000})}, {}, kF32});
    return c;
  };
  return s;
}

}  // namespace porta::opdef
