// porta vulkan — one logical device: capability record, memory, recording, pipelines.
//
// Contracts:
// - Work is recorded lazily into a command buffer and submitted in chunks; `flush(wait)`
//   submits what is recorded. Every host read goes through `flush(true)` first.
// - A barrier is recorded only where an access conflicts with one recorded since the last
//   barrier (read-after-write, write-after-read, write-after-write on overlapping buffer
//   ranges); each command buffer starts with a barrier covering earlier submissions.
// - Memory blocks are never destroyed while work that may use them is in flight.
// - All members are guarded by `mutex` (recursive: kernels call back in from launchers).
#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "porta/backend.hpp"

namespace porta::vk {

/// What a physical device can do; drives kernel choice.
struct DeviceCaps {
  std::string name;
  std::string type;  // "discrete", "integrated", "virtual", "cpu", "other"
  uint32_t api_version = 0;
  std::string driver;
  uint32_t subgroup_size = 1;
  bool subgroup_basic = false, subgroup_arithmetic = false, subgroup_shuffle = false,
       subgroup_clustered = false;
  bool fp16_storage = false, fp16_arithmetic = false;
  bool int8_storage = false, int8_arithmetic = false;
  bool int64_arithmetic = false;        // shaderInt64: i64 kernels decline without it
  uint64_t max_storage_range = 0;       // maxStorageBufferRange
  uint64_t max_allocation = 0;          // maxMemoryAllocationSize
  uint64_t storage_alignment = 16;      // minStorageBufferOffsetAlignment
  uint32_t max_groups[3] = {65535, 65535, 65535};
  uint32_t max_workgroup_size[3] = {1024, 1024, 64};
  uint32_t max_workgroup_invocations = 1024;
  uint32_t shared_memory = 16384;
  uint32_t push_constant_bytes = 128;
  // The driver's loop cap as Context::loop_limit() measured it (0 until then, or no cap).
  uint64_t loop_limit = 0;
  bool timestamps = false;
  double timestamp_period_ns = 1.0;
  uint64_t device_local_bytes = 0;      // size of the device-local heap used
  bool push_descriptors = false;
  uint32_t compute_queue_family = UINT32_MAX;
  // Uniform texel buffers (vec4 texelFetch, the vectorized load path of CPU-like drivers):
  uint64_t texel_alignment = 16;        // minTexelBufferOffsetAlignment
  uint64_t max_texels = 0;              // maxTexelBufferElements
  bool texel_rgba32f = false, texel_rgba16f = false;  // formats usable as uniform texel buffers
  bool texel_rgba32ui = false, texel_rgba16ui = false;
  bool texel_r32f = false, texel_r16f = false;    // one element per texel
  bool texel_r32ui = false, texel_r16ui = false;
  std::string unusable;                 // why porta cannot use it ("" = usable)
};

/// A suballocated piece of device memory: what Backend::allocate returns.
struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;  // the block's buffer
  VkDeviceSize offset = 0;           // start inside the block's buffer
  VkDeviceSize size = 0;             // bytes reserved (>= requested, >= 16)
  struct Block* block = nullptr;
};

/// A device-memory block with one VkBuffer over all of it, carved up first-fit.
struct Block {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
  bool dedicated = false;                      // holds exactly one allocation
  std::map<VkDeviceSize, VkDeviceSize> free;   // offset -> size, coalesced
  VkDeviceSize used = 0;
};

/// One storage-buffer binding of a dispatch.
struct BindingRange {
  VkBuffer buffer;
  VkDeviceSize offset, range;
  bool write;
  /// VK_FORMAT_UNDEFINED: a storage buffer; else a uniform texel buffer of that format (a
  /// buffer view made for the dispatch, destroyed when its command buffer has completed).
  VkFormat texel = VK_FORMAT_UNDEFINED;
  /// The allocation the range lies in (nullptr: the staging buffer). A kept run pins it.
  Buffer* owner = nullptr;
};

class Context;

