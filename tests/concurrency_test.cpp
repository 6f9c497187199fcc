// Thread safety (docs/RELIABILITY.md, "Concurrency"): the registry, the dispatcher and eager
// calls from many threads at once; many threads each running their own sessions on cpu and
// vulkan:0, every result checked against PyTorch's; one session run from two threads at once
// is refused with a clear InvalidArgument (a Session serves one thread at a time).
//
// Sizes: PORTA_STRESS_THREADS (default 8), PORTA_STRESS_SESSIONS (sessions per thread, 2),
// PORTA_STRESS_ITERATIONS (runs per session; 25 on cpu, 3 on vulkan). The TSan run
// (scripts/test.sh --tsan) runs this file; the Vulkan validation layer checks it in every
// build (tests/CMakeLists.txt).
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <thread>

#include "tests/model_fixtures.hpp"
#include "tests/test_util.hpp"
#if PORTA_TEST_VULKAN
#include "backends/vulkan/vk_validation.hpp"
#endif

namespace porta::test {
namespace {

int setting(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && std::atoi(v) > 0 ? std::atoi(v) : fallback;
}

std::vector<Device> stress_devices() {
  std::vector<Device> out{Device::cpu()};
  if (find_backend(DeviceType::vulkan)) out.push_back(Device::parse("vulkan:0"));
  return out;
}

// With PORTA_VULKAN_VALIDATION=1 (every ctest run sets it), the layer with synchronization
// validation watches every Vulkan call of these tests; whatever it reported fails the test.
// (tests/vulkan_test.cpp also fails the test on each report, when it is in the binary.)
void expect_no_validation_errors() {
#if PORTA_TEST_VULKAN
  if (!find_backend(DeviceType::vulkan)) return;
  for (const std::string& e : vk::take_validation_errors()) ADD_FAILURE() << "Vulkan validation: " << e;
#endif
}

// Runs `body(thread_index)` on `n` threads started together; rethrows nothing (bodies report
// with gtest assertions, which are thread-safe).
template <class F>
void on_threads(int n, F body) {
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t)
    threads.emplace_back([&, t] {
      ready++;
      while (ready.load() < n) std::this_thread::yield();
      try {
        body(t);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "thread " << t << ": " << e.what();
      }
    });
  for (auto& th : threads) th.join();
  expect_no_validation_errors();
}

TEST(Concurrency, RegistryAndDispatcherFromManyThreads) {
  const int threads = setting("PORTA_STRESS_THREADS", 8);
  std::vector<std::string> names;
  for (const OpSchema* op : all_ops()) names.push_back(op->name);
  ASSERT_FALSE(names.empty());
  std::vector<Device> devices = stress_devices();
  on_threads(threads, [&](int t) {
    for (int i = 0; i < 200; ++i) {
      const std::string& name = names[(t * 31 + i) % names.size()];
      const OpSchema* op = find_op(name);
      ASSERT_NE(op, nullptr) << name;
      Device d = devices[(t + i) % devices.size()];
      const Resolution& r = resolve(*op, d, DType::f32);
      EXPECT_FALSE(r.reason.empty() && r.path == Path::unsupported) << name << " on " << d.str();
      EXPECT_FALSE(explain(name, d, DType::f32).empty());
      kernels_for(name);
    }
  });
}

// relu(a @ b + c) on `device`, against the same computed on the host, per thread with its own
// values.
TEST(Concurrency, EagerCallsFromManyThreads) {
  const int threads = setting("PORTA_STRESS_THREADS", 8);
  for (Device device : stress_devices()) {
    SCOPED_TRACE(device.str());
    std::string unusable = device_unusable(device);
    if (!unusable.empty()) FAIL() << unusable;
    on_threads(threads, [&](int t) {
      const int64_t m = 5 + t, k = 7, n = 3;
      std::vector<double> a(m * k), b(k * n), c(n);
      for (size_t i = 0; i < a.size(); ++i) a[i] = 0.01 * static_cast<double>((i * 7 + t) % 23) - 0.1;
      for (size_t i = 0; i < b.size(); ++i) b[i] = 0.02 * static_cast<double>((i * 5 + t) % 17) - 0.15;
      for (size_t i = 0; i < c.size(); ++i) c[i] = 0.05 * static_cast<double>(i) - 0.05 * t;
      std::vector<double> want(m * n);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double s = c[j];
          for (int64_t x = 0; x < k; ++x) s += a[i * k + x] * b[x * n + j];
          want[i * n + j] = s > 0 ? s : 0;
        }
      Tensor ta = Tensor::from_values(a, {m, k}, DType::f32).to(device);
      Tensor tb = Tensor::from_values(b, {k, n}, DType::f32).to(device);
      Tensor tc = Tensor::from_values(c, {n}, DType::f32).to(device);
      Tensor expected = Tensor::from_values(want, {m, n}, DType::f64);
      for (int i = 0; i < 30; ++i) {
        Tensor got = ops::relu(ops::add(ops::matmul(ta, tb), tc));
        Comparison cmp = compare(got.to(Device::cpu()), expected, 1e-5);
        ASSERT_TRUE(cmp.ok) << "thread " << t << ", iteration " << i << ": " << cmp.message;
      }
    });
  }
}

