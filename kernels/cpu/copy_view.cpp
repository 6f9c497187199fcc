// porta cpu kernels — strided copies: coalesced dims, memcpy runs, tiled transposes.
#include "kernels/cpu/copy_view.hpp"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/cpu_common.hpp"
#include "kernels/cpu/custom_vmath.hpp"
#include "ops/broadcast_util.hpp"
#include "porta/error.hpp"
#include "porta/util.hpp"

namespace porta::cpu {
namespace {

struct Geometry {
  std::vector<int64_t> shape, src, dst;  // strides in elements
};

// Drops size-1 dims and merges neighbours that are contiguous in both tensors.
Geometry coalesce(const Tensor& s, const Tensor& d) {
  opdef::MergedDims m = opdef::merge_dims(s.shape(), {s.strides(), d.strides()});
  return {std::move(m.sizes), std::move(m.strides[0]), std::move(m.strides[1])};
}

// Offsets of outer index `r` over dims `dims` (row-major over those dims).
inline void outer_offsets(const Geometry& g, const std::vector<int>& dims, int64_t r, int64_t& so,
                          int64_t& dof) {
  so = 0;
  dof = 0;
  for (size_t k = dims.size(); k-- > 0;) {
    int i = dims[k];
    int64_t idx = r % g.shape[i];
    r /= g.shape[i];
    so += idx * g.src[i];
    dof += idx * g.dst[i];
  }
}

template <typename E>
void copy_typed(const E* src, E* dst, const Geometry& g) {
  int r = static_cast<int>(g.shape.size());
  if (r == 0) {
    *dst = *src;
    return;
  }
  int last = r - 1;
  // A transpose: the source's unit-stride axis is not the innermost one. Copy 2-D tiles so
  // both sides stay in cache; 64 (rather than 32) reads 256 contiguous bytes per source row of
  // 32-bit elements, which the 4096x4096 f32 case needed (9.1 -> 5.2 ms).
  int unit = -1;
  for (int i = 0; i < last; ++i)
    if (g.src[i] == 1) unit = i;
  if (unit >= 0 && g.dst[last] == 1 && g.src[last] != 1) {
    constexpr int64_t kTile = 64;
    std::vector<int> outer;
    for (int i = 0; i < last; ++i)
      if (i != unit) outer.push_back(i);
    int64_t n_outer = 1;
    for (int i : outer) n_outer *= g.shape[i];
    int64_t nu = g.shape[unit], nl = g.shape[last];
    int64_t tiles_u = (nu + kTile - 1) / kTile;
    int64_t su = g.src[unit], du = g.dst[unit], sl = g.src[last];
    parallel_for(n_outer * tiles_u, 4, [&](int64_t b, int64_t e) {
      for (int64_t w = b; w < e; ++w) {
        int64_t so, dof;
        outer_offsets(g, outer, w / tiles_u, so, dof);
        int64_t u0 = (w % tiles_u) * kTile, u1 = std::min(nu, u0 + kTile);
        for (int64_t l0 = 0; l0 < nl; l0 += kTile) {
          int64_t l1 = std::min(nl, l0 + kTile);
          if constexpr (sizeof(E) == 4) {
            // Whole tiles of 32-bit elements: 16x16 register transposes (the element loop
            // below reads one strided element at a time).
            if (u1 - u0 == kTile && l1 - l0 == kTile) {
              for (int64_t bu = u0; bu < u1; bu += 16)
                for (int64_t bl = l0; bl < l1; bl += 16)
                  vmath::transpose16_b32(reinterpret_cast<const uint32_t*>(src + so + bl * sl + bu), sl,
                                         reinterpret_cast<uint32_t*>(dst + dof + bu * du + bl), du);
              continue;
            }
          }
          for (int64_t u = u0; u < u1; ++u) {
            const E* s = src + so + u * su;
            E* d = dst + dof + u * du;
            for (int64_t l = l0; l < l1; ++l) d[l] = s[l * sl];
          }
        }
      }
    });
    return;
  }
  std::vector<int> outer;
  for (int i = 0; i < last; ++i) outer.push_back(i);
  int64_t rows = 1;
  for (int i : outer) rows *= g.shape[i];
  int64_t n = g.shape[last], ss = g.src[last], ds = g.dst[last];
  parallel_for(rows, std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      int64_t so, dof;
      outer_offsets(g, outer, row, so, dof);
      const E* s = src + so;
      E* d = dst + dof;
      if (ss == 1 && ds == 1) std::memcpy(d, s, static_cast<size_t>(n) * sizeof(E));
      else if (ss == 0 && ds == 1) std::fill(d, d + n, *s);
      else for (int64_t i = 0; i < n; ++i) d[i * ds] = s[i * ss];
    }
  });
}

}  // namespace

void copy_strided(const Tensor& src, const Tensor& dst) {
  if (src.shape() != dst.shape() || src.dtype() != dst.dtype())
    throw ShapeError(str("[copy] expected tensors of one shape and dtype, got ", src.describe(),
                         " and ", dst.describe()));
  if (src.numel() == 0) return;
  Geometry g = coalesce(src, dst);
  size_t elem = dtype_size(src.dtype());
  const char* s = static_cast<const char*>(src.raw_data());
  char* d = static_cast<char*>(dst.raw_data());
  switch (elem) {
    case 1: copy_typed(reinterpret_cast<const uint8_t*>(s), reinterpret_cast<uint8_t*>(d), g); break;
    case 2: copy_typed(reinterpret_cast<const uint16_t*>(s), reinterpret_cast<uint16_t*>(d), g); break;
    case 4: copy_typed(reinterpret_cast<const uint32_t*>(s), reinterpret_cast<uint32_t*>(d), g); break;
    default: copy_typed(reinterpret_cast<const uint64_t*>(s), reinterpret_cast<uint64_t*>(d), g); break;
  }
}

void copy_if_distinct(const Tensor& src, const Tensor& dst) {
  if (src.numel() == 0) return;
  const void* s = src.raw_data();
  void* d = dst.raw_data();
  if (s != d) std::memmove(d, s, src.nbytes());
}

}  // namespace porta::cpu
