// Values a device kernel reads on the host (OpSchema::host_read_inputs: the indices Gather,
// GatherND and the rest of the family check, Clip's bounds, Pad's value) come from the
// session's host copy where it has one: an index graph
// input the caller passed, a constant, or a chain of constants folded for the purpose (NonZero
// of a mask, transposed, as PyTorch exports boolean indexing). A run then reads nothing back
// from the device before its outputs (on vulkan:0, counted: each read back waits for the
// device). Values against a float64 reference computed here; a bad index in the caller's
// tensor is still the op's ShapeError.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "porta/backend.hpp"
#include "porta/session.hpp"
#include "tests/onnx_graph_builder.hpp"
#include "tests/test_util.hpp"
#include "backends/vulkan/vk_context.hpp"

namespace porta::test {
namespace {

void set_int64(onnx::GraphProto* g, const std::string& input) {
  for (onnx::ValueInfoProto& v : *g->mutable_input())
    if (v.name() == input) v.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
}

// Reads back from a Vulkan device so far (0 on other devices: nothing counts them there).
uint64_t downloads(Device d) { return d.type == DeviceType::vulkan ? vk::context(d.index).downloads : 0; }

// Runs `s` twice on `in` and returns the second run's first output; that run must read nothing
// back from the device (its outputs stay there until the caller reads them).
Tensor second_run(Session& s, const std::map<std::string, Tensor>& in, Device d) {
  s.run(in);
  const uint64_t before = downloads(d);
  std::vector<Tensor> out = s.run(in);
  EXPECT_EQ(downloads(d), before) << "the run read a value back from the device";
  return out.at(0);
}

// On every device: a session's second run against `want` (reading nothing back), then the
// index input `name` replaced by `bad`: the op's ShapeError, naming `op` and `value`.
void check_indices_from_input(const Model& model, const std::map<std::string, Tensor>& in, const Tensor& want,
                              const std::string& name, const Tensor& bad, const std::string& op,
                              const std::string& value) {
  for (Device d : test_devices()) {
    if (!device_unusable(d).empty()) continue;
    SCOPED_TRACE(d.str());
    SessionOptions o;
    o.device = d;
    Session s(model, o);
    Comparison c = compare(second_run(s, in, d), want, 1e-6);
    EXPECT_TRUE(c.ok) << c.message;
    std::map<std::string, Tensor> wrong = in;
    wrong[name] = bad;
    const std::string msg = error_message<ShapeError>([&] { s.run(wrong).at(0).to(Device::cpu()); });
    EXPECT_NE(msg.find(op), std::string::npos) << msg;
    EXPECT_NE(msg.find(value), std::string::npos) << msg;
  }
}

// y = Relu(Gather(x, ids)): x [10, 4] (the device's), ids [7] an index input.
TEST(HostCopies, GatherIndicesFromAGraphInputAreNotReadBack) {
  OnnxGraph g;
  g.input("x", {10, 4});
  g.input("ids", {7});
  set_int64(g.g, "ids");
  g.node("Gather", {"x", "ids"}, "rows")->set_name("gather");
  g.node("Relu", {"rows"}, "y");
  g.output("y", {7, 4});
  const Tensor x = random_f32({10, 4}, -1, 1);
  const std::vector<double> ids{3, 0, 9, -1, 3, 5, -10};
  const std::vector<double> xv = x.to_doubles();
  std::vector<double> want;
  for (double i : ids) {
    const int64_t r = static_cast<int64_t>(i < 0 ? i + 10 : i);
    for (int64_t c = 0; c < 4; ++c) want.push_back(std::max(xv[r * 4 + c], 0.0));
  }
  const std::map<std::string, Tensor> in{{"x", x}, {"ids", Tensor::from_values(ids, {7}, DType::i64)}};
  // An index outside the axis in the caller's tensor is still the op's error.
  check_indices_from_input(g.model(), in, Tensor::from_values(want, {7, 4}, DType::f64), "ids",
                           Tensor::from_values({0, 1, 2, 3, 4, 5, 10}, {7}, DType::i64), "Gather", "10");
}

// ScatterND(x, idx, upd) with idx an index input: the scatters read their indices the same way.
TEST(HostCopies, ScatterIndicesFromAGraphInputAreNotReadBack) {
  OnnxGraph g;
  g.input("x", {5, 3});
  g.input("idx", {2, 1});
  set_int64(g.g, "idx");
  g.input("upd", {2, 3});
  g.node("ScatterND", {"x", "idx", "upd"}, "y");
  g.output("y", {5, 3});
  const Tensor x = random_f32({5, 3}, -1, 1), upd = random_f32({2, 3}, -1, 1);
  std::vector<double> want = x.to_doubles();
  const std::vector<double> uv = upd.to_doubles();
  const int64_t rows[2] = {4, 1};
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) want[rows[r] * 3 + c] = uv[r * 3 + c];
  const std::map<std::string, Tensor> in{{"x", x}, {"idx", Tensor::from_values({4, -4}, {2, 1}, DType::i64)}, {"upd", upd}};
  check_indices_from_input(g.model(), in, Tensor::from_values(want, {5, 3}, DType::f64), "idx",
                           Tensor::from_values({5, 0}, {2, 1}, DType::i64), "ScatterND", "5");
}

// Scalars a kernel passes as constants: Pad's value and an integer Clip's bounds, session
// constants, reach the device steps as host copies (before, each run read them back).
TEST(HostCopies, ScalarConstantsAreNotReadBack) {
  OnnxGraph g;
  g.input("x", {3, 4});
  auto int_constant = [&](const std::string& name, int type, const Shape& dims, const std::vector<int64_t>& v) {
    onnx::TensorProto* t = g.g->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t x : v) {
      if (type == onnx::TensorProto::INT64) t->add_int64_data(x);
      else t->add_int32_data(static_cast<int32_t>(x));
    }
  };
  int_constant("pads", onnx::TensorProto::INT64, {4}, {0, 1, 0, 1});
  g.initializer("value", {}, {2.5f});
  int_constant("lo", onnx::TensorProto::INT32, {}, {-1});
  int_constant("hi", onnx::TensorProto::INT32, {}, {1});
  g.node("Pad", {"x", "pads", "value"}, "padded");
  onnx::NodeProto* cast = g.node("Cast", {"padded"}, "ints");
  onnx::AttributeProto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::INT32);
  g.node("Clip", {"ints", "lo", "hi"}, "y");
  g.output("y", {3, 6});
  for (onnx::ValueInfoProto& v : *g.g->mutable_output())
    v.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT32);
  // A float Clip of the padded map too (its own output): the kernel's bounds as push constants.
  g.initializer("flo", {}, {-0.5f});
  g.initializer("fhi", {}, {0.75f});
  g.node("Clip", {"padded", "flo", "fhi"}, "z");
  g.output("z", {3, 6});
  const Tensor x = random_f32({3, 4}, -3, 3);
  const std::vector<double> xv = x.to_doubles();
  std::vector<double> want;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 6; ++c) {
      const double v = c == 0 || c == 5 ? 2.5 : xv[r * 4 + c - 1];
      want.push_back(std::min(std::max(std::trunc(v), -1.0), 1.0));
    }
  const std::map<std::string, Tensor> in{{"x", x}};
  for (Device d : test_devices()) {
    if (!device_unusable(d).empty()) continue;
    SCOPED_TRACE(d.str());
    SessionOptions o;
    o.device = d;
    Session s(g.model(), o);
    EXPECT_EQ(second_run(s, in, d).to(Device::cpu()).to_doubles(), want);
    std::vector<double> want_z;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 6; ++c)
        want_z.push_back(std::min(std::max(c == 0 || c == 5 ? 2.5 : xv[r * 4 + c - 1], -0.5), 0.75));
    Comparison cz = compare(s.run(in).at(1), Tensor::from_values(want_z, {3, 6}, DType::f64), 1e-6);
    EXPECT_TRUE(cz.ok) << cz.message;
  }
}

