// porta fuzz — serialized ONNX TensorProto (the files read_tensor_proto reads, and every
// initializer and tensor attribute of a model): protobuf parse, then the conversion with its
// size, dtype and external-data checks (external locations resolve in a folder holding
// weights.bin, so confinement and bounds checks are reached).
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>

#include "fuzz/fuzz_setup.hpp"
#include "porta/error.hpp"
#include "runtime/onnx_tensor.hpp"

namespace {
std::string g_external_dir;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  porta::fuzz::limit_resources();
  g_external_dir = porta::fuzz::external_data_dir();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::TensorProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  try {
    porta::Tensor t = porta::detail::tensor_from_proto(proto, g_external_dir, "fuzzed tensor");
    porta::fuzz::check_accepted(t);
  } catch (const porta::Error& e) {
    porta::fuzz::note_refusal(e);
  }
  return 0;
}
