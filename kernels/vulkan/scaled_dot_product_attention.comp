// ScaledDotProductAttention (ai.porta), fused, with a streaming ("online") softmax: no score
// matrix exists outside one workgroup's shared memory.
//
// A workgroup of 256 invocations owns BQ = 16 queries of one (batch, head). It walks the keys
// in tiles of BK = 16: K and V tiles go to shared memory, each invocation computes one score
// s[r][j] = scale * q_r . k_j (+ Mask) (-inf where causal hides the key), one invocation per
// query row updates the running max m and sum l and rescales, and every invocation adds P V to
// its 8 accumulators (row r = t / 16, columns t % 16 + 16 k). All arithmetic is fp32.
// D and Dv are at most 128 (the launcher declines more). Uses no subgroup operations.
// One dispatch walks the keys [kv_begin, kv_stop): where the driver caps the loop iterations of
// an invocation (lavapipe), the host splits a long key sequence over several dispatches and
// each workgroup's running max, sum and accumulators pass between them through State (per
// query row: m, l, then Dv accumulators); the dispatch that reaches Skv writes the output.
#version 450
#include "common.glsl"

const uint BQ = 16, BK = 16, MAX_D = 128, COLS_PER_INVOCATION = MAX_D / 16;

layout(constant_id = 1) const int CAUSAL = 0;
layout(constant_id = 2) const int HAS_MASK = 0;
layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer K { float k[]; };
layout(std430, binding = 2) readonly buffer V { float v[]; };
layout(std430, binding = 3) readonly buffer Mask { float mask[]; };
layout(std430, binding = 4) writeonly buffer Dst { float dst[]; };
layout(std430, binding = 5) buffer State { float state[]; };
// mask_stride: element strides of Mask broadcast to [B, H, Sq, Skv] (0 on broadcast axes).
layout(push_constant, std430) uniform Params {
  uint H; uint Sq; uint Skv; uint D; uint Dv; uint q_blocks; uint groups; float scale;
  uint mask_stride[4];
  uint kv_begin, kv_stop;  // keys of this dispatch (kv_begin a multiple of BK)
} p;

shared float q_tile[BQ * MAX_D];
shared float k_tile[BK * MAX_D];
shared float v_tile[BK * MAX_D];
shared float scores[BQ * BK];
shared float row_max[BQ], row_sum[BQ], row_rescale[BQ];

const float NEG_INF = -1.0 / 0.0;

