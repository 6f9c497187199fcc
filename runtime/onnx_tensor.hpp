// porta runtime — converting ONNX TensorProto to tensors, with the checks an untrusted file
// needs (sizes against bytes present, external data confined to the model's folder).
#pragma once
#include <string>

#include "porta/tensor.hpp"
#include "runtime/onnx_source.hpp"

namespace onnx {
class TensorProto;
}

namespace porta::detail {

/// porta dtype of an ONNX TensorProto data type; throws Unsupported naming the type.
DType dtype_from_onnx(int onnx_type, const std::string& context);
/// ONNX data type number of a porta dtype.
int onnx_from_dtype(DType t);
/// Converts a TensorProto (inline or external data). `base_dir` is the model's folder
/// ("" refuses external data). `raw`, when given, is the proto's raw_data left in its source
/// (strip_model_raw_data): read from there straight into the tensor. Throws InvalidModel
/// saying what is wrong.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir,
                         const std::string& context, const RawData* raw = nullptr);

}  // namespace porta::detail