// The tokens that are not padding: GatherND(emb, Transpose(NonZero(Not(Equal(ids, 0))))) over
// the embedding rows of the ids. The ids decide a shape (NonZero's count), so the mask's chain
// is computed when the plan is made, and the Transpose after NonZero, which shapes do not
// need, is folded too because GatherND reads its values on the host.
TEST(HostCopies, IndexChainsOfAShapeDecidingInputAreFolded) {
  OnnxGraph g;
  g.input("ids", {2, 5});
  set_int64(g.g, "ids");
  g.input("table", {6, 4});
  onnx::TensorProto* zero = g.g->add_initializer();
  zero->set_name("zero");
  zero->set_data_type(onnx::TensorProto::INT64);
  zero->add_int64_data(0);
  g.node("Gather", {"table", "ids"}, "emb");
  g.node("Equal", {"ids", "zero"}, "pad");
  g.node("Not", {"pad"}, "keep");
  g.node("NonZero", {"keep"}, "where");
  onnx::NodeProto* t = g.node("Transpose", {"where"}, "tuples");
  t->set_name("transpose");
  onnx::AttributeProto* perm = t->add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  for (int64_t a : {1, 0}) perm->add_ints(a);
  g.node("GatherND", {"emb", "tuples"}, "y");
  g.output("y", {6, 4});
  const Tensor table = random_f32({6, 4}, -1, 1);
  const std::vector<double> ids{4, 0, 2, 0, 5, 1, 1, 0, 3, 0};
  const std::vector<double> tv = table.to_doubles();
  std::vector<double> want;
  for (double i : ids)
    if (i != 0)
      for (int64_t c = 0; c < 4; ++c) want.push_back(tv[static_cast<int64_t>(i) * 4 + c]);
  const std::map<std::string, Tensor> in{{"ids", Tensor::from_values(ids, {2, 5}, DType::i64)}, {"table", table}};
  for (Device d : test_devices()) {
    if (!device_unusable(d).empty()) continue;
    SCOPED_TRACE(d.str());
    SessionOptions o;
    o.device = d;
    Session s(g.model(), o);
    if (d.type != DeviceType::cpu) {
      const std::vector<NodePlan> plan = s.plan(in);
      const NodePlan& p = plan_of_node(plan, "transpose");
      EXPECT_EQ(p.path, Path::folded) << p.reason;
      EXPECT_NE(p.reason.find("a device kernel reads its values there"), std::string::npos) << p.reason;
    }
    const Tensor y = second_run(s, in, d);
    ASSERT_EQ(y.shape(), (Shape{6, 4}));
    Comparison c = compare(y, Tensor::from_values(want, {6, 4}, DType::f64), 1e-6);
    EXPECT_TRUE(c.ok) << c.message;
  }
}

}  // namespace
}  // namespace porta::test
