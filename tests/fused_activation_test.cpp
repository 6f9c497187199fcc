// Conv's fused activations (ops/fused_activation.hpp, kernels/cpu/fused_activation.hpp): the
// scalar math against the standalone ops' float64 references and ONNX's formulas at the
// bends; the Conv reference against the activation op applied after the plain Conv reference
// (the conformance harness judges kernels by it); the cpu's oneDNN post-ops (and its own loops for Sigmoid, Swish and GELU), in a 1x1 identity
// convolution with plain and with oneDNN-chosen (blocked) layouts, against the scalar math;
// names and cache keys; and the cpu Conv kernel against the reference for each activation it
// declares (KernelDef::fused_activations).
#include <gtest/gtest.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/fused_activation.hpp"
#include "ops/fused_activation.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Act {
  std::string name;
  double alpha = 0.0, beta = 0.0;
};

// Every activation: ONNX's default attributes and others; Clip with both bounds (ReLU6), one,
// none, and min > max.
std::vector<Act> activations() {
  return {{"Relu"},
          {"Clip", 0.0, 6.0},
          {"Clip", -1.5, kInf},
          {"Clip", -kInf, 0.25},
          {"Clip", -kInf, kInf},
          {"Clip", 1.0, -1.0},
          {"LeakyRelu", 0.01},
          {"LeakyRelu", -1.5},
          {"Sigmoid"},
          {"Tanh"},
          {"HardSigmoid", 0.2, 0.5},
          {"HardSigmoid", 1.0 / 6.0, 0.5},
          {"HardSwish"},
          {"Elu", 1.0},
          {"Elu", 0.5},
          {"Swish"},
          {"Gelu"},
          {"GeluTanh"}};
}

Attributes attrs_of(const Act& a) {
  return Attributes{{"porta_activation", a.name}, {"porta_activation_alpha", a.alpha}, {"porta_activation_beta", a.beta}};
}

std::string label(const Act& a) { return str(a.name, "(alpha ", a.alpha, ", beta ", a.beta, ")"); }

// A fine grid over [-8, 8], each bend (0, +-3, Clip's bounds, HardSigmoid's +-2.5 and +-3) with
// its close neighbours, and large magnitudes.
std::vector<double> bend_values() {
  std::vector<double> v;
  for (int i = -512; i <= 512; ++i) v.push_back(i / 64.0);
  for (double b : {-3.0, 3.0, 0.0, 6.0, -1.5, 0.25, 1.0, -1.0, -2.5, 2.5})
    for (double d : {-1e-4, -1e-6, 1e-6, 1e-4}) v.push_back(b + d);
  for (double b : {-100.0, -30.0, -20.0, 20.0, 30.0, 100.0}) v.push_back(b);
  return v;
}

Tensor f64_tensor(const std::vector<double>& v) {
  return Tensor::from_values(v, {static_cast<int64_t>(v.size())}, DType::f64);
}

// The unfused activation: the standalone ops' float64 references applied to y.
Tensor activation_reference(const Act& a, const Tensor& y) {
  if (a.name == "Clip") {
    auto bound = [&](double b) { return std::isinf(b) ? Tensor() : Tensor::scalar(b, y.dtype()); };
    return reference_op("Clip", {y, bound(a.alpha), bound(a.beta)}).at(0);
  }
  if (a.name == "Swish") return reference_op("Mul", {y, reference_op("Sigmoid", {y}).at(0)}).at(0);
  if (a.name == "Gelu" || a.name == "GeluTanh")
    return reference_op("Gelu", {y}, {{"approximate", std::string(a.name == "Gelu" ? "none" : "tanh")}}).at(0);
  Attributes attrs;
  if (a.name == "LeakyRelu" || a.name == "Elu") attrs.set("alpha", a.alpha);
  if (a.name == "HardSigmoid") attrs = Attributes{{"alpha", a.alpha}, {"beta", a.beta}};
  return reference_op(a.name, {y}, attrs).at(0);
}

TEST(FusedActivation, ScalarMathIsTheStandaloneOps) {
  Tensor x = f64_tensor(bend_values());
  for (const Act& a : activations()) {
    opdef::FusedActivation f = opdef::parse_fused_activation(attrs_of(a));
    EXPECT_TRUE(f.active());
    EXPECT_EQ(f.name, a.name);
    std::vector<double> got;
    for (double v : x.to_doubles()) got.push_back(f(v));
    Comparison c = compare(f64_tensor(got), activation_reference(a, x), 0.0);  // bit for bit
    EXPECT_TRUE(c.ok) << label(a) << ": " << c.message;
  }
}

