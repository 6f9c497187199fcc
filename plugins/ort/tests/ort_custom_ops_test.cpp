// plugins/ort tests — ONNX Runtime 1.30 (its own C++ API, linked against onnxruntime-node's
// libonnxruntime.so.1) loads libporta_ort.so with RegisterCustomOpsLibrary and runs models with
// porta's ai.porta ops, and a plugin's op (PORTA_PLUGIN_PATH), in a plain CPU session. Outputs
// must equal porta's own Session / eager call on the same inputs.
#include "ort_test_util.hpp"

namespace {

using namespace porta_ort_test;

Ort::SessionOptions custom_op_options() {
  Ort::SessionOptions so;
  so.SetIntraOpNumThreads(1);
  so.RegisterCustomOpsLibrary(PORTA_ORT_PLUGIN);
  return so;
}

/// One example model (models/<name>) through ORT + the custom-op library and through porta's
/// Session on cpu: every output matches.
void check_model(const std::string& name) {
  std::string dir = std::string(PORTA_SOURCE_DIR) + "/models/" + name;
  std::vector<std::pair<std::string, Tensor>> inputs;
  std::map<std::string, Tensor> porta_inputs;
  for (auto& [n, file] : read_list(dir + "/inputs.txt")) {
    inputs.push_back({n, porta::read_npy(dir + "/" + file)});
    porta_inputs[n] = inputs.back().second;
  }
  Ort::Session session(env(), (dir + "/model.onnx").c_str(), custom_op_options());
  std::vector<Tensor> ort = ort_run(session, inputs);

  porta::Session ps(porta::Model::load(dir + "/model.onnx"));
  std::vector<Tensor> ref = ps.run(porta_inputs);
  ASSERT_EQ(ort.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_LT(rel_diff(ort[i], ref[i]), 1e-4) << name << " output " << i;
}

TEST(OrtCustomOps, DecoderModelMatchesPortaSession) { check_model("decoder"); }
TEST(OrtCustomOps, ImageCustomModelMatchesPortaSession) { check_model("image_custom"); }

TEST(OrtCustomOps, PortaOpsMatchEagerCallsAtSeveralBatchSizes) {
  std::mt19937 rng(17);
  struct Case {
    const char* op;
    porta::Attributes attrs;
    std::function<void(onnx::NodeProto*)> set;
  };
  std::vector<Case> cases = {
      {"RmsNorm", porta::Attributes{{"epsilon", 1e-3}},
       [](onnx::NodeProto* n) {
         auto* a = n->add_attribute();
         a->set_name("epsilon");
         a->set_type(onnx::AttributeProto::FLOAT);
         a->set_f(1e-3f);
       }},
      {"BiasGelu", porta::Attributes{{"approximate", std::string("tanh")}},
       [](onnx::NodeProto* n) {
         auto* a = n->add_attribute();
         a->set_name("approximate");
         a->set_type(onnx::AttributeProto::STRING);
         a->set_s("tanh");
       }},
  };
  for (const Case& c : cases) {
    Ort::Session session = session_from_bytes(one_node_model("ai.porta", c.op, 2, {24}, c.set), custom_op_options());
    for (int64_t batch : {1, 5}) {
      Tensor x = random_tensor({batch, 24}, rng), p = random_tensor({24}, rng, 0.5f, 1.5f);
      std::vector<Tensor> got = ort_run(session, {{"X", x}, {"P", p}});
      Tensor want = porta::call_op(c.op, {x, p}, c.attrs).at(0);
      ASSERT_EQ(got.size(), 1u);
      EXPECT_LT(rel_diff(got[0], want), 1e-6) << c.op << " batch " << batch;
    }
  }
}

TEST(OrtCustomOps, PluginOpsFromPortaPluginPath) {
  if (porta::loaded_plugins().empty()) GTEST_SKIP() << "PORTA_PLUGIN_PATH names no plugin (ctest sets it)";
  std::mt19937 rng(3);
  Ort::Session session = session_from_bytes(one_node_model("com.porta.test", "TestNegate", 1, {6}), custom_op_options());
  Tensor x = random_tensor({3, 6}, rng);
  std::vector<Tensor> got = ort_run(session, {{"X", x}});
  Tensor want = porta::call_op("com.porta.test::TestNegate", {x}).at(0);
  EXPECT_LT(rel_diff(got.at(0), want), 1e-7);
  EXPECT_NE(got.at(0).data<float>()[0], x.data<float>()[0]);
}

TEST(OrtCustomOps, PortaErrorsReachTheOrtCaller) {
  // Scale of 24 against X's last axis of 24 in the model, but the run gives X with 7 columns:
  // porta's ShapeError (what was expected, what was given) is what ORT reports.
  std::string bytes = one_node_model("ai.porta", "RmsNorm", 2, {24});
  onnx::ModelProto m;
  m.ParseFromString(bytes);
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_param("cols");
  bytes = m.SerializeAsString();
  Ort::Session session = session_from_bytes(bytes, custom_op_options());
  std::mt19937 rng(5);
  Tensor x = random_tensor({2, 7}, rng), p = random_tensor({24}, rng);
  try {
    ort_run(session, {{"X", x}, {"P", p}});
    FAIL() << "a 2x7 X with a 24-long scale ran";
  } catch (const Ort::Exception& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("ShapeError: [RmsNorm]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("24"), std::string::npos) << msg;
  }
}

TEST(OrtCustomOps, WithoutTheLibraryOrtRefusesPortaOps) {
  std::string dir = std::string(PORTA_SOURCE_DIR) + "/models/decoder/model.onnx";
  Ort::SessionOptions plain;
  EXPECT_THROW(Ort::Session(env(), dir.c_str(), plain), Ort::Exception);
}

}  // namespace
