// Eager-call and dispatch overhead: what porta adds around a kernel that does almost nothing.
//   BM_eager_add_1_element   porta::call_op("Add") on two 1-element f32 tensors, end to end
//                            (inference, resolution, output allocation, kernel); target <= 1 µs.
//   BM_resolve               porta::resolve(Add, cpu, f32): the cached resolution lookup that
//                            every dispatch does; target <= 100 ns.
//   BM_session_run_add_relu  Session::run of a two-node model (y = Relu(a + b), 1x3x4 f32),
//                            inputs bound by name, outputs returned.
//   BM_vulkan_chain/N        Session::run on vulkan:0 of a chain of N Relu nodes over 64 f32
//                            elements: each node is one tiny dispatch, so (time(64) - time(1))
//                            / 63 is what a dispatch costs, wall time (the device's own floor
//                            included) and the calling thread's CPU time (porta's host code and
//                            the driver's recording), and time(1) is one submit and wait with
//                            the input upload and output read-back. Skipped without vulkan:0.
#include <benchmark/benchmark.h>

#include <onnx/onnx_pb.h>

#include <map>
#include <string>

#include "porta/porta.hpp"

namespace {

void BM_eager_add_1_element(benchmark::State& state) {
  porta::Tensor a = porta::Tensor::scalar(1.5, porta::DType::f32).reshape({1});
  porta::Tensor b = porta::Tensor::scalar(2.5, porta::DType::f32).reshape({1});
  porta::call_op("Add", {a, b});  // resolve and warm once
  for (auto _ : state) benchmark::DoNotOptimize(porta::call_op("Add", {a, b}));
}

void BM_resolve(benchmark::State& state) {
  const porta::OpSchema* add = porta::find_op("Add");
  porta::resolve(*add, porta::Device::cpu(), porta::DType::f32);
  for (auto _ : state)
    benchmark::DoNotOptimize(&porta::resolve(*add, porta::Device::cpu(), porta::DType::f32));
}

// y = Relu(a + b) with a, b of shape batch x 3 x 4 (the same graph tests/model_error_test.cpp
// builds), serialized in memory.
porta::Model add_relu_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("add_relu");
  auto declare = [](onnx::ValueInfoProto* v, const std::string& name) {
    v->set_name(name);
    onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_param("batch");
    t->mutable_shape()->add_dim()->set_dim_value(3);
    t->mutable_shape()->add_dim()->set_dim_value(4);
  };
  declare(g->add_input(), "a");
  declare(g->add_input(), "b");
  declare(g->add_output(), "y");
  onnx::NodeProto* add = g->add_node();
  add->set_op_type("Add");
  add->add_input("a");
  add->add_input("b");
  add->add_output("sum");
  onnx::NodeProto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->add_input("sum");
  relu->add_output("y");
  std::string bytes = m.SerializeAsString();
  return porta::Model::from_bytes(bytes.data(), bytes.size());
}

void BM_session_run_add_relu(benchmark::State& state) {
  porta::Session session(add_relu_model());
  std::map<std::string, porta::Tensor> inputs{
      {"a", porta::Tensor::zeros({1, 3, 4}, porta::DType::f32)},
      {"b", porta::Tensor::zeros({1, 3, 4}, porta::DType::f32)}};
  session.run(inputs);  // compile the plan for these shapes
  for (auto _ : state) benchmark::DoNotOptimize(session.run(inputs));
}

// x -> Relu -> Relu -> ... (n nodes) -> y, 64 f32 elements.
porta::Model relu_chain_model(int n) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("relu_chain");
  auto declare = [](onnx::ValueInfoProto* v, const std::string& name) {
    v->set_name(name);
    onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(64);
  };
  declare(g->add_input(), "x");
  declare(g->add_output(), "y");
  for (int i = 0; i < n; ++i) {
    onnx::NodeProto* relu = g->add_node();
    relu->set_op_type("Relu");
    relu->add_input(i == 0 ? "x" : "v" + std::to_string(i - 1));
    relu->add_output(i + 1 == n ? "y" : "v" + std::to_string(i));
  }
  std::string bytes = m.SerializeAsString();
  return porta::Model::from_bytes(bytes.data(), bytes.size());
}

void BM_vulkan_chain(benchmark::State& state) {
  porta::Device device;
  try {
    device = porta::Device::parse("vulkan:0");
    porta::backend_for(device);
  } catch (const porta::Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  porta::SessionOptions options;
  options.device = device;
  porta::Session session(relu_chain_model(static_cast<int>(state.range(0))), options);
  std::map<std::string, porta::Tensor> inputs{{"x", porta::Tensor::zeros({64}, porta::DType::f32)}};
  session.run(inputs);  // compile the plan and the pipelines
  for (auto _ : state) benchmark::DoNotOptimize(session.run(inputs));
  state.counters["nodes"] = static_cast<double>(state.range(0));
}

}  // namespace

BENCHMARK(BM_vulkan_chain)->Arg(1)->Arg(64)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_eager_add_1_element)->Unit(benchmark::kNanosecond);
BENCHMARK(BM_resolve)->Unit(benchmark::kNanosecond);
BENCHMARK(BM_session_run_add_relu)->Unit(benchmark::kNanosecond);
