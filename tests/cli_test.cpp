// The porta CLI on bad input: one clear message on stderr and exit status 2, never a crash.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/test_paths.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

namespace fs = std::filesystem;

using Result = CliResult;

std::string scratch(const std::string& name, const std::string& bytes) {
  fs::path dir = fs::path(PORTA_BINARY_DIR) / "cli_test";
  fs::create_directories(dir);
  fs::path p = dir / name;
  std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return p.string();
}

std::string model(const std::string& name) { return std::string(PORTA_SOURCE_DIR) + "/models/" + name + "/model.onnx"; }

void expect_bad_input(const Result& r, const std::vector<std::string>& mentions) {
  EXPECT_EQ(r.status, 2) << r.output;
  for (auto& m : mentions) EXPECT_NE(r.output.find(m), std::string::npos) << "missing '" << m << "' in: " << r.output;
}

TEST(Cli, DevicesListsCpu) {
  Result r = porta_cli("devices");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.output.find("cpu available"), std::string::npos) << r.output;
}

// A backend this build left out (e.g. cuda without an NVIDIA driver) is listed with why, and a
// session on one of its devices says the same instead of "no backend registered".
TEST(Cli, DevicesListsTheBackendsNotBuiltAndWhy) {
  Result r = porta_cli("devices");
  ASSERT_EQ(r.status, 0) << r.output;
  std::vector<UnbuiltBackend> missing = backends_not_built();
  for (const UnbuiltBackend& u : missing) {
    EXPECT_FALSE(u.reason.empty()) << u.kind;
    EXPECT_NE(r.output.find(u.kind + " not built here: " + u.reason), std::string::npos) << r.output;
    // A kind no backend registered may not even be a known device kind (gpu_emu).
    if (std::optional<DeviceType> t = find_device_type(u.kind))
      EXPECT_EQ(find_backend(*t), nullptr) << u.kind << " is listed as not built but has a backend";
    Result run = porta_cli("run --device " + u.kind + ":0 --repeat 1");
    expect_bad_input(run, {u.kind + ":0", "built without the " + u.kind + " backend", u.reason});
  }
  // Every known kind is either built or listed with its reason.
  for (std::string kind : {"vulkan", "cuda", "hip", "gpu_emu"}) {
    std::optional<DeviceType> t = find_device_type(kind);
    bool listed = std::any_of(missing.begin(), missing.end(), [&](const UnbuiltBackend& u) { return u.kind == kind; });
    EXPECT_TRUE(listed || (t && find_backend(*t))) << kind << " is neither built nor listed as not built";
  }
}

TEST(Cli, RunBundledExampleWritesOutputs) {
  fs::path out = fs::path(PORTA_BINARY_DIR) / "cli_test" / "out";
  fs::remove_all(out);
  Result r = porta_cli("run --output-dir " + out.string() + " --repeat 2");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("median_us="), std::string::npos);
  EXPECT_TRUE(fs::exists(out / "logits.npy")) << r.output;
  Tensor got = read_npy((out / "logits.npy").string());
  Tensor ref = read_npy(std::string(PORTA_SOURCE_DIR) + "/models/cnn/output_0.npy");
  Comparison c = compare(got, ref.cast(DType::f64), 1e-4);
  EXPECT_TRUE(c.ok) << c.message;
}

TEST(Cli, RunTableOverAllDevices) {
  Result r = porta_cli("run --device all --repeat 1");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("cpu"), std::string::npos);
  EXPECT_NE(r.output.find("pytorch"), std::string::npos) << r.output;
}

TEST(Cli, RunProfilePrintsNodesAndPeakMemory) {
  Result r = porta_cli("run " + model("mlp") + " --profile");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("LayerNormalization"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("peak_memory cpu"), std::string::npos) << r.output;
}

TEST(Cli, RunProfileTakesTheMedianOfRuns) {
  Result r = porta_cli("run " + model("mlp") + " --profile --profile-runs 3");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("profile (median of 3 runs)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("LayerNormalization"), std::string::npos) << r.output;
  expect_bad_input(porta_cli("run " + model("mlp") + " --profile-runs 3"), {"--profile-runs needs --profile"});
  expect_bad_input(porta_cli("run " + model("mlp") + " --profile --profile-runs 0"), {"at least 1, got 0"});
}

TEST(Cli, OpsSaysWhatRuns) {
  Result r = porta_cli("ops " + model("transformer") + " --device cpu");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("native"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("folded"), std::string::npos) << r.output;
}

TEST(Cli, MissingModel) { expect_bad_input(porta_cli("run /nonexistent/model.onnx"), {"does not exist"}); }

TEST(Cli, GarbageModel) {
  expect_bad_input(porta_cli("run " + scratch("garbage.onnx", "this is not a protobuf at all \x01\x02")),
                   {"not a valid ONNX model"});
}

TEST(Cli, TruncatedModel) {
  std::ifstream f(model("cnn"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  expect_bad_input(porta_cli("run " + scratch("truncated.onnx", bytes.substr(0, bytes.size() / 2))),
                   {"[onnx]"});
}

TEST(Cli, WrongInputName) {
  expect_bad_input(porta_cli("run " + model("cnn") + " --input nosuch=" + std::string(PORTA_SOURCE_DIR) +
                             "/models/cnn/input_0.npy"),
                   {"no input 'nosuch'", "'input'"});
}

TEST(Cli, WrongInputShape) {
  expect_bad_input(porta_cli("run " + model("cnn") + " --input input=" + std::string(PORTA_SOURCE_DIR) +
                             "/models/mlp/input_0.npy"),
                   {"input 'input'", "should have shape"});
}

TEST(Cli, WrongInputDtype) {
  Tensor t = Tensor::from_values(std::vector<double>(3 * 64 * 64, 0.5), {1, 3, 64, 64}, DType::f64);
  std::string p = scratch("f64.npy", "");
  write_npy(p, t);
  expect_bad_input(porta_cli("run " + model("cnn") + " --input input=" + p), {"should be f32, got f64"});
}

TEST(Cli, MalformedNpy) {
  expect_bad_input(porta_cli("run " + model("cnn") + " --input input=" + scratch("bad.npy", "\x93NUMPY\x01\x00garbage")),
                   {"[npy]"});
  expect_bad_input(porta_cli("run " + model("cnn") + " --input input=" + scratch("short.npy", "x")), {"not a .npy file"});
}

TEST(Cli, UnknownDevice) { expect_bad_input(porta_cli("run --device tpu:0"), {"unknown device 'tpu:0'"}); }

TEST(Cli, UnknownFlag) { expect_bad_input(porta_cli("run --fast"), {"unknown option '--fast'"}); }

}  // namespace
}  // namespace porta::test
