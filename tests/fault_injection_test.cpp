// PORTA_FAULT_ALLOC sweep (docs/RELIABILITY.md, "Fault injection and memory limits"): for
// N = 1, 2, ... the N-th allocation of a whole model run (load, compile, upload the inputs,
// run, copy the outputs back) fails. Every failure must surface as porta's OutOfMemory, the
// session that saw it must run again and reproduce PyTorch's outputs, and once everything is
// dropped the bytes live on every device must be back where they started. The sweep ends at
// the first N past the run's last allocation (the run succeeds).
//
// On Vulkan the cached memory blocks are freed before each step, so the suballocator's own
// block allocations are among the points swept.
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>

#include "runtime/memory_limits.hpp"
#include "tests/model_fixtures.hpp"
#include "tests/test_util.hpp"
#if PORTA_TEST_VULKAN
#include "backends/vulkan/vk_validation.hpp"
#endif

namespace porta::test {
namespace {

constexpr long kMaxPoints = 20000;  // a sweep longer than this means the run never ends

void release_device_caches(Device device) {
#if PORTA_TEST_VULKAN
  if (device.type == DeviceType::vulkan) vk::release_cached_memory(device.index);
#else
  (void)device;
#endif
}

std::vector<Tensor> to_host(const std::vector<Tensor>& outputs) {
  std::vector<Tensor> host;
  for (const Tensor& t : outputs) host.push_back(t.to(Device::cpu()));
  return host;
}

// One step of the sweep: everything the run made, so a failure can be retried on what survived.
struct Run {
  std::optional<Model> model;
  std::optional<Session> session;
  std::map<std::string, Tensor> inputs;
  std::vector<Tensor> outputs;

