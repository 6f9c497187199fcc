// Plan-level placements (runtime/session_compile.cpp): steps nothing reads are dropped (a node
// whose only reader was folded, like the Transpose PyTorch exports ahead of a Shape); on a
// device other than the cpu, small ops on index and mask values run in the host prologue (on
// the cpu before every device step, their float results uploaded once); and a Concat's inputs
// are written in place by their producers where the device allows it. Each against a float64
// reference computed here, with what the plan reports.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "porta/backend.hpp"
#include "porta/session.hpp"
#include "tests/onnx_graph_builder.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

void set_elem_type(onnx::GraphProto* g, const std::string& input, int type) {
  for (onnx::ValueInfoProto& v : *g->mutable_input())
    if (v.name() == input) v.mutable_type()->mutable_tensor_type()->set_elem_type(type);
}

void int_initializer(onnx::GraphProto* g, const std::string& name, const Shape& dims, const std::vector<int64_t>& v) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t x : v) t->add_int64_data(x);
}

// y = Relu(x); Transpose(y) is read only by a Shape, which the plan folds: it does not run.
TEST(PlanPlacement, StepsNothingReadsAreDropped) {
  OnnxGraph g;
  g.input("x", {2, 3, 4});
  g.node("Relu", {"x"}, "y")->set_name("relu");
  onnx::NodeProto* t = g.node("Transpose", {"y"}, "t");
  t->set_name("transpose");
  onnx::AttributeProto* perm = t->add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  for (int64_t a : {2, 1, 0}) perm->add_ints(a);
  g.node("Shape", {"t"}, "shape");
  g.node("Reshape", {"y", "shape"}, "out");
  g.output("out", {4, 3, 2});
  const Tensor x = random_f32({2, 3, 4}, -1, 1);
  std::vector<double> want;
  for (double v : x.to_doubles()) want.push_back(v > 0 ? v : 0);
  const Tensor ref = Tensor::from_values(want, {4, 3, 2}, DType::f64);
  const std::map<std::string, Tensor> in{{"x", x}};
  for (Device d : test_devices()) {
    if (!device_unusable(d).empty()) continue;
    SCOPED_TRACE(d.str());
    SessionOptions o;
    o.device = d;
    o.profile = true;
    Session s(g.model(), o);
    const std::vector<NodePlan> plan = s.plan(in);
    EXPECT_NE(plan_of_node(plan, "transpose").reason.find("not run: nothing that runs reads its outputs"), std::string::npos)
        << plan_of_node(plan, "transpose").reason;
    Comparison c = compare(s.run(in).at(0), ref, 1e-6);
    EXPECT_TRUE(c.ok) << c.message;
    for (const NodeProfile& p : s.profile()) EXPECT_NE(p.op, "Transpose") << p.node << " ran";
    // keep_values reports every value, so there it runs.
    o.keep_values = true;
    Session kept(g.model(), o);
    kept.run(in);
    EXPECT_EQ(kept.values().count("t"), 1u);
    EXPECT_EQ(plan_of_node(kept.plan(in), "transpose").reason.find("not run"), std::string::npos);
  }
}

// Token ids -> a padding mask, scaled by a uniform constant (one value throughout, as a
// ConstantOfShape folds to), and the embedding rows: the host prologue's work. The embedding
// rows plus the mask (a float value from a table, not from masks alone) and x + that are the
// device's. The reference is computed here in float64.
struct TextCase {
  Model model;
  std::map<std::string, Tensor> inputs;
  Tensor ref;
};

