// Ops are identified by (domain, name); plugin kernels may decline; attributes are checked
// against the op's schema; plugins declare test cases that `porta test` and `porta bench` run.
// Uses the test_domains plugin (tests/c_api/domain_plugin.c).
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <optional>
#include <set>

#include "porta/plugin.hpp"
#include "porta/porta.h"
#include "runtime/registry.hpp"
#include "tests/custom_test_util.hpp"
#include "tests/test_paths.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

std::string domains_plugin() { return std::string(PORTA_TEST_PLUGIN_DIR) + "/porta_test_plugin_domains.so"; }
void load_domains() { ASSERT_EQ(load_plugin(domains_plugin()), "test_domains"); }

// Runs `f`, which must throw an E whose message contains every string in `mentions`.
template <class E = Error, class F>
void expect_error(F&& f, const std::vector<std::string>& mentions) {
  try {
    f();
    ADD_FAILURE() << "expected an error mentioning " << mentions.at(0);
  } catch (const E& e) {
    for (auto& m : mentions)
      EXPECT_NE(std::string(e.what()).find(m), std::string::npos) << "missing '" << m << "' in: " << e.what();
  }
}


// A one-node model: Y = op(X[, B]) in `domain` (imported at `version`), X f32 of `x_shape`.
struct NodeModel {
  std::string domain, op;
  int64_t version = 1;
  std::vector<int64_t> x_shape = {2, 3};
  bool bias = false;
  std::vector<onnx::AttributeProto> attrs;
  bool f64 = false;  ///< X, B and Y f64 (else f32)
};
std::string write_model(const NodeModel& d, const std::string& file) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(17);
  if (!d.domain.empty()) {
    o = m.add_opset_import();
    o->set_domain(d.domain);
    o->set_version(d.version);
  }
  auto* g = m.mutable_graph();
  g->set_name("node");
  auto* n = g->add_node();
  n->set_op_type(d.op);
  n->set_domain(d.domain);
  n->set_name("node0");
  n->add_input("X");
  if (d.bias) n->add_input("B");
  n->add_output("Y");
  for (auto& a : d.attrs) *n->add_attribute() = a;
  auto declare = [&](auto* list, const char* name, const std::vector<int64_t>& shape) {
    auto* v = list->Add();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(d.f64 ? onnx::TensorProto::DOUBLE : onnx::TensorProto::FLOAT);
    for (int64_t s : shape) tt->mutable_shape()->add_dim()->set_dim_value(s);
  };
  declare(g->mutable_input(), "X", d.x_shape);
  if (d.bias) declare(g->mutable_input(), "B", {d.x_shape.at(1)});
  declare(g->mutable_output(), "Y", d.x_shape);
  std::string path = std::string(PORTA_BINARY_DIR) + "/op_identity_" + file + ".onnx";
  std::ofstream f(path, std::ios::binary);
  m.SerializeToOstream(&f);
  return path;
}