/// The command buffers of a run kept for resubmission (Context::begin_recording with keep),
/// with the texel views they read. The allocations they touch stay pinned while it lives: a
/// release of one is deferred (Context::release), so no later allocation can take its memory.
/// Destroyed once the session has dropped it and no submission of it is in flight.
struct KeptRun {
  explicit KeptRun(Context* c) : context(c) {}
  ~KeptRun();
  KeptRun(const KeptRun&) = delete;
  KeptRun& operator=(const KeptRun&) = delete;
  Context* context;
  std::vector<VkCommandBuffer> cmds;
  std::vector<VkBufferView> views;
  std::unordered_set<Buffer*> pinned;  // one pin each (Context::pins_ counts the kept runs)
};

struct Pipeline {
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  std::string kinds;  ///< per binding: 's' storage buffer, 't' uniform texel buffer
};

class Context {
 public:
  Context(VkPhysicalDevice physical, const DeviceCaps& caps, int index);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceCaps& caps() const { return caps_; }
  /// Test hook (vk_validation.hpp's set_group_limit_override): pretend the device allows at
  /// most `x` workgroups along x (0 restores the device's own limit).
  void override_max_groups_x(uint32_t x);
  std::string label() const { return "vulkan:" + std::to_string(index_); }
  std::recursive_mutex mutex;

  // ---- memory (vk_memory.cpp) ----
  Buffer* allocate(size_t bytes);
  void release(Buffer* buffer) noexcept;
  size_t allocated_bytes() const { return device_bytes_; }
  size_t free_cached_bytes() const;
  /// Frees unused blocks (after waiting for submitted work).
  void release_cached() { trim_cache(); }

  // ---- copies (vk_copies.cpp) ----
  void upload(Buffer* dst, size_t dst_offset, const void* src, size_t bytes);
  void download(void* dst, Buffer* src, size_t src_offset, size_t bytes);
  uint64_t downloads = 0;  ///< calls of download: each waits for the device
  void copy(Buffer* dst, size_t dst_offset, Buffer* src, size_t src_offset, size_t bytes);
  /// One transfer command moving several byte ranges from `src` to `dst` (offsets relative to
  /// each record). The destination ranges must not overlap one another. Records nothing and
  /// answers false when the span of the source ranges overlaps that of the destination ranges.
  bool copy_regions(Buffer* dst, Buffer* src, std::vector<VkBufferCopy> regions);
  /// Whether kernels' copies may run as such transfer commands where that is cheaper than a
  /// dispatch (kernels/vulkan/movement.cpp; CPU-like devices); tests turn it off to reach the
  /// copy shaders. `region_copies_recorded` counts the transfers recorded that way.
  bool region_copies = true;
  uint64_t region_copies_recorded = 0;
  /// Whether matmul_rows.comp's lanes may fetch the operand they all read between them and
  /// pass it round (its SHARE constant; kernels/vulkan/matmul.cpp); tests turn it off to reach
  /// the per-lane fetches that devices of another subgroup size run.
  bool shared_rows_operand = true;
  /// How long a wait for submitted work polls its fence, yielding the core between polls,
  /// before it blocks in the driver (Context::wait_fence): on a CPU-like device the whole run
  /// (up to 100 ms), elsewhere 50 us. `fence_waits` counts the waits, `blocked_waits` those
  /// that found the fence unsignalled when the poll ran out and blocked.
  double wait_poll_us = 50;
  uint64_t fence_waits = 0, blocked_waits = 0;

  // ---- recording (vk_recorder.cpp) ----
  /// The command buffer being recorded (begun on demand).
  VkCommandBuffer command_buffer();
  /// Records the barriers the accesses need against earlier work, then notes them.
  void access(const std::vector<BindingRange>& ranges, bool transfer);
  /// Records one compute dispatch (pipeline from `pipeline()`).
  void dispatch(const Pipeline& pipeline, const std::vector<BindingRange>& bindings,
                const void* push, uint32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz);
  /// Submits recorded work; waits for all submitted work when `wait`.
  void flush(bool wait);
  void begin_batch() { batch_depth_++; }
  void end_batch();
  /// Dispatches recorded in the current command buffer before it is submitted.
  uint32_t chunk_limit = 64;

