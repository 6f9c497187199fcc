// PORTA_MEMORY_LIMIT (docs/RELIABILITY.md, "Fault injection and memory limits"): malformed
// settings are InvalidArgument naming the setting; an over-limit allocation is OutOfMemory with
// the requested and available bytes, leaves the device usable, and a whole model run under a
// too-small limit fails the same way and then runs once the limit allows it. Peak memory is
// reported per device, by the accounting and by Session::peak_memory (`porta run --profile`).
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>

#include "runtime/memory_limits.hpp"
#include "tests/model_fixtures.hpp"
#include "tests/test_paths.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

// Sets PORTA_MEMORY_LIMIT for one test and restores "no limit" afterwards, whatever happens.
class MemoryLimit : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("PORTA_MEMORY_LIMIT");
    detail::reload_memory_settings();
  }
  static void set(const std::string& value) {
    ASSERT_EQ(setenv("PORTA_MEMORY_LIMIT", value.c_str(), 1), 0);
    detail::reload_memory_settings();
  }
};

Device usable_vulkan() {
  if (!find_backend(DeviceType::vulkan)) return Device::cpu();
  Device d = Device::parse("vulkan:0");
  return device_unusable(d).empty() ? d : Device::cpu();
}

// The cpu, and vulkan:0 when it is usable (each once: a test that sets a device's limit
// must not run twice on the cpu, the second time under the first one's limit).
std::vector<Device> cpu_and_vulkan() {
  std::vector<Device> devices{Device::cpu()};
  if (usable_vulkan() != Device::cpu()) devices.push_back(usable_vulkan());
  return devices;
}

std::vector<Tensor> run_model(const std::string& name, Device device, Session** keep = nullptr) {
  ModelFixture f = load_fixture(name);
  Model model = Model::load(f.model_path());
  SessionOptions options;
  options.device = device;
  static std::optional<Session> kept;
  kept.reset();
  kept.emplace(model, options);
  std::map<std::string, Tensor> inputs;
  for (const auto& [in, file] : f.inputs) inputs[in] = read_npy(file).to(device);
  std::vector<Tensor> out;
  for (const Tensor& t : kept->run(inputs)) out.push_back(t.to(Device::cpu()));
  if (keep) *keep = &*kept;
  else kept.reset();
  return out;
}

void expect_matches(const std::string& name, const std::vector<Tensor>& got) {
  ModelFixture f = load_fixture(name);
  ASSERT_EQ(got.size(), f.outputs.size());
  for (size_t k = 0; k < got.size(); ++k) {
    Comparison c = compare(got[k], read_npy(f.outputs[k].second), 1e-4);
    EXPECT_TRUE(c.ok) << name << " output " << k << ": " << c.message;
  }
}

TEST_F(MemoryLimit, MalformedSettingsAreInvalidArgument) {
  struct Case {
    const char* value;
    const char* says;
  } cases[] = {
      {"cpu", "should be DEVICE:SIZE"},
      {"cpu:", "bad size"},
      {"cpu:lots", "bad size"},
      {"cpu:2TB", "unknown unit 'TB'"},
      {"cpu:2 GiB", "unknown unit ' GiB'"},
      {"cpu:-1MiB", "not a byte count"},
      {"cpu:nan", "not a byte count"},
      {"cpu:1e30GiB", "not a byte count"},
      {"cpu:0", "zero bytes"},
      {"vulkan:0", "zero bytes"},  // the device without a size reads as vulkan with size 0
      {"gpu:1GiB", "PORTA_MEMORY_LIMIT entry 'gpu:1GiB'"},
      {"cpu:1GiB,cpu:2GiB", "names cpu twice"},
  };
  for (const Case& c : cases) {
    ASSERT_EQ(setenv("PORTA_MEMORY_LIMIT", c.value, 1), 0);
    std::string msg = error_message<InvalidArgument>([] { detail::reload_memory_settings(); });
    EXPECT_NE(msg.find(c.says), std::string::npos) << c.value << ": " << msg;
    EXPECT_NE(msg.find("PORTA_MEMORY_LIMIT"), std::string::npos) << c.value << ": " << msg;
    // Until a good setting is read, allocations report the bad one rather than run unlimited.
    std::string again = error_message<InvalidArgument>([] { Tensor::empty({4}, DType::f32); });
    EXPECT_NE(again.find("PORTA_MEMORY_LIMIT"), std::string::npos) << c.value << ": " << again;
  }
  set("cpu:2GiB,vulkan:0:512MiB, ");  // docs/RELIABILITY.md's example (and an empty entry) parse
  Tensor ok = Tensor::empty({4}, DType::f32);
}

