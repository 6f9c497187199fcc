// porta ops — shape arithmetic shared by the data-movement and reduction ops.
#include "ops/shape_util.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/common.hpp"

namespace porta::opdef {

static std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += str(i ? "," : "", v[i]);
  return s + "]";
}

std::vector<int64_t> tensor_ints(const Tensor& t) {
  Tensor h = t.to(Device::cpu()).contiguous();
  std::vector<int64_t> out(static_cast<size_t>(h.numel()));
  if (h.dtype() == DType::i64) {
    std::copy_n(h.data<int64_t>(), out.size(), out.begin());
  } else if (h.dtype() == DType::i32) {
    std::copy_n(h.data<int32_t>(), out.size(), out.begin());
  } else {
    std::vector<double> d = h.to_doubles();
    // 2^63 is the first double past INT64_MAX: anything at or beyond it saturates.
    constexpr double kLimit = 9223372036854775808.0;
    for (size_t i = 0; i < d.size(); ++i) {
      if (std::isnan(d[i])) throw ShapeError("[shape] an integer input holds NaN");
      out[i] = d[i] >= kLimit ? std::numeric_limits<int64_t>::max()
               : d[i] <= -kLimit ? std::numeric_limits<int64_t>::min()
                                 : static_cast<int64_t>(d[i]);
    }
  }
  return out;
}

std::vector<int64_t> optional_ints(const KernelContext& ctx, size_t i) {
  return ctx.has_input(i) ? tensor_ints(ctx.in(i)) : std::vector<int64_t>{};
}

std::vector<int64_t> optional_ints(const InferContext& ctx, size_t i) {
  return ctx.has_input(i) ? tensor_ints(ctx.value(i)) : std::vector<int64_t>{};
}

std::pair<int64_t, int64_t> shape_range(const Attributes& attrs, int64_t rank) {
  auto fix = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  int64_t start = fix(attrs.get_int("start")), end = attrs.has("end") ? fix(attrs.get_int("end")) : rank;
  return {start, std::max(start, end)};
}

std::vector<int64_t> shape_dims(const Shape& in, const Attributes& attrs) {
  auto [start, end] = shape_range(attrs, static_cast<int64_t>(in.size()));
  return std::vector<int64_t>(in.begin() + start, in.begin() + end);
}

Shape reshape_target(const Shape& in, const std::vector<int64_t>& spec, bool allowzero,
                     std::string_view op) {
  Shape out(spec.size());
  int infer_at = -1;
  int64_t known = 1;
  bool has_zero = false;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t v = spec[i];
    if (v == -1) {
      if (infer_at >= 0)
        throw ShapeError(str("[", op, "] expected at most one -1 in the target shape, got ", ints_str(spec)));
      infer_at = static_cast<int>(i);
      continue;
    }
    if (v < -1)
      throw ShapeError(str("[", op, "] expected target dims >= -1, got ", ints_str(spec)));
    if (v == 0 && !allowzero) {
      if (i >= in.size())
        throw ShapeError(str("[", op, "] target ", ints_str(spec), " copies dim ", i,
                             " (a 0) but the input ", shape_str(in), " has rank ", in.size()));
      v = in[i];
    }
    has_zero |= v == 0;
    out[i] = v;
    if (__builtin_mul_overflow(known, v, &known))
      throw ShapeError(str("[", op, "] target ", ints_str(spec), " has more elements than int64 can count"));
  }
  int64_t n = shape_numel(in);
  if (infer_at >= 0) {
    if (has_zero && allowzero)
      throw ShapeError(str("[", op, "] with allowzero=1 a target may not hold both 0 and -1, got ",
                           ints_str(spec)));
    if (known == 0 || n % known != 0)
      throw ShapeError(str("[", op, "] cannot reshape ", shape_str(in), " (", n,
                           " elements) to ", ints_str(spec), ": the -1 has no integer size"));
    out[infer_at] = n / known;
  } else if (known != n) {
    throw ShapeError(str("[", op, "] expected a target with ", n, " elements (input ", shape_str(in),
                         "), got ", ints_str(spec), " = ", shape_str(out), " (", known, " elements)"));
  }
  return out;
}

Shape flatten_shape(const Shape& in, int64_t axis, std::string_view op) {
  int64_t r = static_cast<int64_t>(in.size());
  if (axis < -r || axis > r)
    throw ShapeError(str("[", op, "] expected axis in [", -r, ", ", r, "], got ", axis));
  if (axis < 0) axis += r;
  int64_t a = 1, b = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? a : b) *= in[i];
  return {a, b};
}

Shape squeeze_shape(const Shape& in, const std::vector<int64_t>& axes, std::string_view op) {
  std::vector<bool> drop(in.size(), false);
  if (axes.empty()) {
    for (size_t i = 0; i < in.size(); ++i) drop[i] = in[i] == 1;
  } else {
    for (int64_t a : normalize_axes(axes, static_cast<int64_t>(in.size()), op)) {
      if (in[a] != 1)
        throw ShapeError(str("[", op, "] expected dim ", a, " of ", shape_str(in),
                             " to be 1 to squeeze it, got ", in[a]));
      drop[a] = true;
    }
  }
  Shape out;
  for (size_t i = 0; i < in.size(); ++i)
    if (!drop[i]) out.push_back(in[i]);
  return out;
}

