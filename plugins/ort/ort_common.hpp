// plugins/ort — what the custom-op library and the execution provider share: the OrtApi
// pointer, element-type mapping between ORT and porta, and turning porta errors into OrtStatus.
#pragma once
#define ORT_API_MANUAL_INIT
#include <onnxruntime_cxx_api.h>
#undef ORT_API_MANUAL_INIT

#include <string>
#include <vector>

#include "porta/dtype.hpp"
#include "porta/error.hpp"

namespace porta_ort {

/// The OrtApi of the runtime that loaded us (set by the first entry point called).
const OrtApi& api();
/// Records `base`'s OrtApi (version ORT_API_VERSION, the headers we were built with); returns
/// false when the runtime is older than that.
bool init_api(const OrtApiBase* base);
/// Why init_api refused `base`: the API version we need and the runtime's version string.
std::string old_runtime_message(const OrtApiBase* base);

/// porta's dtype for an ORT element type; throws porta::DTypeError naming the ORT type when
/// porta has none.
porta::DType to_porta(ONNXTensorElementDataType t);
ONNXTensorElementDataType to_ort(porta::DType t);

/// One ORT custom-op domain per non-ONNX domain of porta's registry (ai.porta, plugins' domains),
/// holding porta's ops (custom_ops.cpp); the caller releases them (ReleaseCustomOpDomain) once
/// no session uses them.
std::vector<OrtCustomOpDomain*> make_custom_op_domains();

/// Throws a porta::Error carrying the message of a failed ORT call (and releases the status).
void check(OrtStatus* status);

/// Runs `fn`, turning any exception into an OrtStatus (nullptr on success): porta errors keep
/// their message, prefixed by their kind ("ShapeError: [RmsNorm] ...").
template <class Fn>
OrtStatus* guarded(Fn&& fn) noexcept {
  try {
    fn();
    return nullptr;
  } catch (const porta::Error& e) {
    OrtErrorCode code = ORT_FAIL;
    std::string kind = e.kind();
    if (kind == "InvalidArgument" || kind == "ShapeError" || kind == "DTypeError" || kind == "InvalidModel")
      code = ORT_INVALID_ARGUMENT;
    else if (kind == "Unsupported" || kind == "BackendUnavailable")
      code = ORT_NOT_IMPLEMENTED;
    return api().CreateStatus(code, (kind + ": " + e.what()).c_str());
  } catch (const Ort::Exception& e) {
    return api().CreateStatus(e.GetOrtErrorCode(), e.what());
  } catch (const std::exception& e) {
    return api().CreateStatus(ORT_FAIL, e.what());
  } catch (...) {
    return api().CreateStatus(ORT_FAIL, "porta: unknown exception");
  }
}

}  // namespace porta_ort
