// The SIMT emulator itself (backends/gpu_emu): kernels written as for CUDA, compiled here as
// plain C++ through backends/cuda/compat.hpp (this file is built with -DPORTA_GPU_EMU=1, only
// when the gpu_emu backend is), launched on gpu_emu:0 (warp 32) and gpu_emu:1 (warp 64).
// Barriers, warp collectives, shared memory, and the errors a GPU would hang on or hide.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "backends/cuda/gpu_runtime.hpp"
#include "kernels/cuda/shared_memory.cuh"
#include "porta/porta.hpp"
#include "tests/test_util.hpp"

namespace porta::porta_gpu_emu {
namespace {

// ---- kernels ------------------------------------------------------------------------------------

// out[t] = the value thread t+1 stored before the barrier: right only if every thread's store
// happens before any thread's load.
__global__ void rotate_through_shared(int* out) {
  __shared__ int slots[1024];
  const int t = threadIdx.x, n = blockDim.x;
  slots[t] = 1000 * blockIdx.x + t;
  __syncthreads();
  out[blockIdx.x * n + t] = slots[(t + 1) % n];
}

// The same without the barrier (a bug): the neighbours' slots may not be written yet.
__global__ void neighbours_without_barrier(int* out) {
  int* slots = dynamic_shared<int>();
  const int t = threadIdx.x, n = blockDim.x;
  slots[t] = t;
  out[2 * (blockIdx.x * n + t)] = slots[(t + 1) % n];
  out[2 * (blockIdx.x * n + t) + 1] = slots[(t + n - 1) % n];
}

// Half the block waits at a barrier the other half never reaches.
__global__ void divergent_barrier(int* out) {
  if (threadIdx.x < blockDim.x / 2) __syncthreads();
  out[threadIdx.x] = 1;
}

// The common "if (i >= n) return;" before a barrier: undefined on a GPU.
__global__ void exit_before_barrier(int* out, int n) {
  if (static_cast<int>(threadIdx.x) >= n) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}

// Every lane: the sum of lane numbers over its warp, through compat.hpp's warp_reduce.
__global__ void warp_sums(int* out) {
  const int lane = threadIdx.x % warpSize;
  out[threadIdx.x] = warp_reduce(lane, [](int a, int b) { return a + b; });
  out[blockDim.x + threadIdx.x] = warpSize;
}

// A reduction written for 32-lane warps: offsets 16, 8, 4, 2, 1.
__global__ void warp_sums_assuming_32(int* out) {
  int v = threadIdx.x % warpSize;
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  out[threadIdx.x] = v;
}

// A reduction written for 64-lane wavefronts: offsets 32 ... 1.
__global__ void warp_sums_assuming_64(int* out) {
  int v = threadIdx.x % warpSize;
  for (int offset = 32; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  out[threadIdx.x] = v;
}

// down, up, broadcast from lane 3, and a ballot of odd lanes.
__global__ void shuffle_kinds(long long* out) {
  const int lane = threadIdx.x % warpSize, n = blockDim.x;
  const long long v = 100 + lane;
  out[threadIdx.x] = __shfl_down_sync(0xffffffffu, v, 1);
  out[n + threadIdx.x] = __shfl_up_sync(0xffffffffu, v, 2);
  out[2 * n + threadIdx.x] = __shfl_sync(0xffffffffu, v, 3);
  out[3 * n + threadIdx.x] = static_cast<long long>(__ballot_sync(0xffffffffu, lane % 2 == 1));
  out[4 * n + threadIdx.x] = __any_sync(0xffffffffu, lane == 5) + 2 * __all_sync(0xffffffffu, lane < 100);
}

// Per-block static and dynamic shared memory: each block sums its own values.
__global__ void block_sums(const float* x, float* out, int per_block) {
  __shared__ float total;
  float* scratch = dynamic_shared<float>();
  if (threadIdx.x == 0) total = 0;
  scratch[threadIdx.x] = x[blockIdx.x * per_block + threadIdx.x];
  __syncthreads();
  if (threadIdx.x == 0)
    for (int i = 0; i < per_block; ++i) total += scratch[i];
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = total;
}

// Only block 0 fills its shared arrays; every block reads them (a bug in blocks 1..).
__global__ void read_shared_written_by_block_0(float* out) {
  PORTA_SHARED(float, slots, [64]);
  float* dynamic_slots = dynamic_shared<float>();
  if (blockIdx.x == 0) {
    slots[threadIdx.x] = 7.0f;
    dynamic_slots[threadIdx.x] = 8.0f;
  }
  __syncthreads();
  out[2 * (blockIdx.x * blockDim.x + threadIdx.x)] = slots[threadIdx.x];
  out[2 * (blockIdx.x * blockDim.x + threadIdx.x) + 1] = dynamic_slots[threadIdx.x];
}

// Reads what fresh dynamic shared memory holds.
__global__ void read_fresh_shared(unsigned char* out) { out[threadIdx.x] = dynamic_shared<unsigned char>()[threadIdx.x]; }

__global__ void write_at(float* p, int index) {
  if (threadIdx.x == 0) p[index] = 1.0f;
}

// A load at p[index] (one past the end, one before the start: out-of-bounds reads).
__global__ void read_at(const float* p, int index, float* out) {
  if (threadIdx.x == 0) out[0] = p[index];
}
__global__ void read_byte_at(const unsigned char* p, int index, unsigned char* out) {
  if (threadIdx.x == 0) out[0] = p[index];
}

__global__ void count_blocks(unsigned long long* counter) {
  if (threadIdx.x == 0 && threadIdx.y == 0) atomicAdd(counter, 1ull);
}

// ---- helpers ------------------------------------------------------------------------------------

Device emu_device(int index) {
  std::optional<DeviceType> t = find_device_type("gpu_emu");
  return {t.value_or(DeviceType::cpu), index};
}

template <typename T>
std::vector<T> to_vector(const Tensor& t) {
  std::vector<T> v(static_cast<size_t>(t.numel()));
  Tensor host = t.to(Device::cpu());
  std::memcpy(v.data(), host.storage()->handle(), v.size() * sizeof(T));
  return v;
}

template <typename T>
T* ptr(Tensor& t) {
  return static_cast<T*>(t.storage()->handle()) + t.offset();
}

class GpuEmu : public ::testing::TestWithParam<int> {
 protected:
  Device device() const { return emu_device(GetParam()); }
  int warp() const { return GetParam() == 0 ? 32 : 64; }
  cudaStream_t s() const { return stream(GetParam()); }
};

// The sanitizer build poisons the memory around every allocation for AddressSanitizer, which
// reports a kernel's out-of-bounds access itself and ends the process (halt_on_error): there
// the checks below run the launch in a death test and look for its report and the kernel.
#if defined(__SANITIZE_ADDRESS__)
#define PORTA_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PORTA_TEST_ASAN 1
#endif
#endif

std::string launch_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const BackendError& e) {
    return e.what();
  }
  return "";
}

// ---- tests --------------------------------------------------------------------------------------

TEST_P(GpuEmu, BarrierOrdersEveryStoreBeforeEveryLoad) {
  const int blocks = 5, threads = 96;
  Tensor out = Tensor::empty({blocks * threads}, DType::i32, device());
  launch<rotate_through_shared>(blocks, threads, 0, s(), ptr<int>(out));
  std::vector<int> got = to_vector<int>(out);
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < threads; ++t)
      ASSERT_EQ(got[b * threads + t], 1000 * b + (t + 1) % threads) << "block " << b << " thread " << t;
}