Shape unsqueeze_shape(const Shape& in, const std::vector<int64_t>& axes, std::string_view op) {
  if (axes.empty()) throw ShapeError(str("[", op, "] expected at least one axis, got none"));
  int64_t r = static_cast<int64_t>(in.size() + axes.size());
  std::vector<int64_t> norm = normalize_axes(axes, r, op);
  Shape out;
  size_t next_in = 0, next_axis = 0;
  for (int64_t i = 0; i < r; ++i) {
    if (next_axis < norm.size() && norm[next_axis] == i) {
      out.push_back(1);
      ++next_axis;
    } else {
      out.push_back(in[next_in++]);
    }
  }
  return out;
}

std::vector<int64_t> transpose_perm(size_t rank, const std::vector<int64_t>& perm, std::string_view op) {
  if (perm.empty()) {
    std::vector<int64_t> p(rank);
    for (size_t i = 0; i < rank; ++i) p[i] = static_cast<int64_t>(rank - 1 - i);
    return p;
  }
  std::vector<bool> seen(rank, false);
  bool ok = perm.size() == rank;
  for (int64_t p : perm) {
    if (!ok) break;
    ok = p >= 0 && p < static_cast<int64_t>(rank) && !seen[p];
    if (ok) seen[p] = true;
  }
  if (!ok)
    throw ShapeError(str("[", op, "] expected perm to be a permutation of 0..", rank == 0 ? 0 : rank - 1,
                         " (input rank ", rank, "), got ", ints_str(perm)));
  return perm;
}

SliceGeometry slice_geometry(const Shape& in, const std::vector<int64_t>& starts,
                             const std::vector<int64_t>& ends, const std::vector<int64_t>& axes_in,
                             const std::vector<int64_t>& steps_in, std::string_view op) {
  size_t n = starts.size();
  int64_t r = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes = axes_in, steps = steps_in;
  if (axes.empty())
    for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(n, 1);
  if (ends.size() != n || axes.size() != n || steps.size() != n)
    throw ShapeError(str("[", op, "] expected starts, ends, axes and steps of one length, got ",
                         n, ", ", ends.size(), ", ", axes.size(), ", ", steps.size()));
  SliceGeometry g;
  g.start.assign(in.size(), 0);
  g.step.assign(in.size(), 1);
  g.count = in;
  std::vector<bool> seen(in.size(), false);
  for (size_t i = 0; i < n; ++i) {
    int64_t a = normalize_axis(axes[i], r, op);
    if (seen[a]) throw ShapeError(str("[", op, "] expected distinct axes, got ", ints_str(axes)));
    seen[a] = true;
    int64_t dim = in[a], step = steps[i], s = starts[i], e = ends[i];
    if (step == 0) throw ShapeError(str("[", op, "] expected nonzero steps, got ", ints_str(steps)));
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t count = 0;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      if (e > s) count = (e - s + step - 1) / step;
    } else if (dim > 0) {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      // -step may overflow only for INT64_MIN; any step <= -dim gives at most one element.
      int64_t neg = step < -dim ? dim : -step;
      if (s > e) count = (s - e + neg - 1) / neg;
      step = -neg;
    }
    g.start[a] = count > 0 ? s : 0;
    g.step[a] = step;
    g.count[a] = count;
  }
  return g;
}

Shape expand_shape(const Shape& in, const std::vector<int64_t>& target, std::string_view op) {
  for (int64_t d : target)
    if (d < 0)
      throw ShapeError(str("[", op, "] expected a target shape of dims >= 0, got ", ints_str(target)));
  return broadcast_shapes(in, target, op);
}

Shape tile_shape(const Shape& in, const std::vector<int64_t>& repeats, std::string_view op) {
  if (repeats.size() != in.size())
    throw ShapeError(str("[", op, "] expected ", in.size(), " repeats (input ", shape_str(in),
                         "), got ", ints_str(repeats)));
  Shape out(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (repeats[i] < 0)
      throw ShapeError(str("[", op, "] expected repeats >= 0, got ", ints_str(repeats)));
    out[i] = in[i] * repeats[i];
  }
  return out;
}

Shape pad_shape(const Shape& in, const std::vector<int64_t>& pads, std::string_view mode,
                std::string_view op) {
  size_t r = in.size();
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    throw Unsupported(str("[", op, "] expected mode constant, reflect or edge, got '", mode, "'"));
  if (pads.size() != 2 * r)
    throw ShapeError(str("[", op, "] expected ", 2 * r, " pads for input ", shape_str(in), ", got ",
                         ints_str(pads)));
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t b = pads[i], e = pads[i + r];
    out[i] = in[i] + b + e;
    if (out[i] < 0)
      throw ShapeError(str("[", op, "] pads ", ints_str(pads), " remove more than the ", in[i],
                           " elements of axis ", i));
    if (mode == "reflect" && (b > 0 || e > 0) && (b > in[i] - 1 || e > in[i] - 1))
      throw ShapeError(str("[", op, "] reflect mode expects pads below the dim size on axis ", i,
                           " (", in[i], "), got ", b, " and ", e));
    if (mode == "edge" && (b > 0 || e > 0) && in[i] == 0)
      throw ShapeError(str("[", op, "] edge mode cannot pad the empty axis ", i, " of ", shape_str(in)));
  }
  return out;
}

