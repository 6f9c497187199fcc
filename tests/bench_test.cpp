// `porta bench`: work counted from shapes (against hand-computed values), the JSON and CSV it
// writes, ceilings stored and reused, and the support matrix against what sessions place.
// No test here asserts a timing.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "porta/backend.hpp"
#include "runtime/bench_call.hpp"
#include "runtime/bench_json.hpp"
#include "tests/test_paths.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

namespace fs = std::filesystem;
using bench::Json;
using bench::json_quote;

// ---- work counts --------------------------------------------------------------------------

bench::WorkCount work(const std::string& op, std::vector<Shape> shapes, DType dt = DType::f32,
                      const Attributes& attrs = {}) {
  std::vector<DType> dtypes(shapes.size(), dt);
  return bench::count_work(*find_op(op), shapes, dtypes, attrs);
}

TEST(BenchCount, MatMul) {
  // 2*M*N*K; bytes = (M*K + K*N + M*N) * 4.
  auto w = work("MatMul", {{1024, 1024}, {1024, 1024}});
  EXPECT_EQ(w.flops, 2147483648.0);
  EXPECT_EQ(w.bytes, 12582912.0);
  // Batched with a broadcast right side: out 2x3x5, K = 4 -> 2*30*4; (24 + 20 + 30) * 4 bytes.
  w = work("MatMul", {{2, 3, 4}, {4, 5}});
  EXPECT_EQ(w.flops, 240.0);
  EXPECT_EQ(w.bytes, 296.0);
  w = work("MatMul", {{2, 3, 4}, {4, 5}}, DType::f16);
  EXPECT_EQ(w.bytes, 148.0);
}

