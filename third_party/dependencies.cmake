# System packages porta builds against (Debian: see scripts/setup.sh).

# oneDNN (libdnnl-dev 2.6). Debian's dnnl-config.cmake insists on OpenCL headers that the
# CPU engine does not need, so the library is located directly.
find_path(DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp REQUIRED)
find_library(DNNL_LIBRARY NAMES dnnl REQUIRED)
file(STRINGS ${DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h _dnnl_ver REGEX "#define DNNL_VERSION_(MAJOR|MINOR|PATCH)")
string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCH ([0-9]+).*" "\\1.\\2.\\3" dnnl_VERSION "${_dnnl_ver}")
if(NOT TARGET DNNL::dnnl)
  add_library(DNNL::dnnl UNKNOWN IMPORTED)
  set_target_properties(DNNL::dnnl PROPERTIES IMPORTED_LOCATION ${DNNL_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${DNNL_INCLUDE_DIR})
endif()

find_package(ONNX REQUIRED)      # libonnx-dev -> ONNX::onnx_proto
find_package(Protobuf REQUIRED)
find_package(OpenMP REQUIRED)
find_package(Threads REQUIRED)
