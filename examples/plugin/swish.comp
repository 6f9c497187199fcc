#version 450
// ScaledSwish on Vulkan: Y[i] = X[i] * sigmoid(alpha * X[i]), one invocation per element.
// The grid may be 2-D (more than 65535 workgroups): the element index linearises it.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Src { float x[]; };
layout(std430, binding = 1) writeonly buffer Dst { float y[]; };
layout(push_constant) uniform Params {
  uint count;
  float alpha;
} p;

void main() {
  uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  uint i = group * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= p.count) return;
  float v = x[i];
  y[i] = v / (1.0 + exp(-p.alpha * v));
}
