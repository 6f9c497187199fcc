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

set(_porta_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/porta)
install(EXPORT porta-targets NAMESPACE porta:: DESTINATION ${_porta_cmake_dir})
# porta::cli rather than porta::porta_cli
set_target_properties(porta_cli PROPERTIES EXPORT_NAME cli)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/porta-config.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/porta-config.cmake INSTALL_DESTINATION ${_porta_cmake_dir})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/porta-config-version.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/porta-config.cmake ${CMAKE_BINARY_DIR}/cmake/porta-config-version.cmake
  DESTINATION ${_porta_cmake_dir})
# The same package for the build tree: find_package(porta) with porta_DIR=<build>/cmake (or
# CMAKE_PREFIX_PATH=<build>) finds the targets built here, with the source tree's headers.
export(EXPORT porta-targets NAMESPACE porta:: FILE ${CMAKE_BINARY_DIR}/cmake/porta-targets.cmake)

file(RELATIVE_PATH PORTA_PC_PREFIX_FROM_PCDIR
  /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${CMAKE_SOURCE_DIR}/cmake/porta.pc.in ${CMAKE_BINARY_DIR}/cmake/porta.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/cmake/porta.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
