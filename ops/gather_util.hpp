// porta ops — index checks and index plans shared by the Gather family's references and
// kernels (Gather, GatherElements, GatherND, ScatterElements, ScatterND).
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "porta/attributes.hpp"
#include "porta/tensor.hpp"

namespace porta::opdef {

/// Throws ShapeError "[Gather] expected indices in [-dim, dim) ..., got <index>" when `index`
/// is out of range for `axis` of `data`.
void check_gather_index(int64_t index, int64_t dim, int64_t axis, const Shape& data);

/// The same check for any op of the family: "[op] expected indices in [-dim, dim) for axis
/// <axis> of data <shape>, got <index>". Returns the index made non-negative.
int64_t check_axis_index(std::string_view op, int64_t index, int64_t axis, const Shape& data);

/// ScatterND / ScatterElements `reduction`: none, add, mul (opset 16), max, min (opset 18).
enum class ScatterReduction { none, add, mul, max, min };
/// Parses the attribute; an unknown value is an InvalidArgument naming the op.
ScatterReduction scatter_reduction(const Attributes& attrs, std::string_view op);
const char* reduction_name(ScatterReduction r);

/// Values of a host index tensor (i64 or i32) as int64.
std::vector<int64_t> host_index_values(const Tensor& host_indices);

/// Rows of an ND plan: the data viewed as [rows, slice] (slice = product of the data dims the
/// index tuples do not address); rows[t] is the data row index tuple t addresses, in the
/// order of the tuples (batch entries first for GatherND's batch_dims).
struct NdPlan {
  std::vector<int64_t> rows;
  int64_t slice = 1;
};
/// GatherND (batch_dims b) and ScatterND (b = 0): checks every index (ShapeError naming the
/// data axis, its bound and the bad value) and returns the plan. `idx` holds the values of
/// indices of shape `indices` (last dim = tuple length k).
NdPlan nd_plan(std::string_view op, const Shape& data, const Shape& indices, int64_t batch_dims,
               const std::vector<int64_t>& idx);

/// GatherElements / ScatterElements: the flat data offset each element of `indices` (same
/// rank as data) addresses along `axis`; checks every index as nd_plan does.
std::vector<int64_t> element_offsets(std::string_view op, const Shape& data, const Shape& indices,
                                     int64_t axis, const std::vector<int64_t>& idx);

/// Scatter plan over update rows u -> target rows target[u] (rows of `slice` elements):
/// with reduction none, `order` lists the updates that land (the last of each target, so the
/// last update wins) and `starts` is empty; otherwise `order` holds the update rows sorted by
/// target (stable) and group g covers order[starts[g] .. starts[g + 1]), all with target
/// group_target[g].
struct ScatterGroups {
  std::vector<int64_t> order, starts, group_target;
  int64_t max_group = 0;  ///< largest group (updates accumulated into one target row)
};
ScatterGroups scatter_groups(const std::vector<int64_t>& target, int64_t target_rows, bool last_wins);

}  // namespace porta::opdef