TEST_P(GpuEmu, AMissingBarrierReadsStaleDataWhicheverNeighbourStored) {
  // Threads run in ascending order in one block and descending in the next: a load of the
  // next thread's slot and one of the previous thread's slot each come too early somewhere.
  const int blocks = 2, threads = 64;
  Tensor out = Tensor::empty({2 * blocks * threads}, DType::i32, device());
  launch<neighbours_without_barrier>(blocks, threads, threads * sizeof(int), s(), ptr<int>(out));
  std::vector<int> got = to_vector<int>(out);
  int stale_next = 0, stale_previous = 0;
  for (int i = 0; i < blocks * threads; ++i) {
    const int t = i % threads;
    if (t == 0 || t == threads - 1) continue;  // the wrap-around is stale in either order
    stale_next += got[2 * i] != (t + 1) % threads;
    stale_previous += got[2 * i + 1] != (t + threads - 1) % threads;
  }
  EXPECT_GT(stale_next, 0);
  EXPECT_GT(stale_previous, 0);
}

TEST_P(GpuEmu, BarrierNotReachedByAllIsAnErrorNamingTheKernel) {
  Tensor out = Tensor::empty({64}, DType::i32, device());
  std::string m = launch_error([&] { launch<divergent_barrier>(2, 64, 0, s(), ptr<int>(out)); });
  for (const char* part : {"divergent_barrier", "deadlock", "threads 0-31 wait at __syncthreads", "32-63 have exited"})
    EXPECT_NE(m.find(part), std::string::npos) << part << " not in: " << m;
  m = launch_error([&] { launch<exit_before_barrier>(1, 40, 0, s(), ptr<int>(out), 10); });
  for (const char* part : {"exit_before_barrier", "threads 0-9 wait at __syncthreads", "10-39 have exited"})
    EXPECT_NE(m.find(part), std::string::npos) << part << " not in: " << m;
  // The device keeps working after an abandoned block.
  launch<rotate_through_shared>(1, 64, 0, s(), ptr<int>(out));
  EXPECT_EQ(to_vector<int>(out)[63], 0);
}