  void go(const ModelFixture& f, Device device) {
    if (!model) model.emplace(Model::load(f.model_path()));
    SessionOptions options;
    options.device = device;
    if (!session) session.emplace(*model, options);
    if (inputs.size() != f.inputs.size()) {
      inputs.clear();
      for (const auto& [name, file] : f.inputs) inputs[name] = read_npy(file).to(device);
    }
    outputs = to_host(session->run(inputs));
  }
};

void check_outputs(const std::string& label, const std::vector<Tensor>& got, const std::vector<Tensor>& refs) {
  ASSERT_EQ(got.size(), refs.size()) << label;
  for (size_t k = 0; k < got.size(); ++k) {
    Comparison c = compare(got[k], refs[k], 1e-4);
    EXPECT_TRUE(c.ok) << label << ", output " << k << ": " << c.message;
  }
}

void sweep(const std::string& name, Device device) {
  std::string unusable = device_unusable(device);
  if (!unusable.empty()) {
    if (device.type == DeviceType::vulkan && find_backend(DeviceType::vulkan))
      FAIL() << "the Vulkan backend is built but " << device.str() << " is unusable: " << unusable;
    GTEST_SKIP() << device.str() << ": " << unusable;
  }
  ModelFixture f = load_fixture(name);
  std::vector<Tensor> refs;
  for (const auto& [out, file] : f.outputs) refs.push_back(read_npy(file));
  {
    // Warm-up: process-lifetime state (device context, staging buffer, primitive caches).
    Run warm;
    warm.go(f, device);
    check_outputs(name + " warm-up", warm.outputs, refs);
  }
  release_device_caches(device);
  const Device cpu = Device::cpu();
  const size_t base_cpu = detail::live_bytes(cpu), base_device = detail::live_bytes(device);

  long points = 0, on_blocks = 0, on_staging = 0, mid_session = 0;
  bool finished = false;
  for (long n = 1; n <= kMaxPoints && !finished; ++n) {
    const std::string label = str(name, " on ", device.str(), ", allocation #", n, " failing");
    release_device_caches(device);
    Run run;
    bool failed = false;
    detail::set_fault_allocation(n);
    try {
      run.go(f, device);
    } catch (const OutOfMemory& e) {
      failed = true;
      std::string msg = e.what();
      EXPECT_NE(msg.find("injected allocation failure #" + std::to_string(n)), std::string::npos)
          << label << ": another OutOfMemory than the injected one: " << msg;
      on_blocks += msg.find("memory block") != std::string::npos;
      on_staging += msg.find("staging") != std::string::npos;
      mid_session += run.session.has_value();
    } catch (const std::exception& e) {
      failed = true;
      ADD_FAILURE() << label << ": surfaced as " << (dynamic_cast<const Error*>(&e) ? static_cast<const Error&>(e).kind() : "std::exception")
                    << ", not OutOfMemory: " << e.what();
    }
    detail::set_fault_allocation(0);
    if (failed) {
      ++points;
      // The same model and session (where they were made) must now run and be right.
      try {
        run.inputs.clear();
        run.go(f, device);
        check_outputs(label + ", run again", run.outputs, refs);
      } catch (const std::exception& e) {
        ADD_FAILURE() << label << ": running again failed: " << e.what();
      }
    } else {
      finished = true;
      check_outputs(label + " (past the last allocation)", run.outputs, refs);
    }
    run = Run();
    release_device_caches(device);
    EXPECT_EQ(detail::live_bytes(cpu), base_cpu) << label << ": host bytes leaked";
    EXPECT_EQ(detail::live_bytes(device), base_device) << label << ": device bytes leaked";
    if (::testing::Test::HasFailure()) break;  // one broken point is enough to read
  }
  EXPECT_TRUE(finished) << name << " on " << device.str() << ": no successful run within " << kMaxPoints
                        << " allocations";
  EXPECT_GT(points, 0);
  std::cout << "[  fault   ] " << name << " on " << device.str() << ": " << points
            << " allocation failures swept (" << mid_session << " inside a session, " << on_blocks
            << " on Vulkan memory blocks, " << on_staging << " on the staging buffer), all OutOfMemory, "
            << "no bytes leaked, every run again correct\n";
}

TEST(FaultInjection, CnnCpu) { sweep("cnn", Device::cpu()); }
TEST(FaultInjection, TransformerCpu) { sweep("transformer", Device::cpu()); }
TEST(FaultInjection, CnnVulkan0) { sweep("cnn", Device::parse("vulkan:0")); }
TEST(FaultInjection, TransformerVulkan0) { sweep("transformer", Device::parse("vulkan:0")); }

#if PORTA_TEST_VULKAN
// The staging buffer is made by the first copy to a Vulkan device in a process, before any
// sweep can start; a fresh process (a death-test child) reaches it: the third allocation of the
// first upload (tensor, memory block, staging buffer) fails, then the upload works.
int staging_fault_child() {
  const Device d = Device::parse("vulkan:0");
  Tensor host = Tensor::from_values({1, 2, 3, 4}, {4}, DType::f32);
  for (long n = 1; n <= 8; ++n) {
    detail::set_fault_allocation(n);
    try {
      host.to(d);
      detail::set_fault_allocation(0);
      std::cerr << "upload #" << n << " succeeded before the staging buffer failed\n";
      return 1;
    } catch (const OutOfMemory& e) {
      detail::set_fault_allocation(0);
      if (std::string(e.what()).find("staging buffer") == std::string::npos) continue;
      std::vector<double> back = host.to(d).to(Device::cpu()).to_doubles();
      if (back != std::vector<double>{1, 2, 3, 4} || detail::live_bytes(d) != 0) return 2;
      std::cerr << "staging fault: ok at allocation #" << n << ": " << e.what() << "\n";
      return 0;
    }
  }
  return 3;
}

TEST(FaultInjection, VulkanStagingBufferFailureIsOutOfMemory) {
  if (!find_backend(DeviceType::vulkan)) GTEST_SKIP() << "vulkan backend not built";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::exit(staging_fault_child()), ::testing::ExitedWithCode(0), "staging fault: ok");
}
#endif

// The environment setting is read on reload and counts from there.
TEST(FaultInjection, EnvironmentSettingFailsTheNthAllocation) {
  ASSERT_EQ(setenv("PORTA_FAULT_ALLOC", "2", 1), 0);
  detail::reload_memory_settings();
  Tensor first = Tensor::empty({4}, DType::f32);
  std::string msg = error_message<OutOfMemory>([] { Tensor::empty({8}, DType::f32); });
  EXPECT_NE(msg.find("injected allocation failure #2 on cpu: requested 32 bytes"), std::string::npos) << msg;
  Tensor third = Tensor::empty({4}, DType::f32);  // only the N-th fails
  unsetenv("PORTA_FAULT_ALLOC");
  detail::set_fault_allocation(0);
  detail::reload_memory_settings();
}

TEST(FaultInjection, MalformedSettingIsAnError) {
  for (const char* bad : {"two", "-1", "3x", ""}) {
    ASSERT_EQ(setenv("PORTA_FAULT_ALLOC", bad, 1), 0);
    std::string msg = error_message<InvalidArgument>([] { detail::reload_memory_settings(); });
    EXPECT_NE(msg.find("PORTA_FAULT_ALLOC"), std::string::npos) << bad << ": " << msg;
  }
  unsetenv("PORTA_FAULT_ALLOC");
  detail::reload_memory_settings();
  detail::set_fault_allocation(0);
  Tensor ok = Tensor::empty({4}, DType::f32);
}

}  // namespace
}  // namespace porta::test
