// plugins/ort — device memory of the porta execution provider as ORT sees it: an allocator
// whose blocks are porta tensors on a porta device, and the data transfer between those blocks
// and ORT's CPU memory. A block is found again by the handle ORT was given (a host pointer on
// cpu-like devices, porta's opaque buffer record on Vulkan/CUDA/HIP); ORT never dereferences it.
#pragma once
#include <vector>

#include "ort_common.hpp"
#include "porta/tensor.hpp"

namespace porta_ort {

const OrtEpApi& ep_api();

/// The vendor id of a porta device's ORT memory and hardware device: one per porta device kind.
uint32_t vendor_id(porta::Device d);

/// A porta tensor for ORT tensor data: a view of the porta block `data` names, or, when porta
/// did not allocate it, the host memory wrapped.
porta::Tensor as_porta(const void* data, const porta::Shape& shape, porta::DType dtype);

/// ORT's allocator for one porta device's memory.
struct DeviceAllocator : OrtAllocator {
  porta::Device device;
  const OrtMemoryInfo* info;
  DeviceAllocator(porta::Device d, const OrtMemoryInfo* i);
};

/// Copies between ORT's CPU memory and porta blocks, and between blocks (porta's copies).
struct DataTransfer : OrtDataTransferImpl {
  std::vector<const OrtMemoryDevice*> ours;  ///< memory devices of the factory's memory infos
  DataTransfer();
  bool is_ours(const OrtMemoryDevice* d) const;
  static bool is_host(const OrtMemoryDevice* d);
  void copy(const OrtValue* const* src, OrtValue** dst, size_t n);
};

}  // namespace porta_ort
