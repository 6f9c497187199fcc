// Slice in place on vulkan:0 (runtime/session_compile.cpp, slice_in_place): a Slice with
// constant arguments whose output is one contiguous, aligned block of plan-owned memory is
// not run; its readers read the input's memory. Against the float64 reference of each graph
// as written, on fresh random data: channel ranges of a batch-1 tensor (both halves, each read
// by another node, the input read afterwards too), negative starts and ends past the axis, a
// Slice behind a Reshape view, one of a block of a Concat written in place; and the Slices
// that still run: a batch of 2, steps of 2, a narrowed inner axis, a graph input, a graph
// output, an offset off the alignment.
#include <gtest/gtest.h>

#include "porta/session.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"
#include "tests/vulkan_shared_test.hpp"

namespace porta::test {
namespace {

using Ints = std::vector<int64_t>;

Tensor ints(const Ints& v) {
  std::vector<double> d(v.begin(), v.end());
  return Tensor::from_values(d, {static_cast<int64_t>(v.size())}, DType::i64);
}

// Slice `x` into `out` with constant arguments named after `out`.
void slice(ReferenceGraph& g, const std::string& x, const std::string& out, const Ints& starts, const Ints& ends,
           const Ints& axes, const Ints& steps = {}) {
  g.initializer(out + "_s", ints(starts));
  g.initializer(out + "_e", ints(ends));
  g.initializer(out + "_a", ints(axes));
  std::vector<std::string> in = {x, out + "_s", out + "_e", out + "_a"};
  if (!steps.empty()) {
    g.initializer(out + "_st", ints(steps));
    in.push_back(out + "_st");
  }
  g.node("Slice", in, out);
}

// Runs `g` on vulkan:0 against its references; returns each Slice's "not run" state in order.
std::vector<bool> run(const ReferenceGraph& g, const std::vector<std::string>& outputs) {
  SessionOptions o;
  o.device = Device::parse("vulkan:0");
  Session s(g.model(), o);
  std::vector<Tensor> got = s.run(g.inputs());
  for (size_t i = 0; i < outputs.size(); ++i) {
    Comparison c = compare(got.at(i), g.reference(outputs[i]), 1e-5);
    EXPECT_TRUE(c.ok) << outputs[i] << ": " << c.message;
  }
  std::vector<bool> viewed;
  const std::vector<NodePlan> plan = s.plan(g.inputs());
  for (int n = 0; const NodePlan* p = find_plan_of_op(plan, "Slice", n); ++n)
    viewed.push_back(p->reason.find("readers read its input's memory") != std::string::npos);
  return viewed;
}

TEST(VulkanSliceInPlace, ContiguousBlocksAreReadInPlace) {
  REQUIRE_VULKAN();
  SCOPED_TRACE(str("seed ", seed()));
  ReferenceGraph g;
  g.input("x", random_f32({1, 8, 6, 6}));
  g.initializer("w", random_f32({16, 8, 1, 1}));
  g.node("Conv", {"x", "w"}, "y");
  slice(g, "y", "lo", {0}, {8}, {1});
  slice(g, "y", "hi", {-8}, {1 << 30}, {1});  // negative start, end past the axis
  g.node("Relu", {"lo"}, "a");
  g.node("Sigmoid", {"hi"}, "b");
  g.node("Neg", {"y"}, "c");  // the input is read after its blocks too
  g.initializer("shape", ints({1, 16, 36}));
  g.node("Reshape", {"y", "shape"}, "flat");
  slice(g, "flat", "mid", {4}, {12}, {1});  // behind a Reshape view
  g.node("Abs", {"mid"}, "d");
  for (const char* o : {"a", "b", "c", "d"}) g.output(o);
  EXPECT_EQ(run(g, {"a", "b", "c", "d"}), (std::vector<bool>{true, true, true}));
}

TEST(VulkanSliceInPlace, BlockOfAConcatWrittenInPlace) {
  REQUIRE_VULKAN();
  SCOPED_TRACE(str("seed ", seed()));
  ReferenceGraph g;
  g.input("x", random_f32({1, 4, 4, 4}));
  g.initializer("w1", random_f32({8, 4, 1, 1}));
  g.initializer("w2", random_f32({8, 4, 3, 3}));
  g.node("Conv", {"x", "w1"}, "p");
  g.node("Conv", {"x", "w2"}, "q", {{"pads", Ints{1, 1, 1, 1}}});
  g.node("Concat", {"p", "q"}, "cat", {{"axis", int64_t{1}}});
  g.node("Relu", {"cat"}, "r");
  slice(g, "q", "qs", {4}, {6}, {1});  // inside the Concat's second block: 768 bytes in
  g.node("Sigmoid", {"qs"}, "s");
  g.output("r");
  g.output("s");
  EXPECT_EQ(run(g, {"r", "s"}), (std::vector<bool>{true}));
}

TEST(VulkanSliceInPlace, SlicesThatStillRun) {
  REQUIRE_VULKAN();
  SCOPED_TRACE(str("seed ", seed()));
  ReferenceGraph g;
  g.input("x", random_f32({2, 8, 4, 4}));
  g.input("x1", random_f32({1, 8, 4, 4}));
  g.node("Relu", {"x"}, "y2");
  g.node("Relu", {"x1"}, "y1");
  slice(g, "y2", "batch2", {0}, {4}, {1});              // a block per image
  slice(g, "y1", "step2", {0}, {8}, {1}, {2});           // every other channel
  slice(g, "y1", "inner", {1}, {3}, {3});                // a narrowed inner axis
  slice(g, "x1", "input", {0}, {4}, {1});                // the caller's memory
  slice(g, "y1", "output", {4}, {8}, {1});               // returned to the caller
  g.initializer("shape", ints({1, 128}));
  g.node("Reshape", {"y1", "shape"}, "flat");
  slice(g, "flat", "odd", {1}, {9}, {1});                // 4 bytes in: off the alignment
  const std::vector<std::string> outs = {"batch2", "step2", "inner", "input", "output", "odd"};
  for (const std::string& o : outs) {
    g.node("Neg", {o}, o + "_n");
    if (o != "output") g.output(o + "_n");
  }
  g.output("output");
  std::vector<std::string> refs;
  for (const std::string& o : outs)
    if (o != "output") refs.push_back(o + "_n");
  refs.push_back("output");
  EXPECT_EQ(run(g, refs), (std::vector<bool>(6, false)));
}

}  // namespace
}  // namespace porta::test
