# Installation: headers, libporta, the porta CLI, the CMake package (porta-config.cmake with
# one component per built backend) and porta.pc. Everything is relocatable: the package and
# the .pc file find the prefix from where they are installed.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

file(STRINGS ${CMAKE_SOURCE_DIR}/include/porta/porta.h _abi_line REGEX "#define PORTA_ABI_VERSION [0-9]+u")
string(REGEX MATCH "[0-9]+" PORTA_ABI_VERSION_NUMBER "${_abi_line}")

set_target_properties(porta_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
install(TARGETS porta porta_cli EXPORT porta-targets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/porta DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# GPU kernels in plugins (porta/gpu_plugin.hpp): the compat header that lets one .cu build for
# cuda, hip and the emulator, with the emulator's runtime header, laid out as in the source
# tree under include/porta/gpu (installed) and <build>/gpu_include (the build-tree package).
# porta::gpu_plugin carries that folder; porta_add_plugin (cmake/porta-plugin.cmake) uses it.
foreach(_porta_gpu_header backends/cuda/compat.hpp backends/gpu_emu/emu_runtime.hpp)
  configure_file(${CMAKE_SOURCE_DIR}/${_porta_gpu_header} ${CMAKE_BINARY_DIR}/gpu_include/${_porta_gpu_header} COPYONLY)
  get_filename_component(_porta_gpu_dir ${_porta_gpu_header} DIRECTORY)
  install(FILES ${CMAKE_SOURCE_DIR}/${_porta_gpu_header}
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/porta/gpu/${_porta_gpu_dir})
endforeach()
add_library(porta_gpu_plugin INTERFACE)
target_include_directories(porta_gpu_plugin INTERFACE
  $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include> $<BUILD_INTERFACE:${CMAKE_BINARY_DIR}/gpu_include>
  $<INSTALL_INTERFACE:include> $<INSTALL_INTERFACE:include/porta/gpu>)
set_target_properties(porta_gpu_plugin PROPERTIES EXPORT_NAME gpu_plugin)
install(TARGETS porta_gpu_plugin EXPORT porta-targets)

# What porta_add_plugin needs to know of this build: its GPU toolchains and targets.
set(PORTA_PLUGIN_NVCC "")
set(PORTA_PLUGIN_CUDA_ARCHS "")
set(PORTA_PLUGIN_CUDA_LIBDIR "")
if("cuda" IN_LIST PORTA_BUILT_BACKENDS)
  set(PORTA_PLUGIN_NVCC ${CMAKE_CUDA_COMPILER})
  set(PORTA_PLUGIN_CUDA_ARCHS "${CMAKE_CUDA_ARCHITECTURES}")
  set(PORTA_PLUGIN_CUDA_LIBDIR ${CUDAToolkit_LIBRARY_DIR})
endif()
set(PORTA_PLUGIN_HIPCC "")
set(PORTA_PLUGIN_HIP_ARCHS "")
set(PORTA_PLUGIN_AMDHIP64 "")
if("hip" IN_LIST PORTA_BUILT_BACKENDS)
  set(PORTA_PLUGIN_HIPCC ${PORTA_HIPCC})
  set(PORTA_PLUGIN_HIP_ARCHS "${PORTA_HIP_ARCHS}")
  set(PORTA_PLUGIN_AMDHIP64 ${PORTA_AMDHIP64})
endif()
configure_file(${CMAKE_SOURCE_DIR}/cmake/porta-plugin.cmake ${CMAKE_BINARY_DIR}/cmake/porta-plugin.cmake COPYONLY)

set(_porta_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/porta)
install(EXPORT porta-targets NAMESPACE porta:: DESTINATION ${_porta_cmake_dir})
# porta::cli rather than porta::porta_cli
set_target_properties(porta_cli PROPERTIES EXPORT_NAME cli)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/porta-config.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/porta-config.cmake INSTALL_DESTINATION ${_porta_cmake_dir})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/porta-config-version.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/porta-config.cmake ${CMAKE_BINARY_DIR}/cmake/porta-config-version.cmake
  ${CMAKE_SOURCE_DIR}/cmake/porta-plugin.cmake DESTINATION ${_porta_cmake_dir})
# The same package for the build tree: find_package(porta) with porta_DIR=<build>/cmake (or
# CMAKE_PREFIX_PATH=<build>) finds the targets built here, with the source tree's headers.
export(EXPORT porta-targets NAMESPACE porta:: FILE ${CMAKE_BINARY_DIR}/cmake/porta-targets.cmake)

file(RELATIVE_PATH PORTA_PC_PREFIX_FROM_PCDIR
  /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${CMAKE_SOURCE_DIR}/cmake/porta.pc.in ${CMAKE_BINARY_DIR}/cmake/porta.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/cmake/porta.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