TextCase text_case(int64_t tokens) {
  OnnxGraph g;
  g.input("ids", {2, tokens});
  set_elem_type(g.g, "ids", onnx::TensorProto::INT64);
  g.input("x", {2, tokens, 4});
  const Tensor table = random_f32({10, 4}, -1, 1);
  const std::vector<double> tv = table.to_doubles();
  g.initializer("table", {10, 4}, std::vector<float>(tv.begin(), tv.end()));
  int_initializer(g.g, "pad", {}, {0});
  g.initializer("hidden", {}, {-1e4f});
  g.initializer("open", {}, {0.0f});
  int_initializer(g.g, "axis", {1}, {-1});
  g.node("Equal", {"ids", "pad"}, "is_pad")->set_name("is_pad");
  g.initializer("halves", {2, tokens}, std::vector<float>(static_cast<size_t>(2 * tokens), 0.5f));
  g.node("Where", {"is_pad", "hidden", "open"}, "mask")->set_name("mask");
  g.node("Mul", {"mask", "halves"}, "mask_s")->set_name("mask_s");
  // Hugging Face's form, (1 - float(m)) * c, added: elementwise nodes that would form a chain
  // on a device, which the prologue has no kernel for, so they stay nodes.
  g.initializer("one", {}, {1.0f});
  g.initializer("three", {}, {3.0f});
  onnx::NodeProto* cast = g.node("Cast", {"is_pad"}, "is_pad_f");
  cast->set_name("is_pad_f");
  onnx::AttributeProto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  g.node("Sub", {"one", "is_pad_f"}, "kept")->set_name("kept");
  g.node("Mul", {"kept", "three"}, "extra")->set_name("extra");
  g.node("Add", {"mask_s", "extra"}, "mask_t")->set_name("mask_t");
  g.node("Unsqueeze", {"mask_t", "axis"}, "mask3")->set_name("mask3");
  g.node("Gather", {"table", "ids"}, "emb")->set_name("emb");
  g.node("Add", {"emb", "mask3"}, "em")->set_name("em");
  int_initializer(g.g, "em_shape", {3}, {2, tokens, 4});
  g.node("Reshape", {"em", "em_shape"}, "em_v")->set_name("em_v");  // keeps em a node of its own
  g.node("Add", {"x", "em_v"}, "out")->set_name("out");
  g.output("out", {2, tokens, 4});
  std::vector<double> ids(static_cast<size_t>(2 * tokens));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<double>((i * 7 + 3) % 10);
  const Tensor x = random_f32({2, tokens, 4}, -1, 1);
  const std::vector<double> xv = x.to_doubles();
  std::vector<double> want(xv.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const size_t token = i / 4, c = i % 4;
    const int64_t id = static_cast<int64_t>(ids[token]);
    want[i] = xv[i] + tv[static_cast<size_t>(id) * 4 + c] + (id == 0 ? -5e3 : 3.0);
  }
  return {g.model(),
          {{"ids", Tensor::from_values(ids, {2, tokens}, DType::i64)}, {"x", x}},
          Tensor::from_values(want, {2, tokens, 4}, DType::f64)};
}

TEST(PlanPlacement, IndexAndMaskOpsRunInTheHostPrologue) {
  for (Device d : test_devices()) {
    if (d.type == DeviceType::cpu || !device_unusable(d).empty()) continue;
    SCOPED_TRACE(str(d.str(), " (seed ", seed(), ")"));
    const TextCase t = text_case(8);
    SessionOptions o;
    o.device = d;
    o.profile = true;
    Session s(t.model, o);
    const std::vector<NodePlan> plan = s.plan(t.inputs);
    for (const char* node : {"is_pad", "mask", "mask_s", "is_pad_f", "kept", "extra", "mask_t", "emb"}) {
      const NodePlan& p = plan_of_node(plan, node);
      EXPECT_EQ(p.device, Device::cpu()) << node << ": " << p.reason;
      EXPECT_NE(p.reason.find("host prologue"), std::string::npos) << node << ": " << p.reason;
    }
    // Float values the prologue made from masks alone are read by it again; the embedding rows
    // are read by the device, not by it.
    for (const char* node : {"em", "out"})
      EXPECT_EQ(plan_of_node(plan, node).device, d) << node << ": " << plan_of_node(plan, node).reason;
    EXPECT_EQ(plan_of_node(plan, "out").device, d) << plan_of_node(plan, "out").reason;
    for (int run = 0; run < 2; ++run) {
      Comparison c = compare(s.run(t.inputs).at(0), t.ref, 1e-5);
      EXPECT_TRUE(c.ok) << c.message;
    }
    // The prologue's steps come before every device step: one batch of device work after them.
    bool device_seen = false;
    for (const NodeProfile& p : s.profile()) {
      if (p.device.type != DeviceType::cpu) device_seen = true;
      else EXPECT_FALSE(device_seen) << p.node << " runs on the cpu after device steps";
    }
    // A strict session keeps every node on the device.
    o.strict = true;
    Session strict(t.model, o);
    for (const NodePlan& p : strict.plan(t.inputs))
      if (p.path != Path::folded) EXPECT_EQ(p.device, d) << p.node << ": " << p.reason;
    Comparison c = compare(strict.run(t.inputs).at(0), t.ref, 1e-5);
    EXPECT_TRUE(c.ok) << c.message;
  }
}

// Outputs past 16384 elements are the device's work, whatever their inputs.
TEST(PlanPlacement, LargeIndexWorkStaysOnTheDevice) {
  for (Device d : test_devices()) {
    if (d.type == DeviceType::cpu || !device_unusable(d).empty()) continue;
    SCOPED_TRACE(d.str());
    const TextCase t = text_case(8200);  // Equal: 16400 elements
    SessionOptions o;
    o.device = d;
    Session s(t.model, o);
    const std::vector<NodePlan> plan = s.plan(t.inputs);
    EXPECT_EQ(plan_of_node(plan, "is_pad").reason.find("host prologue"), std::string::npos)
        << plan_of_node(plan, "is_pad").reason;
    Comparison c = compare(s.run(t.inputs).at(0), t.ref, 1e-5);
    EXPECT_TRUE(c.ok) << c.message;
  }
}

