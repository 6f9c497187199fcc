// porta vulkan — driver limits that no Vulkan property reports, measured once per device, and
// the test hook that lowers the workgroup-count limit.
#include <algorithm>

#include "backends/vulkan/vk_context.hpp"
#include "porta/util.hpp"

namespace porta::vk {

uint64_t Context::loop_limit() {
  // 2^20 iterations take well under a millisecond on a GPU; a capped driver stops far earlier.
  constexpr uint32_t kAsk = 1u << 20;
  std::lock_guard lock(mutex);
  if (loop_limit_ != UINT64_MAX) return loop_limit_;
  Buffer* buf = allocate(32);
  uint32_t words[8] = {};
  try {
    upload(buf, 0, words, sizeof words);
    const Pipeline& p = pipeline("loop_probe:f32", "s", 1, {});
    dispatch(p, {{buf->buffer, buf->offset, sizeof words, true}}, &kAsk, sizeof kAsk, 1, 1, 1);
    flush(true);
    download(words, buf, 0, sizeof words);
  } catch (...) {
    release(buf);
    throw;
  }
  release(buf);
  loop_limit_ = words[4] < kAsk ? words[4] : 0;
  caps_.loop_limit = loop_limit_;
  return loop_limit_;
}

void Context::override_max_groups_x(uint32_t x) {
  std::lock_guard lock(mutex);
  if (!device_max_groups_x_) device_max_groups_x_ = caps_.max_groups[0];
  caps_.max_groups[0] = x ? std::min(x, device_max_groups_x_) : device_max_groups_x_;
}

}  // namespace porta::vk