TEST_P(GpuEmu, WarpReduceAtTheDevicesWidth) {
  const int threads = 256;
  Tensor out = Tensor::empty({2 * threads}, DType::i32, device());
  launch<warp_sums>(1, threads, 0, s(), ptr<int>(out));
  std::vector<int> got = to_vector<int>(out);
  const int w = warp(), expected = w * (w - 1) / 2;
  for (int t = 0; t < threads; ++t) {
    ASSERT_EQ(got[t], expected) << "thread " << t;
    ASSERT_EQ(got[threads + t], w);
  }
}

TEST_P(GpuEmu, CodeThatAssumesOneWarpWidthFailsAtTheOther) {
  Tensor out = Tensor::empty({128}, DType::i32, device());
  if (warp() == 64) {
    // Offsets up to 16 only combine each half of a wavefront: a wrong sum, visible.
    launch<warp_sums_assuming_32>(1, 128, 0, s(), ptr<int>(out));
    std::vector<int> got = to_vector<int>(out);
    EXPECT_EQ(got[0], 31 * 32 / 2);  // lanes 0-31 only, not 0-63
    EXPECT_NE(got[0], 63 * 64 / 2);
  } else {
    std::string m = launch_error([&] { launch<warp_sums_assuming_64>(1, 128, 0, s(), ptr<int>(out)); });
    for (const char* part : {"warp_sums_assuming_64", "lane mask 32 reaches past the 32-lane warp"})
      EXPECT_NE(m.find(part), std::string::npos) << part << " not in: " << m;
  }
}

TEST_P(GpuEmu, ShuffleKindsAndVotes) {
  const int n = 128, w = warp();
  Tensor out = Tensor::empty({5 * n}, DType::i64, device());
  launch<shuffle_kinds>(1, n, 0, s(), ptr<long long>(out));
  std::vector<int64_t> got = to_vector<int64_t>(out);
  uint64_t odd = 0;
  for (int l = 1; l < w; l += 2) odd |= uint64_t{1} << l;
  for (int t = 0; t < n; ++t) {
    const int lane = t % w;
    EXPECT_EQ(got[t], 100 + (lane + 1 < w ? lane + 1 : lane)) << "down, thread " << t;
    EXPECT_EQ(got[n + t], 100 + (lane >= 2 ? lane - 2 : lane)) << "up, thread " << t;
    EXPECT_EQ(got[2 * n + t], 103) << "broadcast, thread " << t;
    EXPECT_EQ(static_cast<uint64_t>(got[3 * n + t]), odd) << "ballot, thread " << t;
    EXPECT_EQ(got[4 * n + t], 3) << "any/all, thread " << t;
  }
}

TEST_P(GpuEmu, ShuffleInAPartialWarpIsAnError) {
  Tensor out = Tensor::empty({2 * 48}, DType::i32, device());
  std::string m = launch_error([&] { launch<warp_sums>(1, warp() + 16, 0, s(), ptr<int>(out)); });
  for (const char* part : {"warp_sums", "which does not exist", "partial"})
    EXPECT_NE(m.find(part), std::string::npos) << part << " not in: " << m;
}

TEST_P(GpuEmu, SharedMemoryIsPerBlock) {
  const int blocks = 37, per_block = 64;
  std::vector<float> x(blocks * per_block);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7);
  Tensor in = Tensor::from_host(x.data(), {blocks * per_block}, DType::f32, device());
  Tensor out = Tensor::empty({blocks}, DType::f32, device());
  launch<block_sums>(blocks, per_block, per_block * sizeof(float), s(), ptr<const float>(in), ptr<float>(out),
                     per_block);
  std::vector<float> got = to_vector<float>(out);
  for (int b = 0; b < blocks; ++b) {
    float want = 0;
    for (int i = 0; i < per_block; ++i) want += x[b * per_block + i];
    EXPECT_EQ(got[b], want) << "block " << b;
  }
}

