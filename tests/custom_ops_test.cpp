// porta's custom ops (domain ai.porta): every case of every op on every available device runs
// twice — with the device's kernels, and with them disabled through PORTA_DISABLE_KERNELS so
// the composite decomposition runs — and both must match the float64 reference and each other.
// Sessions must report `composite` for disabled kernels, and strict sessions must refuse a CPU
// fallback naming the op, the device and the missing kernel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "runtime/eager.hpp"
#include "runtime/placement.hpp"
#include "tests/custom_test_util.hpp"
#include "tests/model_fixtures.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

struct CustomParam {
  const OpSchema* op;
  OpCase c;
  DType dtype;
  Device device;
  std::string name;
};

std::vector<const OpSchema*> custom_ops() {
  std::vector<const OpSchema*> out;
  for (const OpSchema* op : all_ops())
    if (op->domain == "ai.porta") out.push_back(op);
  return out;
}

std::vector<CustomParam> custom_params() {
  std::vector<CustomParam> out;
  for (const OpSchema* op : custom_ops()) {
    // ElementwiseChain exists inside sessions on devices with a chain kernel (vulkan; none on
    // the cpu), and its kernel declines the broadcasts its texel reads do not cover: the
    // conformance suite runs its cases against its reference (its decomposition), and
    // tests/elementwise_fusion_test.cpp its sessions.
    if (op->name == "ElementwiseChain") continue;
    for (const OpCase& c : op->cases()) {
      // Perf-size cases stay with the conformance and bench runs, except attention's, whose
      // fused-versus-composite agreement matters most at that size.
      if (c.perf && op->name != "ScaledDotProductAttention") continue;
      for (int d = 0; d < kNumDTypes; ++d) {
        DType dt = static_cast<DType>(d);
        if (!dtype_in(c.dtypes, dt)) continue;
        for (Device dev : test_devices()) {
          std::string name = str(op->name, "_", c.name, "_", dtype_name(dt), "_", dev.str());
          for (char& ch : name)
            if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
          out.push_back({op, c, dt, dev, name});
        }
      }
    }
  }
  return out;
}

std::vector<Tensor> to_device(const std::vector<Tensor>& host, Device d) {
  std::vector<Tensor> out;
  for (auto& t : host) out.push_back(t.defined() ? t.to(d) : Tensor());
  return out;
}

// What the dispatcher chooses for this call (on shape probes it would be the same).
Path chosen_path(const OpSchema& op, const std::vector<Tensor>& inputs, const Attributes& attrs, Device d) {
  Attributes full = complete_attributes(op, attrs, "");
  KernelContext call;
  call.op = &op;
  call.attrs = &full;
  call.device = d;
  call.backend = &backend_for(d);
  call.inputs = inputs;
  return resolve_call(call, inputs.at(op.dispatch_input).dtype()).path;
}

// Ops whose only kernel is vulkan's: graph rewrites make them where a device runs them natively
// (runtime/squeeze_excite_fusion.cpp, runtime/gated_linear_fusion.cpp, ...).
const char* const kVulkanFusionTargets[] = {"SqueezeExcite", "GatedLinear", "RmsNormMatMul", "PreActConv"};

// Calls a device's kernel declines by design, for its decomposition: attention's heads over
// 128; on vulkan, SqueezeExcite's products past 2^15 multiply-adds (one workgroup per image
// computes them) and GatedLinear's products of at most 8 rows (the "rows" MatMul's) or whose
// K is no multiple of 4 or F odd (whole texels); PreActConv's channels no multiple of 4.
bool declined_by_design(const CustomParam& p) {
  const std::vector<InputSpec>& in = p.c.inputs;
  if (p.op->name == "ScaledDotProductAttention") return in[0].shape[3] > 128 || in[2].shape[3] > 128;
  if (p.device.type != DeviceType::vulkan) return false;
  if (p.op->name == "SqueezeExcite") return in[1].shape[0] * in[1].shape[1] > (int64_t{1} << 15);
  if (p.op->name == "GatedLinear") {
    const int64_t K = in[0].shape.back(), F = in[1].shape[1];
    return shape_numel(in[0].shape) / std::max<int64_t>(K, 1) <= 8 || K % 4 != 0 || F % 2 != 0;
  }
  if (p.op->name == "PreActConv") return in[0].shape[1] % 4 != 0 || in[0].shape[1] == 0;
  if (p.op->name == "RmsNormMatMul") {
    const int64_t K = in[0].shape.back(), N = in[1].shape[1];
    return shape_numel(in[0].shape) / std::max<int64_t>(K, 1) <= 8 || K % 4 != 0 || N % 4 != 0 || K == 0 || N == 0;
  }
  return false;
}

