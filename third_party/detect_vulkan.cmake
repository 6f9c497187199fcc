# Finds what the Vulkan backend needs: the loader and headers (libvulkan-dev) and glslc (to
# compile the GLSL compute shaders to SPIR-V at build time). Sets PORTA_vulkan_MISSING to ""
# when everything is there, else to the reason.
set(PORTA_vulkan_MISSING "")
find_package(Vulkan QUIET)
find_program(PORTA_GLSLC glslc)
if(NOT Vulkan_FOUND)
  set(PORTA_vulkan_MISSING "Vulkan headers/loader not found (install libvulkan-dev)")
elseif(Vulkan_VERSION VERSION_LESS 1.2)
  set(PORTA_vulkan_MISSING "Vulkan headers ${Vulkan_VERSION} are older than 1.2")
elseif(NOT PORTA_GLSLC)
  set(PORTA_vulkan_MISSING "glslc not found (install glslc)")
endif()