onnx::AttributeProto float_attr(const std::string& name, float v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}
onnx::AttributeProto int_attr(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

Tensor values(std::vector<double> v, Shape shape) { return Tensor::from_values(v, std::move(shape), DType::f32); }

// ---- identity by (domain, name) ------------------------------------------------------------

TEST(OpIdentity, PluginOpBesideTheBuiltinOpOfTheSameName) {
  load_domains();
  const OpSchema* onnx = find_op("", "LeakyRelu");
  const OpSchema* bad = find_op("com.bad", "LeakyRelu");
  ASSERT_NE(onnx, nullptr);
  ASSERT_NE(bad, nullptr);
  EXPECT_NE(onnx, bad);
  EXPECT_EQ(find_op("LeakyRelu"), onnx);  // a plain name: the default domain first
  EXPECT_EQ(find_op("ai.onnx::LeakyRelu"), onnx);
  EXPECT_EQ(find_op("com.bad::LeakyRelu"), bad);
  EXPECT_EQ(bad->qualified_name(), "com.bad::LeakyRelu");
  // The plugin named its kernel "LeakyRelu": it is bound to its own op, not ONNX's.
  auto bad_kernels = kernels_for(*bad);
  ASSERT_EQ(bad_kernels.size(), 1u);
  EXPECT_EQ(bad_kernels[0]->source, "test_domains");
  for (const KernelDef* k : kernels_for(*onnx)) EXPECT_NE(k->source, "test_domains");

  Tensor x = values({-1, 2}, {2});
  EXPECT_EQ(call_op("com.bad::LeakyRelu", {x}).at(0).to_doubles(), (std::vector<double>{-3, 6}));
  std::vector<double> y = call_op("LeakyRelu", {x}).at(0).to_doubles();
  EXPECT_NEAR(y[0], -0.01, 1e-7);
  EXPECT_EQ(y[1], 2);

  // From C.
  porta_tensor in = nullptr, out = nullptr;
  float xs[2] = {-1, 2}, ys[2] = {0, 0};
  int64_t shape[1] = {2};
  ASSERT_EQ(porta_tensor_wrap_host(xs, sizeof xs, PORTA_F32, shape, 1, &in), PORTA_OK);
  ASSERT_EQ(porta_op_call("com.bad::LeakyRelu", &in, 1, nullptr, &out, 1), PORTA_OK) << porta_last_error();
  ASSERT_EQ(porta_tensor_copy_to_host(out, ys, sizeof ys), PORTA_OK);
  EXPECT_EQ(ys[1], 6);
  porta_tensor_free(out);
  EXPECT_EQ(porta_op_call("com.nowhere::LeakyRelu", &in, 1, nullptr, &out, 1), PORTA_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(porta_last_error()).find("ops of that name: LeakyRelu, com.bad::LeakyRelu"), std::string::npos)
      << porta_last_error();
  porta_tensor_free(in);

  // From ONNX: the node's domain picks the op.
  Model model = Model::load(write_model({"com.bad", "LeakyRelu"}, "bad_leaky"));
  Tensor x23 = values({-1, 2, 3, -4, 5, 6}, {2, 3});
  EXPECT_EQ(Session(model).run({{"X", x23}}).at(0).to_doubles(), (std::vector<double>{-3, 6, 9, -12, 15, 18}));
  Model onnx_model = Model::load(write_model({"", "LeakyRelu"}, "onnx_leaky"));
  EXPECT_NEAR(Session(onnx_model).run({{"X", x23}}).at(0).to_doubles()[0], -0.01, 1e-7);

  // The CLI names the plugin's op by its qualified name.
  CliResult r = porta_cli("ops --plugin " + domains_plugin() + " " + write_model({"com.bad", "LeakyRelu"}, "bad_leaky"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("com.bad::LeakyRelu  native  cpu kernel from test_domains"), std::string::npos) << r.output;
}

TEST(OpIdentity, ABuiltinOpAddedLaterDoesNotTakeThePluginsKernels) {
  load_domains();
  const OpSchema* plugin_op = find_op("com.porta.test::Shadowed");
  ASSERT_NE(plugin_op, nullptr);
  if (!find_op("", "Shadowed")) {
    EXPECT_EQ(find_op("Shadowed"), plugin_op);  // the only op of that name, so far
    // porta gains an op of the same name in the default domain, with a kernel named plainly.
    OpSchema s;
    s.name = "Shadowed";
    s.inputs = {"X"};
    s.outputs = {"Y"};
    s.infer = [](InferContext& c) { c.set_output(0, c.shape(0), c.dtype(0)); };
    s.reference = [](KernelContext& c) {
      const double* x = c.in(0).data<double>();
      double* y = c.out(0).data<double>();
      for (int64_t i = 0; i < c.in(0).numel(); ++i) y[i] = 10 * x[i];
    };
    register_op(std::move(s));
    register_kernel_at_load("Shadowed", DeviceType::cpu, kF32, [](KernelContext& c) {
      const float* x = c.in(0).data<float>();
      float* y = c.out(0).data<float>();
      for (int64_t i = 0; i < c.in(0).numel(); ++i) y[i] = 10 * x[i];
    });
  }
  const OpSchema* builtin = find_op("Shadowed");
  ASSERT_NE(builtin, plugin_op);
  Tensor x = values({1, 2}, {2});
  EXPECT_EQ(call_op("com.porta.test::Shadowed", {x}).at(0).to_doubles(), (std::vector<double>{2, 3}));
  EXPECT_EQ(call_op("Shadowed", {x}).at(0).to_doubles(), (std::vector<double>{10, 20}));
  auto ks = kernels_for(*plugin_op);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0]->source, "test_domains");
  ks = kernels_for(*builtin);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0]->source, "builtin");
}

