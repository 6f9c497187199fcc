// MatMul/Gemm operands larger than one storage-buffer binding (maxStorageBufferRange: 128 MiB on
// lavapipe, less than torchvision vgg11's 411 MB classifier weight). matmul.cpp binds them in
// aligned windows: B (N,K) (Gemm transB=1, torch Linear) by column blocks of Y, B (K,N) and A
// (K,M) by K windows summed through the fp32 scratch, A (M,K) by row blocks of Y. A test-forced
// small binding limit (vk::set_binding_limit_override) runs every split with small shapes
// (combined with a forced loop cap too); one case runs at the device's real limit. The windows
// are the "tiled" kernel's: these tests disable "texel" (CPU-like devices' GEMM, which reads its
// operands through texel buffers and needs no windows), except the real-limit case, run by both.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>

#include "backends/vulkan/vk_context.hpp"
#include "backends/vulkan/vk_validation.hpp"
#include "runtime/eager.hpp"
#include "tests/custom_test_util.hpp"
#include "tests/test_util.hpp"
#include "tests/vulkan_shared_test.hpp"

namespace porta::test {
namespace {

// Forces the binding limit (and optionally the loop cap) for one test; restores the device's own.
struct Limits {
  explicit Limits(uint64_t bytes, uint64_t loops = 0) {
    vk::set_binding_limit_override(bytes);
    vk::set_loop_limit_override(loops);
  }
  ~Limits() {
    vk::set_binding_limit_override(0);
    vk::set_loop_limit_override(0);
  }
};

Tensor random_input(const Shape& shape, DType dtype = DType::f32) {
  InputSpec s;
  s.shape = shape;
  s.lo = -1;
  s.hi = 1;
  return make_input(s, dtype);
}

// Resolution of one call on vulkan:0 with inputs already there.
// Runs natively on vulkan:0 (asserted) and compares with the float64 reference.
void expect_native_match(const char* name, const std::vector<Tensor>& host, const Attributes& attrs = {}) {
  std::vector<Tensor> dev = to_vk(host);
  Resolution r = resolve_vk(name, dev, attrs);
  EXPECT_EQ(r.path, Path::native) << name << ": " << r.reason;
  std::vector<Tensor> ref = reference_op(name, host, attrs, 1);
  std::vector<Tensor> got = call_op(name, dev, attrs, 1);
  ASSERT_EQ(got.size(), 1u);
  DType dt = host[0].dtype();
  Comparison cmp = compare(got[0], ref[0], dt == DType::f16 ? 4e-3 : default_tolerance(dt));
  EXPECT_TRUE(cmp.ok) << name << " " << dtype_name(dt) << ": " << cmp.message;
}

// Declined on vulkan:0 with a reason containing `why`; the fallback still computes it right.
void expect_declined(const char* name, const std::vector<Tensor>& host, const std::string& why,
                     const Attributes& attrs = {}) {
  std::vector<Tensor> dev = to_vk(host);
  Resolution r = resolve_vk(name, dev, attrs);
  EXPECT_NE(r.path, Path::native) << name;
  EXPECT_NE(r.reason.find(why), std::string::npos) << name << ": " << r.reason;
  std::vector<Tensor> ref = reference_op(name, host, attrs, 1);
  std::vector<Tensor> got = call_op(name, dev, attrs, 1);
  Comparison cmp = compare(got.at(0), ref[0], default_tolerance(host[0].dtype()));
  EXPECT_TRUE(cmp.ok) << name << ": " << cmp.message;
}

const Attributes kTransB{{"transB", int64_t{1}}};

// The windowed "tiled" kernel alone, for one scope.
struct TiledOnly : DisabledKernels {
  TiledOnly() : DisabledKernels(kTexelGemmKernels) {}
};

// Every split kind under a 4 KiB binding, f32 and f16, sizes not multiples of 64, with and
// without a loop cap of two K tiles per dispatch (1221, see vulkan_loop_cap_compute_test.cpp).
TEST(VulkanLargeOperand, EverySplitMatchesReference) {
  REQUIRE_VULKAN();
  TiledOnly tiled;
  for (uint64_t loops : {uint64_t{0}, uint64_t{1221}}) {
    Limits limits(4096, loops);
    for (DType dt : {DType::f32, DType::f16}) {
      SCOPED_TRACE(str(dtype_name(dt), " loop cap ", loops));
      // N split: B (N,K) = 67 x 70 (f32: 18760 bytes; windows of 14 rows, f16: 28).
      Tensor a = random_input({5, 70}, dt), bt = random_input({67, 70}, dt);
      ASSERT_GT(bt.nbytes(), 4096u);
      expect_native_match("Gemm", {a, bt}, kTransB);
      Attributes ab{{"transB", int64_t{1}}, {"alpha", 0.75}, {"beta", -1.5}};
      for (Shape cs : {Shape{67}, Shape{5, 1}, Shape{1}, Shape{5, 67}, Shape{1, 67}})
        expect_native_match("Gemm", {a, bt, random_input(cs, dt)}, ab);
      // A transposed as well (A (K,M) = 70 x 5 is small: not windowed, shifted per block).
      expect_native_match("Gemm", {random_input({70, 5}, dt), bt, random_input({67}, dt)},
                          {{"transA", int64_t{1}}, {"transB", int64_t{1}}});
      // K split: B (K,N) = 150 x 37 in K windows (MatMul 2-D, Gemm transB=0 with C).
      Tensor ak = random_input({6, 150}, dt), bk = random_input({150, 37}, dt);
      expect_native_match("MatMul", {ak, bk});
      expect_native_match("Gemm", {ak, bk, random_input({6, 1}, dt)}, {{"alpha", 2.0}, {"beta", 0.5}});
      expect_native_match("MatMul", {random_input({150}, dt), bk});  // 1-D A: M = 1
      // K split of A (K,M) (transA) and of both A (K,M) and B (K,N) together.
      Tensor at = random_input({333, 7}, dt);
      expect_native_match("Gemm", {at, random_input({333, 5}, dt), random_input({5}, dt)}, {{"transA", int64_t{1}}});
      expect_native_match("Gemm", {at, random_input({333, 9}, dt)}, {{"transA", int64_t{1}}});
      // M split: A (M,K) = 70 x 33 (and a 3-D MatMul A whose batches fold into M).
      Tensor am = random_input({70, 33}, dt), bm = random_input({33, 5}, dt);
      expect_native_match("MatMul", {am, bm});
      expect_native_match("Gemm", {am, bm, random_input({70, 1}, dt)}, {{"beta", 3.0}});
      expect_native_match("Gemm", {am, random_input({5, 33}, dt), random_input({1}, dt)}, kTransB);
      expect_native_match("MatMul", {random_input({2, 35, 33}, dt), bm});
      expect_native_match("MatMul", {random_input({2, 35, 33}, dt), random_input({1, 33, 5}, dt)});
      // M and N split at once (Y 20 x 30 fits, A and B do not), and M split with B's K windows.
      Tensor a2 = random_input({20, 100}, dt);
      if (dt == DType::f32) {
        expect_native_match("Gemm", {a2, random_input({30, 100}, dt), random_input({30}, dt)}, kTransB);
        expect_native_match("MatMul", {a2, random_input({100, 30}, dt)});
      } else {
        Tensor a3 = random_input({20, 210}, dt);
        expect_native_match("Gemm", {a3, random_input({30, 210}, dt), random_input({30}, dt)}, kTransB);
        expect_native_match("MatMul", {a3, random_input({210, 30}, dt)});
      }
    }
  }
}

// What the windows cannot do is declined with the reason, and the CPU runs it.
TEST(VulkanLargeOperand, DeclinesWhatWindowsCannotDo) {
  REQUIRE_VULKAN();
  TiledOnly tiled;
  Limits limits(4096);
  // Batched MatMul with a large B (B has batches, so A's batches do not fold into M).
  expect_declined("MatMul", {random_input({2, 4, 40}), random_input({2, 40, 30})}, "batched MatMul");
  // Y itself larger than one binding.
  expect_declined("MatMul", {random_input({40, 8}), random_input({8, 40})}, "the output Y has 6400 bytes");
  // Not one row of B (N,K) fits a binding.
  expect_declined("Gemm", {random_input({2, 1100}), random_input({3, 1100})}, "not one aligned window", kTransB);
  // The fp32 scratch of a K split larger than one binding (f16 Y fits, its fp32 sums do not).
  expect_declined("MatMul", {random_input({30, 100}, DType::f16), random_input({100, 40}, DType::f16)},
                  "fp32 scratch");
}

TEST(VulkanLargeOperand, ConformanceCasesUnderATinyBinding) {
  REQUIRE_VULKAN();
  TiledOnly tiled;
  for (uint64_t loops : {uint64_t{0}, uint64_t{1221}}) {
    Limits limits(256, loops);
    EXPECT_GT(check_cases({"MatMul", "Gemm"}), 20);
  }
}

// At the device's real limit: a torch Linear (Gemm transB=1) whose weight is just over one
// binding (4100 x 8192 f32 = 134348800 bytes on lavapipe's 134217728), against a float64
// reference computed here.
TEST(VulkanLargeOperand, LinearWeightOverTheRealLimit) {
  REQUIRE_VULKAN();
  const int64_t M = 2, N = 4100, K = 8192;
  const auto& caps = vk::context(0).caps();
  if (static_cast<uint64_t>(N * K * 4) <= caps.max_storage_range)
    GTEST_SKIP() << "the device binds " << caps.max_storage_range << " bytes: B fits one binding";
  std::mt19937 gen(static_cast<uint32_t>(seed()));
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> a(M * K), b(N * K), c(N);
  for (float& v : a) v = dist(gen);
  for (float& v : b) v = dist(gen);
  for (float& v : c) v = dist(gen);
  std::vector<Tensor> dev = {Tensor::from_host(a.data(), {M, K}, DType::f32, kVk),
                             Tensor::from_host(b.data(), {N, K}, DType::f32, kVk),
                             Tensor::from_host(c.data(), {N}, DType::f32, kVk)};
  std::vector<double> ref(M * N);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = c[n];
      const float *ar = &a[m * K], *br = &b[n * K];
      for (int64_t k = 0; k < K; ++k) s += static_cast<double>(ar[k]) * br[k];
      ref[m * N + n] = s;
    }
  for (bool texel : {true, false}) {
    std::optional<TiledOnly> tiled;
    if (!texel) tiled.emplace();
    Resolution r = resolve_vk("Gemm", dev, kTransB);
    ASSERT_EQ(r.path, Path::native) << r.reason;
    if (!texel || caps.type != "cpu") EXPECT_EQ(r.kernel->impl.name, "tiled") << r.reason;
    Tensor got = call_op("Gemm", dev, kTransB, 1).at(0);
    Comparison cmp = compare(got, Tensor::from_values(ref, {M, N}, DType::f64), default_tolerance(DType::f32));
    EXPECT_TRUE(cmp.ok) << r.kernel->impl.name << ": " << cmp.message;
  }
}

}  // namespace
}  // namespace porta::test
