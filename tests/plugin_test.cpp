// Run-time kernel plugins: a good plugin adds an op and a kernel that the dispatcher, sessions
// and the CLI see with the plugin's name; plugins built for another ABI, redefining an op, or
// registering a kernel that disagrees with its op are refused with a message, leave nothing
// registered, and porta keeps running.
#include <onnx/onnx_pb.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "porta/plugin.hpp"
#include "porta/porta.h"
#include "tests/test_paths.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

std::string plugin(const std::string& name) {
  return std::string(PORTA_TEST_PLUGIN_DIR) + "/porta_test_plugin_" + name + ".so";
}

// Runs `f`, which must throw a porta::Error whose message contains every string in `mentions`.
template <class F>
void expect_refused(F&& f, const std::vector<std::string>& mentions) {
  try {
    f();
    ADD_FAILURE() << "expected the plugin to be refused";
  } catch (const Error& e) {
    for (auto& m : mentions)
      EXPECT_NE(std::string(e.what()).find(m), std::string::npos) << "missing '" << m << "' in: " << e.what();
  }
}


// Y = TestNegate(X) in domain com.porta.test, X f32 [2, 5].
std::string negate_model_file() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(17);
  o = m.add_opset_import();
  o->set_domain("com.porta.test");
  o->set_version(1);
  auto* g = m.mutable_graph();
  g->set_name("negate");
  auto* n = g->add_node();
  n->set_op_type("TestNegate");
  n->set_domain("com.porta.test");
  n->set_name("negate0");
  n->add_input("X");
  n->add_output("Y");
  for (auto [name, list] : {std::pair{"X", g->mutable_input()}, std::pair{"Y", g->mutable_output()}}) {
    auto* v = list->Add();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_value(2);
    tt->mutable_shape()->add_dim()->set_dim_value(5);
  }
  std::string path = std::string(PORTA_BINARY_DIR) + "/plugin_test_negate.onnx";
  std::ofstream f(path, std::ios::binary);
  m.SerializeToOstream(&f);
  return path;
}

TEST(Plugin, GoodPluginAddsOpAndKernelUnderItsName) {
  EXPECT_EQ(load_plugin(plugin("good")), "test_good");
  EXPECT_EQ(load_plugin(plugin("good")), "test_good");  // a second load is a no-op
  const OpSchema* op = find_op("com.porta.test", "TestNegate");
  ASSERT_NE(op, nullptr);
  auto kernels = kernels_for("TestNegate");
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0]->source, "test_good");
  EXPECT_EQ(kernels[0]->backend, DeviceType::cpu);
  bool listed = false;
  for (auto& p : loaded_plugins())
    if (p.name == "test_good") listed = p.ops == std::vector<std::string>{"com.porta.test::TestNegate"};
  EXPECT_TRUE(listed);

  // The plugin's kernel against its own float64 reference, fresh random inputs, odd and empty.
  for (Shape shape : {Shape{3, 7}, Shape{1}, Shape{0, 4}, Shape{}}) {
    Tensor x = make_input(InputSpec{shape}, DType::f32);
    Tensor y = call_op("TestNegate", {x}).at(0);
    Tensor ref = reference_op("TestNegate", {x}).at(0);
    Comparison c = compare(y, ref, 0);
    EXPECT_TRUE(c.ok) << shape_str(shape) << ": " << c.message;
  }
  EXPECT_NE(explain("TestNegate", Device::cpu(), DType::f32).find("from test_good"), std::string::npos);
  // Its inference errors come back as porta errors with its message.
  expect_refused([] { call_op("TestNegate", {Tensor::zeros({2}, DType::f64)}); }, {"[TestNegate] X should be f32"});
}