TEST(OpIdentity, APlainNameSeveralCustomDomainsShareIsAmbiguous) {
  load_domains();
  if (!find_op("com.other", "WrongKernel")) {
    OpSchema s;
    s.name = "WrongKernel";
    s.domain = "com.other";
    s.inputs = {"X"};
    s.outputs = {"Y"};
    s.infer = [](InferContext& c) { c.set_output(0, c.shape(0), c.dtype(0)); };
    s.reference = [](KernelContext&) {};
    register_op(std::move(s));
  }
  EXPECT_EQ(find_op("WrongKernel"), nullptr);
  expect_error<Unsupported>([] { call_op("WrongKernel", {values({1}, {1})}); },
                            {"ambiguous", "com.other::WrongKernel", "com.porta.test::WrongKernel"});
  // porta's own ai.porta ops keep their plain names.
  ASSERT_NE(find_op("RmsNorm"), nullptr);
  EXPECT_EQ(find_op("RmsNorm"), find_op("ai.porta::RmsNorm"));
  EXPECT_FALSE(kernels_for("RmsNorm").empty());
}

TEST(OpIdentity, DomainVersionsOutsideTheOpsRangeAreRefused) {
  load_domains();
  NodeModel d{"com.stylegan2", "FusedLeakyReLU", 3, {1, 3, 2, 2}, true, {}};
  expect_error<Unsupported>([&] { Model::load(write_model(d, "fused_v3")); },
                            {"com.stylegan2::FusedLeakyReLU", "imports domain com.stylegan2 version 3", "versions 1 to 2"});
  d.version = 2;
  EXPECT_NO_THROW(Model::load(write_model(d, "fused_v2")));
}

TEST(OpIdentity, UnknownOpsHintAtPluginPath) {
  expect_error<Unsupported>([] { call_op("NoSuchOp", {values({1}, {1})}); }, {"unknown op 'NoSuchOp'", "PORTA_PLUGIN_PATH"});
}

// ---- kernels that decline ---------------------------------------------------------------------

