// porta vulkan — kept runs: a session's run recorded once into command buffers of its own and
// submitted again on later runs, so the host records nothing (docs/VULKAN.md, "Replayed runs").
//
// What makes resubmission safe:
// - Every range a kept command touches is pinned (Context::access): a release of its
//   allocation is deferred until the kept run is destroyed, so no other tensor can be given
//   that memory while the commands may still write it.
// - Work whose recorded commands carry host data (an upload's bytes, the staging buffer) or
//   that reads the device back is not replayable; neither is a recording another thread's
//   work slipped into.
// - The signature lets a caller check that a run records the same work each time (the same
//   pipelines, push constants, workgroups and binding sizes, formats and offsets inside their
//   allocations) before it trusts a kept one.
#include "backends/vulkan/vk_context.hpp"
#include "porta/error.hpp"
#include "porta/util.hpp"

namespace porta::vk {

KeptRun::~KeptRun() {
  std::lock_guard lock(context->mutex);
  VkDevice device = context->device_;
  if (!cmds.empty()) vkFreeCommandBuffers(device, context->pool_, static_cast<uint32_t>(cmds.size()), cmds.data());
  for (VkBufferView v : views) vkDestroyBufferView(device, v, nullptr);
  for (Buffer* b : pinned) context->unpin(b);
}

void Context::unpin(Buffer* buffer) {
  auto it = pins_.find(buffer);
  if (it == pins_.end()) return;
  if (--it->second > 0) return;
  pins_.erase(it);
  if (deferred_.erase(buffer)) release(buffer);
}

void Context::note(const void* bytes, size_t n) {
  // FNV-1a, 64 bits.
  const auto* p = static_cast<const uint8_t*>(bytes);
  uint64_t h = recording_->signature;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  recording_->signature = h;
}

void Context::not_replayable(const std::string& why, bool transient) {
  if (recording_ && recording_->not_replayable.empty()) {
    recording_->not_replayable = why;
    recording_->transient = transient;
  }
}

bool Context::begin_recording(bool keep) {
  std::lock_guard lock(mutex);
  ensure_usable("record work");
  if (recording_) return false;
  // Work recorded before (a run's input copies) goes up first: it is not part of the run kept.
  if (keep) flush(false);
  recording_ = std::make_unique<Recording>();
  recording_->keep = keep;
  recording_->signature = 0xcbf29ce484222325ull;
  recording_->thread = std::this_thread::get_id();
  if (keep) recording_->run = std::make_shared<KeptRun>(this);
  return true;
}

RecordedRun Context::end_recording() {
  std::lock_guard lock(mutex);
  if (!recording_) throw BackendError(str("[", label(), "] no recording is open"));
  RecordedRun out;
  try {
    // The last command buffer goes up while the recording still claims it.
    if (recording_->keep && !lost()) submit(nullptr);
  } catch (...) {
    recording_.reset();
    throw;
  }
  out.signature = recording_->signature;
  out.not_replayable = recording_->not_replayable;
  out.transient = recording_->transient;
  if (recording_->run && recording_->run->cmds.empty() && out.not_replayable.empty())
    out.not_replayable = "no device work was recorded";
  if (recording_->run && out.not_replayable.empty()) out.commands = recording_->run;
  recording_.reset();
  return out;
}

void Context::replay(const std::shared_ptr<KeptRun>& run) {
  std::lock_guard lock(mutex);
  ensure_usable("submit work");
  if (!run || run->context != this) throw BackendError(str("[", label(), "] replay of work kept on another device"));
  if (recording_) {
    // Another thread's recording is open, and this thread's input copies went into its command
    // buffer: that recording is spoilt, and its command buffer goes up first, as its own.
    not_replayable("work of another thread was recorded meanwhile", true);
    submit(nullptr);
  }
  submit(run);
  ++replays;
}

}  // namespace porta::vk
