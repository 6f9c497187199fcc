// variants: f32 f16
// Conv and ConvTranspose (TRANSPOSED, specialization constant 1) as direct kernels over
// N x C x spatial (1 to 3 axes), grouped, one invocation per output element, fp32 accumulation.
//   Conv:          y[n,oc,o] = b[oc] + sum_{ic in group, k} x[n,ic, o*s - pad + k*dil] * w[oc,ic',k]
//   ConvTranspose: y[n,oc,o] = b[oc] + sum_{ic in group, k : o + pad - k*dil = i*s} x[n,ic,i] * w[ic,oc',k]
// Weight layouts are ONNX's: Conv (C_out, C_in/group, k...), ConvTranspose (C_in, C_out/group, k...).
// A Conv's fused residual and activation (activation.glsl) apply where Y is written.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int TRANSPOSED = 0;
layout(std430, binding = 0) readonly buffer X { STORAGE x[]; };
layout(std430, binding = 1) readonly buffer W { STORAGE w[]; };
layout(std430, binding = 2) readonly buffer B { STORAGE bias[]; };
layout(std430, binding = 3) writeonly buffer Y { STORAGE y[]; };
layout(std430, binding = 4) readonly buffer R { STORAGE res[]; };
layout(constant_id = 2) const int ACT = 0;
layout(constant_id = 3) const int HAS_RES = 0;
layout(push_constant) uniform Params {
  uint n;
  uint spatial;
  int c_in, c_out, group;
  int in_size[3];
  int out_size[3];
  int kernel[3];
  int stride[3];
  int pad[3];
  int dilation[3];
  uint has_bias;
  float act_alpha, act_beta;
} p;

#include "activation.glsl"

void main() {
  uint i = global_index();
  if (i >= p.n) return;
  int osize = 1, isize = 1, ksize = 1;
  for (uint d = 0; d < p.spatial; ++d) { osize *= p.out_size[d]; isize *= p.in_size[d]; ksize *= p.kernel[d]; }
  int rem = int(i % uint(osize));
  int t = int(i / uint(osize));
  int oc = t % p.c_out, batch = t / p.c_out;
  int o[3];
  for (int d = int(p.spatial) - 1; d >= 0; --d) { o[d] = rem % p.out_size[d]; rem /= p.out_size[d]; }
  int cin_g = p.c_in / p.group, cout_g = p.c_out / p.group;
  int g = oc / cout_g;
  float acc = p.has_bias != 0 ? float(bias[oc]) : 0.0;
  for (int k = 0; k < ksize; ++k) {
    int at[3];
    bool inside = true;
    int kr = k;
    for (int d = int(p.spatial) - 1; d >= 0; --d) {
      int kd = kr % p.kernel[d];
      kr /= p.kernel[d];
      if (TRANSPOSED != 0) {
        int num = o[d] + p.pad[d] - kd * p.dilation[d];
        at[d] = num >= 0 ? num / p.stride[d] : -1;
        inside = inside && num >= 0 && num % p.stride[d] == 0 && at[d] < p.in_size[d];
      } else {
        at[d] = o[d] * p.stride[d] - p.pad[d] + kd * p.dilation[d];
        inside = inside && at[d] >= 0 && at[d] < p.in_size[d];
      }
    }
    if (!inside) continue;
    int pos = 0;
    for (uint d = 0; d < p.spatial; ++d) pos = pos * p.in_size[d] + at[d];
    for (int c = 0; c < cin_g; ++c) {
      int ic = g * cin_g + c;
      float xv = float(x[(batch * p.c_in + ic) * isize + pos]);
      int widx = TRANSPOSED != 0 ? ((ic * cout_g + (oc - g * cout_g)) * ksize + k)
                                 : ((oc * cin_g + c) * ksize + k);
      acc += xv * float(w[widx]);
    }
  }
  if (HAS_RES != 0) acc += float(res[i]);
  y[i] = STORAGE(fused_activation(acc, p.act_alpha, p.act_beta));
}