// Concat in place: on devices with a view alignment (vulkan, the GPU kinds), each input of a
// Concat over an axis with only unit axes before it is written by its producer straight into
// the output's memory. Nested (a Concat of a Concat), an input read again afterwards, and the
// cases that must keep their Concat step: a batch of 2, a graph input among the inputs, blocks
// off the alignment, one input twice.
struct ConcatCase {
  const char* name;
  Shape x;       // the graph input x; a = Relu(x), b = x * x, d = -x
  bool nested;   // Concat(Concat(a, b), d) rather than Concat(a, b)
  const char* second;  // the second input of the (first) Concat: "b", "x" or "a"
  bool in_place;       // expected where the device allows it
  bool viewed = false; // Identity(b), a view of an input, is a graph output too
};

TEST(PlanPlacement, ConcatInputsAreWrittenInPlace) {
  const std::vector<ConcatCase> cases = {
      {"channels", {1, 16, 4, 4}, false, "b", true},
      {"nested", {1, 16, 4, 4}, true, "b", true},
      {"batch of 2", {2, 16, 4, 4}, false, "b", false},
      {"graph input", {1, 16, 4, 4}, false, "x", false},
      {"off the alignment", {1, 3, 5, 5}, false, "b", false},
      {"one input twice", {1, 16, 4, 4}, false, "a", false},
      {"an input viewed as a graph output", {1, 16, 4, 4}, true, "b", false, true},
  };
  for (const ConcatCase& cc : cases) {
    OnnxGraph g;
    g.input("x", cc.x);
    g.node("Relu", {"x"}, "a")->set_name("a");
    g.node("Mul", {"x", "x"}, "b")->set_name("b");
    g.node("Neg", {"x"}, "d")->set_name("d");
    auto concat = [&](const std::vector<std::string>& in, const std::string& out) {
      onnx::NodeProto* n = g.node("Concat", in, out);
      n->set_name(out);
      onnx::AttributeProto* axis = n->add_attribute();
      axis->set_name("axis");
      axis->set_type(onnx::AttributeProto::INT);
      axis->set_i(1);
    };
    concat({"a", cc.second}, "cat");
    if (cc.nested) concat({"cat", "d"}, "cat2");
    const std::string last = cc.nested ? "cat2" : "cat";
    g.node("Abs", {last}, "out")->set_name("out");
    g.node("Sigmoid", {"a"}, "out2")->set_name("out2");  // `a` read again after the Concat
    const int64_t parts = cc.nested ? 3 : 2;
    g.output("out", {cc.x[0], cc.x[1] * parts, cc.x[2], cc.x[3]});
    g.output("out2", cc.x);
    if (cc.viewed) {
      g.node("Identity", {"b"}, "out3")->set_name("out3");
      g.output("out3", cc.x);
    }
    // The float64 reference.
    const Tensor x = random_f32(cc.x, -1, 1);
    const std::vector<double> xv = x.to_doubles();
    const int64_t per_image = shape_numel(cc.x) / cc.x[0];
    std::vector<double> want, want2;
    for (int64_t n = 0; n < cc.x[0]; ++n)
      for (int64_t p = 0; p < parts; ++p)
        for (int64_t i = 0; i < per_image; ++i) {
          const double v = xv[static_cast<size_t>(n * per_image + i)];
          const std::string which = p == 0 ? "a" : p == 1 ? cc.second : "d";
          const double e = which == "a" ? std::max(v, 0.0) : which == "b" ? v * v : which == "x" ? v : -v;
          want.push_back(std::abs(e));
        }
    for (double v : xv) want2.push_back(1 / (1 + std::exp(-std::max(v, 0.0))));
    const std::map<std::string, Tensor> in{{"x", x}};
    for (Device d : test_devices()) {
      if (!device_unusable(d).empty()) continue;
      SCOPED_TRACE(str(cc.name, " on ", d.str()));
      SessionOptions o;
      o.device = d;
      Session s(g.model(), o);
      const std::vector<NodePlan> plan = s.plan(in);
      const bool allowed = backend_for(d).capabilities(d.index).view_alignment > 0;
      for (const char* node : {"cat", "cat2"}) {
        if (std::string(node) == "cat2" && !cc.nested) continue;
        const bool gone = plan_of_node(plan, node).reason.find("not run: its inputs' producers write them") != std::string::npos;
        // With b viewed as an output, the outer Concat (of cat and d) still goes in place.
        const bool expected = cc.viewed ? std::string(node) == "cat2" : cc.in_place;
        EXPECT_EQ(gone, allowed && expected) << node << ": " << plan_of_node(plan, node).reason;
      }
      for (int run = 0; run < 2; ++run) {
        std::vector<Tensor> got = s.run(in);
        Comparison c = compare(got.at(0), Tensor::from_values(want, got.at(0).shape(), DType::f64), 1e-6);
        EXPECT_TRUE(c.ok) << c.message;
        c = compare(got.at(1), Tensor::from_values(want2, cc.x, DType::f64), 1e-6);
        EXPECT_TRUE(c.ok) << c.message;
        if (cc.viewed) {
          std::vector<double> want3;
          for (double v : xv) want3.push_back(v * v);
          c = compare(got.at(2), Tensor::from_values(want3, cc.x, DType::f64), 1e-6);
          EXPECT_TRUE(c.ok) << c.message;
        }
      }
    }
  }
}

}  // namespace
}  // namespace porta::test