TEST(PluginSupports, ADecliningPluginKernelFallsBackToTheComposite) {
  load_domains();
  const OpSchema* fused = find_op("com.stylegan2::FusedLeakyReLU");
  ASSERT_NE(fused, nullptr);
  Attributes attrs = complete_attributes(*fused, {}, "");
  KernelContext call;
  call.op = fused;
  call.attrs = &attrs;
  call.device = Device::cpu();
  call.backend = &backend_for(call.device);
  Tensor b = make_input(InputSpec{{3}}, DType::f32);
  for (Shape shape : {Shape{2, 3, 4, 5}, Shape{4, 3}}) {
    Tensor x = make_input(InputSpec{shape}, DType::f32);
    call.inputs = {x, b};
    Resolution r = resolve_call(call, DType::f32);
    if (shape.size() == 4) {
      EXPECT_EQ(r.path, Path::native) << r.reason;  // also: supports could not read the data
      ASSERT_NE(r.kernel, nullptr);
      EXPECT_EQ(r.kernel->source, "test_domains");
    } else {
      EXPECT_EQ(r.path, Path::composite) << r.reason;
      EXPECT_NE(r.reason.find("cpu kernel from test_domains declined: takes NCHW inputs (rank 4) only"),
                std::string::npos) << r.reason;
    }
    // Either way the result is the op's.
    Tensor y = call_op("com.stylegan2::FusedLeakyReLU", {x, b}).at(0);
    Tensor ref = reference_op("com.stylegan2::FusedLeakyReLU", {x, b}).at(0);
    Comparison c = compare(y, ref, 2e-5);
    EXPECT_TRUE(c.ok) << shape_str(shape) << ": " << c.message;
  }
  // `porta ops` prints the reason for a model's node.
  CliResult r = porta_cli("ops --plugin " + domains_plugin() + " " +
                          write_model({"com.stylegan2", "FusedLeakyReLU", 1, {4, 3}, true, {}}, "fused_rank2"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("composite  cpu kernel from test_domains declined: takes NCHW inputs (rank 4) only"),
            std::string::npos) << r.output;
}

TEST(PluginSupports, APluginsImplementationsAreTriedByPriority) {
  load_domains();
  const OpSchema* op = find_op("com.porta.test::TwoImpls");
  ASSERT_NE(op, nullptr);
  auto ks = kernels_for(*op);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0]->impl.name, "small");
  EXPECT_EQ(ks[1]->impl.name, "generic");
  KernelContext call;
  Attributes none;
  call.op = op;
  call.attrs = &none;
  call.device = Device::cpu();
  call.backend = &backend_for(call.device);
  call.inputs = {values({1, 2}, {2})};
  Resolution r = resolve_call(call, DType::f32);
  ASSERT_EQ(r.path, Path::native);
  EXPECT_EQ(r.kernel->impl.name, "small");
  call.inputs = {values({1, 2, 3, 4, 5, 6}, {6})};
  r = resolve_call(call, DType::f32);
  ASSERT_EQ(r.path, Path::native);
  EXPECT_EQ(r.kernel->impl.name, "generic");
  EXPECT_NE(r.reason.find("cpu kernel 'small' from test_domains declined: more than 4 elements"), std::string::npos)
      << r.reason;
  EXPECT_EQ(call_op("com.porta.test::TwoImpls", call.inputs).at(0).to_doubles(),
            (std::vector<double>{2, 3, 4, 5, 6, 7}));
  // A third kernel at a priority already taken is refused, naming the one that has it.
  porta_kernel_def k{};
  k.struct_size = sizeof k;
  k.op = "com.porta.test::TwoImpls";
  k.backend = PORTA_DEVICE_CPU;
  k.dtypes = PORTA_DTYPE_BIT(PORTA_F32);
  k.num_inputs = -1;
  k.num_outputs = -1;
  k.fn = [](porta_kernel_context*, void*) { return PORTA_OK; };
  k.priority = 10;
  EXPECT_EQ(porta_register_kernel(&k), PORTA_ERROR_ALREADY_EXISTS);
  EXPECT_NE(std::string(porta_last_error()).find("cpu kernel 'small' from test_domains"), std::string::npos)
      << porta_last_error();
  EXPECT_NE(std::string(porta_last_error()).find("priority 10"), std::string::npos) << porta_last_error();
}

// A decomposition whose ops all fall back to the cpu (f64 on a Vulkan device without f64
// kernels) is reported as running on the cpu, not on the device.
TEST(PluginSupports, ADecompositionRunOnTheCpuIsReportedThere) {
  load_domains();
  const Device d{DeviceType::vulkan, 0};
  if (std::string why = device_unusable(d); !why.empty()) GTEST_SKIP() << d.str() << " unavailable: " << why;
  NodeModel m{"com.stylegan2", "FusedLeakyReLU", 1, {1, 3, 2, 2}, true, {}};
  m.f64 = true;
  Model model = Model::load(write_model(m, "fused_f64"));
  SessionOptions o;
  o.device = d;
  Session session(model, o);
  std::vector<NodePlan> plan = session.plan({{"X", Tensor::zeros({1, 3, 2, 2}, DType::f64)},
                                             {"B", Tensor::zeros({3}, DType::f64)}});
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].path, Path::composite);
  EXPECT_EQ(plan[0].device, Device::cpu()) << plan[0].reason;
  EXPECT_NE(plan[0].reason.find("runs on cpu with copies (vulkan:0 takes none of them in f64)"), std::string::npos)
      << plan[0].reason;
}