TEST(Plugin, GoodPluginRunsInAModelOnEveryDevice) {
  load_plugin(plugin("good"));
  Model model = Model::load(negate_model_file());
  std::vector<float> xs = {1, -2, 3, -4, 5, 0.5f, -0.25f, 8, 9, -10};
  Tensor x = Tensor::from_host(xs.data(), {2, 5}, DType::f32);
  for (Device d : test_devices()) {
    if (!device_unusable(d).empty()) continue;
    SessionOptions o;
    o.device = d;
    Session s(model, o);
    std::vector<double> y = s.run({{"X", x}}).at(0).to_doubles();
    for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(y[i], -xs[i]) << d.str();
  }
}

TEST(Plugin, OtherAbiVersionIsRefusedNamingBoth) {
  expect_refused([] { load_plugin(plugin("abi99")); },
                 {"test_abi99", "built for porta ABI version 99", "implements ABI version 4",
                  "loads plugins of versions 3 to 4"});
  for (auto& p : loaded_plugins()) EXPECT_NE(p.name, "test_abi99");
  porta_status s = porta_load_plugin(plugin("abi99").c_str());
  EXPECT_EQ(s, PORTA_ERROR_ABI_MISMATCH);
  EXPECT_NE(std::string(porta_last_error()).find("version 99"), std::string::npos);
}

// ABI version 4 only appended to porta_plugin_api: a plugin built for version 3 refuses the
// version-4 table (its porta_plugin_begin asks for 3) and porta asks it again with version 3.
TEST(Plugin, PluginOfTheOlderAbiVersion3StillLoads) {
  EXPECT_EQ(load_plugin(plugin("abi3")), "test_abi3");
  Tensor x = Tensor::from_values({1.5, -2, 0}, {3}, DType::f32);
  EXPECT_EQ(call_op("com.porta.test::TestNegateV3", {x}).at(0).to_doubles(), (std::vector<double>{-1.5, 2, 0}));
  EXPECT_NE(explain("com.porta.test::TestNegateV3", Device::cpu(), DType::f32).find("from test_abi3"), std::string::npos);
}

TEST(Plugin, RedefiningAnOpIsRefusedAndNothingStays) {
  expect_refused([] { load_plugin(plugin("duplicate")); }, {"test_duplicate", "op 'Relu' already exists"});
  EXPECT_EQ(find_op("TestDupHelper"), nullptr);  // registered before the refusal, rolled back
  for (const KernelDef* k : kernels_for("Relu")) EXPECT_NE(k->source, "test_duplicate");
  // porta keeps working.
  Tensor y = call_op("Relu", {Tensor::from_values({-1, 2}, {2}, DType::f32)}).at(0);
  EXPECT_EQ(y.to_doubles(), (std::vector<double>{0, 2}));
}

TEST(Plugin, KernelDisagreeingWithSchemaIsRefused) {
  expect_refused([] { load_plugin(plugin("badkernel")); },
                 {"test_badkernel", "disagrees with the schema of 'TestBad'", "takes 2 inputs"});
  EXPECT_EQ(find_op("TestBad"), nullptr);
}

TEST(Plugin, NotAPluginIsRefused) {
  expect_refused([] { load_plugin("/no/such/plugin.so"); }, {"no such file"});
  expect_refused([] { load_plugin(std::string(PORTA_SOURCE_DIR) + "/models/mlp/model.onnx"); },
                 {"cannot be loaded"});
}

TEST(Plugin, PluginPathFeedsTheCliWhichSaysWhereKernelsCameFrom) {
  std::string env = "PORTA_PLUGIN_PATH=" + std::string(PORTA_TEST_PLUGIN_DIR);
  CliResult r = porta_cli("devices --kernels", env);
  EXPECT_EQ(r.status, 0) << r.output;  // refused plugins do not stop porta
  EXPECT_NE(r.output.find("TestNegate f32 (test_good)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("built for porta ABI version 99"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("op 'Relu' already exists"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  Relu "), std::string::npos) << r.output;

  r = porta_cli("ops " + negate_model_file(), "PORTA_PLUGIN_PATH=" + plugin("good"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("TestNegate  native  cpu kernel from test_good for f32"), std::string::npos) << r.output;

  r = porta_cli("ops " + negate_model_file());  // without the plugin: a clear error
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("TestNegate"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace porta::test
