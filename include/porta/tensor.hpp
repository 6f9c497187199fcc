// porta — tensors: shape, strides, dtype, device and ref-counted storage.
//
// Storage may live on a device whose memory the host cannot address (Vulkan, CUDA): only
// backends and kernels of that device dereference it. Everything else goes through copies
// (Tensor::to, copy_from_host, copy_to_host).
#pragma once
#include <cstddef>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "porta/device.hpp"
#include "porta/dtype.hpp"

namespace porta {

class Backend;
using Shape = std::vector<int64_t>;

/// Number of elements of a shape; throws ShapeError on negative dimensions or overflow.
int64_t shape_numel(const Shape& shape);
/// Row-major (C order) strides in elements.
std::vector<int64_t> contiguous_strides(const Shape& shape);

/// A block of memory on one device. Freed through its backend when the last owner goes.
class Storage {
 public:
  /// Takes ownership of `handle` (allocated by `backend` on `device`) unless `owned` is false.
  /// `keep_alive` (optional) is held until the storage goes: whatever owns borrowed memory.
  Storage(Device device, Backend* backend, void* handle, size_t bytes, bool owned = true,
          std::shared_ptr<void> keep_alive = nullptr);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  /// Allocates `bytes` on `device`; throws OutOfMemory or BackendUnavailable.
  static std::shared_ptr<Storage> allocate(Device device, size_t bytes);

  Device device() const { return device_; }
  Backend* backend() const { return backend_; }
  /// Backend-specific handle: a host pointer on cpu, an opaque buffer record elsewhere. A
  /// released storage (release()) gets its bytes back first, so every reader sees them.
  void* handle() const {
    return released_.load(std::memory_order_acquire) ? rebuilt() : handle_;
  }
  size_t bytes() const { return bytes_; }

  /// Frees the bytes of an owned host storage whose contents something else holds exactly (a
  /// kernel's packed copy of a weight, in the same dtype): the next handle() allocates them
  /// again and has `rebuild` write them back. A Session does this only for constants that
  /// nothing outside it can reach (docs/ARCHITECTURE.md, "Released weights"); a reader that
  /// still holds a pointer from before must not exist. False (and nothing freed) when the
  /// storage is borrowed, not on the cpu, or already released.
  bool release(std::function<void(void*)> rebuild);
  bool released() const { return released_.load(std::memory_order_acquire); }

 private:
  void* rebuilt() const;

  Device device_;
  Backend* backend_;
  mutable void* handle_;
  size_t bytes_;
  bool owned_;
  std::shared_ptr<void> keep_alive_;
  mutable std::atomic<bool> released_{false};
  mutable std::mutex release_mutex_;
  mutable std::function<void(void*)> rebuild_;
};

/// An n-dimensional view of a Storage. Copying a Tensor shares the storage.
class Tensor {
 public:
  Tensor() = default;  ///< undefined tensor (an absent optional input)

  /// Uninitialised tensor on `device`.
  static Tensor empty(const Shape& shape, DType dtype, Device device = Device::cpu());
  /// Tensor filled with zeros.
  static Tensor zeros(const Shape& shape, DType dtype, Device device = Device::cpu());
  /// Copies `bytes` of host memory (C order) into a new tensor on `device`.
  static Tensor from_host(const void* data, const Shape& shape, DType dtype,
                          Device device = Device::cpu());
  /// Wraps caller-owned host memory without copying; the caller keeps it alive.
  static Tensor wrap_host(void* data, const Shape& shape, DType dtype);
  /// Wraps `bytes` of host memory that another library owns, without copying, as a view of
  /// `shape` with `strides` (in elements, not negative) and `offset` (elements from `data`);
  /// every element must lie inside the `bytes` (else ShapeError). `owner` is held until the last
  /// tensor sharing the storage is gone (a numpy array, a DLPack producer).
  static Tensor wrap_host(void* data, size_t bytes, const Shape& shape,
                          const std::vector<int64_t>& strides, int64_t offset, DType dtype,
                          std::shared_ptr<void> owner);
  /// A 0-d or 1-d f32/f64/i64... tensor from values (converted to dtype), on cpu.
  static Tensor from_values(const std::vector<double>& values, const Shape& shape, DType dtype);
  /// Scalar tensor (shape {}) on cpu.
  static Tensor scalar(double value, DType dtype);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }  ///< in elements
  int64_t offset() const { return offset_; }                       ///< in elements
  int64_t dim(int i) const;  ///< negative i counts from the end
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  Device device() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  bool is_contiguous() const;

  /// Host pointer to the first element; throws DeviceMismatch unless on cpu.
  void* raw_data() const;
  template <typename T>
  T* data() const { return static_cast<T*>(raw_data()); }

  // ---- views (share storage) ----
  Tensor reshape(const Shape& shape) const;  ///< view if contiguous, else a copy
  Tensor permute(const std::vector<int>& dims) const;
  Tensor transpose(int a, int b) const;
  /// Elements [start, end) with `step` along `axis`.
  Tensor slice(int axis, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor as_strided(const Shape& shape, const std::vector<int64_t>& strides, int64_t offset) const;
  /// The same storage read as `shape` of `dtype`, starting at this view's first byte; the
  /// bytes must fit in the storage (used for pooled buffers).
  Tensor reinterpret(const Shape& shape, DType dtype) const;
  /// Broadcast view (stride 0 along expanded axes).
  Tensor expand(const Shape& shape) const;

  // ---- copies ----
  /// Contiguous copy (or *this if already contiguous).
  Tensor contiguous() const;
  /// Copy to another device (or *this if already there).
  Tensor to(Device device) const;
  /// Copy with dtype conversion (on cpu).
  Tensor cast(DType dtype) const;
  Tensor clone() const;
  /// Copies src's elements into this tensor (same shape; any devices; strided ok).
  void copy_(const Tensor& src);
  /// Host <-> tensor copies in C order; sizes must match nbytes().
  void copy_from_host(const void* src, size_t bytes);
  void copy_to_host(void* dst, size_t bytes) const;
  /// All elements as doubles, copied to host (for tests, printing, comparing).
  std::vector<double> to_doubles() const;

  /// "Tensor(f32 2x3 cpu)".
  std::string describe() const;

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  std::vector<int64_t> strides_;
  int64_t offset_ = 0;
  DType dtype_ = DType::f32;
};

}  // namespace porta