class CustomOps : public ::testing::TestWithParam<CustomParam> {};

TEST_P(CustomOps, KernelAndCompositeAgree) {
  const CustomParam& p = GetParam();
  std::string why = device_unusable(p.device);
  if (!why.empty()) GTEST_SKIP() << p.device.str() << " unavailable: " << why;
  std::vector<Tensor> host;
  for (const InputSpec& s : p.c.inputs) host.push_back(s.absent ? Tensor() : make_input(s, p.dtype));
  std::vector<DType> out_dtypes;
  std::vector<Tensor> ref = reference_op(p.op->name, host, p.c.attrs, 1, &out_dtypes);
  std::vector<Tensor> dev = to_device(host, p.device);
  double tol = p.c.tolerance > 0 ? p.c.tolerance : default_tolerance(out_dtypes[0]);

  detail::set_poison_outputs(true);
  Path kernel_path = chosen_path(*p.op, dev, p.c.attrs, p.device);
  Tensor with_kernel = call_op(p.op->name, dev, p.c.attrs, 1).at(0).to(Device::cpu());
  Tensor with_composite;
  {
    DisabledKernels off(kernel_key(p.device, p.op->name));
    EXPECT_EQ(path_name(chosen_path(*p.op, dev, p.c.attrs, p.device)), path_name(Path::composite))
        << "with " << kernel_key(p.device, p.op->name) << " disabled";
    with_composite = call_op(p.op->name, dev, p.c.attrs, 1).at(0).to(Device::cpu());
  }
  detail::set_poison_outputs(false);
  // Every backend has a kernel of every op, but for the ops that are fusion targets of vulkan
  // alone (kVulkanFusionTargets), which run their decomposition elsewhere.
  const bool has_kernel = resolve(*p.op, p.device, p.dtype).path == Path::native;
  const bool vulkan_only = std::find(std::begin(kVulkanFusionTargets), std::end(kVulkanFusionTargets), p.op->name) !=
                           std::end(kVulkanFusionTargets);
  if (p.dtype == DType::f32 || p.dtype == DType::u8)
    EXPECT_TRUE(has_kernel || (vulkan_only && p.device.type != DeviceType::vulkan))
        << p.device.str() << " has no kernel of " << p.op->name;
  if (p.device.type == DeviceType::cpu && p.op->name != "ScaledDotProductAttention" && has_kernel)
    EXPECT_EQ(path_name(kernel_path), path_name(Path::native)) << "the cpu kernel should run";
  // Vulkan, CUDA and HIP run their kernel for every f32 (and u8) case but those it declines
  // by design.
  if (p.device.type != DeviceType::cpu && p.dtype != DType::f64 && has_kernel && !declined_by_design(p))
    EXPECT_EQ(path_name(kernel_path), path_name(Path::native)) << "the " << p.device.str() << " kernel should run";

  Comparison k = compare(with_kernel, ref[0], tol), c = compare(with_composite, ref[0], tol);
  EXPECT_TRUE(k.ok) << "kernel (" << path_name(kernel_path) << "): " << k.message << " (seed " << seed() << ")";
  EXPECT_TRUE(c.ok) << "composite: " << c.message << " (seed " << seed() << ")";
  Comparison both = compare(with_kernel, with_composite.cast(DType::f64), 2 * tol);
  EXPECT_TRUE(both.ok) << "kernel vs composite: " << both.message;
}

