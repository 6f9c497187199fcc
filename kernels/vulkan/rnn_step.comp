// variants: f32
// LSTM (GATES = 4) and GRU (GATES = 3, linear_before_reset = 1) on CPU-like devices (rnn.cpp,
// implementations "steps" and "persistent"). MODE 0 ("steps"): one dispatch per time step, one
// invocation per (direction, batch entry, 4 consecutive hidden units), no shared memory and no
// barriers. MODE 2 ("persistent"): one workgroup per (direction, batch entry) sequence, one
// invocation per 4 units, running the steps [step, step_end) in one dispatch; the previous h
// of every unit sits in shared memory, two barriers a step (lavapipe hands every dispatch to
// its thread pool, which costs more than a short step computes). The input projections of
// every step (x . W + Wb) come precomputed in GX from one texel GEMM; a step adds h . R + Rb
// per gate. R comes transposed, RT [dirs, H (k), G * H (gate, unit)], so that the 4 units of
// an invocation are one vec4 texel per (k, gate) and the lanes of a SIMD batch read
// consecutive texels (on lavapipe a vectorized gather touching two cache lines, where R's rows
// put every lane on its own line); the previous state comes as vec4 texels too. Each unit's
// cell is updated and the new state written to the other buffer of a pair. MODE 1 instead
// loads the initial state.
// State: per sequence (direction d, batch entry b: d * batch + b) h then c, H floats each.
// ONNX gate order: LSTM i o f c, GRU z r h. Steps at or past a sequence's length keep its state
// and write zeros to Y. Layouts 0 and 1 as rnn.comp; fp32 throughout.
#version 450
#include "common.glsl"
#include "float_math.glsl"

layout(constant_id = 1) const int GATES = 4;
layout(constant_id = 2) const int MODE = 0;  // 0: a time step, 1: load initial_h / initial_c, 2: steps
layout(constant_id = 3) const int SHARED_Q = 1;  // MODE 2: H / 4, the workgroup's size
layout(binding = 0) uniform samplerBuffer RT;   // [dirs, H, G * H] as vec4 texels
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
  uint step_end;  // MODE 2: the steps [step, step_end)
} p;

shared vec4 hs[SHARED_Q];  // MODE 2: the previous h, 4 units a texel

bool has(uint bit) { return (p.flags & bit) != 0u; }
float clipped(float v) { return clamp(v, -p.clip, p.clip); }

// The previous h of units 4 k4 .. 4 k4 + 3 (hb: the sequence's state as texels).
vec4 prev_h(uint hb, uint k4) { return MODE == 2 ? hs[k4] : texelFetch(Hin, int(hb + k4)); }