TEST(FusedActivation, FollowsOnnxAtTheBends) {
  auto f = [](const Act& a, double x) { return opdef::parse_fused_activation(attrs_of(a))(x); };
  // HardSwish = x * max(0, min(1, x / 6 + 0.5)): zero up to -3, x from 3.
  EXPECT_EQ(f({"HardSwish"}, -3.0), 0.0);
  EXPECT_EQ(f({"HardSwish"}, -4.0), 0.0);
  EXPECT_EQ(f({"HardSwish"}, 3.0), 3.0);
  EXPECT_EQ(f({"HardSwish"}, 5.0), 5.0);
  EXPECT_DOUBLE_EQ(f({"HardSwish"}, 1.0), 1.0 * (1.0 / 6.0 + 0.5));
  // HardSigmoid = max(0, min(1, alpha * x + beta)).
  EXPECT_EQ(f({"HardSigmoid", 0.2, 0.5}, -2.5), 0.0);
  EXPECT_EQ(f({"HardSigmoid", 0.2, 0.5}, 2.5), 1.0);
  EXPECT_DOUBLE_EQ(f({"HardSigmoid", 0.2, 0.5}, 1.0), 0.7);
  // Elu: alpha * (exp(x) - 1) below 0; LeakyRelu: alpha * x below 0.
  EXPECT_DOUBLE_EQ(f({"Elu", 0.5}, -1.0), 0.5 * (std::exp(-1.0) - 1.0));
  EXPECT_EQ(f({"Elu", 0.5}, 2.0), 2.0);
  EXPECT_DOUBLE_EQ(f({"LeakyRelu", 0.01}, -2.0), -0.02);
  EXPECT_EQ(f({"LeakyRelu", 0.01}, 0.0), 0.0);
  // Clip: lower bound, then upper; min > max gives max everywhere.
  EXPECT_EQ(f({"Clip", 0.0, 6.0}, 7.0), 6.0);
  EXPECT_EQ(f({"Clip", 0.0, 6.0}, -7.0), 0.0);
  EXPECT_EQ(f({"Clip", -kInf, 6.0}, -7.0), -7.0);
  EXPECT_EQ(f({"Clip", 1.0, -1.0}, 0.0), -1.0);
  EXPECT_EQ(f({"Clip", 1.0, -1.0}, 5.0), -1.0);
  EXPECT_EQ(f({"Clip", 1.0, -1.0}, -5.0), -1.0);
  // Sigmoid, Tanh, Swish = x * Sigmoid(x).
  EXPECT_EQ(f({"Sigmoid"}, 0.0), 0.5);
  EXPECT_DOUBLE_EQ(f({"Tanh"}, 0.5), std::tanh(0.5));
  EXPECT_DOUBLE_EQ(f({"Swish"}, 2.0), 2.0 / (1.0 + std::exp(-2.0)));
  EXPECT_EQ(f({"Relu"}, -2.0), 0.0);
  EXPECT_EQ(f({""}, -2.0), -2.0);
  // NaN stays NaN.
  for (const Act& a : activations()) EXPECT_TRUE(std::isnan(f(a, std::nan("")))) << label(a);
}

TEST(FusedActivation, UnknownNamesAreRejected) {
  std::string m = error_message<InvalidArgument>([] {
    opdef::parse_fused_activation(Attributes{{"porta_activation", std::string("Softmax")}});
  });
  for (const char* part : {"[Conv]", "porta_activation", "\"Softmax\"", "\"Relu\"", "\"Clip\"", "\"HardSwish\"", "\"Swish\""})
    EXPECT_NE(m.find(part), std::string::npos) << part << " not in: " << m;
  InputSpec spec;
  spec.shape = {1, 2, 4, 4};
  Tensor x = make_input(spec, DType::f32);
  spec.shape = {3, 2, 3, 3};
  Tensor w = make_input(spec, DType::f32);
  Attributes bad{{"porta_activation", std::string("Softplus")}};
  m = error_message<InvalidArgument>([&] { call_op("Conv", {x, w}, bad); });
  EXPECT_NE(m.find("\"Softplus\""), std::string::npos) << m;
  EXPECT_THROW(reference_op("Conv", {x, w}, bad), InvalidArgument);
  EXPECT_THROW(cpu::fused_post_ops(bad), InvalidArgument);
}

