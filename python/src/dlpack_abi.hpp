// The DLPack exchange structs (DLPack's stable C ABI, version 0.x without versioning), declared
// here because Debian ships no dlpack header; field order and sizes are the ABI.
#pragma once
#include <cstdint>

namespace porta::python::dlpack {

enum DeviceKind : int32_t { kCPU = 1, kCUDA = 2, kCUDAHost = 3, kVulkan = 7, kROCM = 10 };
enum TypeCode : uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kBfloat = 4, kComplex = 5, kBool = 6 };

struct Device {
  int32_t device_type;
  int32_t device_id;
};
struct DataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct Tensor {
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;
  int64_t* strides;  ///< in elements; null means C order
  uint64_t byte_offset;
};
struct ManagedTensor {
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor* self);
};

/// Capsule names: a producer's capsule is "dltensor"; a consumer renames what it took.
inline constexpr const char* kCapsuleName = "dltensor";
inline constexpr const char* kUsedCapsuleName = "used_dltensor";

}  // namespace porta::python::dlpack
