// Compute precision through `porta check` and the CLI: per-node error against the float64
// reference and the first jump, the format column, and bad option values.
#include <string>
#include <vector>

#include "porta/check.hpp"
#include "tests/precision_util.hpp"
#include "tests/test_paths.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

// porta::check_model with a precision: each node's format, and the first node whose error
// jumps (the first product: its inputs are exact) against nodes that inherit theirs.
TEST(Precision, CheckReportsPerNodeErrorAndTheJump) {
  SKIP_WITHOUT_CPU_BF16();
  ReferenceGraph g = policy_graph(6, 64);
  Model m = g.model();
  CheckOptions o;
  o.precision = Precision::bf16;
  o.tolerance = 1e-4;
  std::vector<NodeError> t = check_model(m, g.inputs(), o);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].op, "MatMul");
  EXPECT_EQ(t[0].precision, DType::bf16);
  EXPECT_TRUE(t[0].over);
  EXPECT_TRUE(t[0].jump) << t[0].rel;
  EXPECT_GT(t[0].rel, unit_roundoff(DType::bf16) / 16);
  EXPECT_EQ(t[1].op, "Softmax");
  EXPECT_EQ(t[1].precision, DType::f32);
  EXPECT_FALSE(t[3].jump) << "LayerNormalization adds no error of its own: " << t[3].rel;
  o.tolerance = 3e-2;
  for (const NodeError& e : check_model(m, g.inputs(), o)) {
    EXPECT_FALSE(e.over) << e.node << " " << e.rel;
    EXPECT_FALSE(e.jump) << e.node;
  }
  o.precision = Precision::f32;
  o.tolerance = 1e-4;
  for (const NodeError& e : check_model(m, g.inputs(), o)) {
    EXPECT_EQ(e.precision, DType::f32) << e.node;
    EXPECT_FALSE(e.over) << e.node << " " << e.rel;
    EXPECT_FALSE(e.jump) << e.node;
  }
}

TEST(Precision, CheckCli) {
  const std::string cnn = std::string(PORTA_SOURCE_DIR) + "/models/cnn/model.onnx";
  CliResult r = porta_cli("check " + cnn + " --precision bf16");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("precision bf16"), std::string::npos) << r.output;
  // A Conv's format column, and the first Conv (fused with the BatchNormalization after it)
  // is where the error jumps; without bf16 on the cpu every node computes in f32: no jump.
  EXPECT_NE(r.output.find(cpu_computes_bf16() ? " bf16\n" : " f32\n"), std::string::npos) << r.output;
  if (cpu_computes_bf16()) {
    r = porta_cli("check " + cnn + " --precision bf16 --tolerance 1e-5");
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find("first jump: "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("(BatchNormalization with Conv fused into it, bf16) on cpu"), std::string::npos) << r.output;
  }
  r = porta_cli("check " + cnn + " --precision int4");
  EXPECT_EQ(r.status, 2) << r.output;
}

TEST(Precision, BadValuesAreRefused) {
  std::string msg = error_message<InvalidArgument>([] { parse_precision("fp8"); });
  EXPECT_NE(msg.find("f32, bf16, f16, auto"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'fp8'"), std::string::npos) << msg;
  for (Precision p : {Precision::f32, Precision::bf16, Precision::f16, Precision::automatic})
    EXPECT_EQ(parse_precision(precision_name(p)), p);
  ReferenceGraph g = policy_graph(2, 8);
  msg = error_message<InvalidArgument>([&] { Session(g.model(), with_precision(static_cast<Precision>(9))); });
  EXPECT_NE(msg.find("unknown precision"), std::string::npos) << msg;
}

TEST(Precision, CliOptions) {
  const std::string transformer = std::string(PORTA_SOURCE_DIR) + "/models/transformer/model.onnx";
  CliResult bad = porta_cli("run " + transformer + " --precision fp8");
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_NE(bad.output.find("[precision] should be one of f32, bf16, f16, auto; got 'fp8'"), std::string::npos)
      << bad.output;
  CliResult ops = porta_cli("ops " + transformer + " --precision bf16");
  EXPECT_EQ(ops.status, 0) << ops.output;
  if (cpu_computes_bf16()) {
    EXPECT_NE(ops.output.find("  bf16  "), std::string::npos) << ops.output;
    EXPECT_NE(ops.output.find("[precision: bf16 inside its kernel with f32 accumulation, f32 in and out (policy: lower)"),
              std::string::npos)
        << ops.output;
  } else {
    EXPECT_EQ(ops.output.find("  bf16  "), std::string::npos) << ops.output;
    EXPECT_NE(ops.output.find("[precision: f32: cpu computes bf16 products in f32: it has no bf16 arithmetic"),
              std::string::npos)
        << ops.output;
  }
  // A CPU without oneDNN's bf16 kernels (no AVX-512: oneDNN told to stop at AVX2) computes the
  // products in f32 instead of failing, and says so.
  const std::string cnn = std::string(PORTA_SOURCE_DIR) + "/models/cnn/model.onnx";
  CliResult avx2 = porta_cli("run " + cnn + " --precision bf16 --repeat 1", "ONEDNN_MAX_CPU_ISA=AVX2 ");
  EXPECT_EQ(avx2.status, 0) << avx2.output;
  EXPECT_NE(avx2.output.find("median_us="), std::string::npos) << avx2.output;
  avx2 = porta_cli("run " + transformer + " --precision bf16 --repeat 1", "ONEDNN_MAX_CPU_ISA=AVX2 ");
  EXPECT_EQ(avx2.status, 0) << avx2.output;
  EXPECT_NE(avx2.output.find("note: cpu computes bf16 products in f32"), std::string::npos) << avx2.output;
  CliResult run = porta_cli("run " + transformer + " --precision bf16 --repeat 1");
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find(": f32 "), std::string::npos) << run.output;  // outputs keep their dtype
}

}  // namespace
}  // namespace porta::test
