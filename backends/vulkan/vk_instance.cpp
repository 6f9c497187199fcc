// porta vulkan — the instance, the validation layer, and the ordered list of devices with
// their capability records. Device order: discrete > integrated > virtual > cpu (lavapipe),
// so vulkan:0 is the best device and vulkan:N picks the N-th.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>

#include "backends/vulkan/vk_context.hpp"
#include "backends/vulkan/vk_validation.hpp"
#include "porta/error.hpp"
#include "porta/util.hpp"

namespace porta::vk {
namespace {

std::mutex g_validation_mutex;
std::vector<std::string> g_validation_errors;
std::function<void(const std::string&)> g_validation_listener;
bool g_barriers = true;
bool g_subgroup_reductions = true;
std::atomic<uint64_t> g_loop_limit_override{0};
std::atomic<uint64_t> g_binding_limit_override{0};

VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                VkDebugUtilsMessageTypeFlagsEXT,
                                                const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                void*) {
  if (!(severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)) return VK_FALSE;
  std::string msg = data && data->pMessage ? data->pMessage : "(no message)";
  std::function<void(const std::string&)> listener;
  {
    std::lock_guard lock(g_validation_mutex);
    g_validation_errors.push_back(msg);
    listener = g_validation_listener;
  }
  if (listener) listener(msg);
  else std::cerr << "[vulkan validation] " << msg << "\n";
  return VK_FALSE;
}

bool has_layer(const char* name) {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  for (auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

bool has_device_extension(VkPhysicalDevice pd, const char* name) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> ext(n);
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, ext.data());
  for (auto& e : ext)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
  }
}

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

