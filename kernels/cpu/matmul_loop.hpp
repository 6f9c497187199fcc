// porta cpu kernels — a plain batched matmul loop (f64, and shapes oneDNN cannot take).
// Operand shapes are matrices padded to one rank; batch axes of size 1 broadcast.
#pragma once
#include <algorithm>

#include "kernels/cpu/cpu_common.hpp"

namespace porta::cpu {

/// y[batch] = a[batch] @ b[batch] for row-major a (..., m, k), b (..., k, n), y (..., m, n).
/// Rows of each product are spread across threads; the i-p-j order keeps the inner loop
/// contiguous in b and y so it vectorizes.
template <typename T>
void batched_matmul_loop(const T* a, const T* b, T* y, const Shape& sa, const Shape& sb,
                         const Shape& sy) {
  size_t rank = sy.size();
  int64_t m = sy[rank - 2], n = sy[rank - 1], k = sa[rank - 1];
  int64_t batches = 1;
  for (size_t i = 0; i + 2 < rank; ++i) batches *= sy[i];
  auto batch_offset = [&](int64_t bi, const Shape& s) {
    int64_t off = 0, stride = s[rank - 2] * s[rank - 1];
    for (size_t i = rank - 2; i-- > 0;) {
      int64_t idx = bi % sy[i];
      bi /= sy[i];
      if (s[i] != 1) off += idx * stride;
      stride *= s[i];
    }
    return off;
  };
  parallel_for(batches * m, std::max<int64_t>(1, 4096 / std::max<int64_t>(n * k, 1)),
               [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t bi = r / m, i = r % m;
      const T* pa = a + batch_offset(bi, sa) + i * k;
      const T* pb = b + batch_offset(bi, sb);
      T* py = y + r * n;
      std::fill(py, py + n, T(0));
      for (int64_t p = 0; p < k; ++p) {
        T av = pa[p];
        const T* row = pb + p * n;
        for (int64_t j = 0; j < n; ++j) py[j] += av * row[j];
      }
    }
  });
}

}  // namespace porta::cpu
