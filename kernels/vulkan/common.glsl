// porta vulkan shaders — shared declarations. Include first in every .comp.
//
// STORAGE is the element type in buffers: float, or float16_t in the f16 variant (built with
// -DPORTA_F16). Arithmetic is always fp32 (values are converted on load and store).
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#ifdef PORTA_F16
#define STORAGE float16_t
#else
#define STORAGE float
#endif

// Workgroup size is specialization constant 0 (set by the launcher).
layout(local_size_x_id = 0) in;

// Linear invocation index over a grid spread across x and y (see vk::set_grid).
uint global_index() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}
// Linear workgroup index over the same grid.
uint group_index() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }
