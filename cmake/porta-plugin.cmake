# porta_add_plugin: builds one porta plugin (a MODULE library) from C/C++ sources, CUDA sources
# (.cu) and Vulkan compute shaders (.comp). Part of porta's CMake package (find_package(porta)
# includes it; installed and in the build tree).
#
#   porta_add_plugin(NAME fused_leaky_relu SOURCES plugin.c fused_leaky_relu.cu fused_leaky_relu.comp
#                    [OUTPUT_DIRECTORY dir])
#
# - C/C++ sources build as usual, with porta's headers (the plugin reaches porta through the
#   table porta_plugin_init receives).
# - Each .cu builds once per GPU backend porta was built with:
#     cuda     nvcc (porta's), for CMAKE_CUDA_ARCHITECTURES if set, else porta's architectures;
#              the plugin links the CUDA runtime
#     hip      hipcc with -DPORTA_HIP=1 through porta's compat header, for PORTA_HIP_ARCHS if
#              set, else porta's targets; links libamdhip64
#     gpu_emu  the project's C++ compiler with -DPORTA_GPU_EMU=1 (C++20; the project must
#              enable CXX): the SIMT emulator runs it on the cpu; links libporta (the emulator)
#   and defines PORTA_PLUGIN_WITH_CUDA / _HIP / _GPU_EMU (1 or 0) on every source of the
#   plugin (porta/plugin_gpu.h uses them). The source includes porta/gpu_plugin.hpp.
# - Each .comp is compiled by glslc (when porta has Vulkan) into SPIR-V and embedded: the
#   plugin's sources include "<stem>_spv.h", which defines
#   `static const unsigned char <stem>_spv[]`, and PORTA_PLUGIN_WITH_VULKAN is 1.
# Each part whose backend porta lacks, or whose tool is not found, is skipped with a message;
# the plugin then registers the kernels it has, and porta runs the op's composite (or the cpu
# kernel) elsewhere.

if(DEFINED PORTA_EMBED_SPV)
  # Script mode (cmake -DPORTA_EMBED_SPV=in.spv -DOUT=out.h -DSYMBOL=name -P porta-plugin.cmake).
  file(READ ${PORTA_EMBED_SPV} _hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_hex}")
  string(REGEX REPLACE "((0x..,){16})" "\\1\n" _bytes "${_bytes}")
  file(WRITE ${OUT} "/* Generated from ${PORTA_EMBED_SPV} by porta_add_plugin; do not edit. */\n"
    "static const unsigned char ${SYMBOL}[] = {\n${_bytes}};\n")
  return()
endif()

set(_PORTA_PLUGIN_CMAKE_FILE ${CMAKE_CURRENT_LIST_FILE})

# nvcc -gencode flags for a CMAKE_CUDA_ARCHITECTURES-style list ("80;90-real;90-virtual").
function(_porta_cuda_gencode out archs)
  set(flags "")
  foreach(a IN LISTS archs)
    if(a MATCHES "^([0-9]+)-real$")
      list(APPEND flags "-gencode=arch=compute_${CMAKE_MATCH_1},code=sm_${CMAKE_MATCH_1}")
    elseif(a MATCHES "^([0-9]+)-virtual$")
      list(APPEND flags "-gencode=arch=compute_${CMAKE_MATCH_1},code=compute_${CMAKE_MATCH_1}")
    elseif(a MATCHES "^([0-9]+)$")
      list(APPEND flags "-gencode=arch=compute_${a},code=[sm_${a},compute_${a}]")
    else()
      message(FATAL_ERROR "porta_add_plugin: cannot read CUDA architecture '${a}'")
    endif()
  endforeach()
  set(${out} "${flags}" PARENT_SCOPE)
endfunction()

