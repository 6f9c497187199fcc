// porta vulkan — device memory: blocks of device-local memory carved first-fit with
// alignment, dedicated blocks for large tensors, free memory kept for reuse across runs, and
// OutOfMemory (requested and available bytes) when the heap is exhausted.
#include <algorithm>

#include "backends/vulkan/vk_context.hpp"
#include "backends/vulkan/vk_validation.hpp"
#include "porta/error.hpp"
#include "runtime/memory_limits.hpp"
#include "porta/util.hpp"

namespace porta::vk {

static VkDeviceSize align_up(VkDeviceSize v, VkDeviceSize a) { return (v + a - 1) / a * a; }

Block* Context::new_block(VkDeviceSize size, bool dedicated) {
  auto out_of_memory = [&](const char* why) {
    size_t available = caps_.device_local_bytes > device_bytes_ ? caps_.device_local_bytes - device_bytes_ : 0;
    return OutOfMemory(str("[", label(), "] out of device memory: requested ", size, " bytes, ",
                           available, " bytes available (heap ", caps_.device_local_bytes,
                           " bytes, ", device_bytes_, " in use by porta", why, ")"));
  };
  if (caps_.device_local_bytes && device_bytes_ + size > caps_.device_local_bytes) {
    trim_cache();
    if (device_bytes_ + size > caps_.device_local_bytes) throw out_of_memory("");
  }
  if (caps_.max_allocation && size > caps_.max_allocation)
    throw out_of_memory(str("; the device's largest single allocation is ", caps_.max_allocation).c_str());
  // PORTA_FAULT_ALLOC counts blocks too, so the sweep also fails the suballocator itself.
  detail::check_fault(Device{DeviceType::vulkan, index_}, size,
                      dedicated ? "a dedicated memory block" : "a suballocator memory block");
  auto block = std::make_unique<Block>();
  block->size = size;
  block->dedicated = dedicated;
  VkBufferCreateInfo binfo{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  binfo.size = size;
  binfo.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  binfo.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vkCreateBuffer(device_, &binfo, nullptr, &block->buffer), "vkCreateBuffer", label());
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, block->buffer, &req);
  VkMemoryAllocateInfo ainfo{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ainfo.allocationSize = req.size;
  ainfo.memoryTypeIndex = memory_type_;
  VkResult r = vkAllocateMemory(device_, &ainfo, nullptr, &block->memory);
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
    trim_cache();
    r = vkAllocateMemory(device_, &ainfo, nullptr, &block->memory);
  }
  if (r != VK_SUCCESS) {
    vkDestroyBuffer(device_, block->buffer, nullptr);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
      throw out_of_memory(str("; the driver answered ", result_name(r)).c_str());
    check(r, "vkAllocateMemory", label());
  }
  check(vkBindBufferMemory(device_, block->buffer, block->memory, 0), "vkBindBufferMemory", label());
  block->free[0] = size;
  device_bytes_ += size;
  blocks_.push_back(std::move(block));
  return blocks_.back().get();
}

void Context::destroy_block(Block* block) {
  vkDestroyBuffer(device_, block->buffer, nullptr);
  vkFreeMemory(device_, block->memory, nullptr);
  device_bytes_ -= block->size;
  blocks_.erase(std::find_if(blocks_.begin(), blocks_.end(), [&](auto& b) { return b.get() == block; }));
}

// Frees every unused block; waits first, since in-flight work may still use them.
void Context::trim_cache() {
  flush(true);
  std::vector<Block*> unused;
  for (auto& b : blocks_)
    if (b->used == 0) unused.push_back(b.get());
  for (Block* b : unused) destroy_block(b);
}

void release_cached_memory(int index) {
  Context& c = context(index);
  std::lock_guard lock(c.mutex);
  c.release_cached();
}

size_t Context::free_cached_bytes() const {
  size_t n = 0;
  for (auto& b : blocks_) n += b->size - b->used;
  return n;
}

VkDeviceSize Context::carve(Block* block, VkDeviceSize size) {
  for (auto it = block->free.begin(); it != block->free.end(); ++it) {
    if (it->second < size) continue;
    VkDeviceSize offset = it->first, rest = it->second - size;
    block->free.erase(it);
    if (rest) block->free[offset + size] = rest;
    block->used += size;
    return offset;
  }
  return VK_WHOLE_SIZE;
}

Buffer* Context::allocate(size_t bytes) {
  std::lock_guard lock(mutex);
  ensure_usable("allocate memory");
  // Every allocation is a multiple of the binding alignments (storage and texel buffers), so
  // every tensor starts aligned.
  VkDeviceSize alignment = std::max<VkDeviceSize>({caps_.storage_alignment, caps_.texel_alignment, 256});
  VkDeviceSize size = align_up(std::max<size_t>(bytes, 16), alignment);
  auto buffer = std::make_unique<Buffer>();
  buffer->size = size;
  if (size > block_size_ / 2) {
    // Large: reuse a cached dedicated block of a close size, else a new one.
    Block* best = nullptr;
    for (auto& b : blocks_)
      if (b->dedicated && b->used == 0 && b->size >= size && b->size <= size * 2 &&
          (!best || b->size < best->size))
        best = b.get();
    if (!best) best = new_block(size, true);
    best->used = best->size;
    best->free.clear();
    buffer->block = best;
    buffer->offset = 0;
  } else {
    for (auto& b : blocks_) {
      if (b->dedicated) continue;
      VkDeviceSize off = carve(b.get(), size);
      if (off != VK_WHOLE_SIZE) {
        buffer->block = b.get();
        buffer->offset = off;
        break;
      }
    }
    if (!buffer->block) {
      Block* b = new_block(block_size_, false);
      buffer->block = b;
      buffer->offset = carve(b, size);
    }
  }
  buffer->buffer = buffer->block->buffer;
  return buffer.release();
}

void Context::release(Buffer* buffer) noexcept {
  if (!buffer) return;
  std::lock_guard lock(mutex);
  if (pins_.count(buffer)) {
    deferred_.insert(buffer);  // a kept run may still write it: released with its last pin
    return;
  }
  Block* b = buffer->block;
  // Recorded work may still use this range; that is safe because later users of the range
  // are ordered after it by hazard tracking (same command buffer) or by the barrier that
  // starts every command buffer, and blocks are only destroyed after waiting.
  if (b->dedicated) {
    b->used = 0;
    b->free[0] = b->size;
  } else {
    VkDeviceSize off = buffer->offset, size = buffer->size;
    b->used -= size;
    auto next = b->free.lower_bound(off);
    if (next != b->free.end() && off + size == next->first) {
      size += next->second;
      b->free.erase(next);
    }
    auto prev = b->free.lower_bound(off);
    if (prev != b->free.begin()) {
      --prev;
      if (prev->first + prev->second == off) {
        prev->second += size;
        delete buffer;
        return;
      }
    }
    b->free[off] = size;
  }
  delete buffer;
}

}  // namespace porta::vk