  // ---- kept runs (vk_replay.cpp) ----
  /// Starts noting what is recorded (a signature of every dispatch and copy: pipeline, push
  /// constants, workgroups, binding sizes, formats and offsets inside their allocations, not
  /// the addresses) and whether it can be replayed. With `keep`, what is recorded until
  /// end_recording goes into command buffers of its own (submitted as usual, then kept), begun
  /// after submitting what was recorded before; the allocations they touch are pinned. False:
  /// another recording is open (one at a time per device).
  bool begin_recording(bool keep);
  /// Ends it: submits the open command buffer and answers the signature, the kept commands
  /// (with `keep`, when replayable) and why not. Not replayable: an upload (its data is part
  /// of the commands, or comes from the staging buffer), a read back, or work recorded from
  /// another thread meanwhile.
  RecordedRun end_recording();
  /// Submits what is recorded (the caller's copies into the kept run's inputs), then the kept
  /// command buffers, in one submission. `replays` counts them.
  void replay(const std::shared_ptr<KeptRun>& run);
  uint64_t replays = 0;
  /// Allocations pinned by kept runs now.
  size_t pinned_allocations() const { return pins_.size(); }

  // ---- pipelines (vk_pipelines.cpp) ----
  /// Pipeline for an embedded shader ("name:variant") with specialization constants
  /// (constant_id 0 is the workgroup size, 1.. are `spec`); created once and cached. `kinds`
  /// has a letter per binding: 's' storage buffer, 't' uniform texel buffer.
  const Pipeline& pipeline(const std::string& shader, const std::string& kinds, uint32_t local_size,
                           const std::vector<int32_t>& spec);

  // ---- device loss ----
  /// Throws BackendError when the device reported VK_ERROR_DEVICE_LOST; `doing` names the
  /// operation refused.
  void ensure_usable(const char* doing) const;
  bool lost() const { return !lost_.empty(); }
  /// Clears a simulated loss (test hook); false when the loss was real.
  bool forget_simulated_loss();

  // ---- driver limits (vk_probe.cpp) ----
  /// Loop iterations one invocation may run, summed over all its loops, before the driver
  /// leaves them silently; 0 when it ran the whole probe (no cap up to 2^20). lavapipe caps it
  /// at 65535. Measured with loop_probe.comp on first use (one tiny dispatch), then cached;
  /// an allocation failure while measuring is an OutOfMemory and the next call tries again.
  uint64_t loop_limit();

  // ---- timestamps ----
  VkQueryPool create_query_pool(uint32_t count);
  VkDevice device() const { return device_; }

 private:
  struct Submitted {
    VkCommandBuffer cmd;  // recycled when retired; VK_NULL_HANDLE: none (a replay of kept work only)
    VkFence fence;
    std::vector<VkBufferView> views;  // texel views its dispatches read
    std::shared_ptr<KeptRun> kept;    // a kept run this submission records into or replays
    bool recycle = true;              // false: `cmd` belongs to `kept`
  };
  friend struct KeptRun;
  struct Recording {
    bool keep = false;
    uint64_t signature = 0;
    std::string not_replayable;
    bool transient = false;
    std::thread::id thread;
    std::shared_ptr<KeptRun> run;
  };
  /// Submits the open command buffer, then `replayed`'s (when given), in one submission.
  void submit(const std::shared_ptr<KeptRun>& replayed);
  void note(const void* bytes, size_t n);
  void not_replayable(const std::string& why, bool transient = false);
  void unpin(Buffer* buffer);
  Block* new_block(VkDeviceSize size, bool dedicated);
  void destroy_block(Block* block);
  void trim_cache();
  VkDeviceSize carve(Block* block, VkDeviceSize size);
  void ensure_staging(VkDeviceSize bytes);
  void upload_chunks(Buffer* dst, size_t dst_offset, const void* src, size_t bytes);
  /// Records one vkCmdCopyBuffer of `regions` (offsets relative to each record, in bounds)
  /// after the barrier it needs; false, recording nothing, when the source and destination
  /// spans overlap in one buffer. The caller holds the mutex.
  bool record_copy(Buffer* dst, Buffer* src, std::vector<VkBufferCopy> regions);
  void download_chunks(void* dst, Buffer* src, size_t src_offset, size_t bytes);
  void retire(bool wait_all);
  void full_barrier(VkCommandBuffer cmd);
  /// Waits for one fence; a (real or simulated) device loss marks the context lost and throws.
  void wait_fence(VkFence fence);
  /// Marks the context lost and throws the BackendError for `call`.
  [[noreturn]] void fail_lost(const char* call, bool simulated);
  VkDescriptorSetLayout set_layout(const std::string& kinds);

