// Vulkan device loss (docs/RELIABILITY.md, "Device errors"), made real on any driver with the
// backend's hook: the N-th vkQueueSubmit or fence wait reports VK_ERROR_DEVICE_LOST. It must
// become a BackendError naming the device and the node (op) whose work was lost, never an abort
// or a hang; the lost device then refuses all work with a clear error while the CPU keeps
// working. Only a *simulated* loss can be forgotten (the real device was fine), which these
// tests do to leave the device usable for the next test.
#include <iostream>
#include <map>

#include "backends/vulkan/vk_validation.hpp"
#include "tests/model_fixtures.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

class DeviceLost : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string unusable = device_unusable(device_);
    if (!unusable.empty()) FAIL() << "the Vulkan backend is built but vulkan:0 is unusable: " << unusable;
    f_ = load_fixture("cnn");
    for (const auto& [in, file] : f_.inputs) inputs_[in] = read_npy(file);
    ref_ = read_npy(f_.outputs.at(0).second);
  }
  void TearDown() override {
    vk::inject_device_loss(0, vk::LossPoint::submit);
    if (vk::device_lost(0)) EXPECT_TRUE(vk::forget_simulated_loss(0));
  }
  void expect_right(Session& s) {
    Comparison c = compare(s.run(inputs_).at(0).to(Device::cpu()), ref_, 1e-4);
    EXPECT_TRUE(c.ok) << c.message;
  }
  Session session(Device d) {
    SessionOptions o;
    o.device = d;
    return Session(Model::load(f_.model_path()), o);
  }

  Device device_ = Device::parse("vulkan:0");
  ModelFixture f_;
  std::map<std::string, Tensor> inputs_;
  Tensor ref_;
};

// Names the device, the loss, and what was being done: a node (op), a session input, or a copy.
void expect_loss_message(const std::string& msg) {
  EXPECT_NE(msg.find("vulkan:0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("device lost"), std::string::npos) << msg;
  bool names_work = msg.find("node '") != std::string::npos || msg.find("input '") != std::string::npos ||
                    msg.find("bytes to host") != std::string::npos ||
                    msg.find("bytes from host") != std::string::npos;  // constants at compile time
  EXPECT_TRUE(names_work) << "does not say what was lost: " << msg;
}

TEST_F(DeviceLost, LossAtSubmitIsBackendErrorThenDeviceRefusesWork) {
  Session s = session(device_);
  expect_right(s);
  // Submit #1 is the first batch of the model's nodes (the input's upload goes with it).
  vk::inject_device_loss(1, vk::LossPoint::submit);
  std::string msg = error_message<BackendError>([&] { s.run(inputs_); });
  expect_loss_message(msg);
  EXPECT_NE(msg.find("node '"), std::string::npos) << "no node (op) named: " << msg;
  EXPECT_NE(msg.find("vkQueueSubmit"), std::string::npos) << msg;
  EXPECT_TRUE(vk::device_lost(0));

  // Later work on the lost device is refused, naming the loss; nothing hangs.
  std::string again = error_message<BackendError>([&] { s.run(inputs_); });
  EXPECT_NE(again.find("stays unusable"), std::string::npos) << again;
  std::string eager = error_message<BackendError>([&] { Tensor::zeros({4}, DType::f32).to(device_); });
  EXPECT_NE(eager.find("device lost"), std::string::npos) << eager;

  // Other devices are unaffected.
  Session on_cpu = session(Device::cpu());
  expect_right(on_cpu);

  // A simulated loss can be forgotten; then the same session runs and is right.
  ASSERT_TRUE(vk::forget_simulated_loss(0));
  expect_right(s);
}

TEST_F(DeviceLost, LossAtFenceWaitIsBackendError) {
  Session s = session(device_);
  expect_right(s);
  vk::inject_device_loss(1, vk::LossPoint::fence_wait);
  std::string msg = error_message<BackendError>([&] { s.run(inputs_).at(0).to(Device::cpu()); });
  expect_loss_message(msg);
  EXPECT_NE(msg.find("vkWaitForFences"), std::string::npos) << msg;
  ASSERT_TRUE(vk::forget_simulated_loss(0));
  expect_right(s);
}

// Every submit of a whole run (upload, the model's batches, download) in turn.
TEST_F(DeviceLost, SweepOverEverySubmitOfARun) {
  int points = 0;
  for (long n = 1; n < 1000; ++n) {
    Session s = session(device_);
    vk::inject_device_loss(n, vk::LossPoint::submit);
    bool lost = false;
    try {
      Tensor out = s.run(inputs_).at(0).to(Device::cpu());
      Comparison c = compare(out, ref_, 1e-4);
      EXPECT_TRUE(c.ok) << c.message;
    } catch (const BackendError& e) {
      lost = true;
      expect_loss_message(e.what());
    }
    vk::inject_device_loss(0, vk::LossPoint::submit);
    if (!lost) {
      EXPECT_FALSE(vk::device_lost(0));
      break;
    }
    ++points;
    ASSERT_TRUE(vk::device_lost(0)) << "submit #" << n;
    ASSERT_TRUE(vk::forget_simulated_loss(0));
    expect_right(s);
  }
  EXPECT_GT(points, 0);
  std::cout << "[  lost    ] cnn on vulkan:0: device loss at each of " << points
            << " submits, each a BackendError, the session right again after\n";
}

}  // namespace
}  // namespace porta::test