// The Conv reference with each activation is the activation op's reference after the plain
// Conv reference, bit for bit.
TEST(FusedActivation, ConvReferenceAppliesIt) {
  InputSpec spec;
  spec.shape = {2, 3, 6, 7};
  spec.lo = -4;
  spec.hi = 4;
  Tensor x = make_input(spec, DType::f32);
  spec.shape = {5, 3, 3, 3};
  spec.lo = -1;
  spec.hi = 1;
  Tensor w = make_input(spec, DType::f32);
  spec.shape = {5};
  Tensor b = make_input(spec, DType::f32);
  Attributes pads{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  Tensor plain = reference_op("Conv", {x, w, b}, pads).at(0);
  for (const Act& a : activations()) {
    Attributes attrs = attrs_of(a);
    attrs.set("pads", std::vector<int64_t>{1, 1, 1, 1});
    Tensor fused = reference_op("Conv", {x, w, b}, attrs).at(0);
    Comparison c = compare(fused, activation_reference(a, plain), 0.0);
    EXPECT_TRUE(c.ok) << label(a) << ": " << c.message;
  }
}

// Runs a 1x1 convolution with identity weights (dst = post-ops(src)) over `values` in C
// channels, with plain NCHW/OIHW memory or the layouts oneDNN picks (format_tag::any, its jit
// kernels' blocked layouts, reordered in and out). Returns dst and the implementation's name.
std::vector<float> identity_conv(const std::vector<float>& values, const dnnl::post_ops& ops, bool any,
                                 std::string* impl) {
  using dnnl::memory;
  const int64_t c = 16, hw = static_cast<int64_t>((values.size() + c - 1) / c);
  std::vector<float> src(static_cast<size_t>(c * hw), 0.0f), wts(static_cast<size_t>(c * c), 0.0f),
      dst(src.size(), 0.0f);
  std::copy(values.begin(), values.end(), src.begin());
  for (int64_t i = 0; i < c; ++i) wts[static_cast<size_t>(i * c + i)] = 1.0f;
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const auto f32 = memory::data_type::f32;
  memory::desc user_src({1, c, hw, 1}, f32, memory::format_tag::nchw);
  memory::desc user_wts({c, c, 1, 1}, f32, memory::format_tag::oihw);
  auto tag = any ? memory::format_tag::any : memory::format_tag::nchw;
  memory::desc src_d({1, c, hw, 1}, f32, tag), dst_d({1, c, hw, 1}, f32, tag);
  memory::desc wts_d({c, c, 1, 1}, f32, any ? memory::format_tag::any : memory::format_tag::oihw);
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_d,
                                    wts_d, dst_d, {1, 1}, {0, 0}, {0, 0});
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  dnnl::convolution_forward::primitive_desc pd(d, attr, eng);
  *impl = pd.impl_info_str();
  auto into = [&](const memory::desc& want, memory user) {
    if (want == user.get_desc()) return user;
    memory m(want, eng);
    dnnl::reorder(user, m).execute(strm, user, m);
    return m;
  };
  memory src_m = into(pd.src_desc(), memory(user_src, eng, src.data()));
  memory wts_m = into(pd.weights_desc(), memory(user_wts, eng, wts.data()));
  memory user_dst(user_src, eng, dst.data());
  memory dst_m = pd.dst_desc() == user_src ? user_dst : memory(pd.dst_desc(), eng);
  dnnl::convolution_forward(pd).execute(strm, {{DNNL_ARG_SRC, src_m}, {DNNL_ARG_WEIGHTS, wts_m}, {DNNL_ARG_DST, dst_m}});
  if (dst_m != user_dst) dnnl::reorder(dst_m, user_dst).execute(strm, dst_m, user_dst);
  strm.wait();
  dst.resize(values.size());
  return dst;
}

TEST(FusedActivation, PostOpsAndLoopsMatchTheScalarMath) {
  std::vector<float> values;
  for (double v : bend_values()) values.push_back(static_cast<float>(v));
  for (const Act& a : activations()) {
    opdef::FusedActivation f = opdef::parse_fused_activation(attrs_of(a));
    for (bool any : {false, true}) {
      std::string impl;
      std::vector<float> got;
      try {
        got = identity_conv(values, cpu::fused_post_ops(attrs_of(a)), any, &impl);
        // Activations the kernel applies after the primitive: no post-op, then porta's loop.
        opdef::FusedActivation after = cpu::activation_after_primitive(attrs_of(a));
        EXPECT_EQ(after.active(), cpu::fused_post_ops(attrs_of(a)).len() == 0) << label(a);
        cpu::apply_activation(after, got.data(), static_cast<int64_t>(got.size()));
      } catch (const dnnl::error& e) {
        ADD_FAILURE() << label(a) << (any ? " (any)" : " (plain)") << ": oneDNN refused: " << e.what();
        continue;
      }
      int bad = 0;
      for (size_t i = 0; i < values.size() && bad < 5; ++i) {
        double want = f(static_cast<double>(values[i]));
        double tol = 1e-5 * std::max(1.0, std::abs(want));
        if (!(std::abs(got[i] - want) <= tol)) {
          ++bad;
          ADD_FAILURE() << label(a) << " on " << impl << ": x = " << values[i] << " gives " << got[i] << ", want "
                        << want;
        }
      }
    }
  }
  // No activation: no post-op.
  EXPECT_EQ(cpu::fused_post_ops(Attributes{}).len(), 0);
  EXPECT_EQ(cpu::fused_post_ops(Attributes{{"porta_activation", std::string()}}).len(), 0);
}