// ---- attributes ---------------------------------------------------------------------------

TEST(AttributeChecks, UnknownAndMistypedAttributesNameTheOpAndTheSchema) {
  load_domains();
  Tensor x = values({-1, 2}, {2});
  expect_error<InvalidArgument>([&] { call_op("LeakyRelu", {x}, {{"alpah", 0.1}}); },
                                {"[LeakyRelu]", "unknown attribute 'alpah' (float)", "LeakyRelu has alpha (float)"});
  expect_error<InvalidArgument>([&] { call_op("LeakyRelu", {x}, {{"alpha", int64_t{1}}}); },
                                {"[LeakyRelu]", "attribute 'alpha' should be float, got int"});
  expect_error<InvalidArgument>([&] { call_op("Relu", {x}, {{"alpha", 0.5}}); }, {"Relu has no attributes"});
  Tensor x4 = make_input(InputSpec{{1, 3, 2, 2}}, DType::f32), b = make_input(InputSpec{{3}}, DType::f32);
  expect_error<InvalidArgument>([&] { call_op("com.stylegan2::FusedLeakyReLU", {x4, b}, {{"scale", int64_t{2}}}); },
                                {"[com.stylegan2::FusedLeakyReLU]", "'scale' should be float, got int"});
  // From a model: the node is named too.
  NodeModel d{"", "LeakyRelu", 1, {2, 3}, false, {int_attr("alpha", 1)}};
  expect_error<InvalidModel>([&] { Model::load(write_model(d, "leaky_int_alpha")); },
                             {"[LeakyRelu] node 'node0'", "attribute 'alpha' should be float, got int"});
  d.attrs = {float_attr("alpah", 0.1f)};
  expect_error<InvalidModel>([&] { Model::load(write_model(d, "leaky_typo")); },
                             {"node 'node0'", "unknown attribute 'alpah'", "LeakyRelu has alpha (float)"});
  d = {"com.stylegan2", "FusedLeakyReLU", 1, {1, 3, 2, 2}, true, {float_attr("slope", 0.1f)}};
  expect_error<InvalidModel>([&] { Model::load(write_model(d, "fused_typo")); },
                             {"com.stylegan2::FusedLeakyReLU", "unknown attribute 'slope'",
                              "negative_slope (float), scale (float)"});
}

