// variants: f32 f16
// Copies blocks of a row-major matrix into blocks with more rows and columns, zero-filled:
//   dst[(b * dst_rows + r) * dst_cols + c] = src[(b * src_rows + r) * src_cols + c]
// for r < src_rows and c < src_cols, else 0. dst_cols is a multiple of 4 and each invocation
// writes one vec4. The texel GEMM (matmul.cpp, conv.cpp) reads operands whose rows are not
// whole texels through such copies.
#version 450
#include "common.glsl"

layout(std430, binding = 0) readonly buffer Src { STORAGE src[]; };
layout(std430, binding = 1) writeonly buffer Dst { STORAGE4 dst[]; };
layout(push_constant) uniform Params {
  uint total;  // vec4s of dst
  uint src_rows, src_cols, dst_rows, dst_cols;
} p;

void main() {
  uint i = global_index();
  if (i >= p.total) return;
  uint q = p.dst_cols / 4;
  uint c0 = i % q * 4, row = i / q;
  uint r = row % p.dst_rows, b = row / p.dst_rows;
  vec4 v = vec4(0.0);
  if (r < p.src_rows) {
    uint base = (b * p.src_rows + r) * p.src_cols;
    for (int j = 0; j < 4; ++j)
      if (c0 + j < p.src_cols) v[j] = float(src[base + c0 + j]);
  }
  dst[i] = STORAGE4(v);
}
