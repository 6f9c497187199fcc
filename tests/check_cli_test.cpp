// `porta check`: runs the CLI (build/bin/porta, built by the porta_cli target) on the exported
// decoder model and reads its report and exit status. Skipped when the CLI was not built.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/model_fixtures.hpp"
#include "tests/test_paths.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

struct CliResult {
  int status = -1;
  std::string output;
};

std::string cli_path() { return std::string(PORTA_BINARY_DIR) + "/bin/porta"; }

// Runs `porta ARGS` with optional environment assignments ("NAME=value ") in front.
CliResult run_cli(const std::string& args, const std::string& env = "") {
  CliResult r;
  std::string cmd = env + cli_path() + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  int st = pclose(pipe);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

class CheckCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(cli_path())) GTEST_SKIP() << cli_path() << " not built (ninja porta_cli)";
    model_ = models_dir() + "/decoder/model.onnx";
    if (!std::filesystem::exists(model_)) GTEST_SKIP() << model_ << " missing";
  }
  std::string model_;
};

TEST_F(CheckCli, DecoderWithinToleranceOnCpu) {
  CliResult r = run_cli("check " + model_ + " --devices cpu");
  EXPECT_EQ(r.status, 0) << r.output;
  for (const char* op : {"RmsNorm", "RotaryEmbedding", "ScaledDotProductAttention", "BiasGelu", "MatMul"})
    EXPECT_NE(r.output.find(op), std::string::npos) << op << " missing from:\n" << r.output;
  EXPECT_NE(r.output.find("cpu abs"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ok: every node within"), std::string::npos) << r.output;
}

TEST_F(CheckCli, NamesFirstNodeOverToleranceAndExits1) {
  // f32 results cannot match the float64 reference to 1e-15: the first computing node fails.
  CliResult r = run_cli("check " + model_ + " --devices cpu --tolerance 1e-15");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("first node over the tolerance: '"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("OVER"), std::string::npos) << r.output;
}

// With every custom cpu kernel disabled the decompositions run, and must be as accurate.
TEST_F(CheckCli, CompositePathAlsoWithinTolerance) {
  CliResult r = run_cli("check " + model_ + " --devices cpu",
                        "PORTA_DISABLE_KERNELS=cpu:RmsNorm,cpu:RotaryEmbedding,cpu:ScaledDotProductAttention,"
                        "cpu:BiasGelu ");
  EXPECT_EQ(r.status, 0) << r.output;
}

// Column headers stay apart however long a device's name is ("rel vulkan:0 abs", not
// "relvulkan:0 abs").
TEST_F(CheckCli, ColumnHeadersAreSeparated) {
  Device vk{DeviceType::vulkan, 0};
  std::string devices = device_unusable(vk).empty() ? "cpu,vulkan:0" : "cpu";
  CliResult r = run_cli("check " + models_dir() + "/mlp/model.onnx --devices " + devices);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find(" cpu abs         rel"), std::string::npos) << r.output;
  if (devices != "cpu") EXPECT_NE(r.output.find(" rel vulkan:0 abs"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("relvulkan"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("relcpu"), std::string::npos) << r.output;
}

TEST_F(CheckCli, BadArgumentsExit2) {
  EXPECT_EQ(run_cli("check").status, 2);
  EXPECT_EQ(run_cli("check " + model_ + " --tolerance abc").status, 2);
  CliResult r = run_cli("check /nonexistent/model.onnx");
  EXPECT_EQ(r.status, 2) << r.output;
}

}  // namespace
}  // namespace porta::test