// Every attribute ONNX defines for an op at the opsets porta reads (13 to 17) is in porta's
// schema with ONNX's type, so a valid model is never refused for an attribute porta would not
// know. (SPARSE_TENSOR, Constant's sparse_value, is refused at import as a type porta lacks.)
TEST(AttributeChecks, EveryOnnxAttributeIsInPortasSchema) {
  auto porta_type = [](onnx::AttributeProto::AttributeType t) -> std::optional<AttrType> {
    switch (t) {
      case onnx::AttributeProto::INT: return AttrType::Int;
      case onnx::AttributeProto::FLOAT: return AttrType::Float;
      case onnx::AttributeProto::STRING: return AttrType::String;
      case onnx::AttributeProto::INTS: return AttrType::Ints;
      case onnx::AttributeProto::FLOATS: return AttrType::Floats;
      case onnx::AttributeProto::STRINGS: return AttrType::Strings;
      case onnx::AttributeProto::TENSOR: return AttrType::TensorValue;
      default: return std::nullopt;
    }
  };
  std::set<std::string> missing, mistyped;
  for (const OpSchema* op : all_ops()) {
    if (!op->domain.empty()) continue;
    for (int opset = 13; opset <= 17; ++opset) {
      const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(op->name, opset, "");
      if (!s) continue;
      for (auto& [name, attr] : s->attributes()) {
        const AttrDef* declared = nullptr;
        for (auto& d : op->attrs)
          if (d.name == name) declared = &d;
        if (!declared) missing.insert(op->name + "." + name);
        else if (auto t = porta_type(attr.type); t && *t != declared->type)
          mistyped.insert(str(op->name, ".", name, " (porta ", attr_type_name(declared->type), ", ONNX ",
                              attr_type_name(*t), ")"));
      }
    }
  }
  std::string list;
  for (auto& m : missing) list += " " + m;
  EXPECT_TRUE(missing.empty()) << "attributes ONNX defines that porta's schemas do not declare:" << list;
  list.clear();
  for (auto& m : mistyped) list += " " + m;
  EXPECT_TRUE(mistyped.empty()) << "attributes porta declares with another type than ONNX:" << list;
}

// ---- outputs, errors, environment -------------------------------------------------------------

TEST(OpIdentity, TooManyOutputsIsAnErrorNotADanglingValue) {
  load_domains();
  Tensor x = values({-1, 2}, {2});
  expect_error<InvalidModel>([&] { call_op("Relu", {x}, {}, 2); }, {"[Relu]", "expected 1 output(s), got 2"});
  expect_error([&] { call_op("com.porta.test::TooMany", {x}); }, {"[Relu]", "expected 1 output(s), got 2"});
}

TEST(OpIdentity, ErrorsNameAPluginByItsRegisteredName) {
  load_domains();
  try {
    call_op("com.porta.test::Fails", {values({1}, {1})});
    ADD_FAILURE() << "expected the kernel's failure";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("cpu kernel from test_domains"), std::string::npos) << m;
    EXPECT_EQ(m.find("porta_test_plugin_domains"), std::string::npos) << m;
  }
}

TEST(DisabledKernels, EntriesThatDisableNothingAreReported) {
  load_domains();  // cpu:com.bad::LeakyRelu is the plugin's kernel
  {
    DisabledKernels off("cpu:Relu, vulkn:Relu, cpu:Reluu, cpu:Softmax:nope, cpu:com.bad::LeakyRelu");
    std::vector<std::string> problems = detail::disabled_kernel_problems();
    std::string all;
    for (auto& p : problems) all += p + "\n";
    EXPECT_EQ(problems.size(), 3u) << all;
    EXPECT_NE(all.find("'vulkn:Relu' disables nothing: no device kind 'vulkn' (known: cpu"), std::string::npos) << all;
    EXPECT_NE(all.find("'cpu:Reluu' disables nothing: no op 'Reluu'"), std::string::npos) << all;
    EXPECT_NE(all.find("Softmax has no cpu implementation 'nope' (it has: rows"), std::string::npos) << all;
    EXPECT_TRUE(kernels_for("Relu").empty() || kernels_for("Relu")[0]->backend != DeviceType::cpu);
  }
  CliResult r = porta_cli("ops " + std::string(PORTA_SOURCE_DIR) + "/models/mlp/model.onnx", "PORTA_DISABLE_KERNELS=cpu:Reluu");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("'cpu:Reluu' disables nothing"), std::string::npos) << r.output;
}

TEST(Cli, HelpListsTheEnvironmentAndTheTestCommand) {
  CliResult r = porta_cli("--help");
  EXPECT_EQ(r.status, 0);
  for (const char* s : {"PORTA_PLUGIN_PATH", "PORTA_DISABLE_KERNELS", "PORTA_MEMORY_LIMIT", "porta test", "domain::Name"})
    EXPECT_NE(r.output.find(s), std::string::npos) << s << " missing from:\n" << r.output;
}

// ---- test cases from a plugin ---------------------------------------------------------------

