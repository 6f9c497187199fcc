// porta vulkan shaders — shared declarations. Include first in every .comp.
//
// STORAGE is the element type in buffers: float, or float16_t in the f16 variant (built with
// -DPORTA_F16); STORAGE4 a vector of 4 of them (buffers bound a second time as vec4 arrays).
// Arithmetic is always fp32 (values are converted on load and store).
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#ifdef PORTA_F16
#define STORAGE float16_t
#define STORAGE4 f16vec4
#else
#define STORAGE float
#define STORAGE4 vec4
#endif

// Workgroup size is specialization constant 0 (set by the launcher).
layout(local_size_x_id = 0) in;

// Linear invocation index over a grid spread across x and y (see vk::set_grid).
uint global_index() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}
// Linear workgroup index over the same grid.
uint group_index() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }

// a / d for a < 2^21 (d >= 1) without an integer division: llvmpipe (lavapipe) runs a vector
// integer division as one scalar division per lane, while this is a few vector instructions.
// float(a) and float(d) are exact, and GLSL's float division (within 2.5 ulp) leaves the
// quotient within one of a / d below 2^21, which the two corrections remove. Callers keep to
// the bound (a specialization constant chooses `/` past it).
uint div21(uint a, uint d) {
  uint q = uint(float(a) / float(d));
  if (q * d > a) q -= 1u;
  else if (a - q * d >= d) q += 1u;
  return q;
}
