# Builds the Vulkan backend into libporta: host code (backends/vulkan), kernel launchers
# (kernels/vulkan/*.cpp) and the compute shaders (kernels/vulkan/*.comp), which glslc compiles
# to SPIR-V at build time; the SPIR-V is embedded in generated .cpp files, so nothing is read
# or compiled at run time.
#
# A shader may declare build-time variants on a line "// variants: f32 f16": each variant is
# compiled with -DPORTA_<VARIANT> (upper case) and registered under "<shader>:<variant>".
# Without that line the shader has the single variant f32.
file(GLOB PORTA_VULKAN_SOURCES CONFIGURE_DEPENDS
  ${CMAKE_SOURCE_DIR}/backends/vulkan/*.cpp ${CMAKE_SOURCE_DIR}/kernels/vulkan/*.cpp)
file(GLOB PORTA_VULKAN_SHADERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/kernels/vulkan/*.comp)
file(GLOB PORTA_VULKAN_SHADER_INCLUDES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/kernels/vulkan/*.glsl)

set(_spv_dir ${CMAKE_BINARY_DIR}/spirv)
file(MAKE_DIRECTORY ${_spv_dir})
set(_generated)
foreach(shader IN LISTS PORTA_VULKAN_SHADERS)
  get_filename_component(_name ${shader} NAME_WE)
  # The variant line is read here, so editing a shader re-runs CMake.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${shader})
  file(STRINGS ${shader} _variant_line REGEX "^// variants:")
  set(_variants f32)
  if(_variant_line)
    string(REGEX REPLACE "^// variants:[ ]*" "" _variants "${_variant_line}")
    separate_arguments(_variants UNIX_COMMAND "${_variants}")
  endif()
  foreach(v IN LISTS _variants)
    string(TOUPPER ${v} _V)
    set(_spv ${_spv_dir}/${_name}_${v}.spv)
    set(_cpp ${_spv_dir}/${_name}_${v}.spv.cpp)
    add_custom_command(
      OUTPUT ${_spv}
      COMMAND ${PORTA_GLSLC} --target-env=vulkan1.2 -O -fshader-stage=compute
              -I ${CMAKE_SOURCE_DIR}/kernels/vulkan -DPORTA_${_V}=1 -MD -MF ${_spv}.d
              -o ${_spv} ${shader}
      DEPENDS ${shader} ${PORTA_VULKAN_SHADER_INCLUDES}
      DEPFILE ${_spv}.d
      COMMENT "glslc ${_name}.comp (${v})"
      VERBATIM)
    add_custom_command(
      OUTPUT ${_cpp}
      COMMAND ${CMAKE_COMMAND} -DSPV=${_spv} -DOUT=${_cpp} -DNAME=${_name}:${v}
              -P ${CMAKE_SOURCE_DIR}/third_party/embed_spirv.cmake
      DEPENDS ${_spv} ${CMAKE_SOURCE_DIR}/third_party/embed_spirv.cmake
      VERBATIM)
    list(APPEND _generated ${_cpp})
  endforeach()
endforeach()

target_sources(porta PRIVATE ${PORTA_VULKAN_SOURCES} ${_generated})
target_link_libraries(porta PRIVATE Vulkan::Vulkan)
# Vulkan structs are initialised as {sType} and filled field by field.
set_source_files_properties(${PORTA_VULKAN_SOURCES} PROPERTIES COMPILE_OPTIONS -Wno-missing-field-initializers)
