// plugins/ort tests — libporta_ort.so as an ONNX Runtime 1.30 plugin execution provider: the
// devices it offers, the example models through ORT + the porta EP (cpu and vulkan:0) against
// ORT's own CPU EP, a model split between the porta EP and ORT's CPU EP around an op porta
// lacks (where each node ran is read from porta's and ORT's profiles), provider options, and
// porta's errors reaching the caller.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>

#include "ort_test_util.hpp"
#include "porta/backend.hpp"

namespace {

using namespace porta_ort_test;

/// The porta EP registered once with the test's Env; its devices, by porta device name.
std::map<std::string, Ort::ConstEpDevice> porta_devices() {
  static bool registered = [] {
    env().RegisterExecutionProviderLibrary("porta", PORTA_ORT_PLUGIN);
    return true;
  }();
  (void)registered;
  std::map<std::string, Ort::ConstEpDevice> out;
  for (Ort::ConstEpDevice d : env().GetEpDevices()) {
    if (std::string(d.EpName()) != "porta") continue;
    const char* name = d.EpMetadata().GetValue("porta.device");
    if (name) out.emplace(name, d);
  }
  return out;
}

/// Session options with the porta EP on `device` (the custom-op library too, for ai.porta).
Ort::SessionOptions porta_options(const std::string& device, std::map<std::string, std::string> options = {},
                                  bool custom_ops = false) {
  std::map<std::string, Ort::ConstEpDevice> devices = porta_devices();
  auto it = devices.find(device);
  if (it == devices.end()) throw std::runtime_error("test: the porta EP offers no " + device);
  Ort::SessionOptions so;
  so.SetIntraOpNumThreads(1);
  if (custom_ops) so.RegisterCustomOpsLibrary(PORTA_ORT_PLUGIN);
  std::unordered_map<std::string, std::string> opts(options.begin(), options.end());
  so.AppendExecutionProvider_V2(env(), {it->second}, opts);
  return so;
}

Ort::SessionOptions ort_cpu_options(bool custom_ops = false) {
  Ort::SessionOptions so;
  so.SetIntraOpNumThreads(1);
  if (custom_ops) so.RegisterCustomOpsLibrary(PORTA_ORT_PLUGIN);
  return so;
}

/// Devices to test on: cpu, and vulkan:0 when porta can use it here.
std::vector<std::string> test_devices() {
  std::vector<std::string> out{"cpu"};
  if (porta_devices().count("vulkan:0")) out.push_back("vulkan:0");
  return out;
}

/// (node name, provider) of every node ORT's profile recorded in `file`.
std::set<std::pair<std::string, std::string>> ort_profile_nodes(const std::string& file) {
  std::ifstream f(file);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  std::set<std::pair<std::string, std::string>> out;
  // Each node event names "<node>_kernel_time", then (in its args) the provider.
  std::regex name(R"re("name"\s*:\s*"([^"]+)_kernel_time")re"), provider(R"re("provider"\s*:\s*"([^"]+)")re");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), name); it != std::sregex_iterator(); ++it) {
    std::smatch p;
    auto from = text.cbegin() + (it->position(0) + it->length(0));
    if (std::regex_search(from, text.cend(), p, provider)) out.insert({(*it)[1], p[1]});
  }
  return out;
}

std::string temp_path(const std::string& stem) {
  return (std::filesystem::temp_directory_path() / (stem + "_" + std::to_string(::getpid()))).string();
}

// ---------------------------------------------------------------------------------------

TEST(OrtEp, OffersEveryAvailablePortaDeviceWithItsNameAndTheOthersReasons) {
  std::map<std::string, Ort::ConstEpDevice> offered = porta_devices();
  for (porta::Device d : porta::all_devices()) {
    std::string why;
    try {
      porta::backend_for(d);
    } catch (const porta::Error& e) {
      why = e.what();
    }
    if (why.empty()) {
      ASSERT_TRUE(offered.count(d.str())) << d.str() << " is available but not offered";
      Ort::ConstKeyValuePairs meta = offered.at(d.str()).EpMetadata();
      EXPECT_EQ(std::string(meta.GetValue("porta.name")), porta::backend_for(d).capabilities(d.index).name);
      EXPECT_EQ(std::string(meta.GetValue("porta.available")), "1");
    } else {
      EXPECT_FALSE(offered.count(d.str())) << d.str() << " is unavailable (" << why << ") but offered";
    }
  }
  ASSERT_TRUE(offered.count("cpu"));
  // CUDA and HIP, when porta cannot use them here, are listed with porta's own reason.
  std::string unavailable = offered.at("cpu").EpMetadata().GetValue("porta.unavailable");
  for (porta::DeviceType t : {porta::DeviceType::cuda, porta::DeviceType::hip}) {
    porta::Device d{t, 0};
    try {
      porta::backend_for(d);
    } catch (const porta::Error& e) {
      EXPECT_NE(unavailable.find(d.str() + ": " + e.what()), std::string::npos) << unavailable;
    }
  }
}

