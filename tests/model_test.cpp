// The example models (models/<name>/, exported from PyTorch by scripts/export_models.py) run on
// every device of every built backend and must reproduce PyTorch's saved outputs:
// ||out - ref||_2 / ||ref||_2 <= 1e-4 per output. One test per (model, device), registered at
// start-up from the folder listing: ModelTest.<model>_<device>.
//
// Devices: unavailable cuda/hip devices are skipped with the backend's reason; a built Vulkan
// backend without a usable device is a failure (the Vulkan tests are expected to run here).
#include <algorithm>
#include <cstring>
#include <iostream>
#include <map>

#include "tests/model_fixtures.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

constexpr double kModelTolerance = 1e-4;

// Compares one output with PyTorch's and prints its errors (rel and max abs).
void check_output(const std::string& label, const Tensor& got_any, const Tensor& ref) {
  Tensor got = got_any.to(Device::cpu());
  EXPECT_EQ(dtype_name(got.dtype()), dtype_name(ref.dtype())) << label;
  Comparison c = compare(got, ref, kModelTolerance);
  std::cout << "[  model   ] " << label << ": shape " << shape_str(got.shape())
            << ", relative error " << c.rel << ", max abs error " << c.max_abs << "\n";
  EXPECT_TRUE(c.ok) << label << ": " << c.message;
}

class ModelRun : public ::testing::Test {
 public:
  ModelRun(std::string model, Device device) : model_(std::move(model)), device_(device) {}

  void TestBody() override {
    std::string unusable = device_unusable(device_);
    if (!unusable.empty()) {
      if (device_.type == DeviceType::vulkan)
        FAIL() << "the Vulkan backend is built but " << device_.str() << " is unusable: " << unusable;
      GTEST_SKIP() << device_.str() << ": " << unusable;
    }
    ModelFixture f = load_fixture(model_);
    Model model = Model::load(f.model_path());
    ASSERT_EQ(model.inputs().size(), f.inputs.size()) << "graph inputs vs inputs.txt";
    ASSERT_EQ(model.outputs().size(), f.outputs.size()) << "graph outputs vs outputs.txt";
    for (size_t k = 0; k < f.outputs.size(); ++k)
      EXPECT_EQ(model.outputs()[k].name, f.outputs[k].first) << "output " << k;

    SessionOptions options;
    options.device = device_;
    Session session(model, options);
    std::map<std::string, Tensor> inputs;
    for (const auto& [name, file] : f.inputs) inputs[name] = read_npy(file).to(device_);
    std::vector<Tensor> outputs = session.run(inputs);
    ASSERT_EQ(outputs.size(), f.outputs.size());
    std::vector<Tensor> refs;
    for (size_t k = 0; k < outputs.size(); ++k) {
      refs.push_back(read_npy(f.outputs[k].second));
      check_output(str(model_, " on ", device_.str(), ", output '", f.outputs[k].first, "'"),
                   outputs[k], refs[k]);
    }

    // Dynamic batch: a batch of two copies of every input gives two copies of every output.
    // Run after the first shape, so the session also recompiles for a new input shape.
    bool batched = true;
    for (const ValueDesc& d : model.inputs()) batched = batched && !d.shape.empty() && d.shape[0] < 0;
    if (!batched) return;
    std::map<std::string, Tensor> doubled;
    for (const auto& [name, file] : f.inputs) doubled[name] = repeat_batch(read_npy(file), 2);
    std::vector<Tensor> outputs2 = session.run(doubled);
    ASSERT_EQ(outputs2.size(), refs.size());
    for (size_t k = 0; k < outputs2.size(); ++k) {
      Tensor got = outputs2[k].to(Device::cpu());
      ASSERT_EQ(got.rank(), refs[k].rank());
      ASSERT_EQ(got.dim(0), 2 * refs[k].dim(0)) << "batch of output " << k;
      int64_t b = refs[k].dim(0);
      for (int64_t half = 0; half < 2; ++half)
        check_output(str(model_, " on ", device_.str(), ", batch x2 part ", half, ", output '",
                         f.outputs[k].first, "'"),
                     got.slice(0, half * b, (half + 1) * b), refs[k]);
    }
  }

 private:
  std::string model_;
  Device device_;
};

// "vulkan:0" -> "vulkan0": gtest filters use ':' as a separator.
std::string test_name(const std::string& model, Device d) {
  std::string dev = d.str();
  dev.erase(std::remove(dev.begin(), dev.end(), ':'), dev.end());
  return model + "_" + dev;
}

const bool registered = [] {
  std::vector<std::string> models = list_models();
  if (models.empty()) {
    ::testing::RegisterTest("ModelTest", "FixturesPresent", nullptr, nullptr, __FILE__, __LINE__,
                            []() -> ::testing::Test* {
                              struct Missing : ::testing::Test {
                                void TestBody() override {
                                  FAIL() << "no models/<name>/model.onnx under " << models_dir()
                                         << " (run scripts/export_models.py)";
                                }
                              };
                              return new Missing;
                            });
    return true;
  }
  for (const std::string& m : models)
    for (Device d : test_devices())
      ::testing::RegisterTest("ModelTest", test_name(m, d).c_str(), nullptr, nullptr, __FILE__,
                              __LINE__, [m, d]() -> ::testing::Test* { return new ModelRun(m, d); });
  return true;
}();

}  // namespace
}  // namespace porta::test