TEST_P(GpuEmu, FreshMemoryIsPoisoned) {
  Tensor t = Tensor::empty({10}, DType::f32, device());
  for (float v : to_vector<float>(t)) EXPECT_TRUE(std::isnan(v));
  Tensor bytes = Tensor::empty({64}, DType::u8, device());
  launch<read_fresh_shared>(1, 64, 64, s(), ptr<unsigned char>(bytes));
  for (uint8_t v : to_vector<uint8_t>(bytes)) EXPECT_EQ(v, 0xff);
}

Tensor twos(int64_t n, Device device) {
  std::vector<float> v(static_cast<size_t>(n), 2.0f);
  return Tensor::from_host(v.data(), {n}, DType::f32, device);
}

// `parts` in the launch's error (in the sanitizer build: `asan` and the kernel in ASan's report).
void expect_bad_access(const std::function<void()>& f, std::vector<const char*> parts, const char* asan) {
#if defined(PORTA_TEST_ASAN)
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(f(), str("(", asan, ")(.|\n)*", parts.front()));
#else
  (void)asan;
  std::string m = launch_error(f);
  for (const char* part : parts) EXPECT_NE(m.find(part), std::string::npos) << part << " not in: " << m;
#endif
}

TEST_P(GpuEmu, SharedMemoryABlockDidNotWriteHoldsNaNNotThePreviousBlocksValues) {
  // The blocks of this small launch run one after the other on one cpu thread, so without
  // the refill blocks 1 and 2 would read block 0's 7s and 8s.
  const int blocks = 3, threads = 64;
  Tensor out = Tensor::empty({2 * blocks * threads}, DType::f32, device());
  launch<read_shared_written_by_block_0>(blocks, threads, threads * sizeof(float), s(), ptr<float>(out));
  std::vector<float> got = to_vector<float>(out);
  for (int i = 0; i < blocks * threads; ++i) {
    if (i < threads) {
      ASSERT_EQ(got[2 * i], 7.0f) << i;
      ASSERT_EQ(got[2 * i + 1], 8.0f) << i;
    } else {
      ASSERT_TRUE(std::isnan(got[2 * i])) << "static shared, block " << i / threads << ": " << got[2 * i];
      ASSERT_TRUE(std::isnan(got[2 * i + 1])) << "dynamic shared, block " << i / threads << ": " << got[2 * i + 1];
    }
  }
}

TEST_P(GpuEmu, OutOfBoundsWritesAreReportedWithTheKernelName) {
  Tensor t = Tensor::empty({10}, DType::f32, device());
  // One past the end faults on the guard page right after the allocation.
  expect_bad_access([&] { launch<write_at>(1, 32, 0, s(), ptr<float>(t), 10); },
                    {"write_at", "thread (0,0,0) wrote past the end of a 40-byte allocation: byte 40 from its start"},
                    "use-after-poison|WRITE of size 4");
  // Before the start lands in the first page's slack: the guard bytes there changed.
  expect_bad_access([&] { launch<write_at>(1, 32, 0, s(), ptr<float>(t), -1); },
                    {"write_at", "wrote before the start of a 40-byte allocation", "bytes -4 to 0"},
                    "use-after-poison|WRITE of size 4");
  // In bounds is fine, and the guards were restored: no stale report.
  launch<write_at>(1, 32, 0, s(), ptr<float>(t), 9);
  EXPECT_EQ(to_vector<float>(t)[9], 1.0f);
}