/// The model in folder `dir` (model.onnx, inputs.txt and its .npy files, as in models/)
/// through ORT + the porta EP on `device` and through ORT's CPU EP alone; with ORT's profile,
/// every node that ran must have run in the porta EP.
void check_model_dir(const std::string& dir, const std::string& device, bool custom_ops) {
  std::string path = dir + "/model.onnx";
  std::vector<std::pair<std::string, Tensor>> inputs;
  for (auto& [n, file] : read_list(dir + "/inputs.txt")) inputs.push_back({n, porta::read_npy(dir + "/" + file)});
  Ort::Session ref_session(env(), path.c_str(), ort_cpu_options(custom_ops));
  std::vector<Tensor> want = ort_run(ref_session, inputs);

  // The EP brings porta's custom-op domains itself: no RegisterCustomOpsLibrary here.
  Ort::SessionOptions so = porta_options(device);
  std::string prefix = temp_path("porta_ort_model");
  so.EnableProfiling(prefix.c_str());
  Ort::Session session(env(), path.c_str(), so);
  std::vector<Tensor> got = ort_run(session, inputs);
  Ort::AllocatorWithDefaultOptions alloc;
  std::string profile = session.EndProfilingAllocated(alloc).get();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_LE(rel_diff(got[i], want[i]), 1e-4) << dir << " on " << device << ", output " << i;
  auto nodes = ort_profile_nodes(profile);
  EXPECT_FALSE(nodes.empty()) << profile;
  for (auto& [node, provider] : nodes) EXPECT_EQ(provider, "porta") << dir << ": node " << node << " ran elsewhere";
  std::remove(profile.c_str());
}

void check_model_on(const std::string& name, const std::string& device) {
  check_model_dir(std::string(PORTA_SOURCE_DIR) + "/models/" + name, device,
                  name == "decoder" || name == "image_custom");
}

class OrtEpModels : public ::testing::TestWithParam<std::string> {};