TEST(BenchCount, Conv) {
  // The default-suite case: N32 C64 56x56, 64 filters 3x3, pad 1 -> out 32x64x56x56.
  // 2 * (64 * 3 * 3) per output * 6422528 outputs; bytes (6422528 + 36864 + 64 + 6422528) * 4.
  Attributes pads{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  auto w = work("Conv", {{32, 64, 56, 56}, {64, 64, 3, 3}, {64}}, DType::f32, pads);
  EXPECT_EQ(w.flops, 7398752256.0);
  EXPECT_EQ(w.bytes, 51527936.0);
  // Grouped and strided: 1x4x9x9, 6 filters of 2 channels 3x3, group 2, stride 2 -> 1x6x4x4;
  // 2 * (2 * 9) * 96 flops; (324 + 108 + 96) * 4 bytes.
  Attributes grouped{{"group", int64_t{2}}, {"strides", std::vector<int64_t>{2, 2}}};
  w = work("Conv", {{1, 4, 9, 9}, {6, 2, 3, 3}}, DType::f32, grouped);
  EXPECT_EQ(w.flops, 3456.0);
  EXPECT_EQ(w.bytes, 2112.0);
}

TEST(BenchCount, Add) {
  auto w = work("Add", {{4096, 4096}, {4096, 4096}});
  EXPECT_EQ(w.flops, 16777216.0);
  EXPECT_EQ(w.bytes, 201326592.0);
  // Broadcast: 4x7 + 7 -> 28 adds; each operand counted once at its own size.
  w = work("Add", {{4, 7}, {7}});
  EXPECT_EQ(w.flops, 28.0);
  EXPECT_EQ(w.bytes, 252.0);
  w = work("Add", {{0, 4}, {4}});
  EXPECT_EQ(w.flops, 0.0);
  EXPECT_EQ(w.bytes, 16.0);
}

TEST(BenchCount, Softmax) {
  // 5 per element (max, subtract, exp, sum, divide); input and output 4096x4096 f32.
  auto w = work("Softmax", {{4096, 4096}});
  EXPECT_EQ(w.flops, 5.0 * 16777216);
  EXPECT_EQ(w.bytes, 134217728.0);
}

TEST(BenchCount, DataMovementHasNoFlops) {
  auto w = work("Transpose", {{3, 5}}, DType::f32, {{"perm", std::vector<int64_t>{1, 0}}});
  EXPECT_EQ(w.flops, 0.0);
  EXPECT_EQ(w.bytes, 120.0);
}

TEST(BenchCount, ShapeErrorsAreReported) {
  EXPECT_THROW(work("MatMul", {{2, 3}, {4, 5}}), ShapeError);
}

TEST(BenchInputs, DeterministicPerSeedAndInRange) {
  InputSpec spec;
  spec.shape = {7, 9};
  spec.lo = -1, spec.hi = 3;
  std::vector<double> a = bench::make_case_input(spec, DType::f32, 42).to_doubles();
  std::vector<double> b = bench::make_case_input(spec, DType::f32, 42).to_doubles();
  std::vector<double> c = bench::make_case_input(spec, DType::f32, 43).to_doubles();
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (double v : a) EXPECT_TRUE(v >= -1 && v <= 3) << v;
  spec.integers = true;
  for (double v : bench::make_case_input(spec, DType::i64, 1).to_doubles()) EXPECT_EQ(v, std::floor(v));
}

TEST(BenchJson, ParsesWhatItQuotes) {
  Json j = Json::parse(str("{\"a\": [1, 2.5e3, true, null], \"b\": ", bench::json_quote("x\"y\\z\n"), "}"));
  ASSERT_TRUE(j.is(Json::Kind::object));
  EXPECT_EQ(j.at("a").items.size(), 4u);
  EXPECT_EQ(j.at("a").items[1].number, 2500.0);
  EXPECT_EQ(j.at("b").text, "x\"y\\z\n");
  EXPECT_THROW(Json::parse("{\"a\": }"), InvalidArgument);
  EXPECT_THROW(Json::parse("[1, 2"), InvalidArgument);
}

// ---- the CLI ------------------------------------------------------------------------------

struct CliRun {
  int status = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

fs::path scratch_dir(const std::string& name) {
  fs::path d = fs::path(PORTA_BINARY_DIR) / "bench_test" / str(name, "_", getpid());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Runs the built `porta` with XDG_CACHE_HOME at `cache`; stdout and stderr kept apart.
CliRun porta(const std::string& args, const fs::path& cache) {
  fs::path err = cache / "stderr.txt";
  std::string cmd = str("XDG_CACHE_HOME=", cache.string(), " ", PORTA_BINARY_DIR, "/bin/porta ", args, " 2>",
                        err.string());
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.err = slurp(err);
  return r;
}

std::string cpu_name() {
  Capabilities c = backend_for(Device::cpu()).capabilities(0);
  return c.name.empty() ? "cpu" : c.name;
}

// A ceilings file with made-up values, so the CLI uses them without calibrating.
void write_fake_ceilings(const fs::path& cache) {
  fs::create_directories(cache / "porta");
  std::ofstream(cache / "porta" / "ceilings.json")
      << "{\"schema_version\": 1, \"devices\": {" << bench::json_quote(cpu_name())
      << ": {\"device\": \"cpu\", \"copy_gbps\": 12.5, \"fma_gflops\": {\"f32\": 250}, "
         "\"measured_at\": \"2000-01-01T00:00:00Z\"}}}";
}

void expect_stats(const Json& s) {
  ASSERT_TRUE(s.is(Json::Kind::object));
  for (const char* k : {"median", "min", "max"}) {
    ASSERT_TRUE(s.at(k).is(Json::Kind::number)) << k;
    EXPECT_GT(s.at(k).number, 0) << k;
  }
  EXPECT_LE(s.at("min").number, s.at("median").number);
  EXPECT_LE(s.at("median").number, s.at("max").number);
}

TEST(BenchCli, JsonAndCsvFollowTheSchema) {
  fs::path dir = scratch_dir("schema");
  write_fake_ceilings(dir);
  CliRun r = porta(str("bench --op Add --case same,broadcast_row --device cpu --min-runs 1 --min-time 0 --json ",
                    (dir / "r.json").string(), " --csv ", (dir / "r.csv").string(), " --svg ",
                    (dir / "r.svg").string()),
                dir);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  Json j = Json::parse(slurp(dir / "r.json"));
  EXPECT_EQ(j.at("schema_version").number, 1);
  EXPECT_TRUE(j.at("porta_version").is(Json::Kind::string));
  EXPECT_EQ(j.at("settings").at("min_runs").number, 1);
  ASSERT_EQ(j.at("devices").items.size(), 1u);
  const Json& dev = j.at("devices").items[0];
  EXPECT_EQ(dev.at("device").text, "cpu");
  EXPECT_EQ(dev.at("name").text, cpu_name());
  EXPECT_EQ(dev.at("ceilings").at("copy_gbps").number, 12.5);
  EXPECT_EQ(dev.at("ceilings").at("fma_gflops").at("f32").number, 250);
  EXPECT_EQ(dev.at("ceilings").at("source").text, "cache");
  const auto& results = j.at("results").items;
  ASSERT_EQ(results.size(), 2u);
  const Json& a = results[0];
  EXPECT_EQ(a.at("op").text, "Add");
  EXPECT_EQ(a.at("case").text, "same");
  EXPECT_EQ(a.at("dtype").text, "f32");
  EXPECT_EQ(a.at("device").text, "cpu");
  EXPECT_EQ(a.at("status").text, "ok");
  EXPECT_EQ(a.at("path").text, "native");
  EXPECT_EQ(a.at("shapes").text, "3x5, 3x5");
  EXPECT_GE(a.at("runs").number, 1);
  EXPECT_TRUE(a.at("device_timer").is(Json::Kind::boolean));
  expect_stats(a.at("device_time_us"));
  expect_stats(a.at("host_time_us"));
  EXPECT_EQ(a.at("flops").number, 15);
  EXPECT_EQ(a.at("bytes").number, 180);
  // Add is far below the ridge point (250 / 12.5 = 20 FLOP/byte): memory-bound, so the
  // fraction is GB/s over the stored copy bandwidth.
  EXPECT_EQ(a.at("bound").text, "memory");
  EXPECT_EQ(a.at("ceiling").number, 12.5);
  EXPECT_NEAR(a.at("fraction_of_ceiling").number, a.at("gbps").number / 12.5, 1e-6 * a.at("gbps").number + 1e-9);
  EXPECT_NEAR(a.at("gbps").number, 180 / (a.at("device_time_us").at("median").number * 1e3),
              1e-4 * a.at("gbps").number);
  EXPECT_TRUE(a.at("unstable").is(Json::Kind::boolean));
  EXPECT_TRUE(a.at("spread").is(Json::Kind::number));
  EXPECT_EQ(results[1].at("case").text, "broadcast_row");
  EXPECT_EQ(results[1].at("bytes").number, (28 + 7 + 28) * 4);
  EXPECT_TRUE(j.at("models").is(Json::Kind::array));

  std::stringstream csv(slurp(dir / "r.csv"));
  std::string header, row;
  std::getline(csv, header);
  EXPECT_EQ(header,
            "op,case,dtype,device,variant,status,path,runs,device_timer,median_us,min_us,max_us,host_median_us,"
            "flops,bytes,gflops,gbps,bound,ceiling,fraction_of_ceiling,spread,unstable,note");
  std::getline(csv, row);
  EXPECT_EQ(row.rfind("Add,same,f32,cpu,,ok,native,", 0), 0u) << row;
  // 22 plain fields then the quoted note.
  std::string before_note = row.substr(0, row.find(",\""));
  EXPECT_EQ(std::count(before_note.begin(), before_note.end(), ','), 21) << row;
  EXPECT_NE(row.find(",15,180,"), std::string::npos) << row;

  std::string svg = slurp(dir / "r.svg");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("Add  same"), std::string::npos);
  // The table names the ceilings' origin.
  EXPECT_NE(r.out.find("[cache"), std::string::npos) << r.out;
}

TEST(BenchCli, CalibratesOnFirstUseThenReusesAndRecalibratesOnRequest) {
  fs::path dir = scratch_dir("calibrate");
  fs::path file = dir / "porta" / "ceilings.json";
  std::string args = str("bench --op Relu --case odd --device cpu --min-runs 1 --min-time 0 --json ",
                         (dir / "r.json").string());
  CliRun first = porta(args, dir);
  ASSERT_EQ(first.status, 0) << first.out << first.err;
  EXPECT_NE(first.err.find("no ceilings stored for cpu"), std::string::npos) << first.err;
  ASSERT_TRUE(fs::exists(file));
  Json stored = Json::parse(slurp(file));
  EXPECT_EQ(stored.at("schema_version").number, 2);
  const Json& entry = stored.at("devices").at(cpu_name());
  EXPECT_GT(entry.at("copy_gbps").number, 0);
  EXPECT_GT(entry.at("fma_gflops").at("f32").number, 0);
  EXPECT_EQ(Json::parse(slurp(dir / "r.json")).at("devices").items[0].at("ceilings").at("source").text,
            "calibrated now");

  CliRun second = porta(args, dir);
  ASSERT_EQ(second.status, 0) << second.out << second.err;
  EXPECT_EQ(second.err.find("calibrating"), std::string::npos) << second.err;
  EXPECT_NE(second.err.find("from " + file.string()), std::string::npos) << second.err;
  Json second_report = Json::parse(slurp(dir / "r.json"));
  const Json& used = second_report.at("devices").items[0].at("ceilings");
  EXPECT_EQ(used.at("source").text, "cache");
  EXPECT_EQ(used.at("copy_gbps").number, entry.at("copy_gbps").number);
  EXPECT_EQ(used.at("measured_at").text, entry.at("measured_at").text);

  // --calibrate measures again and replaces the entry (other devices' entries are kept).
  std::string with_other = slurp(file);
  with_other.insert(with_other.find("\"devices\": {") + 12,
                    "\"Some Other GPU\": {\"device\": \"vulkan:3\", \"copy_gbps\": 1, \"fma_gflops\": "
                    "{\"f32\": 2}, \"measured_at\": \"x\"},");
  std::ofstream(file) << with_other;
  CliRun forced = porta("bench --calibrate --device cpu", dir);
  ASSERT_EQ(forced.status, 0) << forced.out << forced.err;
  EXPECT_NE(forced.err.find("calibrating cpu"), std::string::npos) << forced.err;
  Json after = Json::parse(slurp(file));
  EXPECT_GT(after.at("devices").at(cpu_name()).at("copy_gbps").number, 0);
  EXPECT_EQ(after.at("devices").at("Some Other GPU").at("copy_gbps").number, 1);
}

TEST(BenchCli, AnEntryWithoutAnFmaPeakIsMeasuredAgain) {
  // Schema 1 stored porta's own MatMul as the compute ceiling ("matmul_gflops"): such an entry
  // is not used, and the file is rewritten without it.
  fs::path dir = scratch_dir("schema1");
  fs::path file = dir / "porta" / "ceilings.json";
  fs::create_directories(file.parent_path());
  std::ofstream(file) << "{\"schema_version\": 1, \"devices\": {" << json_quote(cpu_name())
                      << ": {\"device\": \"cpu\", \"copy_gbps\": 3, \"matmul_gflops\": {\"f32\": 4}, "
                         "\"measured_at\": \"x\"}, \"Old GPU\": {\"device\": \"vulkan:1\", \"copy_gbps\": 1, "
                         "\"matmul_gflops\": {\"f32\": 2}, \"measured_at\": \"x\"}}}";
  CliRun r = porta("bench --op Relu --case odd --device cpu --min-runs 1 --min-time 0", dir);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("no ceilings stored for cpu"), std::string::npos) << r.err;
  Json after = Json::parse(slurp(file));
  EXPECT_EQ(after.at("schema_version").number, 2);
  EXPECT_GT(after.at("devices").at(cpu_name()).at("fma_gflops").at("f32").number, 0);
  EXPECT_EQ(after.at("devices").find("Old GPU"), nullptr);
}

// The compute ceiling comes from each backend's own fma-chain probe, which checks its chains'
// exact results (a miscompiled or skipped probe throws instead of reporting a figure).
TEST(FmaProbe, EveryBuiltInBackendMeasuresAnF32Peak) {
  for (Device dev : test_devices()) {
    // A plugin backend may have no probe; a built backend without its device (cuda, hip here)
    // cannot run one. The cuda/hip/gpu_emu probe kernel is checked in GpuBackend.
    const std::vector<DeviceType> gpu = gpu_device_types();
    if (backend_source(dev.type) != "porta" || !device_unusable(dev).empty() ||
        std::find(gpu.begin(), gpu.end(), dev.type) != gpu.end())
      continue;
    Backend& b = backend_for(dev);
    SCOPED_TRACE(dev.str());
    double g = b.measure_fma_gflops(dev.index, DType::f32);
    EXPECT_GT(g, 0);
    EXPECT_TRUE(std::isfinite(g));
    EXPECT_EQ(b.measure_fma_gflops(dev.index, DType::f64), 0) << "no f64 probe exists";
    EXPECT_EQ(b.measure_fma_gflops(dev.index, DType::i32), 0);
  }
}

TEST(FmaProbe, LowPrecisionPeaksWhereTheDeviceHasTheArithmetic) {
  Backend& cpu = backend_for(Device::cpu());
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512bf16")) EXPECT_GT(cpu.measure_fma_gflops(0, DType::bf16), 0);
  else EXPECT_EQ(cpu.measure_fma_gflops(0, DType::bf16), 0);
  EXPECT_EQ(cpu.measure_fma_gflops(0, DType::f16), 0);
  for (Device dev : test_devices()) {
    if (dev.type != DeviceType::vulkan || !device_unusable(dev).empty()) continue;
    bool fp16 = false;
    for (auto& [k, v] : backend_for(dev).capabilities(dev.index).extra)
      if (k == "fp16") fp16 = v.find("arithmetic yes") != std::string::npos;
    double g = backend_for(dev).measure_fma_gflops(dev.index, DType::f16);
    if (fp16) EXPECT_GT(g, 0) << dev.str();
    else EXPECT_EQ(g, 0) << dev.str();
  }
}

TEST(BenchCli, BadInputIsAClearError) {
  fs::path dir = scratch_dir("bad");
  write_fake_ceilings(dir);
  CliRun r = porta("bench --op NoSuchOp --device cpu", dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown op 'NoSuchOp'"), std::string::npos) << r.err;
  r = porta("bench --op Add --case nonexistent --device cpu", dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no case matches"), std::string::npos) << r.err;
  r = porta("bench --min-time soon", dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--min-time expects seconds"), std::string::npos) << r.err;
  r = porta("bench --compare cpu", dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("two sides"), std::string::npos) << r.err;
  r = porta(str("bench ", PORTA_SOURCE_DIR, "/models/cnn/model.onnx --device cpu --batch 0"), dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--batch"), std::string::npos) << r.err;
}

TEST(BenchCli, CompareNoKernelDisablesTheKernelForOneSideOnly) {
  fs::path dir = scratch_dir("compare");
  write_fake_ceilings(dir);
  // With the cpu Softmax kernel disabled nothing else can run it on the cpu (no decomposition,
  // and the cpu has nothing to fall back to): that side reports the dispatcher's error. The
  // next case (Relu) runs after the kernel is enabled again.
  CliRun r = porta(str("bench --op Softmax,Relu --case last,odd --compare cpu,cpu/no-kernel --min-runs 1 "
                       "--min-time 0 --json ", (dir / "c.json").string()),
                   dir);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("compare cpu vs cpu/no-kernel"), std::string::npos) << r.out;
  Json report = Json::parse(slurp(dir / "c.json"));
  const auto& results = report.at("results").items;
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].at("op").text, "Softmax");
  EXPECT_EQ(results[0].at("path").text, "native");
  EXPECT_EQ(results[0].at("variant").text, "");
  EXPECT_EQ(results[1].at("variant").text, "no-kernel");
  EXPECT_EQ(results[1].at("status").text, "error");
  EXPECT_NE(results[1].at("note").text.find("Unsupported"), std::string::npos) << results[1].at("note").text;
  EXPECT_EQ(results[2].at("op").text, "Relu");
  EXPECT_EQ(results[2].at("path").text, "native");
  EXPECT_EQ(results[2].at("status").text, "ok");
}

// ---- support matrix -----------------------------------------------------------------------

// "op" -> backend -> cell, from `porta bench --support`.
std::map<std::string, std::map<std::string, std::string>> support_matrix(const fs::path& dir, std::string* dtype_of_first) {
  CliRun r = porta("bench --support", dir);
  EXPECT_EQ(r.status, 0) << r.err;
  std::stringstream ss(r.out);
  std::string line;
  std::getline(ss, line);
  std::vector<std::string> backends;
  {
    std::stringstream h(line);
    std::string w;
    h >> w >> w;  // "op dtype"
    while (h >> w) backends.push_back(w);
  }
  std::map<std::string, std::map<std::string, std::string>> m;
  while (std::getline(ss, line)) {
    std::stringstream row(line);
    std::string op, dt;
    row >> op >> dt;
    m[op]["dtype"] = dt;
    // Each cell is "path" or "path (dtypes)"; the path is what the tests compare.
    std::string word;
    size_t b = 0;
    while (row >> word && b < backends.size()) {
      if (word.front() == '(') continue;
      m[op][backends[b++]] = word;
    }
  }
  (void)dtype_of_first;
  return m;
}

TEST(BenchCli, SupportMatrixAgreesWithSessionPlacement) {
  fs::path dir = scratch_dir("support");
  auto matrix = support_matrix(dir, nullptr);
  ASSERT_FALSE(matrix.empty());
  for (DeviceType t : built_backends()) {
    std::string backend(device_type_name(t));
    int rows = 0;
    for (auto& [op, cells] : matrix) rows += cells.count(backend);
    EXPECT_EQ(rows, static_cast<int>(matrix.size())) << "column " << backend;
  }
  int compared = 0;
  for (const char* name : {"cnn", "mlp", "transformer"}) {
    std::string path = str(PORTA_SOURCE_DIR, "/models/", name, "/model.onnx");
    Model model = Model::load(path);
    std::map<std::string, Shape> shapes;
    for (auto& d : model.inputs()) {
      Shape s = d.shape;
      for (auto& x : s) x = x < 0 ? 1 : x;
      shapes[d.name] = s;
    }
    for (Device dev : test_devices()) {
      if (!device_unusable(dev).empty()) continue;
      SessionOptions o;
      o.device = dev;
      Session session(model, o);
      std::vector<NodePlan> plan;
      try {
        plan = session.plan(shapes);
      } catch (const Error&) {
        continue;  // a model needing input values to plan; the others cover it
      }
      for (const NodePlan& p : plan) {
        if (p.path == Path::folded || p.device != dev) continue;
        // The matrix answers for f32 without a concrete call; compare the nodes it speaks for.
        if (p.reason.find("declined") != std::string::npos || p.reason.find(" f32") == std::string::npos) continue;
        auto it = matrix.find(p.op);
        ASSERT_NE(it, matrix.end()) << p.op << " missing from the support matrix";
        if (it->second["dtype"] != "f32") continue;
        EXPECT_EQ(it->second[std::string(device_type_name(dev.type))], std::string(path_name(p.path)))
            << p.node << " (" << p.op << ") on " << dev.str() << ": " << p.reason;
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 0);
}

}  // namespace
}  // namespace porta::test
