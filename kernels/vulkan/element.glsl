// porta vulkan shaders — element types of the numeric variants (include after common.glsl).
//
// ELEM is the type in buffers, VALUE the type arithmetic runs in, INTEGER is 1 for integer
// variants. Variants: f32, f16 (VALUE float), i32, i64 (VALUE int64_t: needs shaderInt64),
// i8 and u8 (VALUE int: results wrap when stored, as the ops define).
#if defined(PORTA_I64)
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#define ELEM int64_t
#define VALUE int64_t
#define INTEGER 1
#elif defined(PORTA_I32)
#define ELEM int
#define VALUE int
#define INTEGER 1
#elif defined(PORTA_I8) || defined(PORTA_U8)
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#if defined(PORTA_I8)
#define ELEM int8_t
#else
#define ELEM uint8_t
#endif
#define VALUE int
#define INTEGER 1
#else
#define ELEM STORAGE
#define VALUE float
#define INTEGER 0
#endif