TEST_P(OrtEpModels, MatchOrtCpuOnEveryDevice) {
  for (const std::string& device : test_devices()) {
    SCOPED_TRACE(device);
    check_model_on(GetParam(), device);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, OrtEpModels,
                         ::testing::Values("cnn", "mlp", "transformer", "lstm", "attention", "image", "decoder",
                                           "image_custom"));

// The real-model zoo (scripts/export_zoo.py's folders), when PORTA_ORT_ZOO_DIR names one: every
// member (or those PORTA_ORT_ZOO_MEMBERS lists, comma-separated) on the devices in
// PORTA_ORT_ZOO_DEVICES (default cpu). Not part of ctest: exporting the zoo takes minutes.
TEST(OrtEpZoo, MembersMatchOrtCpu) {
  const char* root = std::getenv("PORTA_ORT_ZOO_DIR");
  if (!root) GTEST_SKIP() << "PORTA_ORT_ZOO_DIR is not set";
  std::set<std::string> only;
  if (const char* m = std::getenv("PORTA_ORT_ZOO_MEMBERS")) {
    std::stringstream ss(m);
    for (std::string item; std::getline(ss, item, ',');) only.insert(item);
  }
  std::vector<std::string> devices{"cpu"};
  if (const char* d = std::getenv("PORTA_ORT_ZOO_DEVICES")) {
    devices.clear();
    std::stringstream ss(d);
    for (std::string item; std::getline(ss, item, ',');) devices.push_back(item);
  }
  std::vector<std::string> members;
  for (auto& e : std::filesystem::directory_iterator(root))
    if (std::filesystem::exists(e.path() / "model.onnx") && (only.empty() || only.count(e.path().filename().string())))
      members.push_back(e.path().string());
  std::sort(members.begin(), members.end());
  ASSERT_FALSE(members.empty()) << "no zoo member under " << root;
  for (const std::string& dir : members)
    for (const std::string& device : devices) {
      SCOPED_TRACE(dir + " on " + device);
      auto start = std::chrono::steady_clock::now();
      check_model_dir(dir, device, false);
      std::cout << "[zoo] " << std::filesystem::path(dir).filename().string() << " " << device << " "
                << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s\n";
    }
}

TEST(OrtEp, WithTheCustomOpLibraryRegisteredToo) {
  // A user may load libporta_ort.so both ways in one session: porta's domains come twice.
  std::string path = std::string(PORTA_SOURCE_DIR) + "/models/decoder/model.onnx";
  std::vector<std::pair<std::string, Tensor>> inputs = model_inputs("decoder");
  Ort::Session ref_session(env(), path.c_str(), ort_cpu_options(true));
  std::vector<Tensor> want = ort_run(ref_session, inputs);
  Ort::Session session(env(), path.c_str(), porta_options("cpu", {}, true));
  std::vector<Tensor> got = ort_run(session, inputs);
  EXPECT_LE(rel_diff(got.at(0), want.at(0)), 1e-4);
}

TEST(OrtEp, PluginOpsPortaLeavesToOrtRunAsCustomOps) {
  // com.porta.test::TestNegate (PORTA_PLUGIN_PATH) has only a cpu kernel: on vulkan:0 with
  // strict=1 the EP leaves it to ORT, which runs it through the custom op the EP registered.
  if (!porta::find_op("com.porta.test::TestNegate")) GTEST_SKIP() << "PORTA_PLUGIN_PATH names no test plugin";
  if (!porta_devices().count("vulkan:0")) GTEST_SKIP() << "porta cannot use vulkan:0 here";
  porta::test::OnnxGraph g(17, {4, 5}, "com.porta.test");
  g.input("X");
  g.node("TestNegate", {"X"}, "N", "com.porta.test");
  g.node("Relu", {"N"}, "Y");
  g.output("Y");
  std::string bytes = g.m.SerializeAsString();
  std::mt19937 rng(21);
  Tensor x = random_tensor({4, 5}, rng);
  Tensor want = porta::call_op("Relu", {porta::call_op("com.porta.test::TestNegate", {x}).at(0)}).at(0);
  Ort::SessionOptions so = porta_options("vulkan:0", {{"strict", "1"}});
  so.EnableProfiling(temp_path("porta_ort_plugin_op").c_str());
  Ort::Session session = session_from_bytes(bytes, so);
  std::vector<Tensor> got = ort_run(session, {{"X", x}});
  EXPECT_EQ(rel_diff(got.at(0), want), 0.0);
  Ort::AllocatorWithDefaultOptions alloc;
  std::string profile = session.EndProfilingAllocated(alloc).get();
  std::map<std::string, std::string> where;
  for (auto& [node, provider] : ort_profile_nodes(profile))
    if (node.rfind("Memcpy", 0) != 0) where[node] = provider;
  std::remove(profile.c_str());
  EXPECT_EQ(where["TestNegate_0"], "CPUExecutionProvider");
  EXPECT_EQ(where.size(), 2u);
  int porta_nodes = 0;
  for (auto& [node, provider] : where) porta_nodes += provider == "porta";
  EXPECT_EQ(porta_nodes, 1);
}

/// Y = Relu(Add(Shrink(Tanh(X)), X)): porta has every op but Shrink.
std::string split_model() {
  porta::test::OnnxGraph g(17, {3, 5});
  g.input("X");
  g.node("Tanh", {"X"}, "T");
  g.node("Shrink", {"T"}, "S");
  g.node("Add", {"S", "X"}, "A");
  g.node("Relu", {"A"}, "Y");
  g.output("Y");
  return g.m.SerializeAsString();
}

TEST(OrtEp, ModelWithAnOpPortaLacksSplitsBetweenPortaAndOrtCpu) {
  ASSERT_EQ(porta::find_op("Shrink"), nullptr) << "the test needs an op porta lacks";
  std::mt19937 rng(11);
  Tensor x = random_tensor({3, 5}, rng);
  std::string bytes = split_model();
  Ort::Session ref_session = session_from_bytes(bytes, ort_cpu_options());
  std::vector<Tensor> want = ort_run(ref_session, {{"X", x}});
  for (const std::string& device : test_devices()) {
    SCOPED_TRACE(device);
    std::string porta_profile = temp_path("porta_ort_split_nodes.txt");
    std::remove(porta_profile.c_str());
    Ort::SessionOptions so = porta_options(device, {{"profiling", porta_profile}});
    so.EnableProfiling(temp_path("porta_ort_split").c_str());
    Ort::Session session = session_from_bytes(bytes, so);
    std::vector<Tensor> got = ort_run(session, {{"X", x}});
    EXPECT_LE(rel_diff(got.at(0), want.at(0)), 1e-5);
    Ort::AllocatorWithDefaultOptions alloc;
    std::string profile = session.EndProfilingAllocated(alloc).get();
    // ORT: Shrink on its CPU EP, the rest in two porta subgraphs (before and after Shrink). On a
    // device other than cpu, porta's values live in device memory, so ORT copies Tanh's output
    // to the host for Shrink and Shrink's back (its Memcpy nodes, run by porta's data transfer).
    std::map<std::string, std::string> where;
    int memcpy_nodes = 0;
    for (auto& [node, provider] : ort_profile_nodes(profile)) {
      if (node.rfind("Memcpy", 0) == 0)
        ++memcpy_nodes;
      else
        where[node] = provider;
    }
    std::remove(profile.c_str());
    EXPECT_EQ(where["Shrink_1"], "CPUExecutionProvider");
    int porta_nodes = 0;
    for (auto& [node, provider] : where) porta_nodes += provider == "porta";
    EXPECT_EQ(porta_nodes, 2) << "expected two porta subgraphs";
    EXPECT_EQ(where.size(), 3u) << [&] { std::string s; for (auto& [n, p] : where) s += n + "=" + p + " "; return s; }();
    if (device == "cpu")
      EXPECT_EQ(memcpy_nodes, 0);
    else
      EXPECT_GT(memcpy_nodes, 0) << "no copies between " << device << " memory and the host";
    // porta: its profile names the original nodes it ran, on the device asked for.
    std::ifstream f(porta_profile);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string text = ss.str();
    for (const char* node : {"Tanh_0", "Relu_3"})
      EXPECT_NE(text.find(std::string("node=") + node + " "), std::string::npos) << node << " not run by porta:\n" << text;
    // Add_2 runs as itself, or (where the device runs chains of elementwise ops) inside the
    // ElementwiseChain that takes Relu_3's name.
    EXPECT_TRUE(text.find("node=Add_2 ") != std::string::npos ||
                text.find("node=Relu_3 op=ElementwiseChain ") != std::string::npos)
        << "Add_2 not run by porta:\n" << text;
    EXPECT_EQ(text.find("Shrink"), std::string::npos) << text;
    EXPECT_NE(text.find("device=" + device), std::string::npos) << text;
    std::remove(porta_profile.c_str());
  }
}

TEST(OrtEp, StrictLeavesWhatPortaWouldRunThroughItsCpuFallbackToOrt) {
  // porta's vulkan backend has no NonZero kernel (the resolver says: CPU fallback).
  if (!porta_devices().count("vulkan:0")) GTEST_SKIP() << "porta cannot use vulkan:0 here";
  const porta::OpSchema* nonzero = porta::find_op("NonZero");
  ASSERT_EQ(porta::resolve(*nonzero, porta::Device::parse("vulkan:0"), porta::DType::f32).path, porta::Path::fallback)
      << "the test needs an op porta runs on vulkan through its CPU fallback";
  porta::test::OnnxGraph g(17, {4, 6});
  g.input("X");
  g.node("Relu", {"X"}, "Y");
  g.node("NonZero", {"Y"}, "N");
  onnx::NodeProto* cast = g.node("Cast", {"N"}, "Z");
  auto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  g.output("Y");
  onnx::ValueInfoProto* z = g.g->add_output();
  z->set_name("Z");
  z->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  std::string bytes = g.m.SerializeAsString();
  std::mt19937 rng(4);
  Tensor x = random_tensor({4, 6}, rng);
  Ort::Session ref_session = session_from_bytes(bytes, ort_cpu_options());
  std::vector<Tensor> want = ort_run(ref_session, {{"X", x}});
  for (const char* strict : {"0", "1"}) {
    SCOPED_TRACE(std::string("strict=") + strict);
    Ort::SessionOptions so = porta_options("vulkan:0", {{"strict", strict}});
    so.EnableProfiling(temp_path("porta_ort_strict").c_str());
    Ort::Session session = session_from_bytes(bytes, so);
    std::vector<Tensor> got = ort_run(session, {{"X", x}});
    ASSERT_EQ(got.size(), 2u);
    for (size_t i = 0; i < 2; ++i) EXPECT_EQ(rel_diff(got[i], want[i]), 0.0) << "output " << i;
    Ort::AllocatorWithDefaultOptions alloc;
    std::string profile = session.EndProfilingAllocated(alloc).get();
    std::map<std::string, std::string> where;
    for (auto& [node, provider] : ort_profile_nodes(profile)) where[node] = provider;
    std::remove(profile.c_str());
    if (std::string(strict) == "1") {
      EXPECT_EQ(where["NonZero_1"], "CPUExecutionProvider");
    } else {
      EXPECT_FALSE(where.count("NonZero_1")) << "NonZero should be inside porta's subgraph";
      EXPECT_EQ(where.size(), 1u);
    }
  }
}

TEST(OrtEp, DeviceMemoryAndDataTransferBetweenOrtCpuMemoryAndTheDevice) {
  std::map<std::string, Ort::ConstEpDevice> devices = porta_devices();
  // cpu: ORT's own CPU memory, no porta allocator.
  EXPECT_EQ(static_cast<const OrtMemoryInfo*>(devices.at("cpu").GetMemoryInfo(OrtDeviceMemoryType_DEFAULT)), nullptr);
  if (!devices.count("vulkan:0")) GTEST_SKIP() << "porta cannot use vulkan:0 here";
  Ort::ConstEpDevice vk = devices.at("vulkan:0");
  Ort::ConstMemoryInfo info = vk.GetMemoryInfo(OrtDeviceMemoryType_DEFAULT);
  ASSERT_NE(static_cast<const OrtMemoryInfo*>(info), nullptr);
  EXPECT_EQ(info.GetDeviceType(), OrtMemoryInfoDeviceType_GPU);
  EXPECT_EQ(info.GetAllocatorName(), "porta:vulkan:0");
  // A tensor in porta's vulkan memory, filled and read back through ORT's CopyTensors (porta's
  // data transfer), and read by porta itself on the device in between.
  Ort::UnownedAllocator alloc = env().CreateSharedAllocator(vk, OrtDeviceMemoryType_DEFAULT, OrtDeviceAllocator, nullptr);
  std::mt19937 rng(9);
  Tensor x = random_tensor({3, 7}, rng);
  Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  std::vector<Ort::Value> host, dev, back;
  host.push_back(Ort::Value::CreateTensor<float>(cpu, x.data<float>(), 21, x.shape().data(), 2));
  dev.push_back(Ort::Value::CreateTensor<float>(alloc, x.shape().data(), 2));
  Tensor y = Tensor::zeros({3, 7}, porta::DType::f32);
  back.push_back(Ort::Value::CreateTensor<float>(cpu, y.data<float>(), 21, y.shape().data(), 2));
  env().CopyTensors(host, dev, nullptr);
  env().CopyTensors(dev, back, nullptr);
  EXPECT_EQ(rel_diff(y, x), 0.0);
  env().ReleaseSharedAllocator(vk, OrtDeviceMemoryType_DEFAULT);
}

TEST(OrtEp, ValuesOfUnknownRankEnterPortaSubgraphsUndeclared) {
  // T = Shrink(Reshape(X, S)) has no shape before the run (S's length is not known), and it
  // enters porta's second subgraph (Shrink runs on ORT's CPU EP): porta must take its rank from
  // the run, not read ORT's empty shape as a scalar.
  porta::test::OnnxGraph g(17, {3, 4});
  g.input("X");
  onnx::ValueInfoProto* s = g.g->add_input();
  s->set_name("S");
  s->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  s->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param("n");
  g.node("Reshape", {"X", "S"}, "R");
  g.node("Shrink", {"R"}, "T");
  g.node("Relu", {"T"}, "Y");
  g.node("Shape", {"T"}, "TS");
  onnx::TensorProto* idx = g.g->add_initializer();
  idx->set_name("i0");
  idx->set_data_type(onnx::TensorProto::INT64);
  idx->add_int64_data(0);
  g.node("Gather", {"TS", "i0"}, "D");
  onnx::NodeProto* cast = g.node("Cast", {"D"}, "Z");
  auto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  for (const char* name : {"Y", "Z"}) {
    onnx::ValueInfoProto* o = g.g->add_output();
    o->set_name(name);
    o->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  std::string bytes = g.m.SerializeAsString();
  std::mt19937 rng(13);
  Tensor x = random_tensor({3, 4}, rng);
  Tensor shape = Tensor::from_values({2, 3, 2}, {3}, porta::DType::i64);
  Ort::Session ref_session = session_from_bytes(bytes, ort_cpu_options());
  std::vector<Tensor> want = ort_run(ref_session, {{"X", x}, {"S", shape}});
  for (const std::string& device : test_devices()) {
    SCOPED_TRACE(device);
    Ort::Session session = session_from_bytes(bytes, porta_options(device));
    std::vector<Tensor> got = ort_run(session, {{"X", x}, {"S", shape}});
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].shape(), (Shape{2, 3, 2}));
    EXPECT_EQ(rel_diff(got[0], want[0]), 0.0);
    EXPECT_EQ(rel_diff(got[1], want[1]), 0.0);
  }
}

