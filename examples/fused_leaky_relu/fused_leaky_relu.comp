#version 450
// FusedLeakyReLU on Vulkan (f32): Y[i] = leaky_relu(X[i] + bias[(i / inner) % channels]) * scale,
// one invocation per element; the grid may be 2-D (more than 65535 workgroups).
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Src { float x[]; };
layout(std430, binding = 1) readonly buffer Bias { float bias[]; };
layout(std430, binding = 2) writeonly buffer Dst { float y[]; };
layout(push_constant) uniform Params {
  uint count;
  uint channels;
  uint inner;
  float negative_slope;
  float scale;
} p;

void main() {
  uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  uint i = group * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= p.count) return;
  float v = x[i] + bias[(i / p.inner) % p.channels];
  y[i] = (v >= 0.0 ? v : v * p.negative_slope) * p.scale;
}
