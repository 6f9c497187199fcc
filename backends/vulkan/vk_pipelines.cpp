// porta vulkan — compute pipelines from embedded SPIR-V, created once per (shader, bindings,
// workgroup size, specialization constants) and cached. Descriptors are pushed per dispatch
// (VK_KHR_push_descriptor), so no descriptor pools are needed.
#include "backends/vulkan/vk_context.hpp"
#include "backends/vulkan/vk_shaders.hpp"
#include "porta/error.hpp"
#include "porta/util.hpp"

namespace porta::vk {

VkDescriptorSetLayout Context::set_layout(const std::string& kinds) {
  auto it = set_layouts_.find(kinds);
  if (it != set_layouts_.end()) return it->second;
  const auto bindings = static_cast<uint32_t>(kinds.size());
  std::vector<VkDescriptorSetLayoutBinding> b(bindings);
  for (uint32_t i = 0; i < bindings; ++i)
    b[i] = {i, kinds[i] == 't' ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1,
            VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  info.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
  info.bindingCount = bindings;
  info.pBindings = b.data();
  VkDescriptorSetLayout layout;
  check(vkCreateDescriptorSetLayout(device_, &info, nullptr, &layout), "vkCreateDescriptorSetLayout", label());
  set_layouts_[kinds] = layout;

  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, 128};
  VkPipelineLayoutCreateInfo pinfo{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pinfo.setLayoutCount = 1;
  pinfo.pSetLayouts = &layout;
  pinfo.pushConstantRangeCount = 1;
  pinfo.pPushConstantRanges = &range;
  VkPipelineLayout playout;
  check(vkCreatePipelineLayout(device_, &pinfo, nullptr, &playout), "vkCreatePipelineLayout", label());
  layouts_[kinds] = playout;
  return layout;
}

const Pipeline& Context::pipeline(const std::string& shader, const std::string& kinds, uint32_t local_size,
                                  const std::vector<int32_t>& spec) {
  std::lock_guard lock(mutex);
  std::vector<int32_t> key_spec = spec;
  key_spec.push_back(static_cast<int32_t>(local_size));
  auto key = std::make_tuple(shader, kinds, key_spec);
  auto found = pipelines_.find(key);
  if (found != pipelines_.end()) return found->second;

  VkShaderModule module;
  auto mit = modules_.find(shader);
  if (mit != modules_.end()) {
    module = mit->second;
  } else {
    const std::vector<uint32_t>* words = find_shader(shader);
    if (!words) throw BackendError(str("[", label(), "] shader '", shader, "' is not built into porta"));
    VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    info.codeSize = words->size() * 4;
    info.pCode = words->data();
    check(vkCreateShaderModule(device_, &info, nullptr, &module), "vkCreateShaderModule", label());
    modules_[shader] = module;
  }
  set_layout(kinds);

  // constant_id 0: workgroup size; 1..n: the kernel's own constants.
  std::vector<int32_t> values;
  values.push_back(static_cast<int32_t>(local_size));
  values.insert(values.end(), spec.begin(), spec.end());
  std::vector<VkSpecializationMapEntry> entries(values.size());
  for (uint32_t i = 0; i < values.size(); ++i) entries[i] = {i, i * 4u, 4};
  VkSpecializationInfo specialization{static_cast<uint32_t>(entries.size()), entries.data(),
                                      values.size() * 4, values.data()};
  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module;
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = &specialization;
  info.layout = layouts_[kinds];
  Pipeline p;
  check(vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &info, nullptr, &p.pipeline),
        "vkCreateComputePipelines", label());
  p.layout = info.layout;
  p.kinds = kinds;
  return pipelines_.emplace(key, p).first->second;
}

VkQueryPool Context::create_query_pool(uint32_t count) {
  VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  info.queryType = VK_QUERY_TYPE_TIMESTAMP;
  info.queryCount = count;
  VkQueryPool pool;
  check(vkCreateQueryPool(device_, &info, nullptr, &pool), "vkCreateQueryPool", label());
  return pool;
}

}  // namespace porta::vk
