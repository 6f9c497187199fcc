// variants: f32 f16
// LSTM (GATES = 4) and GRU (GATES = 3) with the default activations, layouts 0 and 1. One workgroup
// per (direction, batch entry) runs that sequence's steps [step_begin, step_end): gate
// pre-activations row by row across the workgroup, then the cell update per hidden unit, with
// h, c and the gates in shared memory (HIDDEN, constant 4, sizes them). fp32 throughout.
// The host splits a sequence over several dispatches when one would run more loop iterations
// per invocation than the driver allows (rnn.cpp); h and c then pass between dispatches through
// the State buffer (per sequence: h then c, HIDDEN each).
// ONNX gate order: LSTM i o f c, GRU z r h. Steps at or past a sequence's length leave the
// state alone and write zeros to Y.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int GATES = 4;
layout(constant_id = 3) const int LINEAR_BEFORE_RESET = 0;
layout(constant_id = 4) const int HIDDEN = 1;
layout(std430, binding = 0) readonly buffer X { STORAGE x[]; };
layout(std430, binding = 1) readonly buffer W { STORAGE w[]; };
layout(std430, binding = 2) readonly buffer R { STORAGE r[]; };
layout(std430, binding = 3) readonly buffer B { STORAGE bias[]; };
layout(std430, binding = 4) readonly buffer Lens { int lens[]; };
layout(std430, binding = 5) readonly buffer H0 { STORAGE h0[]; };
layout(std430, binding = 6) readonly buffer C0 { STORAGE c0[]; };
layout(std430, binding = 7) readonly buffer P { STORAGE peep[]; };
layout(std430, binding = 8) writeonly buffer Y { STORAGE y[]; };
layout(std430, binding = 9) writeonly buffer Yh { STORAGE y_h[]; };
layout(std430, binding = 10) writeonly buffer Yc { STORAGE y_c[]; };
layout(std430, binding = 11) buffer State { float state_hc[]; };
layout(push_constant) uniform Params {
  uint seq, batch, input_size, dirs;
  uint flags;         // 1 B, 2 initial_h, 4 initial_c, 8 P, 16 Y, 32 Y_h, 64 Y_c, 128 layout 1
  uint reverse_mask;  // bit d: direction d runs backwards
  float clip;
  uint step_begin, step_end;  // steps of this dispatch; the first reads initial_h/c, the last writes Y_h/Y_c
} p;

shared float h[HIDDEN];
shared float c[HIDDEN];
shared float rh[HIDDEN];
shared float gx[4 * HIDDEN];  // x . W[row] (+ W bias)
shared float gh[4 * HIDDEN];  // h . R[row] (+ R bias)

float sigmoid(float v) { return v >= 0.0 ? 1.0 / (1.0 + exp(-v)) : exp(v) / (1.0 + exp(v)); }
float tanh_safe(float v) {
  if (abs(v) < 0.0625) {
    float v2 = v * v;
    return v * (1.0 + v2 * (-1.0 / 3.0 + v2 * (2.0 / 15.0 + v2 * (-17.0 / 315.0))));
  }
  float e = exp(-2.0 * abs(v));
  return sign(v) * (1.0 - e) / (1.0 + e);
}
float clipped(float v) { return clamp(v, -p.clip, p.clip); }
bool has(uint bit) { return (p.flags & bit) != 0u; }
// Layout 0: X [seq, batch, I], Y [seq, dirs, batch, H], states [dirs, batch, H];
// layout 1 (flag 128): X [batch, seq, I], Y [batch, seq, dirs, H], states [batch, dirs, H].
uint x_offset(uint t, uint b) { return (has(128u) ? b * p.seq + t : t * p.batch + b) * p.input_size; }
uint y_offset(uint t, uint d, uint b) {
  return (has(128u) ? (b * p.seq + t) * p.dirs + d : (t * p.dirs + d) * p.batch + b) * uint(HIDDEN);
}

