// porta vulkan shaders — workgroup-wide reductions for 256-invocation workgroups, correct for
// any subgroup size (8 on lavapipe .. 64). SUBGROUPS (specialization constant 2) selects the
// strategy: 1 = subgroup arithmetic then shared memory across subgroups, 0 = shared-memory
// tree only. Every invocation of the workgroup must call these (uniform control flow).
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_basic : require

layout(constant_id = 2) const int SUBGROUPS = 1;
shared float reduce_scratch[256];

const int RED_ADD = 0, RED_MAX = 1, RED_MIN = 2, RED_MUL = 3;

float combine(float x, float y, int kind) {
  switch (kind) {
    case RED_MAX: return max(x, y);
    case RED_MIN: return min(x, y);
    case RED_MUL: return x * y;
  }
  return x + y;
}

float subgroup_reduce(float v, int kind) {
  switch (kind) {
    case RED_MAX: return subgroupMax(v);
    case RED_MIN: return subgroupMin(v);
    case RED_MUL: return subgroupMul(v);
  }
  return subgroupAdd(v);
}

float workgroup_reduce(float v, int kind) {
  uint t = gl_LocalInvocationIndex;
  if (SUBGROUPS != 0) {
    float s = subgroup_reduce(v, kind);
    if (subgroupElect()) reduce_scratch[gl_SubgroupID] = s;
    barrier();
    if (t == 0) {
      float total = reduce_scratch[0];
      for (uint i = 1; i < gl_NumSubgroups; ++i) total = combine(total, reduce_scratch[i], kind);
      reduce_scratch[0] = total;
    }
  } else {
    reduce_scratch[t] = v;
    barrier();
    for (uint stride = gl_WorkGroupSize.x / 2; stride > 0; stride /= 2) {
      if (t < stride) reduce_scratch[t] = combine(reduce_scratch[t], reduce_scratch[t + stride], kind);
      barrier();
    }
  }
  barrier();
  float result = reduce_scratch[0];
  barrier();  // scratch may be reused by the next reduction
  return result;
}

float workgroup_sum(float v) { return workgroup_reduce(v, RED_ADD); }
float workgroup_max(float v) { return workgroup_reduce(v, RED_MAX); }
float workgroup_min(float v) { return workgroup_reduce(v, RED_MIN); }