  VkPhysicalDevice physical_;
  DeviceCaps caps_;
  uint32_t device_max_groups_x_ = 0;  // the device's own limit while a test override holds
  int index_;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t memory_type_ = 0, staging_type_ = 0;
  PFN_vkCmdPushDescriptorSetKHR push_descriptor_fn_ = nullptr;

  // memory
  std::vector<std::unique_ptr<Block>> blocks_;
  VkDeviceSize block_size_ = 64ull << 20;
  size_t device_bytes_ = 0;
  // staging (host-visible, coherent)
  VkBuffer staging_buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory staging_memory_ = VK_NULL_HANDLE;
  VkDeviceSize staging_size_ = 0;
  void* staging_map_ = nullptr;
  // A recorded copy reads the staging buffer and has not been waited for (an upload's last
  // chunk stays in the open command buffer, ahead of the work that reads it); the next use of
  // the staging buffer submits and waits first.
  bool staging_in_use_ = false;

  // recording
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer current_ = VK_NULL_HANDLE;
  uint32_t recorded_ = 0;
  int batch_depth_ = 0;
  std::vector<BindingRange> since_barrier_;  // accesses since the last barrier
  std::vector<VkBufferView> views_;          // texel views of the command buffer being recorded
  std::deque<Submitted> in_flight_;
  std::vector<VkCommandBuffer> free_cmds_;
  std::vector<VkFence> free_fences_;
  // device loss: what reported it ("" = not lost), and whether it was simulated
  std::string lost_;
  bool lost_simulated_ = false;

  // kept runs: the recording being noted, and the allocations kept runs pin (a count per
  // allocation) with those whose release waits for the last pin to go
  std::unique_ptr<Recording> recording_;
  std::unordered_map<Buffer*, int> pins_;
  std::unordered_set<Buffer*> deferred_;

  // driver limits: UINT64_MAX until measured
  uint64_t loop_limit_ = UINT64_MAX;

  // pipelines
  std::map<std::string, VkDescriptorSetLayout> set_layouts_;
  std::map<std::string, VkPipelineLayout> layouts_;
  std::map<std::string, VkShaderModule> modules_;
  std::map<std::tuple<std::string, std::string, std::vector<int32_t>>, Pipeline> pipelines_;
};

/// Throws BackendError naming the call and the device when `result` is not VK_SUCCESS.
void check(VkResult result, const char* call, const std::string& where);
const char* result_name(VkResult result);

/// Instance-level state (vk_instance.cpp): created on first use.
struct InstanceState {
  VkInstance instance = VK_NULL_HANDLE;
  std::string error;                       // why no instance ("" when created)
  std::vector<VkPhysicalDevice> physical;  // ordered: discrete > integrated > virtual > cpu
  std::vector<DeviceCaps> caps;
  bool validation = false;
};
InstanceState& instance_state();
/// The context of device `index` (created on first use); throws BackendUnavailable.
Context& context(int index);
/// True while barriers may be recorded (test hook, vk_validation.hpp).
bool barriers_enabled();
/// False when a test forced shared-memory reductions (vk_validation.hpp).
bool subgroup_reductions_enabled();

}  // namespace porta::vk
