// porta gpu — caching device allocator (one per device).
//
// cudaMalloc/cudaFree synchronize the device and cost tens of microseconds, so freed blocks
// are kept and handed out again. Reuse is safe without events because every porta operation
// of a device runs in order on the device's one stream: work that reads a block is always
// enqueued before work that reuses it.
#pragma once
#include <cstddef>
#include <map>
#include <mutex>
#include <unordered_map>

#include "backends/cuda/gpu_runtime.hpp"

namespace porta::PORTA_GPU_NS {

class CachingAllocator {
 public:
  explicit CachingAllocator(int device) : device_(device) {}
  /// Never frees at exit: the runtime may already be torn down during static destruction.
  ~CachingAllocator() = default;

  /// A block of at least `bytes` (0 allowed). On failure, releases the cache and retries
  /// once, then throws OutOfMemory with the requested, free and cached bytes; the runtime's
  /// error state is cleared so the process stays usable.
  void* allocate(size_t bytes);
  /// Returns a block to the cache. Never throws.
  void deallocate(void* ptr) noexcept;
  /// Frees every cached block (used before retrying a failed allocation).
  void release_cache();

  size_t reserved_bytes() const;  ///< held from the runtime (in use + cached)
  size_t cached_bytes() const;    ///< held but free for reuse

 private:
#if defined(PORTA_GPU_EMU)
  static constexpr bool kCacheBlocks = false;  // exact, fresh blocks (see round_size)
#else
  static constexpr bool kCacheBlocks = true;
#endif
  static size_t round_size(size_t bytes);

  int device_;
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> free_blocks_;     // size -> block
  std::unordered_map<void*, size_t> live_blocks_;  // block -> size
  size_t reserved_ = 0, cached_ = 0;
};

}  // namespace porta::PORTA_GPU_NS
