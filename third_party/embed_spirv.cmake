# Build-time script: turns one SPIR-V binary (SPV) into a .cpp (OUT) that registers it with
# the Vulkan backend's shader table under NAME ("shader:variant").
file(READ ${SPV} _hex HEX)
string(LENGTH "${_hex}" _len)
math(EXPR _bytes "${_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _array "${_hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" _array "${_array}")
file(WRITE ${OUT} "// Generated from ${SPV} by embed_spirv.cmake; do not edit.\n"
  "#include \"backends/vulkan/vk_shaders.hpp\"\n"
  "namespace {\n"
  "alignas(4) const unsigned char kSpirv[] = {\n${_array}};\n"
  "const bool kRegistered = ::porta::vk::register_shader(\"${NAME}\", kSpirv, ${_bytes});\n"
  "}  // namespace\n")
