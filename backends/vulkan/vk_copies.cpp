// porta vulkan — host <-> device copies through a host-visible staging buffer (in chunks, so
// any size works with a bounded staging buffer) and device-to-device copies.
#include <algorithm>
#include <cstring>

#include "backends/vulkan/vk_context.hpp"
#include "porta/error.hpp"
#include "porta/util.hpp"
#include "runtime/eager.hpp"
#include "runtime/memory_limits.hpp"

namespace porta::vk {

static constexpr VkDeviceSize kStagingBytes = 32ull << 20;

void Context::ensure_staging(VkDeviceSize bytes) {
  if (staging_buffer_ && staging_size_ >= bytes) return;
  if (staging_buffer_) {
    flush(true);
    vkUnmapMemory(device_, staging_memory_);
    vkDestroyBuffer(device_, staging_buffer_, nullptr);
    vkFreeMemory(device_, staging_memory_, nullptr);
    staging_buffer_ = VK_NULL_HANDLE;
  }
  detail::check_fault(Device{DeviceType::vulkan, index_}, bytes, "the staging buffer");
  VkBufferCreateInfo binfo{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  binfo.size = bytes;
  binfo.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  check(vkCreateBuffer(device_, &binfo, nullptr, &staging_buffer_), "vkCreateBuffer(staging)", label());
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, staging_buffer_, &req);
  VkMemoryAllocateInfo ainfo{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ainfo.allocationSize = req.size;
  ainfo.memoryTypeIndex = staging_type_;
  VkResult r = vkAllocateMemory(device_, &ainfo, nullptr, &staging_memory_);
  if (r != VK_SUCCESS) {
    vkDestroyBuffer(device_, staging_buffer_, nullptr);
    staging_buffer_ = VK_NULL_HANDLE;
    check(r, "vkAllocateMemory(staging)", label());
  }
  check(vkBindBufferMemory(device_, staging_buffer_, staging_memory_, 0), "vkBindBufferMemory", label());
  check(vkMapMemory(device_, staging_memory_, 0, VK_WHOLE_SIZE, 0, &staging_map_), "vkMapMemory", label());
  staging_size_ = bytes;
}

void Context::upload(Buffer* dst, size_t dst_offset, const void* src, size_t bytes) {
  std::lock_guard lock(mutex);
  if (dst_offset + bytes > dst->size)
    throw InvalidArgument(str("[", label(), "] upload of ", bytes, " bytes at ", dst_offset,
                              " overruns a buffer of ", dst->size));
  try {
    upload_chunks(dst, dst_offset, src, bytes);
  } catch (...) {
    detail::rethrow_with_context(str("copy of ", bytes, " bytes from host"));
  }
}

void Context::upload_chunks(Buffer* dst, size_t dst_offset, const void* src, size_t bytes) {
  // Inside a batch, a small upload goes into the command buffer itself (vkCmdUpdateBuffer
  // copies the data when it is recorded: at most 65536 bytes, offset and size multiples of 4),
  // ordered with the batch's other commands like any transfer; the batch is not submitted and
  // waited for, as a staged copy would have to be.
  const VkDeviceSize at = dst->offset + dst_offset;
  if (recording_) not_replayable("an upload from the host");
  if (batch_depth_ > 0 && bytes > 0 && bytes <= 65536 && bytes % 4 == 0 && at % 4 == 0) {
    access({BindingRange{dst->buffer, at, bytes, true}}, true);
    vkCmdUpdateBuffer(current_, dst->buffer, at, bytes, src);
    if (++recorded_ >= chunk_limit) flush(false);
    return;
  }
  ensure_staging(kStagingBytes);
  const char* p = static_cast<const char*>(src);
  for (size_t done = 0; done < bytes;) {
    size_t n = std::min<size_t>(bytes - done, staging_size_);
    if (staging_in_use_) flush(true);  // an earlier copy still reads the staging buffer
    std::memcpy(staging_map_, p + done, n);
    BindingRange target{dst->buffer, dst->offset + dst_offset + done, n, true};
    access({target}, true);
    VkBufferCopy region{0, target.offset, n};
    vkCmdCopyBuffer(current_, staging_buffer_, dst->buffer, 1, &region);
    staging_in_use_ = true;
    done += n;
  }
  // The last chunk's copy stays in the open command buffer: the host's data is in the staging
  // buffer already, and whatever reads the copy is recorded after it (a session's input goes
  // up with its run's first batch, not in a submission of its own).
}

void Context::download(void* dst, Buffer* src, size_t src_offset, size_t bytes) {
  std::lock_guard lock(mutex);
  ++downloads;
  if (src_offset + bytes > src->size)
    throw InvalidArgument(str("[", label(), "] download of ", bytes, " bytes at ", src_offset,
                              " overruns a buffer of ", src->size));
  try {
    download_chunks(dst, src, src_offset, bytes);
  } catch (...) {
    detail::rethrow_with_context(str("copy of ", bytes, " bytes to host"));
  }
}

void Context::download_chunks(void* dst, Buffer* src, size_t src_offset, size_t bytes) {
  if (recording_) not_replayable("a read back to the host");
  ensure_staging(kStagingBytes);
  char* p = static_cast<char*>(dst);
  for (size_t done = 0; done < bytes;) {
    size_t n = std::min<size_t>(bytes - done, staging_size_);
    if (staging_in_use_) flush(true);  // an upload's copy still reads the staging buffer
    BindingRange source{src->buffer, src->offset + src_offset + done, n, false};
    access({source}, true);
    VkBufferCopy region{source.offset, 0, n};
    vkCmdCopyBuffer(current_, src->buffer, staging_buffer_, 1, &region);
    // Makes the copy's writes visible to host reads after the fence wait.
    VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(current_, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                         &to_host, 0, nullptr, 0, nullptr);
    flush(true);
    std::memcpy(p + done, staging_map_, n);
    done += n;
  }
}

void Context::copy(Buffer* dst, size_t dst_offset, Buffer* src, size_t src_offset, size_t bytes) {
  std::lock_guard lock(mutex);
  if (bytes == 0) return;
  if (dst_offset + bytes > dst->size || src_offset + bytes > src->size)
    throw InvalidArgument(str("[", label(), "] device copy of ", bytes, " bytes overruns a buffer"));
  if (!record_copy(dst, src, {{src_offset, dst_offset, bytes}}))
    throw InvalidArgument(str("[", label(), "] device copy between overlapping ranges"));
}

bool Context::copy_regions(Buffer* dst, Buffer* src, std::vector<VkBufferCopy> regions) {
  std::lock_guard lock(mutex);
  if (regions.empty()) return true;
  for (const VkBufferCopy& r : regions)
    if (r.size == 0 || r.srcOffset + r.size > src->size || r.dstOffset + r.size > dst->size)
      throw InvalidArgument(str("[", label(), "] device copy region of ", r.size, " bytes from ", r.srcOffset,
                                " to ", r.dstOffset, " overruns a buffer (", src->size, " and ", dst->size, " bytes)"));
  std::vector<std::pair<VkDeviceSize, VkDeviceSize>> written;
  written.reserve(regions.size());
  for (const VkBufferCopy& r : regions) written.emplace_back(r.dstOffset, r.size);
  std::sort(written.begin(), written.end());
  for (size_t i = 1; i < written.size(); ++i)
    if (written[i - 1].first + written[i - 1].second > written[i].first)
      throw InvalidArgument(str("[", label(), "] device copy regions overlap in the destination at ", written[i].first));
  if (!record_copy(dst, src, std::move(regions))) return false;
  ++region_copies_recorded;
  return true;
}

bool Context::record_copy(Buffer* dst, Buffer* src, std::vector<VkBufferCopy> regions) {
  // The spans the regions cover on each side: the hazard tracking and the overlap check work
  // on those (a span is a superset of its regions, so both stay conservative).
  VkDeviceSize src_lo = UINT64_MAX, src_hi = 0, dst_lo = UINT64_MAX, dst_hi = 0;
  if (recording_) note(regions.data(), regions.size() * sizeof(VkBufferCopy));  // offsets inside the records
  for (VkBufferCopy& r : regions) {
    r.srcOffset += src->offset;
    r.dstOffset += dst->offset;
    src_lo = std::min(src_lo, r.srcOffset);
    src_hi = std::max(src_hi, r.srcOffset + r.size);
    dst_lo = std::min(dst_lo, r.dstOffset);
    dst_hi = std::max(dst_hi, r.dstOffset + r.size);
  }
  if (src->buffer == dst->buffer && src_lo < dst_hi && dst_lo < src_hi) return false;
  access({BindingRange{src->buffer, src_lo, src_hi - src_lo, false, VK_FORMAT_UNDEFINED, src},
          BindingRange{dst->buffer, dst_lo, dst_hi - dst_lo, true, VK_FORMAT_UNDEFINED, dst}},
         true);
  vkCmdCopyBuffer(current_, src->buffer, dst->buffer, static_cast<uint32_t>(regions.size()), regions.data());
  if (++recorded_ >= chunk_limit) flush(false);
  return true;
}

}  // namespace porta::vk
