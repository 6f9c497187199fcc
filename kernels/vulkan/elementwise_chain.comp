// variants: f32 f16
// ElementwiseChain (ai.porta; elementwise_chain.cpp): a program of up to 12 elementwise steps
// over up to 4 inputs in one pass, instead of one pass (and one dispatch) per op. Each
// invocation computes one vec4 of the output: it reads one texel of each input (MODE k of
// input k: 0 the texel at its own position, 1 the input's single element, 2 texel i % period[k]
// of an input repeating over the output's leading axes, 3 element (i / period[k]) % count[k] of
// an input holding one element per block of trailing axes), runs the steps in registers and stores one
// vec4 (the texel that runs past n element by element, through the scalar view).
// Registers 0..3 hold the inputs, 4 + s step s's result; an operand code of 16 + k is the
// immediate c[k]. Step s is the constant S<s>: bits 0-6 the op (0-31 binary_float.glsl's
// codes, 32 + unary_float.glsl's), 8-13 operand a, 14-19 operand b, 20-24 the index q of its
// attribute values c[q], c[q + 1]. The steps are specialization constants, unrolled below, so
// a program compiles to straight-line code with its switches folded away.
#version 450
#define PORTA_UNARY_FN_ONLY
#define PORTA_BINARY_FN_ONLY
#include "common.glsl"

layout(constant_id = 1) const int N_IN = 1;
layout(constant_id = 2) const int N_STEPS = 1;
layout(constant_id = 3) const int MODES = 0;  // 2 bits per input
layout(constant_id = 4) const int S0 = 0;
layout(constant_id = 5) const int S1 = 0;
layout(constant_id = 6) const int S2 = 0;
layout(constant_id = 7) const int S3 = 0;
layout(constant_id = 8) const int S4 = 0;
layout(constant_id = 9) const int S5 = 0;
layout(constant_id = 10) const int S6 = 0;
layout(constant_id = 11) const int S7 = 0;
layout(constant_id = 12) const int S8 = 0;
layout(constant_id = 13) const int S9 = 0;
layout(constant_id = 14) const int S10 = 0;
layout(constant_id = 15) const int S11 = 0;
layout(binding = 0) uniform samplerBuffer X0;
layout(binding = 1) uniform samplerBuffer X1;
layout(binding = 2) uniform samplerBuffer X2;
layout(binding = 3) uniform samplerBuffer X3;
layout(std430, binding = 4) writeonly buffer Y4 { STORAGE4 y4[]; };
layout(std430, binding = 5) writeonly buffer Y { STORAGE y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint period[4];
  uint count[4];
  float c[23];
} p;

#include "unary_float.glsl"
#include "binary_float.glsl"

vec4 texel_of(int k, int t) {
  switch (k) {
    case 0: return texelFetch(X0, t);
    case 1: return texelFetch(X1, t);
    case 2: return texelFetch(X2, t);
  }
  return texelFetch(X3, t);
}

vec4 load(int k, uint i) {
  int mode = (MODES >> (2 * k)) & 3;
  if (mode == 0) return texel_of(k, int(i));
  if (mode == 1) return vec4(texel_of(k, 0).x);
  if (mode == 2) return texel_of(k, int(i % p.period[k]));
  uint e = i / p.period[k] % p.count[k];
  return vec4(texel_of(k, int(e >> 2))[e & 3u]);
}

vec4 operand(vec4 r[16], int v) { return v < 16 ? r[v] : vec4(p.c[v - 16]); }

vec4 run_step(int code, vec4 r[16]) {
  int op = code & 127, q = (code >> 20) & 31;
  vec4 x = operand(r, (code >> 8) & 63), y = operand(r, (code >> 14) & 63), v;
  float alpha = p.c[q], beta = p.c[min(q + 1, 22)];
  for (int j = 0; j < 4; ++j)
    // NaN propagates through every one-operand op, as in unary_texel.comp.
    v[j] = op < 32 ? binary_fn(op, x[j], y[j]) : isnan(x[j]) ? x[j] : unary_fn(op - 32, x[j], alpha, beta, beta);
  return v;
}

void main() {
  uint i = global_index();
  if (i * 4 >= p.n) return;
  vec4 r[16];
  for (int k = 0; k < 16; ++k) r[k] = vec4(0.0);
  if (N_IN > 0) r[0] = load(0, i);
  if (N_IN > 1) r[1] = load(1, i);
  if (N_IN > 2) r[2] = load(2, i);
  if (N_IN > 3) r[3] = load(3, i);
  if (N_STEPS > 0) r[4] = run_step(S0, r);
  if (N_STEPS > 1) r[5] = run_step(S1, r);
  if (N_STEPS > 2) r[6] = run_step(S2, r);
  if (N_STEPS > 3) r[7] = run_step(S3, r);
  if (N_STEPS > 4) r[8] = run_step(S4, r);
  if (N_STEPS > 5) r[9] = run_step(S5, r);
  if (N_STEPS > 6) r[10] = run_step(S6, r);
  if (N_STEPS > 7) r[11] = run_step(S7, r);
  if (N_STEPS > 8) r[12] = run_step(S8, r);
  if (N_STEPS > 9) r[13] = run_step(S9, r);
  if (N_STEPS > 10) r[14] = run_step(S10, r);
  if (N_STEPS > 11) r[15] = run_step(S11, r);
  vec4 out_v = r[3 + N_STEPS];
  if (i * 4 + 4 <= p.n) {
    y4[i] = STORAGE4(out_v);
  } else {
    for (uint j = 0; i * 4 + j < p.n; ++j) y[i * 4 + j] = STORAGE(out_v[j]);
  }
}