// Time step s of sequence (d, b) for units j0 .. j0 + 3 (quad jq) from the state (hp4, cp4):
// the new state in (hn4, cn4), Y's row written. Returns the step's time index t.
uint run_step(uint s, uint d, uint b, uint jq, uint base, vec4 hp4, vec4 cp4, out vec4 hn4, out vec4 cn4) {
  uint H = p.hidden, G = uint(GATES), quads = H / 4u, j0 = jq * 4u;
  hn4 = hp4;
  cn4 = cp4;
  int len = lens[b];
  bool running = int(s) < len;
  uint t = s;
  if (running) {
    t = ((p.reverse_mask >> d) & 1u) != 0u ? uint(len - 1 - int(s)) : s;
    uint row = has(128u) ? b * p.seq + t : t * p.batch + b;
    uint gxb = (d * p.seq * p.batch + row) * G * H;
    vec4 acc[4] = vec4[4](vec4(0.0), vec4(0.0), vec4(0.0), vec4(0.0));
    uint hb = base / 4u;
    for (uint k4 = 0u; k4 < quads; ++k4) {
      vec4 hv = prev_h(hb, k4);
      uint r0 = (d * H + k4 * 4u) * G * quads + jq;  // RT's texel of (k = 4 k4, gate 0)
      for (int c = 0; c < 4; ++c)
        for (int g = 0; g < GATES; ++g) acc[g] += texelFetch(RT, int(r0 + (uint(c) * G + uint(g)) * quads)) * hv[c];
    }
    for (int u = 0; u < 4; ++u) {
      uint j = j0 + uint(u);
      float pre_x[4], pre_h[4];
      for (int g = 0; g < GATES; ++g) {
        pre_h[g] = acc[g][u] + (has(1u) ? float(bias[(d * 2u + 1u) * G * H + uint(g) * H + j]) : 0.0);
        pre_x[g] = gx[gxb + uint(g) * H + j];
      }
      float hp = hp4[u], cp = cp4[u];
      if (GATES == 4) {
        uint pb = d * 3u * H;
        float pi = has(8u) ? float(peep[pb + j]) : 0.0;
        float po = has(8u) ? float(peep[pb + H + j]) : 0.0;
        float pf = has(8u) ? float(peep[pb + 2u * H + j]) : 0.0;
        float ig = sigmoid(clipped(pre_x[0] + pre_h[0] + pi * cp));
        float fg = sigmoid(clipped(pre_x[2] + pre_h[2] + pf * cp));
        float cand = tanh_stable(clipped(pre_x[3] + pre_h[3]));
        float cn = fg * cp + ig * cand;
        float og = sigmoid(clipped(pre_x[1] + pre_h[1] + po * cn));
        cn4[u] = cn;
        hn4[u] = og * tanh_stable(cn);
      } else {  // linear_before_reset = 1: the candidate's recurrent product is scaled by r
        float z = sigmoid(clipped(pre_x[0] + pre_h[0]));
        float r = sigmoid(clipped(pre_x[1] + pre_h[1]));
        float cand = tanh_stable(clipped(pre_x[2] + r * pre_h[2]));
        hn4[u] = (1.0 - z) * cand + z * hp;
      }
    }
  }
  if (has(16u))
    for (uint u = 0u; u < 4u; ++u) {
      uint at = has(128u) ? (b * p.seq + t) * p.dirs + d : (t * p.dirs + d) * p.batch + b;
      y[at * H + j0 + u] = STORAGE(running ? hn4[u] : 0.0);
    }
  return t;
}

// The state after the dispatch's last step to the other buffer, and Y_h / Y_c after the
// sequence's (state0: their offset of unit j0).
void store_state(uint s, uint base, uint j0, uint state0, vec4 hn4, vec4 cn4) {
  uint H = p.hidden;
  for (uint u = 0u; u < 4u; ++u) {
    uint j = j0 + u;
    hc_out[base + j] = hn4[u];
    hc_out[base + H + j] = cn4[u];
    if (s + 1u == p.seq) {
      if (has(32u)) y_h[state0 + u] = STORAGE(hn4[u]);
      if (GATES == 4 && has(64u)) y_c[state0 + u] = STORAGE(cn4[u]);
    }
  }
}

void main() {
  uint H = p.hidden, quads = H / 4u;
  uint sid, jq;  // sequence d * batch + b, quad of units
  if (MODE == 2) {
    sid = group_index();
    jq = gl_LocalInvocationID.x;
  } else {
    uint i = global_index();
    if (i >= p.dirs * p.batch * quads) return;
    sid = i / quads;
    jq = i - sid * quads;
  }
  uint j0 = jq * 4u;
  uint d = sid / p.batch, b = sid - d * p.batch;
  uint base = sid * 2u * H;
  // initial_h / initial_c and Y_h / Y_c: [dirs, batch, H], or [batch, dirs, H] in layout 1.
  uint state0 = (has(128u) ? b * p.dirs + d : d * p.batch + b) * H + j0;
  if (MODE == 1) {
    for (uint u = 0u; u < 4u; ++u) {
      hc_out[base + j0 + u] = has(2u) ? float(h0[state0 + u]) : 0.0;
      hc_out[base + H + j0 + u] = has(4u) ? float(c0[state0 + u]) : 0.0;
    }
    return;
  }
  vec4 h4 = texelFetch(Hin, int((base + j0) / 4u)), c4 = texelFetch(Hin, int((base + H + j0) / 4u));
  vec4 hn4, cn4;
  if (MODE == 2) {
    hs[jq] = h4;
    barrier();
    for (uint s = p.step; s < p.step_end; ++s) {
      run_step(s, d, b, jq, base, h4, c4, hn4, cn4);
      barrier();  // every quad has read the previous h
      hs[jq] = hn4;
      barrier();
      h4 = hn4;
      c4 = cn4;
    }
    store_state(p.step_end - 1u, base, j0, state0, h4, c4);
    return;
  }
  run_step(p.step, d, b, jq, base, h4, c4, hn4, cn4);
  store_state(p.step, base, j0, state0, hn4, cn4);
}
