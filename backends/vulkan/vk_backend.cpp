// porta vulkan — the Backend interface over vk::Context: availability, capability record,
// memory, copies, batching and timestamp timers.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "backends/fma_probe.hpp"
#include "backends/vulkan/vk_context.hpp"
#include "porta/error.hpp"
#include "porta/util.hpp"

namespace porta::vk {
namespace {

std::string version_str(uint32_t v) {
  return str(VK_VERSION_MAJOR(v), ".", VK_VERSION_MINOR(v), ".", VK_VERSION_PATCH(v));
}

// Device time between start() and stop(), from two timestamp queries recorded into the
// device's command stream.
class TimestampTimer final : public Timer {
 public:
  explicit TimestampTimer(Context& ctx) : ctx_(ctx), pool_(ctx.create_query_pool(2)) {}
  ~TimestampTimer() override {
    std::lock_guard lock(ctx_.mutex);
    try {
      if (recorded_) ctx_.flush(true);  // the pool may be in use by submitted work
    } catch (...) {
      // A lost device: the error was reported where the work was submitted; a destructor
      // must not throw (that would terminate the process).
      if (!ctx_.lost()) return;  // still in use by work we could not wait for: leak the pool
    }
    vkDestroyQueryPool(ctx_.device(), pool_, nullptr);
  }
  void start() override {
    std::lock_guard lock(ctx_.mutex);
    VkCommandBuffer cmd = ctx_.command_buffer();
    vkCmdResetQueryPool(cmd, pool_, 0, 2);
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool_, 0);
    recorded_ = true;
  }
  void stop() override {
    std::lock_guard lock(ctx_.mutex);
    vkCmdWriteTimestamp(ctx_.command_buffer(), VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, 1);
  }
  double elapsed_us() override {
    std::lock_guard lock(ctx_.mutex);
    if (!recorded_) return 0.0;
    ctx_.flush(true);
    uint64_t ticks[2] = {0, 0};
    check(vkGetQueryPoolResults(ctx_.device(), pool_, 0, 2, sizeof(ticks), ticks, sizeof(uint64_t),
                                VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
          "vkGetQueryPoolResults", ctx_.label());
    return static_cast<double>(ticks[1] - ticks[0]) * ctx_.caps().timestamp_period_ns / 1000.0;
  }

 private:
  Context& ctx_;
  VkQueryPool pool_;
  bool recorded_ = false;
};

// The arithmetic-peak probe (fma_probe.comp): `scale` workgroups of 64 invocations, each
// running 8 vec4 fma chains, timed with timestamps (else on the host around a waited submit).
double measure_fma(Context& ctx, DType dtype) {
  std::lock_guard lock(ctx.mutex);
  const bool f16 = dtype == DType::f16;
  const DeviceCaps& caps = ctx.caps();
  if (!(dtype == DType::f32 || (f16 && caps.fp16_arithmetic))) return 0.0;
  // Exact chains (backends/fma_probe.hpp): f32 steps 2^-20 from starts k * 2^-12; f16 steps
  // 2^-14 from k * 2^-14 and must stay below 0.125, so it runs at most 1900 steps.
  struct Params {
    uint32_t iters;
    float one, step, start_unit;
  } prm{f16 ? 1900u : 60000u, 1.0f, f16 ? 1.0f / 16384 : 1.0f / (1 << 20), f16 ? 1.0f / 16384 : 1.0f / 4096};
  uint64_t cap = ctx.loop_limit();
  if (cap && cap <= prm.iters + 16) prm.iters = static_cast<uint32_t>(cap > 32 ? cap - 16 : 16);
  constexpr uint32_t kLocal = 64;
  const uint64_t max_groups = std::min<uint64_t>({caps.max_groups[0], 1u << 14,
                                                  caps.max_storage_range / (kLocal * sizeof(float))});
  const double expect = 496.0 * prm.start_unit + 32.0 * prm.iters * prm.step;
  const double flops_per_invocation = 2.0 * 32 * prm.iters;
  const Pipeline& pipe = ctx.pipeline(f16 ? "fma_probe:f16" : "fma_probe:f32", "s", kLocal, {});
  size_t bytes = max_groups * kLocal * sizeof(float);
  Buffer* out = ctx.allocate(bytes);
  std::vector<float> sums;
  auto run = [&](uint64_t groups) {
    size_t n = groups * kLocal;
    std::unique_ptr<TimestampTimer> timer;
    if (caps.timestamps) timer = std::make_unique<TimestampTimer>(ctx);
    ctx.flush(true);
    auto t0 = std::chrono::steady_clock::now();
    if (timer) timer->start();
    ctx.dispatch(pipe, {{out->buffer, out->offset, n * sizeof(float), true}}, &prm, sizeof prm,
                 static_cast<uint32_t>(groups), 1, 1);
    if (timer) timer->stop();
    ctx.flush(true);
    double s = timer ? timer->elapsed_us() * 1e-6
                     : std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    sums.resize(n);
    ctx.download(sums.data(), out, 0, n * sizeof(float));
    for (size_t i = 0; i < n; ++i)
      if (sums[i] != static_cast<float>(expect))
        throw BackendError(str("[vulkan] ", ctx.label(), ": the ", dtype_name(dtype), " peak probe's invocation ", i,
                               " summed its chains to ", sums[i], " where they must sum to ", expect, " (",
                               prm.iters, " steps): the driver did not run the arithmetic it is timed for,",
                               " so no ceiling is reported"));
    return probe::Run{flops_per_invocation * static_cast<double>(n), s};
  };
  double g = 0;
  try {
    g = probe::best_gflops(run, max_groups);
  } catch (...) {
    ctx.release(out);
    throw;
  }
  ctx.release(out);
  return g;
}

class VulkanBackend final : public Backend {
 public:
  DeviceType type() const override { return DeviceType::vulkan; }
  int device_count() const override {
    return std::max<int>(1, static_cast<int>(instance_state().physical.size()));
  }
  Availability availability(int index) const override {
    InstanceState& s = instance_state();
    if (!s.error.empty()) return {false, s.error};
    if (index < 0 || index >= static_cast<int>(s.caps.size())) return {false, "no such device"};
    const DeviceCaps& c = s.caps[index];
    if (!c.unusable.empty()) return {false, str(c.name, ": ", c.unusable)};
    try {
      context(index);
    } catch (const Error& e) {
      return {false, e.what()};
    }
    return {true, c.name};
  }
  Capabilities capabilities(int index) const override {
    Capabilities out;
    InstanceState& s = instance_state();
    if (index < 0 || index >= static_cast<int>(s.caps.size())) {
      out.name = s.error.empty() ? "no such device" : s.error;
      out.type = "none";
      return out;
    }
    const DeviceCaps& c = s.caps[index];
    out.name = c.name;
    out.type = c.type;
    out.total_memory = c.device_local_bytes;
    out.max_buffer_bytes = c.max_storage_range;
    out.dtypes = dtype_bit(DType::f32) | dtype_bit(DType::i32) | (c.fp16_storage ? dtype_bit(DType::f16) : 0) |
                 (c.int8_storage ? dtype_bit(DType::i8) | dtype_bit(DType::u8) | dtype_bit(DType::boolean) : 0) |
                 (c.int64_arithmetic ? dtype_bit(DType::i64) : 0);
    // f16 arithmetic is faster than f32 on GPUs (packed halves); lavapipe computes it in f32
    // lanes, so there it is only a storage format and `auto` stays f32.
    out.fast_dtypes = c.fp16_arithmetic && c.fp16_storage && c.type != "cpu" ? dtype_bit(DType::f16) : 0;
    out.subgroup_size = static_cast<int>(c.subgroup_size);
    // Kernels bind storage buffers and vec4 texel buffers (16 bytes a texel) at such offsets.
    out.view_alignment = static_cast<size_t>(std::max<uint64_t>({c.storage_alignment, c.texel_alignment, 16}));
    out.timestamps = c.timestamps;
    // "auto" takes a real GPU (below CUDA/HIP) but not a CPU implementation (lavapipe), which
    // is no faster than porta's cpu backend.
    out.preference = c.type == "cpu" ? 0 : 100;
    auto yes = [](bool b) { return std::string(b ? "yes" : "no"); };
    auto& e = out.extra;
    e.emplace_back("vulkan", version_str(c.api_version));
    e.emplace_back("driver", c.driver);
    e.emplace_back("subgroup ops", str("basic ", yes(c.subgroup_basic), ", arithmetic ",
                                       yes(c.subgroup_arithmetic), ", shuffle ", yes(c.subgroup_shuffle),
                                       ", clustered ", yes(c.subgroup_clustered)));
    e.emplace_back("fp16", str("storage ", yes(c.fp16_storage), ", arithmetic ", yes(c.fp16_arithmetic)));
    e.emplace_back("int8", str("storage ", yes(c.int8_storage), ", arithmetic ", yes(c.int8_arithmetic)));
    e.emplace_back("int64", str("arithmetic ", yes(c.int64_arithmetic)));
    e.emplace_back("max storage buffer range", std::to_string(c.max_storage_range));
    e.emplace_back("max allocation", std::to_string(c.max_allocation));
    e.emplace_back("max workgroup count", str(c.max_groups[0], "x", c.max_groups[1], "x", c.max_groups[2]));
    e.emplace_back("max workgroup size", str(c.max_workgroup_size[0], "x", c.max_workgroup_size[1], "x",
                                             c.max_workgroup_size[2], " (", c.max_workgroup_invocations,
                                             " invocations)"));
    e.emplace_back("shared memory", std::to_string(c.shared_memory));
    e.emplace_back("push constants", std::to_string(c.push_constant_bytes));
    e.emplace_back("timestamp period ns", str(c.timestamp_period_ns));
    if (c.unusable.empty()) {
      try {  // measured on first use
        uint64_t limit = context(index).loop_limit();
        e.emplace_back("loop iterations per invocation", limit ? str(limit, " (the driver ends loops there)") : "no cap");
      } catch (const Error&) {
      }
    }
    e.emplace_back("validation", yes(s.validation));
    if (!c.unusable.empty()) e.emplace_back("unusable", c.unusable);
    return out;
  }
  void* allocate(int index, size_t bytes) override { return context(index).allocate(bytes); }
  void deallocate(int index, void* handle, size_t) noexcept override {
    try {
      context(index).release(static_cast<Buffer*>(handle));
    } catch (...) {
    }
  }
  void copy_from_host(int index, void* dst, size_t dst_offset, const void* src, size_t bytes) override {
    if (bytes) context(index).upload(static_cast<Buffer*>(dst), dst_offset, src, bytes);
  }
  void copy_to_host(int index, void* dst, const void* src, size_t src_offset, size_t bytes) override {
    if (bytes) context(index).download(dst, static_cast<Buffer*>(const_cast<void*>(src)), src_offset, bytes);
  }
  void copy_on_device(int index, void* dst, size_t dst_offset, const void* src, size_t src_offset,
                      size_t bytes) override {
    context(index).copy(static_cast<Buffer*>(dst), dst_offset, static_cast<Buffer*>(const_cast<void*>(src)),
                        src_offset, bytes);
  }
  void synchronize(int index) override {
    Context& c = context(index);
    std::lock_guard lock(c.mutex);
    c.flush(true);
  }
  std::unique_ptr<Timer> create_timer(int index) override {
    Context& c = context(index);
    if (!c.caps().timestamps) return nullptr;
    return std::make_unique<TimestampTimer>(c);
  }
  double measure_fma_gflops(int index, DType dtype) override { return measure_fma(context(index), dtype); }
  void begin_batch(int index) override {
    Context& c = context(index);
    std::lock_guard lock(c.mutex);
    c.begin_batch();
  }
  void end_batch(int index) override {
    Context& c = context(index);
    std::lock_guard lock(c.mutex);
    c.end_batch();
  }
  bool replays(int index) const override {
    (void)index;
    return true;
  }
  bool begin_recording(int index, bool keep) override { return context(index).begin_recording(keep); }
  RecordedRun end_recording(int index) override {
    return context(index).end_recording();
  }
  void replay(int index, const std::shared_ptr<void>& commands) override {
    context(index).replay(std::static_pointer_cast<KeptRun>(commands));
  }
};

}  // namespace
}  // namespace porta::vk

using porta::vk::VulkanBackend;
PORTA_REGISTER_BACKEND(VulkanBackend)
