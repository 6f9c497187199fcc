// The real-model zoo (scripts/export_zoo.py: torchvision 0.14 architectures and torch.nn text
// stacks, each exported at opsets 13 and 17 into the build tree) on every device of every built
// backend, against PyTorch's float64 outputs:
//   relative error = max|porta - ref| / max|ref| <= 1e-4   (f32 models)
// and, on a device other than the cpu, every node runs there: no node falls back to the cpu.
// Members with a dynamic batch axis run again with a batch of two copies of the input (the
// session compiles a second plan); both halves must match the reference the same way.
// One test per (member, device): Zoo.<member>_<device>. The members are the folders of
// $PORTA_ZOO_DIR (default <build>/zoo) listed in its members.txt; ctest's zoo.export fixture
// writes them. A member listed but missing is a failure, never a skip.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "tests/model_fixtures.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

constexpr double kZooTolerance = 1e-4;

std::string zoo_dir() {
  if (const char* e = std::getenv("PORTA_ZOO_DIR"); e && *e) return e;
  return std::string(PORTA_BINARY_DIR) + "/zoo";
}

// members.txt, plus $PORTA_ZOO_MEMBER (ctest names the member it runs, so a member whose export
// is missing still has a test, and that test fails).
std::vector<std::string> zoo_members() {
  std::vector<std::string> names;
  std::ifstream f(zoo_dir() + "/members.txt");
  for (std::string line; std::getline(f, line);)
    if (!line.empty()) names.push_back(line);
  if (const char* e = std::getenv("PORTA_ZOO_MEMBER"); e && *e && std::find(names.begin(), names.end(), e) == names.end())
    names.push_back(e);
  return names;
}

// max|got - ref| / max|ref| over all elements, in double.
double max_relative_error(const Tensor& got_any, const Tensor& ref_any) {
  std::vector<double> got = got_any.to(Device::cpu()).to_doubles(), ref = ref_any.to_doubles();
  if (got.size() != ref.size()) return INFINITY;
  double diff = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) != std::isnan(ref[i])) return INFINITY;
    if (!std::isnan(ref[i])) diff = std::max(diff, std::abs(got[i] - ref[i]));
    scale = std::max(scale, std::abs(ref[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

class ZooRun : public ::testing::Test {
 public:
  ZooRun(std::string member, Device device) : member_(std::move(member)), device_(device) {}

  void TestBody() override {
    std::string unusable = device_unusable(device_);
    if (!unusable.empty()) {
      if (device_.type == DeviceType::vulkan)
        FAIL() << "the Vulkan backend is built but " << device_.str() << " is unusable: " << unusable;
      GTEST_SKIP() << device_.str() << ": " << unusable;
    }
    ASSERT_TRUE(std::filesystem::exists(zoo_dir() + "/" + member_ + "/model.onnx"))
        << member_ << " is listed in " << zoo_dir() << "/members.txt but was not exported "
        << "(run /usr/bin/python3 scripts/export_zoo.py " << zoo_dir() << ")";
    ModelFixture f = load_fixture_in(zoo_dir(), member_);
    Model model = Model::load(f.model_path());
    SessionOptions options;
    options.device = device_;
    Session session(model, options);
    std::map<std::string, Tensor> inputs;
    for (const auto& [name, file] : f.inputs) inputs[name] = read_npy(file).to(device_);

    if (device_.type != DeviceType::cpu) {
      std::vector<std::string> fell_back;
      for (const NodePlan& n : session.plan(inputs))
        if (n.path == Path::fallback) fell_back.push_back(n.op + " (" + n.node + "): " + n.reason);
      std::string listing;
      for (const std::string& s : fell_back) listing += "\n  " + s;
      EXPECT_TRUE(fell_back.empty()) << member_ << " on " << device_.str() << ": " << fell_back.size()
                                     << " node(s) fall back to the cpu:" << listing;
    }

    std::vector<Tensor> outputs = session.run(inputs);
    ASSERT_EQ(outputs.size(), f.outputs.size());
    std::vector<Tensor> refs;
    for (size_t k = 0; k < outputs.size(); ++k) {
      refs.push_back(read_npy(f.outputs[k].second));
      const Tensor& ref = refs.back();
      ASSERT_EQ(shape_str(outputs[k].shape()), shape_str(ref.shape())) << member_ << " output " << k;
      double rel = max_relative_error(outputs[k], ref);
      std::cout << "[  zoo     ] " << member_ << " on " << device_.str() << ", output '" << f.outputs[k].first
                << "' " << shape_str(ref.shape()) << ": relative error " << rel << "\n";
      EXPECT_LE(rel, kZooTolerance) << member_ << " on " << device_.str() << ", output " << k;
    }

    bool batched = true;
    for (const ValueDesc& d : model.inputs()) batched = batched && !d.shape.empty() && d.shape[0] < 0;
    if (!batched) return;
    std::map<std::string, Tensor> doubled;
    for (const auto& [name, file] : f.inputs) doubled[name] = repeat_batch(read_npy(file), 2).to(device_);
    std::vector<Tensor> outputs2 = session.run(doubled);
    ASSERT_EQ(outputs2.size(), refs.size());
    for (size_t k = 0; k < outputs2.size(); ++k) {
      Tensor got = outputs2[k].to(Device::cpu());
      int64_t b = refs[k].dim(0);
      ASSERT_EQ(got.dim(0), 2 * b) << member_ << ": batch of output " << k;
      for (int64_t half = 0; half < 2; ++half) {
        double rel = max_relative_error(got.slice(0, half * b, (half + 1) * b).contiguous(), refs[k]);
        EXPECT_LE(rel, kZooTolerance) << member_ << " on " << device_.str() << ", batch of 2, copy " << half;
      }
    }
  }

 private:
  std::string member_;
  Device device_;
};

const bool registered = [] {
  for (const std::string& m : zoo_members())
    for (Device d : test_devices()) {
      std::string dev = d.str();
      dev.erase(std::remove(dev.begin(), dev.end(), ':'), dev.end());
      ::testing::RegisterTest("Zoo", (m + "_" + dev).c_str(), nullptr, nullptr, __FILE__, __LINE__,
                              [m, d]() -> ::testing::Test* { return new ZooRun(m, d); });
    }
  return true;
}();

}  // namespace
}  // namespace porta::test