DeviceCaps query_caps(VkPhysicalDevice pd) {
  DeviceCaps c;
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  driver.pNext = &subgroup;
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &driver;
  vkGetPhysicalDeviceProperties2(pd, &props);
  const VkPhysicalDeviceLimits& lim = props.properties.limits;
  c.name = props.properties.deviceName;
  c.type = type_name(props.properties.deviceType);
  c.api_version = props.properties.apiVersion;
  c.driver = str(driver.driverName, " ", driver.driverInfo);
  c.subgroup_size = subgroup.subgroupSize;
  bool compute_ops = subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT;
  c.subgroup_basic = compute_ops && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);
  c.subgroup_arithmetic = compute_ops && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
  c.subgroup_shuffle = compute_ops && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
  c.subgroup_clustered = compute_ops && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_CLUSTERED_BIT);

  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  f11.pNext = &f12;
  VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  feats.pNext = &f11;
  if (c.api_version >= VK_API_VERSION_1_2) vkGetPhysicalDeviceFeatures2(pd, &feats);
  c.fp16_storage = f11.storageBuffer16BitAccess;
  c.fp16_arithmetic = f12.shaderFloat16;
  c.int8_storage = f12.storageBuffer8BitAccess;
  c.int8_arithmetic = f12.shaderInt8;
  c.int64_arithmetic = feats.features.shaderInt64;

  VkPhysicalDeviceMaintenance3Properties m3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &m3;
  vkGetPhysicalDeviceProperties2(pd, &p2);
  c.max_allocation = m3.maxMemoryAllocationSize;
  c.max_storage_range = lim.maxStorageBufferRange;
  c.storage_alignment = std::max<VkDeviceSize>(lim.minStorageBufferOffsetAlignment, 4);
  c.texel_alignment = std::max<VkDeviceSize>(lim.minTexelBufferOffsetAlignment, 4);
  c.max_texels = lim.maxTexelBufferElements;
  auto texel_ok = [&](VkFormat f) {
    VkFormatProperties fp{};
    vkGetPhysicalDeviceFormatProperties(pd, f, &fp);
    return (fp.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT) != 0;
  };
  c.texel_rgba32f = texel_ok(VK_FORMAT_R32G32B32A32_SFLOAT);
  c.texel_rgba16f = texel_ok(VK_FORMAT_R16G16B16A16_SFLOAT);
  c.texel_rgba32ui = texel_ok(VK_FORMAT_R32G32B32A32_UINT);
  c.texel_rgba16ui = texel_ok(VK_FORMAT_R16G16B16A16_UINT);
  c.texel_r32f = texel_ok(VK_FORMAT_R32_SFLOAT);
  c.texel_r16f = texel_ok(VK_FORMAT_R16_SFLOAT);
  c.texel_r32ui = texel_ok(VK_FORMAT_R32_UINT);
  c.texel_r16ui = texel_ok(VK_FORMAT_R16_UINT);
  for (int i = 0; i < 3; ++i) {
    c.max_groups[i] = lim.maxComputeWorkGroupCount[i];
    c.max_workgroup_size[i] = lim.maxComputeWorkGroupSize[i];
  }
  c.max_workgroup_invocations = lim.maxComputeWorkGroupInvocations;
  c.shared_memory = lim.maxComputeSharedMemorySize;
  c.push_constant_bytes = lim.maxPushConstantsSize;
  c.timestamp_period_ns = lim.timestampPeriod;
  c.push_descriptors = has_device_extension(pd, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);

  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> queues(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, queues.data());
  // Prefer a compute queue without graphics (async compute), else any compute queue.
  for (int pass = 0; pass < 2 && c.compute_queue_family == UINT32_MAX; ++pass)
    for (uint32_t i = 0; i < nq; ++i) {
      bool compute = queues[i].queueFlags & VK_QUEUE_COMPUTE_BIT;
      bool graphics = queues[i].queueFlags & VK_QUEUE_GRAPHICS_BIT;
      if (compute && (pass == 1 || !graphics)) {
        c.compute_queue_family = i;
        c.timestamps = lim.timestampComputeAndGraphics || queues[i].timestampValidBits > 0;
        c.timestamps = c.timestamps && queues[i].timestampValidBits > 0;
        break;
      }
    }
  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  for (uint32_t h = 0; h < mem.memoryHeapCount; ++h)
    if (mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      c.device_local_bytes = std::max<uint64_t>(c.device_local_bytes, mem.memoryHeaps[h].size);

  if (c.api_version < VK_API_VERSION_1_2)
    c.unusable = str("needs Vulkan 1.2, device offers ", VK_VERSION_MAJOR(c.api_version), ".",
                     VK_VERSION_MINOR(c.api_version));
  else if (c.compute_queue_family == UINT32_MAX)
    c.unusable = "no compute queue";
  else if (!c.push_descriptors)
    c.unusable = "VK_KHR_push_descriptor is not supported";
  else if (c.push_constant_bytes < 128)
    c.unusable = str("push constants of ", c.push_constant_bytes, " bytes (porta needs 128)");
  return c;
}

InstanceState create_instance() {
  InstanceState s;
  const char* env = std::getenv("PORTA_VULKAN_VALIDATION");
  bool want_validation = env && std::string(env) == "1";
  uint32_t api = 0;
  if (vkEnumerateInstanceVersion(&api) != VK_SUCCESS || api < VK_API_VERSION_1_2) {
    s.error = "the Vulkan loader offers less than Vulkan 1.2";
    return s;
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "porta";
  app.pEngineName = "porta";
  app.apiVersion = VK_API_VERSION_1_2;
  std::vector<const char*> layers, extensions;
  VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = enables;
  VkDebugUtilsMessengerCreateInfoEXT messenger{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
  messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
  messenger.pfnUserCallback = on_debug_message;
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  if (want_validation) {
    if (!has_layer("VK_LAYER_KHRONOS_validation")) {
      s.error = "PORTA_VULKAN_VALIDATION=1 but VK_LAYER_KHRONOS_validation is not installed "
                "(install vulkan-validationlayers)";
      return s;
    }
    layers.push_back("VK_LAYER_KHRONOS_validation");
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    // The messenger chained here also reports instance creation/destruction.
    messenger.pNext = &features;
    info.pNext = &messenger;
  }
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  VkResult r = vkCreateInstance(&info, nullptr, &s.instance);
  if (r != VK_SUCCESS) {
    s.error = str("vkCreateInstance failed: ", result_name(r));
    s.instance = VK_NULL_HANDLE;
    return s;
  }
  s.validation = want_validation;
  if (want_validation) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(s.instance, "vkCreateDebugUtilsMessengerEXT"));
    VkDebugUtilsMessengerEXT handle;
    messenger.pNext = nullptr;
    if (!create || create(s.instance, &messenger, nullptr, &handle) != VK_SUCCESS) {
      s.error = "could not create the validation messenger";
      return s;
    }
  }
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(s.instance, &n, nullptr);
  std::vector<VkPhysicalDevice> pds(n);
  vkEnumeratePhysicalDevices(s.instance, &n, pds.data());
  std::vector<std::pair<int, size_t>> order;
  std::vector<DeviceCaps> caps;
  for (size_t i = 0; i < pds.size(); ++i) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(pds[i], &p);
    order.push_back({type_rank(p.deviceType), i});
    caps.push_back(query_caps(pds[i]));
  }
  std::stable_sort(order.begin(), order.end());
  for (auto& [rank, i] : order) {
    s.physical.push_back(pds[i]);
    s.caps.push_back(caps[i]);
  }
  if (s.physical.empty()) s.error = "no Vulkan device found (is an ICD such as mesa-vulkan-drivers installed?)";
  return s;
}

}  // namespace

