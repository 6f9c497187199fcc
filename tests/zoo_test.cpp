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
#include <random>

#include "kernels/cpu/cpu_common.hpp"
#include "tests/model_fixtures.hpp"
#include "tests/test_paths.hpp"
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

// A classification member in a low precision against its own f32 session, on fresh random
// images drawn like its sample input (normal with the sample's mean and spread): the share of
// inputs whose top-1 class agrees, and the relative error of the logits, max|low - f32| /
// max|f32| per input. Both are printed (ctest's log keeps them; docs/PERFORMANCE.md has the
// figures). What a test can hold without depending on how near the random network's logits
// tie: the logits stay within a few percent, and a top-1 class changes only where f32's top two
// are within twice the logits' error of that input.
// PORTA_ZOO_PRECISION_INPUTS changes the number of inputs (default 100).
class ZooPrecisionRun : public ::testing::Test {
 public:
  ZooPrecisionRun(std::string member, Precision precision) : member_(std::move(member)), precision_(precision) {}

  void TestBody() override {
    ASSERT_TRUE(std::filesystem::exists(zoo_dir() + "/" + member_ + "/model.onnx"))
        << member_ << " is listed in " << zoo_dir() << "/members.txt but was not exported";
    ModelFixture f = load_fixture_in(zoo_dir(), member_);
    Model model = Model::load(f.model_path());
    if (f.inputs.size() != 1 || f.outputs.size() != 1) GTEST_SKIP() << member_ << ": not an image classifier";
    if (precision_ == Precision::bf16 && !cpu::onednn_has_bf16())
      GTEST_SKIP() << member_ << ": this CPU has no bf16 products (oneDNN's need AVX-512): a bf16 session computes them "
                   << "in f32 here, so there is no bf16 agreement to measure";
    Tensor sample = read_npy(f.inputs[0].second);
    Tensor logits_ref = read_npy(f.outputs[0].second);
    if (sample.dtype() != DType::f32 || sample.rank() != 4 || logits_ref.rank() != 2 || logits_ref.dim(1) < 10)
      GTEST_SKIP() << member_ << ": not an image classifier (input " << shape_str(sample.shape()) << ", output "
                   << shape_str(logits_ref.shape()) << ")";
    int inputs = 100;
    if (const char* e = std::getenv("PORTA_ZOO_PRECISION_INPUTS"); e && *e) inputs = std::max(1, std::atoi(e));
    std::vector<double> v = sample.to_doubles();
    double mean = 0, var = 0;
    for (double x : v) mean += x;
    mean /= static_cast<double>(v.size());
    for (double x : v) var += (x - mean) * (x - mean);
    const double spread = std::sqrt(var / static_cast<double>(v.size()));
    std::normal_distribution<double> normal(mean, spread > 0 ? spread : 1.0);

    SessionOptions o32, olow;
    olow.precision = precision_;
    Session f32(model, o32), low(model, olow);
    const std::string name = f.inputs[0].first;
    int agree = 0, close_calls = 0;
    std::vector<double> errors, change_errors;
    std::vector<double> prev_a, prev_b;  // the previous input's logits
    std::string far_flips;  // disagreements where f32's top two are further apart than the error
    for (int i = 0; i < inputs; ++i) {
      std::vector<double> x(static_cast<size_t>(sample.numel()));
      for (double& d : x) d = normal(rng());
      std::map<std::string, Tensor> feed{{name, Tensor::from_values(x, sample.shape(), DType::f32)}};
      Tensor a = f32.run(feed).at(0), b = low.run(feed).at(0);
      ASSERT_EQ(b.dtype(), DType::f32) << "outputs keep the exported dtype";
      std::vector<double> ya = a.to_doubles(), yb = b.to_doubles();
      const int64_t classes = a.dim(1);
      double worst_abs = 0;
      for (size_t e = 0; e < ya.size(); ++e) worst_abs = std::max(worst_abs, std::abs(ya[e] - yb[e]));
      for (int64_t row = 0; row < a.dim(0); ++row) {
        auto first = ya.begin() + row * classes, firstb = yb.begin() + row * classes;
        const int64_t top = std::max_element(first, first + classes) - first;
        const int64_t top_low = std::max_element(firstb, firstb + classes) - firstb;
        if (top == top_low) {
          ++agree;
          continue;
        }
        // A flip is the format's rounding only when f32's two candidates are within twice the
        // largest logit error of this input: then either answer is within the noise.
        const double margin = first[top] - first[top_low];
        if (margin <= 2 * worst_abs) ++close_calls;
        else far_flips += str(" input ", i, ": class ", top, " -> ", top_low, " with f32 margin ", margin, " > 2 x ", worst_abs, ";");
      }
      errors.push_back(max_relative_error(b, a));
      // How the logits change from the previous input, in both sessions: a constant part
      // (a classifier's bias, which stays f32) cancels, so this shows the products' format
      // even where the logits are mostly that bias (googlenet and shufflenet at 64x64).
      if (!prev_a.empty()) {
        double worst = 0, scale = 0;
        for (size_t e = 0; e < ya.size(); ++e) {
          const double da = ya[e] - prev_a[e], db = yb[e] - prev_b[e];
          worst = std::max(worst, std::abs(db - da));
          scale = std::max(scale, std::abs(da));
        }
        if (scale > 0) change_errors.push_back(worst / scale);
      }
      prev_a = ya;
      prev_b = yb;
    }
    const int64_t rows = static_cast<int64_t>(inputs) * logits_ref.dim(0);
    std::sort(errors.begin(), errors.end());
    const double agreement = static_cast<double>(agree) / static_cast<double>(rows);
    std::cout << "[  zoo " << precision_name(precision_) << "] " << member_ << ": top-1 agreement with f32 " << agree
              << "/" << rows << " (" << 100 * agreement << "%; " << close_calls
              << " flips between classes f32 separates by less than twice the logits' error), logits relative error median "
              << errors[errors.size() / 2] << ", worst " << errors.back() << "\n";
    RecordProperty("top1_agreement", std::to_string(agreement));
    RecordProperty("logits_rel_error_worst", std::to_string(errors.back()));
    // bf16 keeps 8 significant bits: a network's logits stray by a few 2^-8, not by tens of
    // percent (a product left in f32 would show ~1e-6; a wrong conversion, ~1).
    EXPECT_LE(errors[errors.size() / 2], 0.1) << member_;
    std::sort(change_errors.begin(), change_errors.end());
    ASSERT_FALSE(change_errors.empty()) << member_ << ": logits that do not depend on the input";
    EXPECT_GT(change_errors[change_errors.size() / 2], 1e-5)
        << member_ << ": as accurate as f32: nothing computed in " << precision_name(precision_) << "?";
    // Random weights can leave classes nearly tied (googlenet's logits at 64x64 differ by less
    // than bf16's rounding): a flip there says nothing. A flip past twice the error is a bug.
    EXPECT_TRUE(far_flips.empty()) << member_ << ":" << far_flips;
  }

 private:
  std::string member_;
  Precision precision_;
};

const bool precision_registered = [] {
  for (const std::string& m : zoo_members())
    ::testing::RegisterTest("ZooPrecision", (m + "_bf16").c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [m]() -> ::testing::Test* { return new ZooPrecisionRun(m, Precision::bf16); });
  return true;
}();

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