Shape concat_shape(const std::vector<Shape>& ins, int64_t axis, std::string_view op) {
  if (ins.empty()) throw ShapeError(str("[", op, "] expected at least one input, got none"));
  const Shape& first = ins[0];
  int64_t a = normalize_axis(axis, static_cast<int64_t>(first.size()), op);
  if (first.empty()) throw ShapeError(str("[", op, "] expected inputs of rank >= 1, got scalars"));
  Shape out = first;
  out[a] = 0;
  for (size_t k = 0; k < ins.size(); ++k) {
    const Shape& s = ins[k];
    bool ok = s.size() == first.size();
    for (size_t i = 0; ok && i < s.size(); ++i) ok = static_cast<int64_t>(i) == a || s[i] == first[i];
    if (!ok)
      throw ShapeError(str("[", op, "] expected input ", k, " to match input 0 (", shape_str(first),
                           ") except on axis ", a, ", got ", shape_str(s)));
    out[a] += s[a];
  }
  return out;
}

std::vector<int64_t> split_sizes(const Shape& in, int64_t axis, const std::vector<int64_t>& split,
                                 size_t outputs, std::string_view op) {
  int64_t a = normalize_axis(axis, static_cast<int64_t>(in.size()), op);
  if (in.empty()) throw ShapeError(str("[", op, "] expected an input of rank >= 1, got a scalar"));
  int64_t dim = in[a];
  if (!split.empty()) {
    int64_t sum = 0;
    for (int64_t v : split) {
      if (v < 0) throw ShapeError(str("[", op, "] expected split sizes >= 0, got ", ints_str(split)));
      sum += v;
    }
    if (split.size() != outputs || sum != dim)
      throw ShapeError(str("[", op, "] expected ", outputs, " split sizes summing to ", dim,
                           " (axis ", a, " of ", shape_str(in), "), got ", ints_str(split)));
    return split;
  }
  if (outputs == 0) throw ShapeError(str("[", op, "] expected at least one output, got none"));
  int64_t n = static_cast<int64_t>(outputs), chunk = (dim + n - 1) / n;
  std::vector<int64_t> sizes;
  for (int64_t i = 0, left = dim; i < n; ++i) {
    sizes.push_back(std::min(chunk, left));
    left -= sizes.back();
  }
  return sizes;
}

std::vector<int64_t> reduce_axes(const Shape& in, const std::vector<int64_t>& axes, bool noop_empty,
                                 std::string_view op) {
  if (axes.empty()) {
    if (noop_empty) return {};
    std::vector<int64_t> all(in.size());
    for (size_t i = 0; i < in.size(); ++i) all[i] = static_cast<int64_t>(i);
    return all;
  }
  std::vector<int64_t> out = normalize_axes(axes, static_cast<int64_t>(in.size()), op);
  if (in.empty()) out.clear();  // a scalar's axis 0 (normalize_axis allows it) is the scalar itself
  return out;
}

Shape reduce_shape(const Shape& in, const std::vector<int64_t>& axes, bool keepdims) {
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
    if (!reduced) out.push_back(in[i]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

}  // namespace porta::opdef

namespace porta::opdef {

int64_t pad_source_index(int64_t o, int64_t begin, int64_t dim, std::string_view mode) {
  int64_t i = o - begin;
  if (i >= 0 && i < dim) return i;
  if (mode == "edge") return dim == 0 ? -1 : std::clamp<int64_t>(i, 0, dim - 1);
  if (mode == "reflect" && dim > 1) {
    // pad_shape keeps pads below dim, so one reflection lands inside.
    if (i < 0) i = -i;
    if (i >= dim) i = 2 * (dim - 1) - i;
    return i >= 0 && i < dim ? i : -1;
  }
  if (mode == "reflect" && dim == 1) return 0;
  return -1;
}

}  // namespace porta::opdef

#include "ops/reduce_util.hpp"

namespace porta::opdef {

void check_reduce_nonempty(ReduceKind kind, const Shape& in, const std::vector<int64_t>& axes,
                           int64_t out_numel, std::string_view op) {
  if (kind != ReduceKind::max && kind != ReduceKind::min) return;
  if (out_numel == 0) return;
  for (int64_t a : axes)
    if (in[a] == 0)
      throw ShapeError(str("[", op, "] expected non-empty reduced axes, got axis ", a, " of size 0 in ",
                           shape_str(in)));
}

void check_integer_mean_nonempty(ReduceKind kind, DType dtype, const Shape& in, std::string_view op) {
  if (kind == ReduceKind::mean && is_integer(dtype) && shape_numel(in) == 0)
    throw ShapeError(str("[", op, "] expected a non-empty input for an integer mean, got ", shape_str(in)));
}

}  // namespace porta::opdef