TEST(FusedActivation, CacheKeyNamesEveryParameterExactly) {
  EXPECT_EQ(cpu::fused_activation_key(Attributes{}), "");
  std::vector<std::string> keys;
  for (const Act& a : activations()) keys.push_back(cpu::fused_activation_key(attrs_of(a)));
  keys.push_back(cpu::fused_activation_key(attrs_of({"LeakyRelu", std::nextafter(0.01, 1.0)})));
  keys.push_back(cpu::fused_activation_key(attrs_of({"LeakyRelu", 0.0})));
  keys.push_back(cpu::fused_activation_key(attrs_of({"Elu", 0.01})));
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_FALSE(keys[i].empty());
    for (size_t j = 0; j < i; ++j) EXPECT_NE(keys[i], keys[j]) << i << " and " << j;
  }
  // Attributes the activation ignores still count (the key is exact, never too coarse).
  EXPECT_EQ(cpu::fused_activation_key(attrs_of({"Relu"})), cpu::fused_activation_key(attrs_of({"Relu"})));
}

const KernelDef* cpu_conv_kernel() {
  for (const KernelDef* k : kernels_for("Conv"))
    if (k->backend == DeviceType::cpu && dtype_in(k->dtypes, DType::f32)) return k;
  return nullptr;
}

bool contains(const std::vector<std::string>& names, const std::string& n) {
  return std::find(names.begin(), names.end(), n) != names.end();
}

// The cpu implements every name it offers, and its Conv kernel declares only names the cpu
// implements, plus the fused residual input (tests/residual_fusion_test.cpp).
TEST(FusedActivation, CpuDeclaresWhatItImplements) {
  for (const std::string& n : cpu::cpu_fused_activations()) {
    EXPECT_TRUE(contains(opdef::fused_activation_names(), n)) << n;
    EXPECT_FALSE(n.empty());
    EXPECT_NO_THROW(cpu::fused_post_ops(attrs_of({n, 0.0, 1.0}))) << n;
  }
  const KernelDef* k = cpu_conv_kernel();
  ASSERT_NE(k, nullptr);
  for (const std::string& n : k->fused_activations)
    EXPECT_TRUE(contains(cpu::cpu_fused_activations(), n) || n == "porta_residual") << n;
}

// The cpu Conv kernel with each activation it declares against the reference: 3x3 with 16
// channels (oneDNN's blocked jit kernels), 3x3 with 64 channels and 2^24 multiply-adds
// (Winograd where available, on up to two threads) and grouped (gemm-based).
TEST(FusedActivation, CpuConvKernelMatchesReference) {
  const KernelDef* k = cpu_conv_kernel();
  ASSERT_NE(k, nullptr);
  struct Shapes {
    Shape x, w;
    int64_t group;
  };
  for (const Shapes& s : {Shapes{{2, 16, 9, 8}, {16, 16, 3, 3}, 1}, Shapes{{2, 64, 18, 16}, {64, 64, 3, 3}, 1},
                          Shapes{{1, 4, 7, 6}, {6, 2, 3, 3}, 2}}) {
    InputSpec spec;
    spec.shape = s.x;
    spec.lo = -2;
    spec.hi = 2;
    Tensor x = make_input(spec, DType::f32);
    spec.shape = s.w;
    spec.lo = -0.4;
    spec.hi = 0.4;
    Tensor w = make_input(spec, DType::f32);
    spec.shape = {s.w[0]};
    Tensor b = make_input(spec, DType::f32);
    for (const Act& a : activations()) {
      if (!contains(k->fused_activations, a.name)) continue;
      Attributes attrs = attrs_of(a);
      attrs.set("pads", std::vector<int64_t>{1, 1, 1, 1});
      attrs.set("group", s.group);
      Tensor got = call_op("Conv", {x, w, b}, attrs).at(0);
      Comparison c = compare(got, reference_op("Conv", {x, w, b}, attrs).at(0), 1e-5);
      EXPECT_TRUE(c.ok) << label(a) << " X " << shape_str(s.x) << ": " << c.message;
    }
  }
}

}  // namespace
}  // namespace porta::test