TEST(OrtEp, NodesPortaCannotImportStayWithOrt) {
  // porta imports ONNX opsets up to 17; at opset 18 its importer refuses the nodes, so the EP
  // claims none of them (instead of failing the session) and ORT's CPU EP runs the model.
  porta::test::OnnxGraph g(18, {3, 5});
  g.input("X");
  g.node("Tanh", {"X"}, "T");
  g.node("Relu", {"T"}, "Y");
  g.output("Y");
  std::string bytes = g.m.SerializeAsString();
  std::mt19937 rng(12);
  Tensor x = random_tensor({3, 5}, rng);
  Ort::Session ref_session = session_from_bytes(bytes, ort_cpu_options());
  std::vector<Tensor> want = ort_run(ref_session, {{"X", x}});
  Ort::SessionOptions so = porta_options("cpu");
  so.EnableProfiling(temp_path("porta_ort_opset18").c_str());
  Ort::Session session = session_from_bytes(bytes, so);
  std::vector<Tensor> got = ort_run(session, {{"X", x}});
  EXPECT_EQ(rel_diff(got.at(0), want.at(0)), 0.0);
  Ort::AllocatorWithDefaultOptions alloc;
  std::string profile = session.EndProfilingAllocated(alloc).get();
  auto nodes = ort_profile_nodes(profile);
  std::remove(profile.c_str());
  EXPECT_EQ(nodes.size(), 2u);
  for (auto& [node, provider] : nodes) EXPECT_EQ(provider, "CPUExecutionProvider") << node;
}

