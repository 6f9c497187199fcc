// Several implementations of one op on one backend: the dispatcher tries them by priority,
// skips those whose `supports` declines the call, and its reason names the one chosen and why
// the earlier ones declined.
#include "runtime/registry.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// y = x * tag, where tag says which implementation ran.
KernelFn scale_by(double tag) {
  return [tag](KernelContext& ctx) {
    const float* x = ctx.in(0).data<float>();
    float* y = ctx.out(0).data<float>();
    for (int64_t i = 0; i < ctx.in(0).numel(); ++i) y[i] = x[i] * static_cast<float>(tag);
  };
}

KernelDef impl_kernel(const std::string& op, const char* name, int priority, double tag, SupportsFn supports = nullptr) {
  KernelDef k;
  k.op = op;
  k.backend = DeviceType::cpu;
  k.dtypes = kF32;
  k.fn = scale_by(tag);
  k.supports = std::move(supports);
  k.impl = {name, priority};
  k.source = "kernel_order_test";
  return k;
}

// An op of this test: y has x's shape.
const OpSchema& test_op(const std::string& name) {
  if (const OpSchema* op = find_op(name)) return *op;
  OpSchema op;
  op.name = name;
  op.domain = "test.porta";
  op.inputs = {"X"};
  op.outputs = {"Y"};
  op.infer = [](InferContext& ctx) { ctx.set_output(0, ctx.shape(0), ctx.dtype(0)); };
  op.reference = [](KernelContext& ctx) {
    for (int64_t i = 0; i < ctx.in(0).numel(); ++i) ctx.out(0).data<double>()[i] = ctx.in(0).data<double>()[i];
  };
  register_op(op);
  return *find_op(name);
}

struct Unregister {
  ~Unregister() { detail::unregister_source("kernel_order_test"); }
};

TEST(KernelOrder, TriedByPriorityAndDeclinesAreNamed) {
  const OpSchema& op = test_op("TestKernelOrder");
  Unregister cleanup;
  // Registered lowest first: the order comes from the priorities, not from registration.
  register_kernel(impl_kernel(op.name, "general", 0, 3.0));
  register_kernel(impl_kernel(op.name, "small", 5, 2.0, [](const KernelContext& c) {
    return c.in(0).numel() <= 4 ? std::string() : str("takes up to 4 elements, got ", c.in(0).numel());
  }));
  std::vector<const KernelDef*> ks = kernels_for(op);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0]->impl.name, "small");
  EXPECT_EQ(ks[1]->impl.name, "general");

  Tensor small = Tensor::from_values({1, 2, 3}, {3}, DType::f32);
  EXPECT_EQ(call_op(op.name, {small})[0].to_doubles(), (std::vector<double>{2, 4, 6}));
  Tensor large = Tensor::from_values({1, 1, 1, 1, 1, 1}, {6}, DType::f32);
  EXPECT_EQ(call_op(op.name, {large})[0].to_doubles(), std::vector<double>(6, 3.0));

  KernelContext call;
  call.op = &op;
  call.device = Device::cpu();
  call.inputs = {large};
  Resolution r = resolve_call(call, DType::f32);
  ASSERT_EQ(r.path, Path::native);
  EXPECT_EQ(r.kernel->impl.name, "general");
  EXPECT_TRUE(contains(r.reason, "cpu kernel 'general' from kernel_order_test for f32")) << r.reason;
  EXPECT_TRUE(contains(r.reason, "cpu kernel 'small' from kernel_order_test declined: takes up to 4 elements, got 6"))
      << r.reason;
}

TEST(KernelOrder, SamePriorityForOverlappingDtypesIsRefused) {
  const OpSchema& op = test_op("TestKernelOrderClash");
  Unregister cleanup;
  register_kernel(impl_kernel(op.name, "first", 1, 1.0));
  try {
    register_kernel(impl_kernel(op.name, "second", 1, 1.0));
    ADD_FAILURE() << "a second kernel with the same priority was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(contains(e.what(), "'TestKernelOrderClash' with dtypes f32 and priority 1 is already registered"))
        << e.what();
    EXPECT_TRUE(contains(e.what(), "needs a name and a different priority")) << e.what();
  }
  // Another priority is another implementation.
  EXPECT_NO_THROW(register_kernel(impl_kernel(op.name, "second", 2, 1.0)));
  EXPECT_EQ(kernels_for(op).size(), 2u);
}

TEST(KernelOrder, EveryImplementationDecliningMeansNoNativeKernel) {
  const OpSchema& op = test_op("TestKernelOrderNone");
  Unregister cleanup;
  register_kernel(impl_kernel(op.name, "a", 1, 1.0, [](const KernelContext&) { return std::string("never"); }));
  register_kernel(impl_kernel(op.name, "b", 0, 1.0, [](const KernelContext&) { return std::string("nor this"); }));
  try {
    call_op(op.name, {Tensor::zeros({2}, DType::f32)});
    ADD_FAILURE() << "no error";
  } catch (const Unsupported& e) {
    EXPECT_TRUE(contains(e.what(), "'a' from kernel_order_test declined: never")) << e.what();
    EXPECT_TRUE(contains(e.what(), "'b' from kernel_order_test declined: nor this")) << e.what();
  }
}

// The built-in case: cpu Softmax has porta's row loop for the innermost axis and oneDNN for
// the others; both give the reference's answer.
TEST(KernelOrder, CpuSoftmaxPicksRowsOrOneDnn) {
  const OpSchema* op = find_op("Softmax");
  ASSERT_NE(op, nullptr);
  Tensor x = Tensor::from_values({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f32);
  for (int64_t axis : {1, 0}) {
    Attributes attrs{{"axis", axis}};
    KernelContext call;
    call.op = op;
    call.attrs = &attrs;
    call.device = Device::cpu();
    call.inputs = {x};
    Resolution r = resolve_call(call, DType::f32);
    ASSERT_EQ(r.path, Path::native);
    EXPECT_EQ(r.kernel->impl.name, axis == 1 ? "rows" : "onednn") << r.reason;
    if (axis == 0) EXPECT_TRUE(contains(r.reason, "cpu kernel 'rows' declined: the axis is not the innermost one"))
        << r.reason;
    std::vector<double> got = call_op("Softmax", {x}, attrs)[0].to_doubles();
    std::vector<double> want = reference_op("Softmax", {x}, attrs)[0].to_doubles();
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "axis " << axis << " at " << i;
  }
}

}  // namespace
}  // namespace porta::test
