// plugins/ort — device memory for ORT (see ort_memory.hpp).
#include "ort_memory.hpp"

#include <algorithm>
#include <map>
#include <mutex>

namespace porta_ort {

const OrtEpApi& ep_api() { return *api().GetEpApi(); }

namespace {

/// Every block handed to ORT, by handle (one table: the allocators and the data transfer share it).
class Blocks {
 public:
  static Blocks& get() {
    static Blocks b;
    return b;
  }
  void* allocate(porta::Device d, size_t bytes) {
    porta::Tensor t = porta::Tensor::empty({static_cast<int64_t>(std::max<size_t>(bytes, 1))}, porta::DType::u8, d);
    void* handle = t.storage()->handle();
    std::lock_guard lock(mutex_);
    blocks_[handle] = t;
    return handle;
  }
  void free(void* handle) {
    std::lock_guard lock(mutex_);
    blocks_.erase(handle);
  }
  /// The block ORT calls `handle`, as `shape` of `dtype`; an undefined tensor for a handle porta
  /// did not give out (host memory).
  porta::Tensor view(const void* handle, const porta::Shape& shape, porta::DType dtype) {
    std::lock_guard lock(mutex_);
    auto it = blocks_.find(const_cast<void*>(handle));
    if (it == blocks_.end()) return {};
    return it->second.reinterpret(shape, dtype);
  }

 private:
  std::mutex mutex_;
  std::map<void*, porta::Tensor> blocks_;
};

}  // namespace

uint32_t vendor_id(porta::Device d) { return 0x50540000u + d.type.id; }  // "PT" + kind

porta::Tensor as_porta(const void* data, const porta::Shape& shape, porta::DType dtype) {
  porta::Tensor t = Blocks::get().view(data, shape, dtype);
  return t.defined() ? t : porta::Tensor::wrap_host(const_cast<void*>(data), shape, dtype);
}

DeviceAllocator::DeviceAllocator(porta::Device d, const OrtMemoryInfo* i) : OrtAllocator{}, device(d), info(i) {
  version = ORT_API_VERSION;
  Alloc = [](OrtAllocator* self, size_t bytes) noexcept -> void* {
    try {
      return Blocks::get().allocate(static_cast<DeviceAllocator*>(self)->device, bytes);
    } catch (const std::exception&) {
      return nullptr;  // ORT reports a failed allocation itself
    }
  };
  Reserve = Alloc;
  Free = [](OrtAllocator*, void* p) noexcept { Blocks::get().free(p); };
  Info = [](const OrtAllocator* self) noexcept { return static_cast<const DeviceAllocator*>(self)->info; };
}

bool DataTransfer::is_ours(const OrtMemoryDevice* d) const {
  for (const OrtMemoryDevice* o : ours)
    if (ep_api().MemoryDevice_AreEqual(d, o)) return true;
  return false;
}
bool DataTransfer::is_host(const OrtMemoryDevice* d) {
  return ep_api().MemoryDevice_GetDeviceType(d) == OrtMemoryInfoDeviceType_CPU;
}

void DataTransfer::copy(const OrtValue* const* src, OrtValue** dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    Ort::ConstValue s(src[i]);
    Ort::UnownedValue d(dst[i]);
    auto info = s.GetTensorTypeAndShapeInfo();
    porta::Shape shape = info.GetShape();
    porta::DType dtype = to_porta(info.GetElementType());
    porta::Tensor from = as_porta(s.GetTensorRawData(), shape, dtype);
    porta::Tensor to = as_porta(d.GetTensorMutableRawData(), shape, dtype);
    if (from.nbytes()) to.copy_(from);
  }
}

DataTransfer::DataTransfer() : OrtDataTransferImpl{} {
  ort_version_supported = ORT_API_VERSION;
  Release = [](OrtDataTransferImpl*) noexcept {};  // owned by the factory
  CanCopy = [](const OrtDataTransferImpl* self, const OrtMemoryDevice* src, const OrtMemoryDevice* dst) noexcept {
    auto* t = static_cast<const DataTransfer*>(self);
    bool s = t->is_ours(src), d = t->is_ours(dst);
    return (s && (d || is_host(dst))) || (d && is_host(src));
  };
  CopyTensors = [](OrtDataTransferImpl* self, const OrtValue** src, OrtValue** dst, OrtSyncStream**,
                   size_t n) noexcept -> OrtStatus* {
    return guarded([&] { static_cast<DataTransfer*>(self)->copy(src, dst, n); });
  };
}

}  // namespace porta_ort