TEST(PluginCases, PortaTestRunsAPluginsCasesAgainstItsReference) {
  std::string plugin = domains_plugin();
  CliResult r = porta_cli("test --plugin " + plugin + " --op com.stylegan2::FusedLeakyReLU --device cpu");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("nchw"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("native"), std::string::npos) << r.output;     // rank 4: the plugin's kernel
  EXPECT_NE(r.output.find("composite"), std::string::npos) << r.output;  // rank 2: declined
  EXPECT_NE(r.output.find("3 passed, 0 failed"), std::string::npos) << r.output;  // nchw f32, f64; rank2 f32

  r = porta_cli("test --plugin " + plugin + " --op com.porta.test::WrongKernel --device cpu");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("FAIL: over the tolerance"), std::string::npos) << r.output;
  r = porta_cli("test --plugin " + plugin + " --op com.bad::LeakyRelu --device cpu");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("no test cases"), std::string::npos) << r.output;
  r = porta_cli("test --device cpu");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("no op to test"), std::string::npos) << r.output;

  r = porta_cli("bench --plugin " + plugin + " --op com.stylegan2::FusedLeakyReLU --device cpu --min-runs 1 "
                "--min-time 0 --warmup 0 --no-progress");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("FusedLeakyReLU"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("nchw"), std::string::npos) << r.output;
}

TEST(PluginCases, BadCasesAreRefusedAtRegistration) {
  load_domains();
  const OpSchema* fused = find_op("com.stylegan2::FusedLeakyReLU");
  ASSERT_NE(fused, nullptr);
  ASSERT_TRUE(fused->cases);
  std::vector<OpCase> cases = fused->cases();
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].inputs[0].shape, (Shape{2, 3, 4, 5}));
  EXPECT_EQ(cases[0].inputs[1].lo, -1);
  EXPECT_TRUE(cases[0].perf);
  EXPECT_EQ(cases[1].attrs.get_float("negative_slope"), 0.1);
  EXPECT_EQ(cases[1].inputs[0].lo, -2);  // lo == hi: the default range

  // A case with an attribute of the wrong type is refused with the op, case and attribute.
  static const char* const in[] = {"X"};
  static const char* const out[] = {"Y"};
  static const porta_attr_def defs[] = {{"alpha", PORTA_ATTR_FLOAT, 0, 0, 1.0, nullptr}};
  static const int64_t shape[] = {3};
  static const porta_case_input inputs[] = {{shape, 1, -1, 0, 0, 0, nullptr, 0, 0}};
  static const porta_attr_value wrong[] = {{"alpha", PORTA_ATTR_INT, 2, 0, nullptr, nullptr, nullptr, nullptr, 0}};
  static const porta_op_case bad_case[] = {{"wrong", inputs, 1, wrong, 1, PORTA_DTYPE_BIT(PORTA_F32), 1, 0, 0}};
  porta_op_schema s{};
  s.struct_size = sizeof s;
  s.name = "BadCase";
  s.domain = "com.porta.test";
  s.inputs = in;
  s.num_inputs = 1;
  s.outputs = out;
  s.num_outputs = 1;
  s.attrs = defs;
  s.num_attrs = 1;
  s.infer = [](porta_infer_context*, void*) { return PORTA_OK; };
  s.reference = [](porta_kernel_context*, void*) { return PORTA_OK; };
  s.cases = bad_case;
  s.num_cases = 1;
  EXPECT_EQ(porta_register_op(&s), PORTA_ERROR_INVALID_ARGUMENT);
  std::string m = porta_last_error();
  EXPECT_NE(m.find("com.porta.test::BadCase case 'wrong'"), std::string::npos) << m;
  EXPECT_NE(m.find("'alpha' should be float, got int"), std::string::npos) << m;
  EXPECT_EQ(find_op("com.porta.test::BadCase"), nullptr);
}

}  // namespace
}  // namespace porta::test
