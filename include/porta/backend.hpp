// porta — the interface every device backend implements (one instance per device kind).
//
// The core reaches devices only through this interface. Memory handles are opaque outside the
// backend and its kernels: a host pointer on cpu, a buffer record on Vulkan/CUDA/HIP.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "porta/device.hpp"
#include "porta/dtype.hpp"

namespace porta {

/// Whether a device can be used, and its name (when available) or the reason (when not).
struct Availability {
  bool available = false;
  std::string detail;
};

/// What a device can do; drives kernel choice (`supports`) and `porta devices`.
struct Capabilities {
  std::string name;                    ///< human-readable device name
  std::string type;                    ///< "cpu", "discrete", "integrated", ...
  size_t total_memory = 0;             ///< bytes (0 = unknown)
  size_t max_buffer_bytes = SIZE_MAX;  ///< largest single buffer a kernel may bind
  DTypeSet dtypes = 0;                 ///< dtypes the device computes with
  /// Reduced-precision float formats (bf16, f16) the device multiplies faster than f32 (dot
  /// product units): what a session with precision "auto" computes in (bf16 first). 0: none.
  DTypeSet fast_dtypes = 0;
  /// Reduced formats the device has no arithmetic for at all, not even emulated: a session
  /// asking for one computes its products in f32 there and its plan says so (the cpu where
  /// oneDNN has no bf16, i.e. without AVX-512). Never overlaps fast_dtypes.
  DTypeSet products_in_f32 = 0;
  int subgroup_size = 1;               ///< warp / wavefront / subgroup width
  /// Byte alignment at which every kernel may read and write a tensor that starts inside
  /// another tensor's memory (a Concat's inputs, written in place by their producers); 0: the
  /// runtime does not place tensors so on this device.
  size_t view_alignment = 0;
  bool timestamps = false;             ///< device timers available
  /// How strongly Device::parse("auto") should pick this device: the available device with
  /// the highest value wins (ties: first registered kind, lowest index); 0 or less never
  /// (cpu is what "auto" gives when no device is above 0).
  int preference = 0;
  std::vector<std::pair<std::string, std::string>> extra;  ///< backend-specific facts
};

/// Measures device time between two points of one device's work (optional per backend).
class Timer {
 public:
  virtual ~Timer() = default;
  virtual void start() = 0;
  virtual void stop() = 0;
  /// Elapsed device time in microseconds; may synchronize.
  virtual double elapsed_us() = 0;
};

/// What a backend noted about the work recorded between Backend::begin_recording and
/// Backend::end_recording.
struct RecordedRun {
  /// The kept commands (opaque to the caller; Backend::replay submits them again): null unless
  /// they were kept and can be replayed.
  std::shared_ptr<void> commands;
  /// A digest of what was recorded, addresses aside (two runs that record the same work, each
  /// into its own buffers, have the same signature).
  uint64_t signature = 0;
  /// Why the work cannot be replayed ("" when it can).
  std::string not_replayable;
  /// The reason was this recording's, not the work's (another thread's work was recorded
  /// meanwhile): a later run may be kept.
  bool transient = false;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceType type() const = 0;
  /// Number of devices of this kind (at least 1 entry is listed even when unavailable).
  virtual int device_count() const = 0;
  virtual Availability availability(int index) const = 0;
  virtual Capabilities capabilities(int index) const = 0;

  /// Allocates `bytes` (may be 0). Throws OutOfMemory naming requested and free bytes.
  virtual void* allocate(int index, size_t bytes) = 0;
  /// Frees what allocate returned. Never throws.
  virtual void deallocate(int index, void* handle, size_t bytes) noexcept = 0;