TEST(OrtEp, BadProviderOptionsAndUnusableDevicesAreRefusedWithPortasMessage) {
  std::string bytes = split_model();
  try {
    session_from_bytes(bytes, porta_options("cpu", {{"strict", "maybe"}}));
    FAIL() << "strict=maybe accepted";
  } catch (const Ort::Exception& e) {
    EXPECT_NE(std::string(e.what()).find("provider option 'strict' should be 0 or 1, got 'maybe'"), std::string::npos)
        << e.what();
  }
  {
    // A profile file that cannot be written: the run fails naming the option and the path.
    Ort::Session session = session_from_bytes(bytes, porta_options("cpu", {{"profiling", "/nonexistent/dir/p.txt"}}));
    std::mt19937 rng(1);
    Tensor x = random_tensor({3, 5}, rng);
    try {
      ort_run(session, {{"X", x}});
      FAIL() << "an unwritable profile file was accepted";
    } catch (const Ort::Exception& e) {
      EXPECT_NE(std::string(e.what()).find("provider option 'profiling': cannot write '/nonexistent/dir/p.txt'"),
                std::string::npos)
          << e.what();
    }
  }
  for (const char* device : {"cuda:0", "hip:0"}) {
    std::string why;
    try {
      porta::backend_for(porta::Device::parse(device));
      continue;  // usable here: nothing to refuse
    } catch (const porta::Error& e) {
      why = e.what();
    }
    try {
      session_from_bytes(bytes, porta_options("cpu", {{"device", device}}));
      FAIL() << device << " accepted";
    } catch (const Ort::Exception& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
}

TEST(OrtEp, ErrorsWhileRunningReachTheCallerWithPortasMessage) {
  // Reshape to a shape given at run time: an impossible one is porta's ShapeError.
  porta::test::OnnxGraph g(17, {2, 6});
  g.input("X");
  onnx::ValueInfoProto* s = g.g->add_input();
  s->set_name("S");
  s->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  s->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(2);
  g.node("Relu", {"X"}, "R");
  g.node("Reshape", {"R", "S"}, "Y");
  onnx::ValueInfoProto* y = g.g->add_output();
  y->set_name("Y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  Ort::Session session = session_from_bytes(g.m.SerializeAsString(), porta_options("cpu"));
  std::mt19937 rng(2);
  Tensor x = random_tensor({2, 6}, rng);
  Tensor good = Tensor::from_values({3, 4}, {2}, porta::DType::i64);
  EXPECT_EQ(ort_run(session, {{"X", x}, {"S", good}}).at(0).shape(), (Shape{3, 4}));
  Tensor bad = Tensor::from_values({5, 4}, {2}, porta::DType::i64);
  try {
    ort_run(session, {{"X", x}, {"S", bad}});
    FAIL() << "reshaping 12 elements to 5x4 ran";
  } catch (const Ort::Exception& e) {
    EXPECT_NE(std::string(e.what()).find("ShapeError: [Reshape]"), std::string::npos) << e.what();
  }
}

}  // namespace

// Found by bench/compare_ort_ep.sh: lraspp_mobilenet_v3_large's classifier head, as ORT orders
// it, gives porta a 1x1 Conv from 128 channels (stored plain, which oneDNN runs channel-blocked)
// to 21 (no whole blocks) with an Add fused as a residual. oneDNN ran that mix of layouts in its
// reference loop (5 ms against 46 us); porta now runs both sides channels-last
// (kernels/cpu/conv.cpp). In porta's own Session the Add fuses into the 40-channel Conv; through
// the EP, in ORT's node order, into the 128-channel one (the case above). Both must match ORT.
TEST(OrtEp, ConvWithBlockedInputAndFusedResidualMatchesOrt) {
  porta::test::OnnxGraph g(17);
  g.input("L", {1, 40, 8, 8});
  g.input("H", {1, 128, 8, 8});
  std::mt19937 rng(23);
  auto values = [&](int64_t n) {
    std::uniform_real_distribution<float> u(-0.5f, 0.5f);
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    return v;
  };
  g.initializer("WL", {21, 40, 1, 1}, values(21 * 40));
  g.initializer("BL", {21}, values(21));
  g.initializer("WH", {21, 128, 1, 1}, values(21 * 128));
  g.initializer("BH", {21}, values(21));
  g.node("Conv", {"L", "WL", "BL"}, "CL");
  g.node("Conv", {"H", "WH", "BH"}, "CH");
  g.node("Add", {"CL", "CH"}, "Y");
  g.output("Y", {1, 21, 8, 8});
  std::string bytes = g.m.SerializeAsString();
  std::vector<std::pair<std::string, Tensor>> inputs{{"L", random_tensor({1, 40, 8, 8}, rng)},
                                                     {"H", random_tensor({1, 128, 8, 8}, rng)}};
  Ort::Session ref = session_from_bytes(bytes, ort_cpu_options());
  Tensor want = ort_run(ref, inputs).at(0);

  porta::Model model = porta::Model::from_bytes(bytes.data(), bytes.size());
  porta::Session session(model, {.device = porta::Device::cpu()});
  std::map<std::string, Tensor> feed(inputs.begin(), inputs.end());
  bool fused = false;
  for (const porta::NodePlan& p : session.plan(feed))
    fused = fused || p.reason.find("adds the other input of the Add") != std::string::npos;
  EXPECT_TRUE(fused) << "the Add was not fused into a Conv: the case is not exercised";
  for (int run = 0; run < 2; ++run) EXPECT_LE(rel_diff(session.run(feed).at(0), want), 1e-5) << "run " << run;

  Ort::Session ep = session_from_bytes(bytes, porta_options("cpu"));
  EXPECT_LE(rel_diff(ort_run(ep, inputs).at(0), want), 1e-5);
}
