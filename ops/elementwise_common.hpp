// porta ops — shared pieces of the elementwise op family: schema builders for unary and
// broadcasting binary ops, their float64 references, and the standard case lists.
//
// Integer semantics shared by the whole family (references follow them; so must kernels):
// - results of integer arithmetic wrap modulo 2^bits (two's complement), like C++20 and numpy;
// - integer Div truncates toward zero (ONNX's reference computes np.divide then casts, i.e.
//   truncation; ONNX Runtime does C division); x / 0 is defined as 0 (never a trap), and
//   INT_MIN / -1 wraps to INT_MIN.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ops/common.hpp"

namespace porta::opdef::ew {

/// An exact integer value wrapped into dtype `t`'s range (two's complement); floats and bool
/// pass through unchanged. Used by references to mirror wrap-around of integer kernels.
double wrap_to(double v, DType t);

/// Element function of a unary reference: (x, attributes, input dtype) -> y.
using UnaryRef = std::function<double(double, const Attributes&, DType)>;
/// Element function of a binary reference: (a, b, input dtype) -> c.
using BinaryRef = std::function<double(double, double, DType)>;

/// Unary op: output has input 0's shape and dtype; input 0 must be in `allowed`.
OpSchema unary_schema(std::string name, DTypeSet allowed, UnaryRef f);
/// Broadcasting binary op over inputs "A", "B" of one dtype in `allowed`; output is that dtype,
/// or bool when `bool_output`.
OpSchema binary_schema(std::string name, DTypeSet allowed, BinaryRef f, bool bool_output = false);

/// Element function of a binary reference that reads the op's attributes.
using BinaryAttrRef = std::function<double(double, double, const Attributes&, DType)>;
/// binary_schema for an op whose element function depends on its attributes.
OpSchema binary_schema_with_attrs(std::string name, DTypeSet allowed, BinaryAttrRef f);
/// Range of random values (integers=true: whole numbers even for float dtypes).
struct Range {
  double lo = -2.0, hi = 2.0;
  bool integers = false;
};

/// scalar, size 0, size 1, odd 3x5x7, 2-D, and one 4096x4096 perf case (f32) over `floats`;
/// plus an "ints" case over `ints` when non-zero. `attrs` and `suffix` name attribute variants.
std::vector<OpCase> unary_cases(DTypeSet floats, DTypeSet ints, Range f, Range i,
                                const Attributes& attrs = {}, const std::string& suffix = "",
                                bool perf = true);

/// same shape, row, column, both sides, scalar on either side, both scalar, size 0, size 1,
/// perf 4096x4096 (f32, when `floats` has f32) over `floats`; the shape cases again over `ints`.
std::vector<OpCase> binary_cases(DTypeSet floats, DTypeSet ints, Range fa, Range fb, Range ia,
                                 Range ib);

/// InputSpec with a fixed range; dtype from the case.
InputSpec spec(Shape shape, Range r);
/// InputSpec with fixed contents; dtype from the case.
InputSpec fixed(Shape shape, std::vector<double> values);

}  // namespace porta::opdef::ew
