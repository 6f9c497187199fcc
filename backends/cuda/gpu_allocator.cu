// porta gpu — caching device allocator.
#include "backends/cuda/gpu_allocator.hpp"

#include "porta/util.hpp"

namespace porta::PORTA_GPU_NS {

// Small blocks round to 512 bytes, large ones to 2 MiB, so sizes that vary a little between
// runs (dynamic shapes) still hit the cache. The emulator gives every tensor an allocation of
// its exact size, fresh: its guard zones then sit right at the tensor's end, and a cached block
// cannot hide an unwritten output behind a previous tensor's values.
size_t CachingAllocator::round_size(size_t bytes) {
  if constexpr (!kCacheBlocks) return bytes;
  constexpr size_t kSmall = 512, kLarge = size_t{2} << 20, kSmallLimit = size_t{1} << 20;
  if (bytes == 0) return kSmall;
  if (bytes <= kSmallLimit) return (bytes + kSmall - 1) / kSmall * kSmall;
  return (bytes + kLarge - 1) / kLarge * kLarge;
}

void* CachingAllocator::allocate(size_t bytes) {
  size_t size = round_size(bytes);
  if (size < bytes)  // rounding overflowed
    throw OutOfMemory(str("[" PORTA_GPU_NAME "] out of memory on " PORTA_GPU_NAME ":", device_,
                          ": requested ", bytes, " bytes"));
  if constexpr (kCacheBlocks) {
    std::lock_guard lock(mutex_);
    // Reuse a cached block unless it would waste more than half of itself.
    auto it = free_blocks_.lower_bound(size);
    if (it != free_blocks_.end() && it->first <= 2 * size) {
      void* ptr = it->second;
      live_blocks_[ptr] = it->first;
      cached_ -= it->first;
      free_blocks_.erase(it);
      return ptr;
    }
  }
  PORTA_GPU_CHECK(device_, cudaSetDevice(device_));
  void* ptr = nullptr;
  cudaError_t err = cudaMalloc(&ptr, size);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    release_cache();
    err = cudaMalloc(&ptr, size);
  }
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // clear it: the next call must not see this failure
    size_t free_bytes = 0, total_bytes = 0;
    (void)cudaMemGetInfo(&free_bytes, &total_bytes);
    (void)cudaGetLastError();
    throw OutOfMemory(str("[" PORTA_GPU_NAME "] out of memory on " PORTA_GPU_NAME ":", device_,
                          ": requested ", bytes, " bytes, ", free_bytes, " bytes free of ",
                          total_bytes, " (porta holds ", reserved_bytes(), ")"));
  }
  if (err != cudaSuccess) throw_gpu_error(err, "cudaMalloc", device_, __FILE__, __LINE__);
  std::lock_guard lock(mutex_);
  live_blocks_[ptr] = size;
  reserved_ += size;
  return ptr;
}

void CachingAllocator::deallocate(void* ptr) noexcept {
  if (!ptr) return;
  std::lock_guard lock(mutex_);
  auto it = live_blocks_.find(ptr);
  if (it == live_blocks_.end()) return;  // not ours: ignoring beats freeing foreign memory
  size_t size = it->second;
  live_blocks_.erase(it);
  if constexpr (!kCacheBlocks) {
    (void)cudaFree(ptr);
    reserved_ -= size;
    return;
  }
  try {
    free_blocks_.emplace(size, ptr);
    cached_ += size;
  } catch (...) {
    (void)cudaFree(ptr);  // no memory for bookkeeping: give the block back instead
    reserved_ -= size;
  }
}

void CachingAllocator::release_cache() {
  std::lock_guard lock(mutex_);
  if (free_blocks_.empty()) return;
  (void)cudaSetDevice(device_);
  for (auto& [size, ptr] : free_blocks_) {
    (void)cudaFree(ptr);  // synchronizes the device, so no queued work still uses the block
    reserved_ -= size;
  }
  (void)cudaGetLastError();
  free_blocks_.clear();
  cached_ = 0;
}

size_t CachingAllocator::reserved_bytes() const {
  std::lock_guard lock(mutex_);
  return reserved_;
}

size_t CachingAllocator::cached_bytes() const {
  std::lock_guard lock(mutex_);
  return cached_;
}

}  // namespace porta::PORTA_GPU_NS