INSTANTIATE_TEST_SUITE_P(Custom, CustomOps, ::testing::ValuesIn(custom_params()),
                         [](const auto& info) { return info.param.name; });

TEST(CustomOpsRegistry, OpsInDomainWithEverything) {
  std::vector<std::string> names;
  for (const OpSchema* op : custom_ops()) {
    names.push_back(op->name);
    // ElementwiseChain's float64 reference is its decomposition (each step's op's reference).
    EXPECT_TRUE(op->reference || op->name == "ElementwiseChain") << op->name;
    EXPECT_TRUE(op->composite) << op->name;
    EXPECT_TRUE(op->cases) << op->name;
    EXPECT_TRUE(op->flops) << op->name;
    EXPECT_EQ(find_op("ai.porta", op->name), op);
    EXPECT_EQ(find_op("", op->name), nullptr) << op->name << " must not resolve in ONNX's domain";
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"BiasGelu", "ElementwiseChain", "GatedLinear", "NormalizeImage",
                                             "PreActConv", "RmsNorm", "RmsNormMatMul", "RotaryEmbedding",
                                             "ScaledDotProductAttention", "SqueezeExcite", "StridedCopy"}));
}

// The fused attention kernel declines head sizes over 128; the composite runs instead.
TEST(CustomOpsDispatch, AttentionDeclinesLargeHeads) {
  Tensor q = Tensor::zeros({1, 1, 4, 160}, DType::f32);
  std::string why = explain("ScaledDotProductAttention", Device::cpu(), DType::f32);
  EXPECT_NE(why.find("native"), std::string::npos) << why;
  EXPECT_EQ(path_name(chosen_path(*find_op("ScaledDotProductAttention"), {q, q, q}, {}, Device::cpu())),
            path_name(Path::composite));
}

// The same decline on vulkan: the fused shader's tiles hold heads of at most 128 columns.
TEST(CustomOpsDispatch, VulkanAttentionDeclinesLargeHeadsOnly) {
  const Device d{DeviceType::vulkan, 0};
  if (std::string why = device_unusable(d); !why.empty()) GTEST_SKIP() << d.str() << " unavailable: " << why;
  const OpSchema& op = *find_op("ScaledDotProductAttention");
  Tensor small = Tensor::zeros({1, 1, 4, 128}, DType::f32, d), large = Tensor::zeros({1, 1, 4, 129}, DType::f32, d);
  EXPECT_EQ(path_name(chosen_path(op, {small, small, small}, {}, d)), path_name(Path::native));
  EXPECT_EQ(path_name(chosen_path(op, {large, large, large}, {}, d)), path_name(Path::composite));
  EXPECT_EQ(path_name(chosen_path(op, {small, small, large}, {}, d)), path_name(Path::composite));
}

// Inputs that the shared cases do not reach, on every device with a kernel, against the
// float64 reference: f16 storage (RmsNorm, BiasGelu, PreActConv), masks of -inf (a query every key is
// hidden from gives NaN; one that sees some keys is unaffected by the others), keys far
// beyond one tile with a [Skv] mask, and images with more channels than the Vulkan kernel's
// push constants hold (the composite runs and must still be right).
struct ExtraCase {
  std::string op;
  std::vector<Tensor> inputs;
  Attributes attrs;
  double tolerance;
  bool gpu_only = false;  ///< f16 storage: the cpu has no f16 kernel of its own to check
};

InputSpec in_spec(Shape shape, double lo, double hi, std::optional<DType> dtype = std::nullopt) {
  InputSpec s;
  s.shape = std::move(shape);
  s.lo = lo;
  s.hi = hi;
  s.dtype = dtype;
  return s;
}

