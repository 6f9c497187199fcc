// porta ops — what the reductions share between their definitions and kernels.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "porta/op.hpp"

namespace porta::opdef {

enum class ReduceKind { sum, mean, max, min };
/// Kind of a reduce op by name ("ReduceSum" -> sum ...).
ReduceKind reduce_kind(std::string_view op);
/// The axes a ReduceX call reduces (input, else attribute; noop_with_empty_axes applied).
std::vector<int64_t> reduce_axes_of(const KernelContext& ctx);
/// Max/Min (and ArgMax/ArgMin) have no value over an empty axis: ShapeError when a reduced
/// axis is 0 while the output has elements.
void check_reduce_nonempty(ReduceKind kind, const Shape& in, const std::vector<int64_t>& axes,
                           int64_t out_numel, std::string_view op);
/// An integer mean divides by the element count: ShapeError for an empty integer input (a
/// float mean of nothing is NaN instead).
void check_integer_mean_nonempty(ReduceKind kind, DType dtype, const Shape& in, std::string_view op);

}  // namespace porta::opdef