  /// Copies between host memory and device memory at byte offsets.
  virtual void copy_from_host(int index, void* dst, size_t dst_offset, const void* src,
                              size_t bytes) = 0;
  virtual void copy_to_host(int index, void* dst, const void* src, size_t src_offset,
                            size_t bytes) = 0;
  virtual void copy_on_device(int index, void* dst, size_t dst_offset, const void* src,
                              size_t src_offset, size_t bytes) = 0;
  /// Waits for all queued work of the device.
  virtual void synchronize(int index) = 0;
  /// Host pointer for a handle when host-addressable (cpu), else nullptr.
  virtual void* host_pointer(void* handle) const { (void)handle; return nullptr; }
  /// What a C kernel callback of this backend gets from porta_tensor_data for a tensor that
  /// starts `byte_offset` bytes into the allocation `handle`, or nullptr when the backend's
  /// kernels reach memory another way (Vulkan: porta_vulkan_dispatch).
  virtual void* kernel_pointer(void* handle, size_t byte_offset) const {
    void* p = host_pointer(handle);
    return p ? static_cast<char*>(p) + byte_offset : nullptr;
  }
  /// The device's arithmetic ceiling, measured without any porta op kernel: GFLOP/s of
  /// independent fused multiply-add chains held in registers (no memory traffic), computed in
  /// `dtype` where the device has that arithmetic (f32 everywhere; f16/bf16 where a backend
  /// has a probe for it). The best of several runs of a few tens of milliseconds; the chains'
  /// results are checked, so a probe the compiler folded away fails (BackendError) instead of
  /// reporting a figure. 0 when the backend has no probe for `dtype` (optional).
  virtual double measure_fma_gflops(int index, DType dtype) { (void)index; (void)dtype; return 0; }
  /// Device timer (optional: nullptr when the device has none).
  virtual std::unique_ptr<Timer> create_timer(int index) { (void)index; return nullptr; }
  /// Called before and after a session runs a sequence of kernels on the device, so a
  /// backend can batch them into one submission (optional).
  virtual void begin_batch(int index) { (void)index; }
  virtual void end_batch(int index) { (void)index; }
  /// Replaying a session's run (optional; `replays` says whether the backend can).
  /// begin_recording notes the work recorded on the device until end_recording; with `keep`,
  /// that work is also kept for replay (its memory stays reserved while the
  /// RecordedRun::commands live); false: not begun (another recording is open on the device).
  /// replay submits kept work again, after what is recorded before it (the copies of a run's
  /// inputs).
  virtual bool replays(int index) const {
    (void)index;
    return false;
  }
  virtual bool begin_recording(int index, bool keep) {
    (void)index;
    (void)keep;
    return false;
  }
  virtual RecordedRun end_recording(int index) {
    (void)index;
    return {};
  }
  virtual void replay(int index, const std::shared_ptr<void>& commands) {
    (void)index;
    (void)commands;
  }
};

/// Registers the backend for its device kind (in-tree: at library load, with
/// PORTA_REGISTER_BACKEND; a plugin's: through porta_register_backend). A kind has at most one
/// backend: a second one is refused with InvalidArgument naming the kind. `source` names who
/// registered it ("porta" for in-tree backends, else the plugin's name). A backend is never
/// unregistered once accepted: memory it handed out stays freeable until the process exits.
void register_backend(std::unique_ptr<Backend> backend, std::string source = "porta");
/// The backend for a kind, or nullptr when none is registered (not built, or its plugin not
/// loaded).
Backend* find_backend(DeviceType type);
/// Who registered the backend of `type` ("porta" or a plugin's name; "" when none).
std::string backend_source(DeviceType type);
/// The backend for a device; throws BackendUnavailable (with the reason) when the device is
/// not built or not usable.
Backend& backend_for(Device device);
/// Every device of every built backend, available or not.
std::vector<Device> all_devices();
/// Device kinds that have a backend (compiled in or from a plugin), in id order.
std::vector<DeviceType> built_backends();

/// A backend this build of porta left out, and why (e.g. cuda on a machine without an NVIDIA
/// driver, unless built with scripts/build.sh --gpu). Kinds a plugin has registered since are
/// not listed.
struct UnbuiltBackend {
  std::string kind;
  std::string reason;
};
std::vector<UnbuiltBackend> backends_not_built();

}  // namespace porta

/// Registers a backend object at library load: PORTA_REGISTER_BACKEND(CpuBackend).
#define PORTA_REGISTER_BACKEND(Class)                                             \
  namespace {                                                                    \
  const bool porta_backend_registered_##Class = [] {                              \
    ::porta::register_backend(std::make_unique<Class>());                         \
    return true;                                                                 \
  }();                                                                           \
  }