std::vector<ExtraCase> extra_cases() {
  std::vector<ExtraCase> out;
  auto rand = [](Shape s, DType t, double lo = -2, double hi = 2) { return make_input(in_spec(s, lo, hi), t); };
  for (DType t : {DType::f16, DType::f32}) {
    double tol = t == DType::f16 ? 4e-3 : 2e-5;
    bool gpu_only = t == DType::f16;
    out.push_back({"RmsNorm", {rand({5, 300}, t), rand({300}, t)}, {}, tol, gpu_only});
    out.push_back({"BiasGelu", {rand({7, 129}, t, -6, 6), rand({129}, t)}, {}, tol, gpu_only});
    out.push_back({"BiasGelu", {rand({7, 129}, t, -6, 6), rand({129}, t)}, {{"approximate", std::string("tanh")}}, tol,
                   gpu_only});
    // PreActConv over a 4x4 map (vulkan's "rows" product), 8x8 (the texel GEMM, vec4 texels of
    // X) and 7x7 (by element).
    for (int64_t h : {4, 8, 7})
      out.push_back({"PreActConv",
                     {rand({1, 32, h, h}, t), rand({32}, t, 0.5, 1.5), rand({32}, t, -1, 1),
                      rand({12, 32, 1, 1}, t, -0.3, 0.3), rand({12}, t)},
                     {},
                     tol,
                     gpu_only});
  }
  // Mask rows: query 0 sees no key (NaN), query 1 sees key 3 only, query 2 sees all keys.
  const double ninf = -std::numeric_limits<double>::infinity();
  std::vector<double> mask(3 * 40, 0.0);
  for (int j = 0; j < 40; ++j) mask[j] = ninf, mask[40 + j] = j == 3 ? 0.5 : ninf;
  Tensor m = Tensor::from_values(mask, {3, 40}, DType::f32);
  out.push_back({"ScaledDotProductAttention",
                 {rand({1, 2, 3, 8}, DType::f32), rand({1, 2, 40, 8}, DType::f32), rand({1, 2, 40, 8}, DType::f32), m},
                 {},
                 2e-5});
  out.push_back({"ScaledDotProductAttention",
                 {rand({2, 1, 17, 64}, DType::f32), rand({2, 1, 300, 64}, DType::f32),
                  rand({2, 1, 300, 128}, DType::f32), rand({300}, DType::f32, -4, 4)},
                 {{"causal", int64_t{1}}, {"scale", 0.2}},
                 2e-5});
  std::vector<double> mean(13), stdv(13);
  for (int c = 0; c < 13; ++c) mean[c] = 0.05 * c, stdv[c] = 0.1 + 0.02 * c;
  out.push_back({"NormalizeImage", {make_input(in_spec({1, 3, 5, 13}, 0, 255, DType::u8), DType::u8)},
                 {{"mean", mean}, {"std", stdv}, {"layout", std::string("NHWC")}}, 2e-5});
  return out;
}

TEST(CustomOpsExtra, KernelsMatchReferenceOnEveryDevice) {
  for (Device d : test_devices()) {
    if (!device_unusable(d).empty()) continue;
    for (const ExtraCase& c : extra_cases()) {
      if (c.gpu_only && d.type == DeviceType::cpu) continue;
      std::vector<DType> out_dtypes;
      std::vector<Tensor> ref = reference_op(c.op, c.inputs, c.attrs, 1, &out_dtypes);
      detail::set_poison_outputs(true);
      Tensor got = call_op(c.op, to_device(c.inputs, d), c.attrs, 1).at(0).to(Device::cpu());
      detail::set_poison_outputs(false);
      EXPECT_EQ(got.dtype(), out_dtypes[0]);
      Comparison cmp = compare(got, ref[0], c.tolerance);
      EXPECT_TRUE(cmp.ok) << c.op << " " << dtype_name(c.inputs[0].dtype()) << " " << shape_str(c.inputs[0].shape())
                          << " on " << d.str() << ": " << cmp.message << " (seed " << seed() << ")";
    }
  }
}

