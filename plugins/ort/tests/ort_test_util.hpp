// plugins/ort tests — helpers shared by the custom-op and execution-provider tests: running an
// ORT session on porta tensors, comparing outputs, reading the example models' inputs, and
// building small one-node models.
#pragma once
#include <gtest/gtest.h>
#include <onnxruntime_cxx_api.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "porta/npy.hpp"
#include "porta/plugin.hpp"
#include "porta/porta.hpp"
#include "tests/onnx_graph_builder.hpp"

namespace porta_ort_test {

using porta::Shape;
using porta::Tensor;

inline Ort::Env& env() {
  static Ort::Env e(ORT_LOGGING_LEVEL_WARNING, "porta_ort_tests");
  return e;
}

inline ONNXTensorElementDataType ort_type(porta::DType t) {
  switch (t) {
    case porta::DType::f32: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    case porta::DType::u8: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
    case porta::DType::i64: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
    default: throw std::runtime_error("test: dtype not used here");
  }
}

/// Runs `session` on named host tensors; returns every output as an f32 porta tensor.
inline std::vector<Tensor> ort_run(Ort::Session& session, const std::vector<std::pair<std::string, Tensor>>& inputs) {
  Ort::MemoryInfo mem = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  std::vector<Ort::Value> values;
  std::vector<const char*> names;
  for (auto& [name, t] : inputs) {
    values.push_back(Ort::Value::CreateTensor(mem, t.raw_data(), t.nbytes(), t.shape().data(),
                                              t.shape().size(), ort_type(t.dtype())));
    names.push_back(name.c_str());
  }
  Ort::AllocatorWithDefaultOptions alloc;
  std::vector<std::string> out_names;
  for (size_t i = 0; i < session.GetOutputCount(); ++i)
    out_names.push_back(session.GetOutputNameAllocated(i, alloc).get());
  std::vector<const char*> out_ptrs;
  for (auto& n : out_names) out_ptrs.push_back(n.c_str());
  std::vector<Ort::Value> outs = session.Run(Ort::RunOptions{}, names.data(), values.data(), values.size(),
                                             out_ptrs.data(), out_ptrs.size());
  std::vector<Tensor> result;
  for (auto& o : outs) {
    auto info = o.GetTensorTypeAndShapeInfo();
    EXPECT_EQ(info.GetElementType(), ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
    result.push_back(Tensor::from_host(o.GetTensorRawData(), info.GetShape(), porta::DType::f32));
  }
  return result;
}

/// Largest |a-b| over max(1, max|b|): both f32 on cpu, same shape.
inline double rel_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  if (a.shape() != b.shape()) return INFINITY;
  Tensor ac = a.to(porta::Device::cpu()).contiguous(), bc = b.to(porta::Device::cpu()).contiguous();
  const float* x = ac.data<float>();
  const float* y = bc.data<float>();
  double diff = 0, scale = 1;
  for (int64_t i = 0; i < ac.numel(); ++i) {
    diff = std::max(diff, std::fabs(double(x[i]) - y[i]));
    scale = std::max(scale, std::fabs(double(y[i])));
  }
  return diff / scale;
}

inline std::vector<std::pair<std::string, std::string>> read_list(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::pair<std::string, std::string>> out;
  std::string name, file;
  while (f >> name >> file) out.push_back({name, file});
  return out;
}

/// The inputs of models/<name>, in graph order.
inline std::vector<std::pair<std::string, Tensor>> model_inputs(const std::string& name) {
  std::string dir = std::string(PORTA_SOURCE_DIR) + "/models/" + name;
  std::vector<std::pair<std::string, Tensor>> inputs;
  for (auto& [n, file] : read_list(dir + "/inputs.txt")) inputs.push_back({n, porta::read_npy(dir + "/" + file)});
  return inputs;
}

inline Tensor random_tensor(const Shape& shape, std::mt19937& rng, float lo = -2, float hi = 2) {
  Tensor t = Tensor::empty(shape, porta::DType::f32);
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

/// A one-node model of `op` (inputs X, P of the given shapes, X's batch axis dynamic).
inline std::string one_node_model(const std::string& domain, const std::string& op, int n_inputs, const Shape& p_shape,
                           const std::function<void(onnx::NodeProto*)>& attrs = nullptr) {
  porta::test::OnnxGraph g(17, {}, domain);
  onnx::ValueInfoProto* x = g.g->add_input();
  porta::test::OnnxGraph::declare(x, "X", {});
  auto* shape = x->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->add_dim()->set_dim_param("batch");
  shape->add_dim()->set_dim_value(p_shape.empty() ? 8 : p_shape[0]);
  std::vector<std::string> ins{"X"};
  if (n_inputs > 1) {
    g.input("P", p_shape);
    ins.push_back("P");
  }
  onnx::NodeProto* n = g.node(op, ins, "Y", domain);
  if (attrs) attrs(n);
  onnx::ValueInfoProto* y = g.g->add_output();
  y->set_name("Y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return g.m.SerializeAsString();
}

inline Ort::Session session_from_bytes(const std::string& bytes, const Ort::SessionOptions& options) {
  return Ort::Session(env(), bytes.data(), bytes.size(), options);
}

}  // namespace porta_ort_test