// Every thread makes its own sessions of one shared Model and runs each several times.
void stress_sessions(const std::string& name) {
  const int threads = setting("PORTA_STRESS_THREADS", 8);
  const int sessions = setting("PORTA_STRESS_SESSIONS", 2);

  ModelFixture f = load_fixture(name);
  Model model = Model::load(f.model_path());
  std::map<std::string, Tensor> inputs;
  for (const auto& [in, file] : f.inputs) inputs[in] = read_npy(file);
  std::vector<Tensor> refs;
  for (const auto& [out, file] : f.outputs) refs.push_back(read_npy(file));
  for (Device device : stress_devices()) {
    SCOPED_TRACE(device.str());
    std::string unusable = device_unusable(device);
    if (!unusable.empty()) FAIL() << unusable;
    // lavapipe under the validation layer is ~100x slower than the CPU backend.
    const int iterations = setting("PORTA_STRESS_ITERATIONS", device.type == DeviceType::cpu ? 25 : 3);
    std::atomic<int> checked{0};
    auto start = std::chrono::steady_clock::now();
    on_threads(threads, [&](int t) {
      std::vector<Session> own;
      SessionOptions options;
      options.device = device;
      for (int s = 0; s < sessions; ++s) own.emplace_back(model, options);
      for (int i = 0; i < iterations; ++i)
        for (int s = 0; s < sessions; ++s) {
          std::vector<Tensor> outputs = own[s].run(inputs);
          ASSERT_EQ(outputs.size(), refs.size());
          for (size_t k = 0; k < refs.size(); ++k) {
            Comparison c = compare(outputs[k].to(Device::cpu()), refs[k], 1e-4);
            ASSERT_TRUE(c.ok) << "thread " << t << " session " << s << " run " << i << ": " << c.message;
          }
          checked++;
        }
    });
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(checked.load(), threads * sessions * iterations);
    std::cout << "[  stress  ] " << name << " on " << device.str() << ": " << threads << " threads x "
              << sessions << " sessions x " << iterations << " runs = " << checked.load()
              << " runs checked in " << seconds << " s\n";
  }
}

TEST(Concurrency, SessionsPerThreadCnn) { stress_sessions("cnn"); }
TEST(Concurrency, SessionsPerThreadTransformer) { stress_sessions("transformer"); }

// One Session from two threads at once: each call either runs (and is right) or is refused
// with InvalidArgument saying why; never a wrong result or a crash.
TEST(Concurrency, OneSessionFromTwoThreadsIsRefusedClearly) {
  ModelFixture f = load_fixture("cnn");
  Model model = Model::load(f.model_path());
  std::map<std::string, Tensor> inputs;
  for (const auto& [in, file] : f.inputs) inputs[in] = read_npy(file);
  Tensor ref = read_npy(f.outputs.at(0).second);
  for (Device device : stress_devices()) {
    SCOPED_TRACE(device.str());
    SessionOptions options;
    options.device = device;
    Session session(model, options);
    session.run(inputs);  // compiled before the race
    std::atomic<int> ran{0}, refused{0};
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    on_threads(2, [&](int) {
      for (int i = 0; i < 400 && (refused.load() == 0 || i < 20); ++i) {
        if (std::chrono::steady_clock::now() > deadline) break;
        try {
          std::vector<Tensor> out = session.run(inputs);
          Comparison c = compare(out.at(0).to(Device::cpu()), ref, 1e-4);
          ASSERT_TRUE(c.ok) << c.message;
          ran++;
        } catch (const InvalidArgument& e) {
          EXPECT_NE(std::string(e.what()).find("already running on another thread"), std::string::npos)
              << e.what();
          refused++;
        }
      }
    });
    EXPECT_GT(ran.load(), 0);
    EXPECT_GT(refused.load(), 0) << "the two threads never overlapped";
    std::cout << "[  stress  ] one session, two threads on " << device.str() << ": " << ran.load()
              << " runs, " << refused.load() << " refused\n";
    // Afterwards the session is free again.
    Comparison c = compare(session.run(inputs).at(0).to(Device::cpu()), ref, 1e-4);
    EXPECT_TRUE(c.ok) << c.message;
  }
}

}  // namespace
}  // namespace porta::test