TEST(CustomOpsExtra, FullyMaskedQueryGivesNaNOnlyThere) {
  for (Device d : test_devices()) {
    if (!device_unusable(d).empty()) continue;
    // The first attention case: its mask hides every key from query 0.
    const std::vector<ExtraCase> cases = extra_cases();
    const auto it = std::find_if(cases.begin(), cases.end(),
                                 [](const ExtraCase& e) { return e.op == "ScaledDotProductAttention"; });
    ASSERT_NE(it, cases.end());
    const ExtraCase& c = *it;
    std::vector<double> y = call_op(c.op, to_device(c.inputs, d), c.attrs, 1).at(0).to_doubles();
    ASSERT_EQ(y.size(), 2u * 3 * 8);
    for (size_t i = 0; i < y.size(); ++i) {
      bool first_query = (i / 8) % 3 == 0;
      EXPECT_EQ(std::isnan(y[i]), first_query) << "element " << i << " on " << d.str() << ": " << y[i];
    }
  }
}

// Sessions: one-node models of every custom op's first case; the plan says native, then
// composite with the kernel disabled, and both runs agree.
TEST(CustomOpsSession, PlanReportsCompositeWhenKernelDisabled) {
  for (const OpSchema* op : custom_ops()) {
    const OpCase c = op->cases().front();
    std::vector<Tensor> host;
    for (const InputSpec& s : c.inputs) host.push_back(s.absent ? Tensor() : make_input(s, DType::f32));
    Model model = single_node_model(op->name, host, c.attrs);
    auto inputs = single_node_inputs(host);
    for (Device d : test_devices()) {
      if (!device_unusable(d).empty()) continue;
      // A backend without a kernel of the op (ElementwiseChain on the cpu) runs its
      // decomposition only, which the rest of this test compares with a kernel.
      const std::vector<const KernelDef*> kernels = kernels_for(*op);
      if (std::none_of(kernels.begin(), kernels.end(), [&](const KernelDef* k) { return k->backend == d.type; }))
        continue;
      SessionOptions o;
      o.device = d;
      Session native(model, o);
      std::vector<NodePlan> plan = native.plan(inputs);
      ASSERT_EQ(plan.size(), 1u);
      Tensor a = native.run(inputs).at(0).to(Device::cpu());
      if (d.type == DeviceType::cpu) EXPECT_EQ(plan[0].path, Path::native) << op->name << ": " << plan[0].reason;
      DisabledKernels off(kernel_key(d, op->name));
      Session composite(model, o);
      plan = composite.plan(inputs);
      EXPECT_EQ(plan[0].path, Path::composite) << op->name << " on " << d.str() << ": " << plan[0].reason;
      EXPECT_NE(plan[0].reason.find("no " + std::string(device_type_name(d.type)) + " kernel"), std::string::npos)
          << plan[0].reason;
      Tensor b = composite.run(inputs).at(0).to(Device::cpu());
      Comparison cmp = compare(a, b.cast(DType::f64), 4e-5);
      EXPECT_TRUE(cmp.ok) << op->name << " on " << d.str() << ": kernel vs composite: " << cmp.message;
    }
  }
}

// The exported decoder with every custom kernel disabled: all five kinds of ai.porta nodes go
// through their decompositions and still give PyTorch's output.
TEST(CustomOpsSession, DecoderModelThroughComposites) {
  ModelFixture f;
  try {
    f = load_fixture("decoder");
  } catch (const std::exception& e) {
    GTEST_SKIP() << "models/decoder missing: " << e.what();
  }
  Model model = Model::load(f.model_path());
  std::map<std::string, Tensor> inputs;
  for (auto& [name, file] : f.inputs) inputs[name] = read_npy(file);
  Tensor expected = read_npy(f.outputs.at(0).second);
  std::string list;
  for (const OpSchema* op : custom_ops()) list += (list.empty() ? "" : ",") + kernel_key(Device::cpu(), op->name);
  DisabledKernels off(list);
  Session session(model, {});
  int composites = 0;
  for (const NodePlan& p : session.plan(inputs)) {
    const OpSchema* op = find_op(p.op);
    if (op && op->domain == "ai.porta") {
      EXPECT_EQ(p.path, Path::composite) << p.node << ": " << p.reason;
      ++composites;
    }
  }
  EXPECT_EQ(composites, 6);  // 2 RmsNorm, 2 RotaryEmbedding, attention, BiasGelu
  Comparison c = compare(session.run(inputs).at(0), expected.cast(DType::f64), 1e-4);
  EXPECT_TRUE(c.ok) << c.message;
}