void main() {
  uint group = group_index();
  if (group >= p.groups) return;  // grid padding (uniform per workgroup)
  uint bh = group / p.q_blocks, i0 = (group % p.q_blocks) * BQ;
  uint t = gl_LocalInvocationIndex;
  uint b = bh / p.H, h = bh % p.H;

  for (uint e = t; e < BQ * p.D; e += 256) {
    uint r = e / p.D, d = e % p.D;
    q_tile[r * MAX_D + d] = i0 + r < p.Sq ? q[(bh * p.Sq + i0 + r) * p.D + d] : 0.0;
  }
  uint my_row = t / 16, my_col = t % 16;
  uint my_cols = my_col < p.Dv ? (p.Dv - my_col + 15) / 16 : 0;  // columns my_col + 16 c below Dv
  uint state_row = p.Dv + 2u;                                       // floats per query row in State
  uint my_state = (group * BQ + my_row) * state_row;
  bool resume = p.kv_begin > 0u;
  if (t < BQ) {
    row_max[t] = resume ? state[(group * BQ + t) * state_row] : NEG_INF;
    row_sum[t] = resume ? state[(group * BQ + t) * state_row + 1u] : 0.0;
  }
  float acc[COLS_PER_INVOCATION];
  for (uint c = 0; c < COLS_PER_INVOCATION; ++c)
    acc[c] = resume && c < my_cols ? state[my_state + 2u + my_col + 16u * c] : 0.0;

  uint kv_end = min(CAUSAL != 0 ? min(p.Skv, i0 + BQ) : p.Skv, p.kv_stop);
  for (uint j0 = p.kv_begin; j0 < kv_end; j0 += BK) {
    barrier();  // the previous tile's readers are done
    for (uint e = t; e < BK * p.D; e += 256) {
      uint j = e / p.D, d = e % p.D;
      k_tile[j * MAX_D + d] = j0 + j < p.Skv ? k[(bh * p.Skv + j0 + j) * p.D + d] : 0.0;
    }
    for (uint e = t; e < BK * p.Dv; e += 256) {
      uint j = e / p.Dv, d = e % p.Dv;
      v_tile[j * MAX_D + d] = j0 + j < p.Skv ? v[(bh * p.Skv + j0 + j) * p.Dv + d] : 0.0;
    }
    barrier();
    {
      uint r = my_row, j = my_col, i = i0 + r, key = j0 + j;
      float s = NEG_INF;
      if (i < p.Sq && key < p.Skv && (CAUSAL == 0 || key <= i)) {
        float dot = 0.0;
        for (uint d = 0; d < p.D; ++d) dot += q_tile[r * MAX_D + d] * k_tile[j * MAX_D + d];
        s = dot * p.scale;
        if (HAS_MASK != 0)
          s += mask[b * p.mask_stride[0] + h * p.mask_stride[1] + i * p.mask_stride[2] + key * p.mask_stride[3]];
      }
      scores[r * BK + j] = s;
    }
    barrier();
    if (t < BQ) {
      // Online softmax for row t: new max, rescale of what was summed so far, this tile's
      // probabilities (exp(-inf) is written as an explicit 0 rather than left to the driver).
      float m_old = row_max[t], m_new = m_old;
      for (uint j = 0; j < BK; ++j) m_new = max(m_new, scores[t * BK + j]);
      float rescale = 1.0, sum = 0.0;
      if (m_new != NEG_INF) {
        rescale = m_old == NEG_INF ? 0.0 : exp(m_old - m_new);
        for (uint j = 0; j < BK; ++j) {
          float s = scores[t * BK + j];
          float e = s == NEG_INF ? 0.0 : exp(s - m_new);
          scores[t * BK + j] = e;
          sum += e;
        }
      } else {
        for (uint j = 0; j < BK; ++j) scores[t * BK + j] = 0.0;
      }
      row_max[t] = m_new;
      row_sum[t] = row_sum[t] * rescale + sum;
      row_rescale[t] = rescale;
    }
    barrier();
    // Each probability is read once and applied to all of this invocation's columns.
    float rescale = row_rescale[my_row];
    for (uint c = 0; c < COLS_PER_INVOCATION; ++c) acc[c] *= rescale;
    for (uint j = 0; j < BK; ++j) {
      float pj = scores[my_row * BK + j];
      for (uint c = 0; c < COLS_PER_INVOCATION; ++c)
        if (c < my_cols) acc[c] += pj * v_tile[j * MAX_D + my_col + 16 * c];
    }
  }
  barrier();
  if (p.kv_stop < p.Skv) {  // not the last dispatch: keep the running state for the next
    if (t < BQ) {
      state[(group * BQ + t) * state_row] = row_max[t];
      state[(group * BQ + t) * state_row + 1u] = row_sum[t];
    }
    for (uint c = 0; c < COLS_PER_INVOCATION; ++c)
      if (c < my_cols) state[my_state + 2u + my_col + 16u * c] = acc[c];
    return;
  }
  uint i = i0 + my_row;
  if (i >= p.Sq) return;
  // Skv = 0: an empty weighted sum (0). A query every key is hidden from: NaN (0 / 0), as the
  // softmax of a row of -inf gives.
  float m = row_max[my_row], l = row_sum[my_row];
  float inv = p.Skv == 0 ? 0.0 : (m == NEG_INF ? uintBitsToFloat(0x7fc00000u) : 1.0 / l);
  for (uint c = 0; c < COLS_PER_INVOCATION; ++c) {
    uint col = my_col + 16 * c;
    if (col >= p.Dv) break;
    dst[(bh * p.Sq + i) * p.Dv + col] = p.Skv == 0 ? 0.0 : acc[c] * inv;
  }
}
