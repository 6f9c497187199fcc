// plugins/ort — shared pieces (see ort_common.hpp).
#include "ort_common.hpp"

#include <atomic>

#include "porta/util.hpp"

namespace porta_ort {
namespace {
std::atomic<const OrtApi*> g_api{nullptr};
}

const OrtApi& api() { return *g_api.load(); }

bool init_api(const OrtApiBase* base) {
  if (g_api.load()) return true;
  const OrtApi* a = base->GetApi(ORT_API_VERSION);
  if (!a) return false;
  g_api.store(a);
  Ort::InitApi(a);
  return true;
}

std::string old_runtime_message(const OrtApiBase* base) {
  return porta::str("[porta_ort] built for ONNX Runtime API version ", ORT_API_VERSION,
                    " (ONNX Runtime 1.", ORT_API_VERSION, " or later); this runtime is ",
                    base->GetVersionString());
}

porta::DType to_porta(ONNXTensorElementDataType t) {
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return porta::DType::f32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: return porta::DType::f16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: return porta::DType::bf16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: return porta::DType::f64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: return porta::DType::i64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: return porta::DType::i32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8: return porta::DType::i8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8: return porta::DType::u8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL: return porta::DType::boolean;
    default:
      throw porta::DTypeError(porta::str("[porta_ort] ONNX element type ", static_cast<int>(t),
                                         " has no porta dtype (porta has f32 f16 bf16 f64 i64 i32 i8 u8 bool)"));
  }
}

ONNXTensorElementDataType to_ort(porta::DType t) {
  switch (t) {
    case porta::DType::f32: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    case porta::DType::f16: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
    case porta::DType::bf16: return ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16;
    case porta::DType::f64: return ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE;
    case porta::DType::i64: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
    case porta::DType::i32: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
    case porta::DType::i8: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8;
    case porta::DType::u8: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
    case porta::DType::boolean: return ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL;
  }
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
}

void check(OrtStatus* status) {
  if (!status) return;
  std::string msg = api().GetErrorMessage(status);
  api().ReleaseStatus(status);
  throw porta::Error("[porta_ort] ONNX Runtime: " + msg);
}

}  // namespace porta_ort