// The exported decoder on vulkan:0: every ai.porta node runs its Vulkan kernel; with the
// RmsNorm kernel disabled those nodes run their decomposition on the device instead, and both
// runs give PyTorch's output.
TEST(CustomOpsSession, DecoderModelNativeOnVulkan) {
  const Device d{DeviceType::vulkan, 0};
  if (std::string why = device_unusable(d); !why.empty()) GTEST_SKIP() << d.str() << " unavailable: " << why;
  ModelFixture f;
  try {
    f = load_fixture("decoder");
  } catch (const std::exception& e) {
    GTEST_SKIP() << "models/decoder missing: " << e.what();
  }
  Model model = Model::load(f.model_path());
  std::map<std::string, Tensor> inputs;
  for (auto& [name, file] : f.inputs) inputs[name] = read_npy(file);
  Tensor expected = read_npy(f.outputs.at(0).second);
  SessionOptions o;
  o.device = d;
  auto check = [&](const char* disabled) {
    Session session(model, o);
    int custom = 0;
    for (const NodePlan& p : session.plan(inputs)) {
      const OpSchema* op = find_op(p.op);
      if (!op || op->domain != "ai.porta") continue;
      ++custom;
      Path want = disabled && op->name == disabled ? Path::composite : Path::native;
      EXPECT_EQ(path_name(p.path), path_name(want)) << p.node << " (" << p.op << "): " << p.reason;
    }
    EXPECT_EQ(custom, 6);
    Comparison c = compare(session.run(inputs).at(0).to(Device::cpu()), expected.cast(DType::f64), 1e-4);
    EXPECT_TRUE(c.ok) << (disabled ? disabled : "all kernels") << ": " << c.message;
  };
  check(nullptr);
  DisabledKernels off("vulkan:RmsNorm");
  check("RmsNorm");
}

// Strict mode on a device without a kernel for an op that has no decomposition: the session
// refuses the CPU fallback and names the op, the device and the missing kernel. Without strict
// mode the plan shows the fallback and its copied bytes. Needs a non-cpu device.
TEST(CustomOpsSession, StrictRefusesFallbackNamingOpDeviceKernel) {
  Tensor x = Tensor::from_values({1, -2, 3, -4, 5, -6}, {2, 3}, DType::f32);
  bool ran = false;
  for (Device d : test_devices()) {
    if (d.type == DeviceType::cpu || !device_unusable(d).empty()) continue;
    DisabledKernels off(kernel_key(d, "Relu"));  // Relu has no composite
    Model model = single_node_model("Relu", {x}, {});
    SessionOptions o;
    o.device = d;
    Session lenient(model, o);
    std::vector<NodePlan> plan = lenient.plan(single_node_inputs({x}));
    EXPECT_EQ(plan.at(0).path, Path::fallback);
    EXPECT_EQ(plan.at(0).fallback_bytes, 2 * x.nbytes());
    o.strict = true;
    Session strict(model, o);
    try {
      strict.run(single_node_inputs({x}));
      ADD_FAILURE() << "strict mode ran a CPU fallback on " << d.str();
    } catch (const Unsupported& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("[Relu]"), std::string::npos) << m;
      EXPECT_NE(m.find(d.str()), std::string::npos) << m;
      EXPECT_NE(m.find(str("no ", device_type_name(d.type), " kernel")), std::string::npos) << m;
    }
    ran = true;
  }
  if (!ran) GTEST_SKIP() << "no available non-cpu device: CPU fallback cannot happen on the cpu itself";
}

