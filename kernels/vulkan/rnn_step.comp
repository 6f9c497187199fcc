// variants: f32
// LSTM (GATES = 4) and GRU (GATES = 3, linear_before_reset = 1) on CPU-like devices (rnn.cpp,
// implementation "steps"): one dispatch per time step, one invocation per (direction, batch
// entry, hidden unit), no shared memory and no barriers. The input projections of every step
// (x . W + Wb) come precomputed in GX from one texel GEMM; a step adds h . R + Rb per gate,
// reading R and the previous state as vec4 texels (on lavapipe a vectorized gather, where a
// storage-buffer load is a scalar loop over the lanes), updates the cell and writes the new
// state to the other buffer of a pair. MODE 1 instead loads the initial state.
// State: per sequence (direction d, batch entry b: d * batch + b) h then c, H floats each.
// ONNX gate order: LSTM i o f c, GRU z r h. Steps at or past a sequence's length keep its state
// and write zeros to Y. Layouts 0 and 1 as rnn.comp; fp32 throughout.
#version 450
#include "common.glsl"
#include "float_math.glsl"

layout(constant_id = 1) const int GATES = 4;
layout(constant_id = 2) const int MODE = 0;  // 0: a time step, 1: load initial_h / initial_c
layout(binding = 0) uniform samplerBuffer R;    // [dirs, G * H, H] as vec4 texels
layout(binding = 1) uniform samplerBuffer Hin;  // the previous state as vec4 texels
layout(std430, binding = 2) readonly buffer GX { float gx[]; };  // [dirs, seq * batch, G * H]
layout(std430, binding = 3) readonly buffer B { STORAGE bias[]; };
layout(std430, binding = 4) readonly buffer Lens { int lens[]; };
layout(std430, binding = 5) readonly buffer P { STORAGE peep[]; };
layout(std430, binding = 6) readonly buffer H0 { STORAGE h0[]; };
layout(std430, binding = 7) readonly buffer C0 { STORAGE c0[]; };
layout(std430, binding = 8) writeonly buffer Hout { float hc_out[]; };
layout(std430, binding = 9) writeonly buffer Y { STORAGE y[]; };
layout(std430, binding = 10) writeonly buffer Yh { STORAGE y_h[]; };
layout(std430, binding = 11) writeonly buffer Yc { STORAGE y_c[]; };
layout(push_constant) uniform Params {
  uint seq, batch, hidden, dirs;
  uint flags;         // 1 B, 2 initial_h, 4 initial_c, 8 P, 16 Y, 32 Y_h, 64 Y_c, 128 layout 1
  uint reverse_mask;  // bit d: direction d runs backwards
  float clip;
  uint step;
} p;

bool has(uint bit) { return (p.flags & bit) != 0u; }
float clipped(float v) { return clamp(v, -p.clip, p.clip); }
float state_at(uint i) { return texelFetch(Hin, int(i / 4u))[i % 4u]; }

void main() {
  uint H = p.hidden, G = uint(GATES);
  uint i = global_index();
  if (i >= p.dirs * p.batch * H) return;
  uint sid = i / H, j = i - sid * H;  // sequence d * batch + b, hidden unit j
  uint d = sid / p.batch, b = sid - d * p.batch;
  uint base = sid * 2u * H;
  // initial_h / initial_c and Y_h / Y_c: [dirs, batch, H], or [batch, dirs, H] in layout 1.
  uint state = (has(128u) ? b * p.dirs + d : d * p.batch + b) * H + j;
  if (MODE == 1) {
    hc_out[base + j] = has(2u) ? float(h0[state]) : 0.0;
    hc_out[base + H + j] = has(4u) ? float(c0[state]) : 0.0;
    return;
  }
  float hp = state_at(base + j), cp = state_at(base + H + j);
  float hn = hp, cn = cp;
  int len = lens[b];
  uint s = p.step;
  bool running = int(s) < len;
  uint t = s;
  if (running) {
    t = ((p.reverse_mask >> d) & 1u) != 0u ? uint(len - 1 - int(s)) : s;
    uint row = has(128u) ? b * p.seq + t : t * p.batch + b;
    uint gxb = (d * p.seq * p.batch + row) * G * H;
    float pre_x[4], pre_h[4];
    uint h4 = H / 4u, hb = base / 4u;
    for (uint g = 0u; g < G; ++g) {
      uint r0 = (d * G * H + g * H + j) * h4;
      vec4 acc = vec4(0.0);
      for (uint k = 0u; k < h4; ++k) acc += texelFetch(R, int(r0 + k)) * texelFetch(Hin, int(hb + k));
      pre_h[g] = acc.x + acc.y + acc.z + acc.w + (has(1u) ? float(bias[(d * 2u + 1u) * G * H + g * H + j]) : 0.0);
      pre_x[g] = gx[gxb + g * H + j];
    }
    if (GATES == 4) {
      uint pb = d * 3u * H;
      float pi = has(8u) ? float(peep[pb + j]) : 0.0;
      float po = has(8u) ? float(peep[pb + H + j]) : 0.0;
      float pf = has(8u) ? float(peep[pb + 2u * H + j]) : 0.0;
      float ig = sigmoid(clipped(pre_x[0] + pre_h[0] + pi * cp));
      float fg = sigmoid(clipped(pre_x[2] + pre_h[2] + pf * cp));
      float cand = tanh_stable(clipped(pre_x[3] + pre_h[3]));
      cn = fg * cp + ig * cand;
      float og = sigmoid(clipped(pre_x[1] + pre_h[1] + po * cn));
      hn = og * tanh_stable(cn);
    } else {  // linear_before_reset = 1: the candidate's recurrent product is scaled by r
      float z = sigmoid(clipped(pre_x[0] + pre_h[0]));
      float r = sigmoid(clipped(pre_x[1] + pre_h[1]));
      float cand = tanh_stable(clipped(pre_x[2] + r * pre_h[2]));
      hn = (1.0 - z) * cand + z * hp;
    }
  }
  hc_out[base + j] = hn;
  hc_out[base + H + j] = cn;
  if (has(16u)) {
    uint at = has(128u) ? (b * p.seq + t) * p.dirs + d : (t * p.dirs + d) * p.batch + b;
    y[at * H + j] = STORAGE(running ? hn : 0.0);
  }
  if (s + 1u == p.seq) {
    if (has(32u)) y_h[state] = STORAGE(hn);
    if (GATES == 4 && has(64u)) y_c[state] = STORAGE(cn);
  }
}
