// Unread optional outputs (runtime/graph_fusion.hpp, drop_unread_outputs) and the views they
// allow: a Dropout whose mask nobody reads, and an Identity, run as views of their input (no
// kernel, no copy) and still give the float64 reference; a Dropout whose mask is a graph output
// or read by a node keeps its kernel and its mask; sessions with PORTA_FUSE=0 compute every
// output (run_against_reference checks both).
#include <string>
#include <vector>

#include "runtime/graph_fusion.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

bool is_view(const NodePlan* p) { return p && p->reason.find("views its input") != std::string::npos; }

// x -> Dropout(ratio, training_mode) -> [d, mask] -> Relu -> y
ReferenceGraph dropout_graph(double ratio, bool training, bool mask_out, bool mask_read) {
  ReferenceGraph g;
  g.input("x", random_f32({3, 5, 7}));
  g.initializer("ratio", Tensor::from_values({ratio}, {}, DType::f32));
  g.constant("training", Tensor::from_values({training ? 1.0 : 0.0}, {}, DType::boolean));
  g.node("Dropout", {"x", "ratio", "training"}, std::vector<std::string>{"d", "mask"});
  g.node("Relu", {"d"}, "y");
  g.output("y");
  if (mask_read) {
    g.node("Cast", {"mask"}, "mask_f", {{"to", int64_t{1}}});
    g.node("Mul", {"y", "mask_f"}, "masked");
    g.output("masked");
  }
  if (mask_out) g.output("mask");
  return g;
}

TEST(UnreadOutputs, DropoutWithUnreadMaskIsAView) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  // Inference mode, and training mode with ratio 0 (torchvision's swin_t exports that).
  for (bool training : {false, true}) {
    ReferenceGraph g = dropout_graph(training ? 0.0 : 0.3, training, false, false);
    ReferenceRun r = run_against_reference(g, {"y"});
    EXPECT_TRUE(is_view(find_plan_of_op(r.plan, "Dropout"))) << "training " << training;

    auto graph = g.model().graph_ptr();
    auto dropped = detail::drop_unread_outputs(graph, true);
    ASSERT_NE(dropped, graph);
    for (const Node& n : dropped->nodes)
      if (n.op->name == "Dropout") EXPECT_EQ(n.outputs.at(1), -1);
    EXPECT_EQ(detail::drop_unread_outputs(graph, false), graph);  // sessions keeping every value
    FuseSetting off("0");
    EXPECT_EQ(detail::drop_unread_outputs(graph, true), graph);
  }
}

TEST(UnreadOutputs, ReadMasksAreComputed) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  {
    ReferenceGraph g = dropout_graph(0.5, false, true, false);  // mask is a graph output
    ReferenceRun r = run_against_reference(g, {"y", "mask"});
    EXPECT_FALSE(is_view(find_plan_of_op(r.plan, "Dropout")));
    auto graph = g.model().graph_ptr();
    EXPECT_EQ(detail::drop_unread_outputs(graph, true), graph);
  }
  {
    ReferenceGraph g = dropout_graph(0.5, false, false, true);  // mask read by a node
    ReferenceRun r = run_against_reference(g, {"y", "masked"});
    EXPECT_FALSE(is_view(find_plan_of_op(r.plan, "Dropout")));
    auto graph = g.model().graph_ptr();
    EXPECT_EQ(detail::drop_unread_outputs(graph, true), graph);
  }
}

TEST(UnreadOutputs, IdentityIsAView) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  {
    ReferenceGraph g;  // inside the graph: x + Identity(x)
    g.input("x", random_f32({4, 6}));
    g.node("Identity", {"x"}, "i");
    g.node("Add", {"x", "i"}, "y");
    g.output("y");
    ReferenceRun r = run_against_reference(g, {"y"});
    EXPECT_TRUE(is_view(find_plan_of_op(r.plan, "Identity")));
  }
  {
    ReferenceGraph g;  // a graph input straight to a graph output, and an intermediate one
    g.input("x", random_f32({2, 3}));
    g.node("Identity", {"x"}, "y");
    g.node("Neg", {"x"}, "n");
    g.node("Identity", {"n"}, "z");
    g.output("y");
    g.output("z");
    run_against_reference(g, {"y", "z"});
  }
}

}  // namespace
}  // namespace porta::test
