// porta vulkan — logical device creation and command recording: lazy command buffers,
// hazard tracking with barriers only where needed, chunked submission.
#include "backends/vulkan/vk_context.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "backends/vulkan/vk_validation.hpp"
#include "porta/error.hpp"
#include "porta/util.hpp"

namespace porta::vk {

// ---- simulated device loss (test hook, vk_validation.hpp) -------------------------------------

namespace {
struct LossInjection {
  std::mutex mutex;
  long at = 0, count = 0;  // the at-th event from the last setting is lost; 0 = off
  LossPoint where = LossPoint::submit;
  bool env_read = false;
};
LossInjection& loss_injection() {
  static LossInjection* s = new LossInjection();  // leaked: used by contexts during exit
  return *s;
}
// True when this event (a submit or a fence wait) is the one to report as a device loss.
bool simulate_loss(LossPoint point) {
  LossInjection& s = loss_injection();
  std::lock_guard lock(s.mutex);
  if (!s.env_read) {
    s.env_read = true;
    if (const char* env = std::getenv("PORTA_VULKAN_DEVICE_LOST")) {
      std::string text = env;
      size_t colon = text.find(':');
      std::string kind = text.substr(0, colon);
      long n = colon == std::string::npos ? 0 : std::atol(text.c_str() + colon + 1);
      if ((kind != "submit" && kind != "wait") || n <= 0)
        throw InvalidArgument(str("[vulkan] PORTA_VULKAN_DEVICE_LOST='", text,
                                  "' should be submit:N or wait:N with N >= 1"));
      s.where = kind == "submit" ? LossPoint::submit : LossPoint::fence_wait;
      s.at = n;
      s.count = 0;
    }
  }
  if (s.at <= 0 || s.where != point) return false;
  return ++s.count == s.at;
}
}  // namespace

void inject_device_loss(long n, LossPoint where) {
  LossInjection& s = loss_injection();
  std::lock_guard lock(s.mutex);
  s.env_read = true;
  s.at = n;
  s.count = 0;
  s.where = where;
}

bool device_lost(int index) {
  Context& c = context(index);
  std::lock_guard lock(c.mutex);
  return c.lost();
}

bool forget_simulated_loss(int index) {
  Context& c = context(index);
  std::lock_guard lock(c.mutex);
  return c.forget_simulated_loss();
}

void Context::ensure_usable(const char* doing) const {
  if (lost_.empty()) return;
  throw BackendError(str("[", label(), "] device lost (", lost_, "); cannot ", doing,
                         ": a lost Vulkan device stays unusable for the rest of this process"));
}

bool Context::forget_simulated_loss() {
  if (lost_.empty()) return true;
  if (!lost_simulated_) return false;
  lost_.clear();
  lost_simulated_ = false;
  return true;
}

void Context::fail_lost(const char* call, bool simulated) {
  lost_ = str(call, " answered VK_ERROR_DEVICE_LOST", simulated ? ", simulated" : "");
  lost_simulated_ = simulated;
  throw BackendError(str("[", label(), "] device lost: ", lost_,
                         "; porta refuses further work on this device in this process"));
}

void Context::wait_fence(VkFence fence) {
  // Poll, yielding, before sleeping in the driver (wait_poll_us). A blocked waiter is woken by
  // the driver's thread, and an idle core sleeps: on a CPU-like device (lavapipe) the device's
  // threads are the host's, and every dispatch hands its work to them and waits, so each
  // dispatch woke a halted core while this thread slept (docs/VULKAN.md, "Execution"). A
  // yielding poller keeps its core awake and gives it to any thread that can run; polling for
  // the whole run took mnasnet0_5 5.7 -> 4.3 ms and bert_encoder 1.5 -> 1.0 ms on the 2-core
  // VM (docs/PERFORMANCE.md). Past the limit the wait blocks, so a long wait gives up at most
  // that much of a core.
  ++fence_waits;
  const auto t0 = std::chrono::steady_clock::now();
  VkResult status;
  while ((status = vkGetFenceStatus(device_, fence)) == VK_NOT_READY &&
         std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() < wait_poll_us)
    std::this_thread::yield();
  if (status == VK_NOT_READY) ++blocked_waits;
  VkResult r = vkWaitForFences(device_, 1, &fence, VK_TRUE, UINT64_MAX);
  if (r == VK_ERROR_DEVICE_LOST) fail_lost("vkWaitForFences", false);
  check(r, "vkWaitForFences", label());
  if (simulate_loss(LossPoint::fence_wait)) fail_lost("vkWaitForFences", true);
}

static uint32_t find_memory_type(VkPhysicalDevice pd, VkMemoryPropertyFlags want,
                                 VkMemoryPropertyFlags prefer) {
  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  uint32_t fallback = UINT32_MAX;
  for (uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
    VkMemoryPropertyFlags f = mem.memoryTypes[i].propertyFlags;
    if ((f & want) != want) continue;
    if ((f & prefer) == prefer) return i;
    if (fallback == UINT32_MAX) fallback = i;
  }
  return fallback;
}

Context::Context(VkPhysicalDevice physical, const DeviceCaps& caps, int index)
    : physical_(physical), caps_(caps), index_(index) {
  if (caps_.type == "cpu") wait_poll_us = 100000;  // the whole run: wait_fence
  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue.queueFamilyIndex = caps_.compute_queue_family;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  // Enable exactly the optional features the capability record found.
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f12.shaderFloat16 = caps_.fp16_arithmetic;
  f12.storageBuffer8BitAccess = caps_.int8_storage;
  f12.shaderInt8 = caps_.int8_arithmetic;
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  f11.storageBuffer16BitAccess = caps_.fp16_storage;
  f11.pNext = &f12;
  const char* extensions[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.features.shaderInt64 = caps_.int64_arithmetic;
  features.pNext = &f11;
  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  info.pNext = &features;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  info.enabledExtensionCount = 1;
  info.ppEnabledExtensionNames = extensions;
  check(vkCreateDevice(physical_, &info, nullptr, &device_), "vkCreateDevice", label());
  vkGetDeviceQueue(device_, caps_.compute_queue_family, 0, &queue_);
  push_descriptor_fn_ = reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(
      vkGetDeviceProcAddr(device_, "vkCmdPushDescriptorSetKHR"));
  if (!push_descriptor_fn_) throw BackendError(str("[", label(), "] vkCmdPushDescriptorSetKHR missing"));

  memory_type_ = find_memory_type(physical_, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
  if (memory_type_ == UINT32_MAX) memory_type_ = find_memory_type(physical_, 0, 0);
  staging_type_ = find_memory_type(
      physical_, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
      VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  if (staging_type_ == UINT32_MAX) throw BackendError(str("[", label(), "] no host-visible memory"));
  // Blocks small enough that a few fit any heap, large enough to hold typical activations.
  block_size_ = std::min<VkDeviceSize>(64ull << 20, std::max<VkDeviceSize>(caps_.device_local_bytes / 16, 1 << 20));

  VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = caps_.compute_queue_family;
  check(vkCreateCommandPool(device_, &pool, nullptr, &pool_), "vkCreateCommandPool", label());
}

Context::~Context() {
  // Contexts live until process exit (see instance_state); this runs only if one is reset.
  if (!device_) return;
  vkDeviceWaitIdle(device_);
  for (auto& [key, p] : pipelines_) vkDestroyPipeline(device_, p.pipeline, nullptr);
  for (auto& [n, l] : layouts_) vkDestroyPipelineLayout(device_, l, nullptr);
  for (auto& [n, l] : set_layouts_) vkDestroyDescriptorSetLayout(device_, l, nullptr);
  for (auto& [n, m] : modules_) vkDestroyShaderModule(device_, m, nullptr);
  for (auto& s : in_flight_) {
    vkDestroyFence(device_, s.fence, nullptr);
    for (VkBufferView v : s.views) vkDestroyBufferView(device_, v, nullptr);
  }
  for (VkBufferView v : views_) vkDestroyBufferView(device_, v, nullptr);
  for (VkFence f : free_fences_) vkDestroyFence(device_, f, nullptr);
  vkDestroyCommandPool(device_, pool_, nullptr);
  for (auto& b : blocks_) {
    vkDestroyBuffer(device_, b->buffer, nullptr);
    vkFreeMemory(device_, b->memory, nullptr);
  }
  if (staging_buffer_) {
    vkDestroyBuffer(device_, staging_buffer_, nullptr);
    vkFreeMemory(device_, staging_memory_, nullptr);
  }
  vkDestroyDevice(device_, nullptr);
}

// ---- recording --------------------------------------------------------------------------------

void Context::full_barrier(VkCommandBuffer cmd) {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                          VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
  since_barrier_.clear();
}

VkCommandBuffer Context::command_buffer() {
  ensure_usable("record work");
  if (current_) return current_;
  retire(false);
  if (free_cmds_.empty()) {
    VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    info.commandPool = pool_;
    info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    info.commandBufferCount = 1;
    VkCommandBuffer cmd;
    check(vkAllocateCommandBuffers(device_, &info, &cmd), "vkAllocateCommandBuffers", label());
    free_cmds_.push_back(cmd);
  }
  current_ = free_cmds_.back();
  free_cmds_.pop_back();
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  // A kept run's command buffers are submitted again, possibly while an earlier submission of
  // them is still in flight (a caller that runs again without waiting).
  begin.flags = recording_ && recording_->keep ? VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT
                                               : VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(current_, &begin), "vkBeginCommandBuffer", label());
  // Orders this command buffer after everything submitted before it (queue order + barrier).
  full_barrier(current_);
  recorded_ = 0;
  return current_;
}

static bool overlaps(const BindingRange& a, const BindingRange& b) {
  return a.buffer == b.buffer && a.offset < b.offset + b.range && b.offset < a.offset + a.range;
}

void Context::access(const std::vector<BindingRange>& ranges, bool transfer) {
  VkCommandBuffer cmd = command_buffer();
  bool hazard = false;
  for (const BindingRange& r : ranges)
    for (const BindingRange& earlier : since_barrier_)
      if ((r.write || earlier.write) && overlaps(r, earlier)) hazard = true;
  if (hazard && barriers_enabled()) full_barrier(cmd);
  (void)transfer;
  if (recording_) {
    if (std::this_thread::get_id() != recording_->thread)
      not_replayable("work of another thread was recorded meanwhile", true);
    if (recording_->run)
      for (const BindingRange& r : ranges) {
        if (!r.owner) continue;  // the staging buffer: its upload or read back is not replayable
        if (recording_->run->pinned.insert(r.owner).second) ++pins_[r.owner];
      }
  }
  since_barrier_.insert(since_barrier_.end(), ranges.begin(), ranges.end());
}

void Context::dispatch(const Pipeline& p, const std::vector<BindingRange>& bindings,
                       const void* push, uint32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz) {
  if (bindings.size() != p.kinds.size())
    throw BackendError(str("[", label(), "] dispatch with ", bindings.size(), " buffers, pipeline has ",
                           p.kinds.size()));
  for (size_t i = 0; i < bindings.size(); ++i)
    if ((bindings[i].texel != VK_FORMAT_UNDEFINED) != (p.kinds[i] == 't'))
      throw BackendError(str("[", label(), "] binding ", i, " is ", p.kinds[i] == 't' ? "not " : "",
                             "a texel buffer, unlike the pipeline's"));
  for (uint32_t g : {gx, gy, gz})
    if (g == 0) return;
  if (gx > caps_.max_groups[0] || gy > caps_.max_groups[1] || gz > caps_.max_groups[2])
    throw BackendError(str("[", label(), "] dispatch of ", gx, "x", gy, "x", gz,
                           " workgroups exceeds the device limit"));
  access(bindings, false);
  if (recording_) {
    note(&p.pipeline, sizeof p.pipeline);
    uint32_t groups[3] = {gx, gy, gz};
    note(groups, sizeof groups);
    for (const BindingRange& b : bindings) {
      VkDeviceSize where[3] = {b.owner ? b.offset - b.owner->offset : b.offset, b.range,
                               static_cast<VkDeviceSize>(b.texel) * 2 + (b.write ? 1 : 0)};
      note(where, sizeof where);
    }
  }
  VkCommandBuffer cmd = current_;
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  std::vector<VkDescriptorBufferInfo> infos(bindings.size());
  std::vector<VkBufferView> views(bindings.size(), VK_NULL_HANDLE);
  std::vector<VkWriteDescriptorSet> writes(bindings.size());
  for (size_t i = 0; i < bindings.size(); ++i) {
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    if (bindings[i].texel != VK_FORMAT_UNDEFINED) {
      VkBufferViewCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
      info.buffer = bindings[i].buffer;
      info.format = bindings[i].texel;
      info.offset = bindings[i].offset;
      info.range = bindings[i].range;
      check(vkCreateBufferView(device_, &info, nullptr, &views[i]), "vkCreateBufferView", label());
      views_.push_back(views[i]);
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
      writes[i].pTexelBufferView = &views[i];
    } else {
      infos[i] = {bindings[i].buffer, bindings[i].offset, bindings[i].range};
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
  }
  push_descriptor_fn_(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0,
                      static_cast<uint32_t>(writes.size()), writes.data());
  // The layout always declares 128 bytes; push what the kernel gives, zero-padded.
  uint8_t block[128] = {};
  std::copy_n(static_cast<const uint8_t*>(push), std::min<uint32_t>(push_bytes, 128), block);
  if (recording_) note(block, sizeof block);
  vkCmdPushConstants(cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 128, block);
  vkCmdDispatch(cmd, gx, gy, gz);
  if (++recorded_ >= chunk_limit) flush(false);
}

void Context::retire(bool wait_all) {
  while (!in_flight_.empty()) {
    Submitted& s = in_flight_.front();
    if (wait_all) {
      wait_fence(s.fence);
    } else {
      VkResult status = vkGetFenceStatus(device_, s.fence);
      if (status == VK_ERROR_DEVICE_LOST) fail_lost("vkGetFenceStatus", false);
      if (status != VK_SUCCESS) break;
    }
    vkResetFences(device_, 1, &s.fence);
    if (s.cmd && s.recycle) {
      vkResetCommandBuffer(s.cmd, 0);
      free_cmds_.push_back(s.cmd);
    }
    for (VkBufferView v : s.views) vkDestroyBufferView(device_, v, nullptr);
    free_fences_.push_back(s.fence);
    Submitted done = std::move(s);
    in_flight_.pop_front();
    done.kept.reset();  // may destroy a kept run the session has let go of
  }
}

void Context::flush(bool wait) {
  ensure_usable("submit work");
  submit(nullptr);
  retire(wait);
  if (wait) staging_in_use_ = false;
}

void Context::submit(const std::shared_ptr<KeptRun>& replayed) {
  if (!current_ && !replayed) return;
  std::vector<VkCommandBuffer> cmds;
  if (current_) {
    check(vkEndCommandBuffer(current_), "vkEndCommandBuffer", label());
    cmds.push_back(current_);
  }
  if (replayed) cmds.insert(cmds.end(), replayed->cmds.begin(), replayed->cmds.end());
  VkFence fence;
  if (!free_fences_.empty()) {
    fence = free_fences_.back();
    free_fences_.pop_back();
  } else {
    VkFenceCreateInfo info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    check(vkCreateFence(device_, &info, nullptr, &fence), "vkCreateFence", label());
  }
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = static_cast<uint32_t>(cmds.size());
  submit.pCommandBuffers = cmds.data();
  bool simulated = simulate_loss(LossPoint::submit);
  VkResult r = simulated ? VK_ERROR_DEVICE_LOST : vkQueueSubmit(queue_, 1, &submit, fence);
  VkCommandBuffer cmd = current_;
  current_ = VK_NULL_HANDLE;
  since_barrier_.clear();
  if (r != VK_SUCCESS) {
    // Nothing was queued: the command buffer and fence can be reused (on a real loss they
    // are left alone; the device is never used again).
    if (r != VK_ERROR_DEVICE_LOST || simulated) {
      if (cmd) {
        vkResetCommandBuffer(cmd, 0);
        free_cmds_.push_back(cmd);
      }
      free_fences_.push_back(fence);
      for (VkBufferView v : views_) vkDestroyBufferView(device_, v, nullptr);
    }
    views_.clear();
    if (recording_) not_replayable("a submission failed");
    if (r == VK_ERROR_DEVICE_LOST) fail_lost("vkQueueSubmit", simulated);
    check(r, "vkQueueSubmit", label());
  }
  if (cmd && recording_ && recording_->run) {
    // Kept: the run owns the command buffer and its views from now on.
    KeptRun& run = *recording_->run;
    run.cmds.push_back(cmd);
    run.views.insert(run.views.end(), views_.begin(), views_.end());
    in_flight_.push_back({cmd, fence, {}, recording_->run, false});
  } else {
    in_flight_.push_back({cmd, fence, std::move(views_), replayed, true});
  }
  views_.clear();
  // Bound the work in flight so recording never runs far ahead of the device.
  if (in_flight_.size() > 4) wait_fence(in_flight_.front().fence);
}

void Context::end_batch() {
  if (batch_depth_ > 0) batch_depth_--;
  if (batch_depth_ == 0) flush(false);
}

}  // namespace porta::vk
