// porta ops — helpers shared by op definitions: broadcasting, axes, schema shorthands.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "porta/error.hpp"
#include "porta/op.hpp"
#include "porta/util.hpp"

namespace porta::opdef {

/// NumPy broadcast of two shapes; throws ShapeError naming both.
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op);
/// Axis in [-rank, rank) to [0, rank); throws ShapeError.
int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view op);
/// Sorted unique normalized axes.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, std::string_view op);

/// Output = input 0's shape and dtype.
void infer_same_as_input0(InferContext& ctx);
/// Output = broadcast of all inputs; dtype of input 0 (or `out_dtype`).
void infer_broadcast(InferContext& ctx, std::optional<DType> out_dtype = std::nullopt);
/// Throws DTypeError unless all present inputs share input 0's dtype.
void require_same_dtype(const InferContext& ctx, std::string_view what = "inputs");
/// Throws DTypeError unless dtype(i) is in `allowed`.
void require_dtype(const InferContext& ctx, size_t i, DTypeSet allowed);

AttrDef attr_int(std::string name, int64_t def);
AttrDef attr_float(std::string name, double def);
AttrDef attr_string(std::string name, std::string def);
AttrDef attr_ints(std::string name, std::vector<int64_t> def);
AttrDef attr_floats(std::string name, std::vector<double> def);
/// Optional attribute with no default (absent stays absent).
AttrDef attr_optional(std::string name, AttrType type);
AttrDef attr_required(std::string name, AttrType type);

/// Random-input spec helpers for cases.
InputSpec in(Shape shape, double lo = -2.0, double hi = 2.0);
InputSpec in_typed(Shape shape, DType dtype, double lo = -2.0, double hi = 2.0);
InputSpec in_values(Shape shape, DType dtype, std::vector<double> values);
InputSpec in_absent();

/// Flops = numel(output 0) * per_element.
FlopsFn flops_per_output_element(double per_element);

}  // namespace porta::opdef