InstanceState& instance_state() {
  // Created once and kept for the life of the process: contexts and their devices are never
  // destroyed at exit, because kernels may still hold tensors in static storage then.
  static InstanceState* s = new InstanceState(create_instance());
  return *s;
}

Context& context(int index) {
  // Leaked on purpose: tensors released during static destruction still reach their context.
  static std::mutex* m = new std::mutex();
  static std::vector<std::unique_ptr<Context>>* contexts = new std::vector<std::unique_ptr<Context>>();
  std::lock_guard lock(*m);
  InstanceState& s = instance_state();
  if (!s.error.empty()) throw BackendUnavailable(str("[vulkan:", index, "] ", s.error));
  if (index < 0 || index >= static_cast<int>(s.physical.size()))
    throw BackendUnavailable(str("[vulkan:", index, "] no such device (", s.physical.size(), " found)"));
  if (!s.caps[index].unusable.empty())
    throw BackendUnavailable(str("[vulkan:", index, "] ", s.caps[index].name, ": ", s.caps[index].unusable));
  if (contexts->size() < s.physical.size()) contexts->resize(s.physical.size());
  auto& slot = (*contexts)[index];
  if (!slot) slot = std::make_unique<Context>(s.physical[index], s.caps[index], index);
  return *slot;
}

bool barriers_enabled() { return g_barriers; }

void set_loop_limit_override(uint64_t iterations) { g_loop_limit_override = iterations; }
void set_group_limit_override(int index, uint32_t x) { context(index).override_max_groups_x(x); }
uint64_t loop_limit_override() { return g_loop_limit_override; }
void set_binding_limit_override(uint64_t bytes) { g_binding_limit_override = bytes; }
uint64_t binding_limit_override() { return g_binding_limit_override; }

bool validation_enabled() { return instance_state().validation; }

std::vector<std::string> take_validation_errors() {
  std::lock_guard lock(g_validation_mutex);
  std::vector<std::string> out;
  out.swap(g_validation_errors);
  return out;
}

void set_validation_listener(std::function<void(const std::string&)> listener) {
  std::lock_guard lock(g_validation_mutex);
  g_validation_listener = std::move(listener);
}

void set_barriers_enabled(bool enabled) { g_barriers = enabled; }
void set_subgroup_reductions(bool enabled) { g_subgroup_reductions = enabled; }
bool subgroup_reductions_enabled() { return g_subgroup_reductions; }

const char* result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    default: return "VkResult error";
  }
}

void check(VkResult result, const char* call, const std::string& where) {
  if (result == VK_SUCCESS) return;
  if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY)
    throw OutOfMemory(str("[", where, "] ", call, " failed: ", result_name(result)));
  throw BackendError(str("[", where, "] ", call, " failed: ", result_name(result), " (", result, ")"));
}

}  // namespace porta::vk
