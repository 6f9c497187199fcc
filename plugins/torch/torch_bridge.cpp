// plugins/torch — torch <-> porta tensor bridge.
#include "torch_bridge.hpp"

#include <c10/core/impl/VirtualGuardImpl.h>

#include <memory>

namespace porta_torch {

porta::DType porta_dtype(at::ScalarType s, const std::string& op, const std::string& what) {
  switch (s) {
    case at::kFloat: return porta::DType::f32;
    case at::kDouble: return porta::DType::f64;
    case at::kHalf: return porta::DType::f16;
    case at::kBFloat16: return porta::DType::bf16;
    case at::kLong: return porta::DType::i64;
    case at::kInt: return porta::DType::i32;
    case at::kChar: return porta::DType::i8;
    case at::kByte: return porta::DType::u8;
    case at::kBool: return porta::DType::boolean;
    default:
      TORCH_CHECK(false, "[", op, "] ", what, " has dtype ", s,
                  ", which porta does not support (porta has float32, float64, float16, bfloat16, int64, "
                  "int32, int8, uint8 and bool)");
  }
}

at::ScalarType torch_dtype(porta::DType d) {
  switch (d) {
    case porta::DType::f32: return at::kFloat;
    case porta::DType::f64: return at::kDouble;
    case porta::DType::f16: return at::kHalf;
    case porta::DType::bf16: return at::kBFloat16;
    case porta::DType::i64: return at::kLong;
    case porta::DType::i32: return at::kInt;
    case porta::DType::i8: return at::kChar;
    case porta::DType::u8: return at::kByte;
    case porta::DType::boolean: return at::kBool;
  }
  return at::kFloat;
}

namespace {

// porta's device for a torch device, or an error naming what porta can run on.
porta::Device porta_device(const at::Device& d, const std::string& op, const std::string& what) {
  if (d.is_cpu()) return porta::Device::cpu();
  if (d.is_cuda()) {
    TORCH_CHECK(porta::find_backend(porta::DeviceType::cuda) != nullptr, "[", op, "] ", what,
                " is a cuda tensor, but this porta was built without its cuda backend (porta runs torch "
                "tensors on cpu, and on cuda when built with -DPORTA_BACKENDS=...;cuda)");
    return porta::Device{porta::DeviceType::cuda, d.index() < 0 ? 0 : d.index()};
  }
  TORCH_CHECK(false, "[", op, "] ", what, " is on device '", d,
              "', which porta cannot run torch tensors on (it takes cpu tensors, and cuda tensors when built "
              "with its cuda backend)");
}

}  // namespace

porta::Tensor to_porta(const at::Tensor& t, const std::string& op, const std::string& what) {
  porta::DType dt = porta_dtype(t.scalar_type(), op, what);
  porta::Device device = porta_device(t.device(), op, what);
  porta::Shape shape(t.sizes().begin(), t.sizes().end());
  size_t item = porta::dtype_size(dt);
  size_t bytes = t.storage().nbytes();
  if (t.numel() == 0 || bytes % item != 0) {
    // Nothing to share (or a storage that is not a whole number of elements): a copy.
    at::Tensor c = t.contiguous();
    if (device.type == porta::DeviceType::cpu)
      return porta::Tensor::from_host(c.data_ptr(), shape, dt);
    porta::Tensor out = porta::Tensor::empty(shape, dt, device);
    if (c.numel()) out.copy_(to_porta(c, op, what));
    return out;
  }
  std::vector<int64_t> strides(t.strides().begin(), t.strides().end());
  if (device.type == porta::DeviceType::cpu) {
    // The whole torch storage as a flat porta tensor (not owned: torch frees it), then this
    // tensor's view of it, strides and offset as torch has them.
    porta::Tensor flat = porta::Tensor::wrap_host(t.storage().data_ptr().get(),
                                                  {static_cast<int64_t>(bytes / item)}, dt);
    return flat.as_strided(shape, strides, t.storage_offset());
  }
  // cuda: porta's C++ API has no tensor over memory it did not allocate, so the input is
  // copied on the device (stream-ordered on porta's stream) into a porta tensor.
  at::Tensor c = t.contiguous();
  porta::Tensor out = porta::Tensor::empty(shape, dt, device);
  const auto& s = out.storage();
  s->backend()->copy_on_device(device.index, s->handle(), 0, c.data_ptr(), 0, out.nbytes());
  if (!t.is_contiguous()) s->backend()->synchronize(device.index);  // before torch frees `c`
  return out;
}

at::Tensor to_torch(const porta::Tensor& t) {
  std::vector<int64_t> sizes(t.shape().begin(), t.shape().end());
  std::vector<int64_t> strides(t.strides().begin(), t.strides().end());
  porta::Device d = t.device();
  at::Device device = d.type == porta::DeviceType::cuda ? at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(d.index))
                                                        : at::Device(at::kCPU);
  auto options = at::TensorOptions().dtype(torch_dtype(t.dtype())).device(device);
  if (t.numel() == 0) return at::empty(sizes, options);
  void* data = nullptr;
  if (d.type == porta::DeviceType::cpu) {
    data = t.raw_data();
  } else {
    const auto& s = t.storage();
    data = s->backend()->kernel_pointer(s->handle(), static_cast<size_t>(t.offset()) * porta::dtype_size(t.dtype()));
  }
  auto owner = std::make_shared<porta::Tensor>(t);
  // The deleter holds the porta tensor (and so its storage) until torch lets go.
  return torch::from_blob(data, sizes, strides, [owner](void*) mutable { owner.reset(); }, options);
}

void wait_for_torch(const at::Device& device) {
  if (!device.is_cuda()) return;
  c10::impl::VirtualGuardImpl guard(device.type());
  guard.getStream(device).synchronize();
}

void wait_for_porta(const porta::Device& device) {
  if (device.type == porta::DeviceType::cpu) return;
  porta::find_backend(device.type)->synchronize(device.index);
}

}  // namespace porta_torch