void main() {
  uint d = gl_WorkGroupID.x / p.batch, b = gl_WorkGroupID.x % p.batch;
  uint t_id = gl_LocalInvocationIndex, step_size = gl_WorkGroupSize.x;
  uint H = uint(HIDDEN), I = p.input_size, G = uint(GATES);
  bool reverse = ((p.reverse_mask >> d) & 1u) != 0u;
  int len = lens[b];
  uint w_base = d * G * H * I, r_base = d * G * H * H, b_base = d * 2u * G * H;
  uint state = (has(128u) ? b * p.dirs + d : d * p.batch + b) * H;
  uint carried = gl_WorkGroupID.x * 2u * H;  // this sequence's h and c in State
  for (uint j = t_id; j < H; j += step_size) {
    if (p.step_begin == 0u) {
      h[j] = has(2u) ? float(h0[state + j]) : 0.0;
      c[j] = has(4u) ? float(c0[state + j]) : 0.0;
    } else {
      h[j] = state_hc[carried + j];
      c[j] = state_hc[carried + H + j];
    }
  }
  barrier();
  for (uint s = p.step_begin; s < p.step_end; ++s) {
    if (int(s) >= len) {  // past this sequence's length (uniform across the workgroup)
      if (has(16u))
        for (uint j = t_id; j < H; j += step_size) y[y_offset(s, d, b) + j] = STORAGE(0.0);
      continue;
    }
    uint t = uint(reverse ? len - 1 - int(s) : int(s));
    uint x_base = x_offset(t, b);
    for (uint row = t_id; row < G * H; row += step_size) {
      float vx = has(1u) ? float(bias[b_base + row]) : 0.0;
      for (uint k = 0; k < I; ++k) vx += float(x[x_base + k]) * float(w[w_base + row * I + k]);
      float vh = has(1u) ? float(bias[b_base + G * H + row]) : 0.0;
      bool gru_candidate = GATES == 3 && row >= 2u * H && LINEAR_BEFORE_RESET == 0;
      if (!gru_candidate)
        for (uint k = 0; k < H; ++k) vh += h[k] * float(r[r_base + row * H + k]);
      gx[row] = vx;
      gh[row] = vh;
    }
    barrier();
    if (GATES == 4) {
      for (uint j = t_id; j < H; j += step_size) {
        uint pb = d * 3u * H;
        float pi = has(8u) ? float(peep[pb + j]) : 0.0;
        float po = has(8u) ? float(peep[pb + H + j]) : 0.0;
        float pf = has(8u) ? float(peep[pb + 2u * H + j]) : 0.0;
        float ig = sigmoid(clipped(gx[j] + gh[j] + pi * c[j]));
        float fg = sigmoid(clipped(gx[2u * H + j] + gh[2u * H + j] + pf * c[j]));
        float cand = tanh_safe(clipped(gx[3u * H + j] + gh[3u * H + j]));
        float cn = fg * c[j] + ig * cand;
        float og = sigmoid(clipped(gx[H + j] + gh[H + j] + po * cn));
        c[j] = cn;
        h[j] = og * tanh_safe(cn);
      }
    } else {
      // z and r; rh = r * h for the candidate's recurrent product.
      for (uint j = t_id; j < H; j += step_size) {
        float rg = sigmoid(clipped(gx[H + j] + gh[H + j]));
        c[j] = sigmoid(clipped(gx[j] + gh[j]));  // z, kept in c (GRU has no cell state)
        rh[j] = LINEAR_BEFORE_RESET != 0 ? rg : rg * h[j];
      }
      barrier();
      for (uint j = t_id; j < H; j += step_size) {
        float pre;
        if (LINEAR_BEFORE_RESET != 0) {
          pre = gx[2u * H + j] + rh[j] * gh[2u * H + j];
        } else {
          float v = gh[2u * H + j];  // R bias only
          for (uint k = 0; k < H; ++k) v += rh[k] * float(r[r_base + (2u * H + j) * H + k]);
          pre = gx[2u * H + j] + v;
        }
        float cand = tanh_safe(clipped(pre));
        gx[j] = (1.0 - c[j]) * cand + c[j] * h[j];  // new h, staged: others still read h
      }
      barrier();
      for (uint j = t_id; j < H; j += step_size) h[j] = gx[j];
    }
    barrier();
    if (has(16u))
      for (uint j = t_id; j < H; j += step_size) y[y_offset(t, d, b) + j] = STORAGE(h[j]);
    barrier();
  }
  for (uint j = t_id; j < H; j += step_size) {
    if (p.step_end < p.seq) {
      state_hc[carried + j] = h[j];
      state_hc[carried + H + j] = c[j];
    } else {
      if (has(32u)) y_h[state + j] = STORAGE(h[j]);
      if (GATES == 4 && has(64u)) y_c[state + j] = STORAGE(c[j]);
    }
  }
}