TEST_P(GpuEmu, OutOfBoundsReadsAreReportedWithTheKernelName) {
  Tensor t = twos(10, device());
  Tensor out = Tensor::empty({1}, DType::f32, device());
  expect_bad_access([&] { launch<read_at>(1, 32, 0, s(), ptr<const float>(t), 10, ptr<float>(out)); },
                    {"read_at", "thread (0,0,0) read past the end of a 40-byte allocation: byte 40 from its start"},
                    "use-after-poison|READ of size 4");
  // Bytes: the allocation ends against the guard page whatever its size.
  Tensor bytes = Tensor::zeros({3}, DType::u8, device());
  Tensor byte_out = Tensor::empty({1}, DType::u8, device());
  expect_bad_access([&] { launch<read_byte_at>(1, 32, 0, s(), ptr<const unsigned char>(bytes), 3,
                                               ptr<unsigned char>(byte_out)); },
                    {"read_byte_at", "read past the end of a 3-byte allocation: byte 3 from its start"},
                    "use-after-poison|READ of size 1");
  // Before the start: a page-sized allocation starts right after the front guard page (any
  // size does in the sanitizer build).
  Tensor page = twos(1024, device());
  expect_bad_access([&] { launch<read_at>(1, 32, 0, s(), ptr<const float>(page), -1, ptr<float>(out)); },
                    {"read_at", "read before the start of a 4096-byte allocation: byte -4 from its start"},
                    "use-after-poison|READ of size 4");
  // The device keeps working: the faulted fiber is reset, in-bounds reads are fine.
  launch<read_at>(1, 32, 0, s(), ptr<const float>(t), 9, ptr<float>(out));
  EXPECT_EQ(to_vector<float>(out)[0], 2.0f);
  launch<read_at>(1, 32, 0, s(), ptr<const float>(page), 0, ptr<float>(out));
  EXPECT_EQ(to_vector<float>(out)[0], 2.0f);
}

#if !defined(PORTA_TEST_ASAN)
TEST_P(GpuEmu, ReadsBeforeTheStartOfASmallAllocationAreCaughtAtThePageBelow) {
  // Without AddressSanitizer, a read into the slack below a small allocation's start goes
  // unnoticed; one that reaches the front guard page is reported.
  Tensor t = twos(10, device());
  Tensor out = Tensor::empty({1}, DType::f32, device());
  std::string m = launch_error([&] { launch<read_at>(1, 32, 0, s(), ptr<const float>(t), -1024, ptr<float>(out)); });
  for (const char* part : {"read_at", "read before the start of a 40-byte allocation: byte -"})
    EXPECT_NE(m.find(part), std::string::npos) << part << " not in: " << m;
}
#endif

TEST_P(GpuEmu, CopiesOutsideAnAllocationAreRefused) {
  Tensor t = Tensor::empty({4}, DType::f32, device());
  float host[8] = {};
  cudaError_t err = cudaMemcpyAsync(host, ptr<float>(t), 8 * sizeof(float), cudaMemcpyDeviceToHost, s());
  EXPECT_EQ(err, cudaErrorInvalidValue);
  EXPECT_NE(std::string(cudaGetErrorString(err)).find("overruns its 16-byte allocation"), std::string::npos)
      << cudaGetErrorString(err);
  (void)cudaGetLastError();
}

TEST_P(GpuEmu, BadLaunchConfigurationsAreErrors) {
  Tensor t = Tensor::empty({1}, DType::f32, device());
  std::string m = launch_error([&] { launch<write_at>(1, 2048, 0, s(), ptr<float>(t), 0); });
  EXPECT_NE(m.find("at most 1024 threads"), std::string::npos) << m;
  m = launch_error([&] { launch<write_at>(dim3(1, 70000), 32, 0, s(), ptr<float>(t), 0); });
  EXPECT_NE(m.find("grid dimensions are limited"), std::string::npos) << m;
  m = launch_error([&] { launch<write_at>(1, 32, 64 * 1024, s(), ptr<float>(t), 0); });
  EXPECT_NE(m.find("dynamic shared memory"), std::string::npos) << m;
}

TEST_P(GpuEmu, EveryBlockOfAThreeDimensionalGridRuns) {
  Tensor counter = Tensor::zeros({1}, DType::i64, device());
  launch<count_blocks>(dim3(7, 5, 3), dim3(8, 4), 0, s(), ptr<unsigned long long>(counter));
  EXPECT_EQ(to_vector<int64_t>(counter)[0], 7 * 5 * 3);
}

TEST_P(GpuEmu, DevicesSayTheyAreForCorrectnessNotSpeed) {
  Backend* b = find_backend(device().type);
  ASSERT_NE(b, nullptr);
  Capabilities c = b->capabilities(GetParam());
  EXPECT_EQ(c.subgroup_size, warp());
  EXPECT_LE(c.preference, 0);  // "auto" never picks the emulator
  EXPECT_NE(c.name.find("for correctness, not speed"), std::string::npos) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Warps, GpuEmu, ::testing::Values(0, 1),
                         [](const auto& info) { return info.param == 0 ? "warp32" : "warp64"; });

}  // namespace
}  // namespace porta::porta_gpu_emu