// keep_values: every node output of the last run is readable by name (porta check uses it).
TEST(CustomOpsSession, KeepValuesExposesIntermediates) {
  ModelFixture f;
  try {
    f = load_fixture("decoder");
  } catch (const std::exception& e) {
    GTEST_SKIP() << "models/decoder missing: " << e.what();
  }
  Model model = Model::load(f.model_path());
  std::map<std::string, Tensor> inputs;
  for (auto& [name, file] : f.inputs) inputs[name] = read_npy(file);
  SessionOptions o;
  o.keep_values = true;
  Session session(model, o);
  std::vector<Tensor> out = session.run(inputs);
  std::map<std::string, Tensor> values = session.values();
  const Graph& g = model.graph();
  for (const Node& n : g.nodes)
    for (int v : n.outputs)
      if (v >= 0) EXPECT_TRUE(values.count(g.values[v].name)) << "value '" << g.values[v].name << "' of " << n.name;
  ASSERT_TRUE(values.count(model.outputs()[0].name));
  Comparison c = compare(values[model.outputs()[0].name], out[0].cast(DType::f64), 0);
  EXPECT_TRUE(c.ok) << c.message;
  // Kept values are not overwritten by later nodes (they do not share pooled buffers).
  std::vector<Tensor> again = session.run(inputs);
  Comparison c2 = compare(session.values()[model.outputs()[0].name], again[0].cast(DType::f64), 0);
  EXPECT_TRUE(c2.ok) << c2.message;
}