function(porta_add_plugin)
  cmake_parse_arguments(P "" "NAME;OUTPUT_DIRECTORY" "SOURCES" ${ARGN})
  if(NOT P_NAME OR NOT P_SOURCES)
    message(FATAL_ERROR "porta_add_plugin: give NAME and SOURCES")
  endif()
  set(lib porta::porta)
  set(gpu porta::gpu_plugin)
  set(host "")
  set(cu "")
  set(comp "")
  foreach(src IN LISTS P_SOURCES)
    get_filename_component(abs ${src} ABSOLUTE)
    if(abs MATCHES "\\.cu$")
      list(APPEND cu ${abs})
    elseif(abs MATCHES "\\.comp$")
      list(APPEND comp ${abs})
    else()
      list(APPEND host ${abs})
    endif()
  endforeach()
  set(t ${P_NAME})
  set(work ${CMAKE_CURRENT_BINARY_DIR}/${t}_porta_plugin)
  add_library(${t} MODULE ${host})
  set_target_properties(${t} PROPERTIES PREFIX "lib" C_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden)
  if(P_OUTPUT_DIRECTORY)
    set_target_properties(${t} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIRECTORY})
  endif()
  target_include_directories(${t} PRIVATE $<TARGET_PROPERTY:${gpu},INTERFACE_INCLUDE_DIRECTORIES>)
  set(with_cuda 0)
  set(with_hip 0)
  set(with_emu 0)
  set(with_vulkan 0)
  set(includes "-I$<JOIN:$<TARGET_PROPERTY:${gpu},INTERFACE_INCLUDE_DIRECTORIES>,$<SEMICOLON>-I>")

  if(cu)
    # ---- cuda: nvcc -------------------------------------------------------------------------
    if(NOT "cuda" IN_LIST porta_BACKENDS)
      message(STATUS "${t}: cuda kernels skipped (porta was built without cuda)")
    elseif(NOT EXISTS "${porta_NVCC}")
      message(STATUS "${t}: cuda kernels skipped (nvcc '${porta_NVCC}' not found)")
    else()
      if(DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT CMAKE_CUDA_ARCHITECTURES STREQUAL "")
        set(archs "${CMAKE_CUDA_ARCHITECTURES}")
      else()
        set(archs "${porta_CUDA_ARCHITECTURES}")
      endif()
      _porta_cuda_gencode(gencode "${archs}")
      foreach(src IN LISTS cu)
        get_filename_component(stem ${src} NAME)
        set(obj ${work}/cuda/${stem}.o)
        add_custom_command(OUTPUT ${obj}
          COMMAND ${CMAKE_COMMAND} -E make_directory ${work}/cuda
          COMMAND ${CMAKE_CXX_COMPILER_LAUNCHER} ${porta_NVCC} -x cu -std=c++17 -O3 -Xcompiler=-fPIC,-fvisibility=hidden
                  --expt-relaxed-constexpr ${gencode} ${includes} -MD -MF ${obj}.d -c ${src} -o ${obj}
          DEPENDS ${src} DEPFILE ${obj}.d COMMAND_EXPAND_LISTS VERBATIM
          COMMENT "Building cuda object ${stem}.o (nvcc)")
        set_source_files_properties(${obj} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
        target_sources(${t} PRIVATE ${obj})
      endforeach()
      find_library(_porta_cudart_${t} cudart HINTS ${porta_CUDA_LIBRARY_DIR})
      target_link_libraries(${t} PRIVATE ${_porta_cudart_${t}})
      set(with_cuda 1)
      message(STATUS "${t}: cuda kernels (nvcc, architectures ${archs})")
    endif()
    # ---- hip: hipcc through the compat header -----------------------------------------------
    if(NOT "hip" IN_LIST porta_BACKENDS)
      message(STATUS "${t}: hip kernels skipped (porta was built without hip)")
    elseif(NOT EXISTS "${porta_HIPCC}")
      message(STATUS "${t}: hip kernels skipped (hipcc '${porta_HIPCC}' not found)")
    else()
      if(DEFINED PORTA_HIP_ARCHS AND NOT PORTA_HIP_ARCHS STREQUAL "")
        set(archs "${PORTA_HIP_ARCHS}")
      else()
        set(archs "${porta_HIP_ARCHS}")
      endif()
      set(offload "")
      foreach(a IN LISTS archs)
        list(APPEND offload --offload-arch=${a})
      endforeach()
      foreach(src IN LISTS cu)
        get_filename_component(stem ${src} NAME)
        set(obj ${work}/hip/${stem}.o)
        add_custom_command(OUTPUT ${obj}
          COMMAND ${CMAKE_COMMAND} -E make_directory ${work}/hip
          COMMAND ${CMAKE_CXX_COMPILER_LAUNCHER} ${porta_HIPCC} -x hip -std=c++17 -O3 -fPIC -fvisibility=hidden -DPORTA_HIP=1
                  ${offload} ${includes} -MD -MF ${obj}.d -c ${src} -o ${obj}
          DEPENDS ${src} DEPFILE ${obj}.d COMMAND_EXPAND_LISTS VERBATIM
          COMMENT "Building hip object ${stem}.o (hipcc)")
        set_source_files_properties(${obj} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
        target_sources(${t} PRIVATE ${obj})
      endforeach()
      target_link_libraries(${t} PRIVATE ${porta_AMDHIP64})
      set(with_hip 1)
      message(STATUS "${t}: hip kernels (hipcc, targets ${archs})")
    endif()
    # ---- gpu_emu: the project's C++ compiler --------------------------------------------------
    get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
    if(NOT "gpu_emu" IN_LIST porta_BACKENDS)
      message(STATUS "${t}: gpu_emu kernels skipped (porta was built without gpu_emu)")
    elseif(NOT "CXX" IN_LIST languages)
      message(STATUS "${t}: gpu_emu kernels skipped (the project does not enable CXX)")
    else()
      # Each .cu through a one-line .cpp that includes it: the file keeps its .cu name.
      set(wrappers "")
      foreach(src IN LISTS cu)
        get_filename_component(stem ${src} NAME)
        set(wrapper ${work}/gpu_emu/${stem}.cpp)
        file(CONFIGURE OUTPUT ${wrapper} CONTENT "// ${stem} for porta's SIMT emulator (porta_add_plugin).\n#include \"${src}\"\n")
        list(APPEND wrappers ${wrapper})
      endforeach()
      add_library(${t}_gpu_emu OBJECT ${wrappers})
      target_compile_definitions(${t}_gpu_emu PRIVATE PORTA_GPU_EMU=1)
      target_compile_options(${t}_gpu_emu PRIVATE $<$<CXX_COMPILER_ID:GNU,Clang>:-Wno-unknown-pragmas>)
      target_link_libraries(${t}_gpu_emu PRIVATE ${gpu})
      set_target_properties(${t}_gpu_emu PROPERTIES CXX_STANDARD 20 CXX_STANDARD_REQUIRED ON
        POSITION_INDEPENDENT_CODE ON CXX_VISIBILITY_PRESET hidden)
      target_sources(${t} PRIVATE $<TARGET_OBJECTS:${t}_gpu_emu>)
      target_link_libraries(${t} PRIVATE ${lib})
      set(with_emu 1)
      message(STATUS "${t}: gpu_emu kernels (${CMAKE_CXX_COMPILER_ID} for porta's SIMT emulator)")
    endif()
  endif()

  if(comp)
    find_program(PORTA_GLSLC glslc)
    if(NOT "vulkan" IN_LIST porta_BACKENDS)
      message(STATUS "${t}: Vulkan kernels skipped (porta was built without vulkan)")
    elseif(NOT PORTA_GLSLC)
      message(STATUS "${t}: Vulkan kernels skipped (glslc not found)")
    else()
      foreach(src IN LISTS comp)
        get_filename_component(stem ${src} NAME_WE)
        string(MAKE_C_IDENTIFIER ${stem} symbol)
        set(spv ${work}/vulkan/${stem}.spv)
        set(header ${work}/vulkan/${stem}_spv.h)
        add_custom_command(OUTPUT ${spv}
          COMMAND ${CMAKE_COMMAND} -E make_directory ${work}/vulkan
          COMMAND ${PORTA_GLSLC} --target-env=vulkan1.2 -O -fshader-stage=compute -o ${spv} ${src}
          DEPENDS ${src} VERBATIM COMMENT "Compiling ${stem}.comp to SPIR-V (glslc)")
        add_custom_command(OUTPUT ${header}
          COMMAND ${CMAKE_COMMAND} -DPORTA_EMBED_SPV=${spv} -DOUT=${header} -DSYMBOL=${symbol}_spv
                  -P ${_PORTA_PLUGIN_CMAKE_FILE}
          DEPENDS ${spv} ${_PORTA_PLUGIN_CMAKE_FILE} VERBATIM)
        target_sources(${t} PRIVATE ${header})
      endforeach()
      target_include_directories(${t} PRIVATE ${work}/vulkan)
      set(with_vulkan 1)
      message(STATUS "${t}: Vulkan kernels (glslc)")
    endif()
  endif()
  target_compile_definitions(${t} PRIVATE PORTA_PLUGIN_WITH_CUDA=${with_cuda} PORTA_PLUGIN_WITH_HIP=${with_hip}
    PORTA_PLUGIN_WITH_GPU_EMU=${with_emu} PORTA_PLUGIN_WITH_VULKAN=${with_vulkan})
  if(TARGET ${t}_gpu_emu)
    target_compile_definitions(${t}_gpu_emu PRIVATE PORTA_PLUGIN_WITH_CUDA=${with_cuda}
      PORTA_PLUGIN_WITH_HIP=${with_hip} PORTA_PLUGIN_WITH_GPU_EMU=1 PORTA_PLUGIN_WITH_VULKAN=${with_vulkan})
  endif()
endfunction()
