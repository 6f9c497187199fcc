// plugins/torch — torch <-> porta tensor bridge.
#include "torch_bridge.hpp"

#include <memory>

namespace porta_torch {
namespace {

porta::DType dtype_of(at::ScalarType s, const char* op, const char* what) {
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
      TORCH_CHECK(false, "[", op, "] ", what, " has dtype ", s, ", which porta does not support");
  }
}

at::ScalarType scalar_type_of(porta::DType d) {
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

}  // namespace

porta::Tensor to_porta(const at::Tensor& t, std::vector<at::Tensor>& keep, const char* op, const char* what) {
  TORCH_CHECK(t.device().is_cpu(), "[", op, "] ", what, " should be a CPU tensor, got ", t.device());
  porta::DType dt = dtype_of(t.scalar_type(), op, what);
  at::Tensor c = t.is_contiguous() ? t : t.contiguous();
  keep.push_back(c);
  porta::Shape shape(c.sizes().begin(), c.sizes().end());
  return porta::Tensor::wrap_host(c.data_ptr(), shape, dt);
}

at::Tensor to_torch(const porta::Tensor& t) {
  auto owner = std::make_shared<porta::Tensor>(t);
  std::vector<int64_t> sizes(t.shape().begin(), t.shape().end());
  auto options = at::TensorOptions().dtype(scalar_type_of(t.dtype())).device(at::kCPU);
  // The deleter holds the porta tensor (and so its storage) until torch lets go.
  return torch::from_blob(t.raw_data(), sizes, [owner](void*) mutable { owner.reset(); }, options);
}

at::Tensor run_porta(const char* op, const std::vector<at::Tensor>& inputs, const std::vector<bool>& present,
                     const porta::Attributes& attrs) {
  std::vector<at::Tensor> keep;
  std::vector<porta::Tensor> ins;
  static const char* names[] = {"input 0", "input 1", "input 2", "input 3", "input 4"};
  for (size_t i = 0; i < inputs.size(); ++i)
    ins.push_back(present[i] ? to_porta(inputs[i], keep, op, names[i < 5 ? i : 4]) : porta::Tensor());
  try {
    return to_torch(porta::call_op(op, ins, attrs).at(0));
  } catch (const porta::Error& e) {
    TORCH_CHECK(false, e.what());
  }
}

}  // namespace porta_torch