// Bad input: each op names itself, what it expected and what it got.
TEST(CustomOpsErrors, ClearMessages) {
  auto f32 = [](Shape s) { return Tensor::zeros(s, DType::f32); };
  auto expect = [](auto fn, const char* kind, std::vector<std::string> parts) {
    try {
      fn();
      ADD_FAILURE() << "no error; expected " << kind << " with " << parts[0];
    } catch (const Error& e) {
      EXPECT_STREQ(e.kind(), kind) << e.what();
      for (auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  };
  expect([&] { call_op("RmsNorm", {f32({2, 8}), f32({7})}); }, "ShapeError", {"[RmsNorm]", "Scale", "8", "7"});
  expect([&] { call_op("RmsNorm", {f32({2, 8}), Tensor::zeros({8}, DType::f64)}); }, "DTypeError", {"[RmsNorm]"});
  expect([&] { call_op("BiasGelu", {f32({2, 8}), f32({8})}, {{"approximate", std::string("fast")}}); },
         "InvalidModel", {"[BiasGelu]", "'none' or 'tanh'", "fast"});
  expect([&] { call_op("BiasGelu", {f32({2, 8}), f32({2, 8})}); }, "ShapeError", {"[BiasGelu]", "Bias", "2x8"});
  expect([&] { call_op("ScaledDotProductAttention", {f32({1, 2, 3, 8}), f32({1, 2, 5, 4}), f32({1, 2, 5, 8})}); },
         "ShapeError", {"[ScaledDotProductAttention]", "K", "1x2x5x4"});
  expect([&] { call_op("ScaledDotProductAttention", {f32({1, 2, 3, 8}), f32({1, 2, 5, 8}), f32({1, 2, 4, 8})}); },
         "ShapeError", {"V", "Skv = 5"});
  expect([&] { call_op("ScaledDotProductAttention", {f32({2, 3, 8}), f32({2, 3, 8}), f32({2, 3, 8})}); },
         "ShapeError", {"Q should be 4-D", "2x3x8"});
  expect([&] {
    call_op("ScaledDotProductAttention", {f32({1, 2, 3, 8}), f32({1, 2, 5, 8}), f32({1, 2, 5, 8}), f32({3, 4})});
  }, "ShapeError", {"Mask", "1x2x3x5", "3x4"});
  expect([&] { call_op("RotaryEmbedding", {f32({1, 2, 3, 7}), f32({3, 3}), f32({3, 3})}); }, "ShapeError",
         {"[RotaryEmbedding]", "even", "1x2x3x7"});
  expect([&] { call_op("RotaryEmbedding", {f32({1, 2, 3, 8}), f32({4, 4}), f32({3, 4})}); }, "ShapeError",
         {"Cos", "3x4", "4x4"});
  Attributes rgb{{"mean", std::vector<double>{0.5, 0.5, 0.5}}, {"std", std::vector<double>{0.2, 0.2, 0.2}}};
  expect([&] { call_op("NormalizeImage", {f32({1, 3, 4, 4})}, rgb); }, "DTypeError", {"[NormalizeImage]", "f32"});
  expect([&] { call_op("NormalizeImage", {Tensor::zeros({1, 4, 4, 4}, DType::u8)}, rgb); }, "InvalidModel",
         {"mean", "4", "got 3"});
  expect([&] { call_op("NormalizeImage", {Tensor::zeros({4, 4, 3}, DType::u8)}, rgb); }, "ShapeError",
         {"4-D", "4x4x3"});
  expect([&] { call_op("NormalizeImage", {Tensor::zeros({1, 3, 2, 2}, DType::u8)}); }, "InvalidModel",
         {"required attribute 'mean'"});
}

// Placement weighing (docs/PLACEMENT.md): attention on a device with MatMul/Transpose/Mul
// kernels but neither a Softmax nor an attention kernel. Greedy first-fit would always run the
// decomposition there (and send the scores through the cpu for Softmax); porta does so only
// while the scores are smaller than Q, K, V and Y together.
TEST(CustomOpsPlacement, CompositeWeighedAgainstWholeOpFallback) {
  const Device device{DeviceType::vulkan, 0};
  // Declared-only kernels (never run: the weighing is a dry run). Kept when real ones exist.
  for (const char* op : {"Transpose", "MatMul", "Mul", "Add"}) {
    KernelDef k;
    k.op = op;
    k.backend = DeviceType::vulkan;
    k.dtypes = kF32;
    k.fn = [](KernelContext&) { throw Unsupported("[test] placement-only kernel"); };
    k.source = "placement_test";
    try {
      register_kernel(std::move(k));
    } catch (const InvalidArgument&) {
    }
  }
  DisabledKernels off("vulkan:Softmax,vulkan:ScaledDotProductAttention");
  const OpSchema& op = *find_op("ScaledDotProductAttention");
  auto weigh = [&](int64_t s, int64_t d) {
    std::vector<ValueInfo> ins(3);
    for (auto& v : ins) v.shape = {1, 8, s, d};
    std::vector<ValueInfo> outs(1);
    outs[0].shape = {1, 8, s, d};
    Attributes a = complete_attributes(op, {{"causal", int64_t{1}}}, "");
    return detail::weigh_composite(op, a, ins, outs, device, DType::f32, false);
  };
  detail::PlacementChoice long_seq = weigh(1024, 64), short_seq = weigh(64, 64);
  detail::unregister_source("placement_test");
  // S=1024: scores 1x8x1024x1024 f32 go to the cpu and back (2 x 32 MiB) vs Q, K, V, Y (4 x 2 MiB).
  EXPECT_EQ(long_seq.composite_bytes, 2u * 8 * 1024 * 1024 * 4);
  EXPECT_EQ(long_seq.fallback_bytes, 4u * 8 * 1024 * 64 * 4);
  EXPECT_TRUE(long_seq.fallback) << long_seq.reason;
  // S=64: scores 2 x 128 KiB vs 4 x 128 KiB: the decomposition stays on the device.
  EXPECT_EQ(short_seq.composite_bytes, 2u * 8 * 64 * 64 * 4);
  EXPECT_FALSE(short_seq.fallback) << short_seq.reason;
  // Strict mode never picks a fallback; the cpu never weighs.
  std::vector<ValueInfo> ins(3);
  for (auto& v : ins) v.shape = {1, 8, 1024, 64};
  EXPECT_FALSE(detail::weigh_composite(op, complete_attributes(op, {}, ""), ins, {ins[0]}, device, DType::f32, true)
                   .fallback);
  EXPECT_FALSE(detail::weigh_composite(op, complete_attributes(op, {}, ""), ins, {ins[0]}, Device::cpu(),
                                       DType::f32, false)
                   .fallback);
}

}  // namespace
}  // namespace porta::test