TEST_F(MemoryLimit, OverLimitIsOutOfMemoryWithRequestedAndAvailableBytes) {
  for (Device d : cpu_and_vulkan()) {
    SCOPED_TRACE(d.str());
    const size_t live = detail::live_bytes(d), mib = 1 << 20;
    set(str(d.str(), ":", live + mib));
    Tensor half = Tensor::empty({static_cast<int64_t>(mib / 2)}, DType::u8, d);
    std::string msg = error_message<OutOfMemory>([&] { Tensor::empty({static_cast<int64_t>(mib)}, DType::u8, d); });
    EXPECT_NE(msg.find(str("[memory] ", d.str(), ": requested ", mib, " bytes, ", mib / 2,
                           " bytes available of the ", live + mib, "-byte limit")),
              std::string::npos)
        << msg;
    EXPECT_EQ(detail::live_bytes(d), live + mib / 2) << "the failed allocation must not count";
    // The device stays usable: what fits is allocated, and freeing makes room again.
    Tensor quarter = Tensor::empty({static_cast<int64_t>(mib / 4)}, DType::u8, d);
    half = Tensor();
    quarter = Tensor();
    Tensor full = Tensor::empty({static_cast<int64_t>(mib)}, DType::u8, d);
    EXPECT_EQ(detail::live_bytes(d), live + mib);
  }
}

TEST_F(MemoryLimit, ModelRunUnderTooSmallLimitFailsCleanlyThenRuns) {
  for (Device d : cpu_and_vulkan()) {
    SCOPED_TRACE(d.str());
    run_model("cnn", d);  // warm-up outside the limit (caches, device context)
    const size_t live = detail::live_bytes(d);
    set(str(d.str(), ":", live + 4096));
    std::string msg = error_message<OutOfMemory>([&] { run_model("cnn", d); });
    EXPECT_NE(msg.find("PORTA_MEMORY_LIMIT"), std::string::npos) << msg;
    EXPECT_NE(msg.find(d.str()), std::string::npos) << msg;
    EXPECT_EQ(detail::live_bytes(d), live) << "bytes leaked by the failed run";
    set(str(d.str(), ":1GiB"));
    expect_matches("cnn", run_model("cnn", d));
    EXPECT_EQ(detail::live_bytes(d), live);
  }
}

TEST_F(MemoryLimit, PeakIsReportedPerDevice) {
  for (Device d : cpu_and_vulkan()) {
    SCOPED_TRACE(d.str());
    TearDown();  // no limit from the previous device's pass (a session on vulkan:0 uses cpu memory too)
    const size_t live = detail::live_bytes(d);
    detail::reset_peak(d);
    {
      Tensor a = Tensor::empty({1 << 20}, DType::u8, d);
      Tensor b = Tensor::empty({1 << 19}, DType::u8, d);
    }
    EXPECT_EQ(detail::peak_bytes(d), live + (1 << 20) + (1 << 19));
    EXPECT_EQ(detail::live_bytes(d), live);

    Session* session = nullptr;
    detail::reset_peak(d);
    expect_matches("transformer", run_model("transformer", d, &session));
    ASSERT_NE(session, nullptr);
    std::map<std::string, size_t> peak = session->peak_memory();
    ASSERT_TRUE(peak.count(d.str())) << "no peak for " << d.str();
    EXPECT_GT(peak[d.str()], 0u);
    // The plan's figure covers what the run held at once: a limit of the measured peak passes.
    size_t measured = detail::peak_bytes(d);
    EXPECT_GT(measured, live);
    std::cout << "[  memory  ] transformer on " << d.str() << ": session peak_memory " << peak[d.str()]
              << " bytes, measured peak " << measured - live << " bytes above the " << live
              << " live before\n";
    run_model("transformer", d);  // drop the kept session
    set(str(d.str(), ":", measured + (1 << 16)));
    expect_matches("transformer", run_model("transformer", d));
  }
}

TEST_F(MemoryLimit, CliReportsTheLimitAndExitsTwo) {
  std::string cmd = std::string("PORTA_MEMORY_LIMIT=cpu:4KiB ") + PORTA_BINARY_DIR + "/bin/porta run " +
                    models_dir() + "/cnn/model.onnx 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int st = pclose(p);
  ASSERT_TRUE(WIFEXITED(st)) << out;
  EXPECT_EQ(WEXITSTATUS(st), 2) << out;
  EXPECT_NE(out.find("PORTA_MEMORY_LIMIT"), std::string::npos) << out;
  EXPECT_NE(out.find("bytes available"), std::string::npos) << out;
}

}  // namespace
}  // namespace porta::test
