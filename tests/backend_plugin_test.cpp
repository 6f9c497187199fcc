// A backend from a plugin: examples/backend_plugin (device kind "hostsim", host memory the
// plugin allocates and accounts itself, f32 kernels Add/Sub/Mul/Div/Relu/MatMul) is loaded at
// run time and used like a built-in device: tensors live in its memory, eager calls and
// sessions dispatch to its kernels, composites run on it and the rest falls back to the cpu
// with copies, matching the cpu's results. Error paths: unknown kinds, a device out of memory,
// a second backend for a kind, built-in kinds, kernels naming unknown kinds. The in-tree route
// (register_device_type + register_backend from C++) is covered too.
#include <dlfcn.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "porta/npy.hpp"
#include "porta/plugin.h"
#include "porta/plugin.hpp"
#include "tests/test_paths.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

const std::string kPlugin = PORTA_HOSTSIM_PLUGIN;

// Loads the plugin once; every test starts from here.
DeviceType hostsim() {
  EXPECT_EQ(load_plugin(kPlugin), "example_hostsim");
  auto t = find_device_type("hostsim");
  EXPECT_TRUE(t.has_value());
  return t.value_or(DeviceType::cpu);
}

// The plugin's own view of its memory (exported by the example for tests).
struct Stats {
  uint64_t in_use = 0, peak = 0, live = 0;
};
Stats stats() {
  void* lib = dlopen(kPlugin.c_str(), RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(lib, nullptr);
  Stats s;
  if (!lib) return s;
  auto fn = reinterpret_cast<void (*)(uint64_t*, uint64_t*, uint64_t*)>(dlsym(lib, "hostsim_stats"));
  if (fn) fn(&s.in_use, &s.peak, &s.live);
  dlclose(lib);  // drops only the reference taken here; porta keeps the plugin loaded
  return s;
}
void set_capacity(uint64_t bytes) {
  void* lib = dlopen(kPlugin.c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr);
  reinterpret_cast<void (*)(uint64_t)>(dlsym(lib, "hostsim_set_capacity"))(bytes);
  dlclose(lib);
}

std::string cli(const std::string& args) {
  std::string cmd = "PORTA_PLUGIN_PATH=" + kPlugin + " " + PORTA_BINARY_DIR + "/bin/porta " + args + " 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int st = pclose(p);
  return (WIFEXITED(st) ? str("exit ", WEXITSTATUS(st)) : std::string("signal")) + "\n" + out;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(BackendPlugin, RegistersAKindLikeABuiltinOne) {
  DeviceType t = hostsim();
  EXPECT_GE(t.id, kNumBuiltinDeviceTypes);
  EXPECT_EQ(device_type_name(t), "hostsim");
  Device d = Device::parse("hostsim:0");
  EXPECT_EQ(d, (Device{t, 0}));
  EXPECT_EQ(d.str(), "hostsim:0");
  EXPECT_EQ(Device::parse("hostsim"), d);
  EXPECT_NE(std::find(all_devices().begin(), all_devices().end(), d), all_devices().end());
  EXPECT_EQ(backend_source(t), "example_hostsim");
  Backend& b = backend_for(d);
  EXPECT_EQ(b.type(), t);
  EXPECT_TRUE(contains(b.availability(0).detail, "hostsim host-memory device"));
  Capabilities c = b.capabilities(0);
  EXPECT_EQ(c.type, "simulator");
  EXPECT_EQ(c.dtypes, dtype_bit(DType::f32));
  EXPECT_NE(Device::parse("auto").type, t);  // preference 0: "auto" never picks it
  bool listed = false;
  for (auto& p : loaded_plugins())
    if (p.name == "example_hostsim") listed = p.backends == std::vector<std::string>{"hostsim"};
  EXPECT_TRUE(listed);
  int kernels = 0;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Relu", "MatMul"})
    for (const KernelDef* k : kernels_for(op))
      if (k->backend == t) kernels += k->source == "example_hostsim";
  EXPECT_EQ(kernels, 6);

  // The C ABI knows the kind by name and by id.
  int32_t id = -1;
  const char* name = nullptr;
  ASSERT_EQ(porta_device_type_find("hostsim", &id), PORTA_OK);
  EXPECT_EQ(id, t.id);
  ASSERT_EQ(porta_device_type_name(id, &name), PORTA_OK);
  EXPECT_STREQ(name, "hostsim");
  porta_device cd{};
  ASSERT_EQ(porta_device_parse("hostsim:0", &cd), PORTA_OK);
  EXPECT_EQ(cd.type, id);
  int available = 0;
  ASSERT_EQ(porta_device_available(cd, &available, nullptr, 0), PORTA_OK);
  EXPECT_EQ(available, 1);
}

TEST(BackendPlugin, TensorsLiveInThePluginsMemory) {
  Device d{hostsim(), 0};
  Stats before = stats();
  {
    std::vector<float> xs(24);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i) - 3.5f;
    Tensor x = Tensor::from_host(xs.data(), {4, 6}, DType::f32, d);
    EXPECT_EQ(x.device(), d);
    EXPECT_EQ(stats().in_use, before.in_use + 96);
    EXPECT_EQ(stats().live, before.live + 1);
    std::vector<double> back = x.to_doubles();
    for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(back[i], xs[i]);
    // Copies on the device and strided views go through the plugin's copy functions.
    Tensor row = x.slice(0, 2, 3).contiguous();
    EXPECT_EQ(row.device(), d);
    EXPECT_EQ(row.to_doubles().front(), xs[12]);
    Tensor col = x.slice(1, 1, 2).contiguous();
    EXPECT_EQ(col.to_doubles()[3], xs[19]);

    // What kernels get for a view: the plugin's own address plus the view's byte offset.
    void* p = backend_for(d).kernel_pointer(x.storage()->handle(), 24);
    EXPECT_EQ(p, static_cast<char*>(x.storage()->handle()) + 24);
    EXPECT_EQ(*static_cast<float*>(p), xs[6]);
  }
  {
    // Through the C ABI: the handle is what the plugin's allocate returned, tensor_data its
    // address (offset 0 here).
    porta_device cd{d.type.id, 0};
    int64_t shape[1] = {3};
    float xs[3] = {1.5f, 2.5f, -3.5f};
    porta_tensor h = nullptr;
    ASSERT_EQ(porta_tensor_create(cd, PORTA_F32, shape, 1, &h), PORTA_OK);
    ASSERT_EQ(porta_tensor_copy_from_host(h, xs, sizeof xs), PORTA_OK);
    void *data = nullptr, *handle = nullptr;
    size_t offset = 1;
    ASSERT_EQ(porta_tensor_device_handle(h, &handle, &offset), PORTA_OK);
    EXPECT_EQ(offset, 0u);
    ASSERT_EQ(porta_tensor_data(h, &data), PORTA_OK);
    EXPECT_EQ(data, handle);
    EXPECT_EQ(static_cast<float*>(data)[2], -3.5f);
    EXPECT_EQ(stats().live, before.live + 1);
    porta_tensor_free(h);
  }
  EXPECT_EQ(stats().in_use, before.in_use);  // every byte came back through deallocate
  EXPECT_EQ(stats().live, before.live);
}

TEST(BackendPlugin, EagerCallsRunItsKernelsAgainstTheReference) {
  Device d{hostsim(), 0};
  EXPECT_TRUE(contains(explain("MatMul", d, DType::f32), "from example_hostsim"));
  EXPECT_TRUE(contains(explain("Sigmoid", d, DType::f32), "fallback"));
  struct Case {
    const char* op;
    Shape a, b;
  };
  for (const Case& c : {Case{"MatMul", {3, 5}, {5, 4}}, Case{"MatMul", {2, 1, 3, 5}, {4, 5, 2}},
                        Case{"MatMul", {5}, {2, 5, 3}}, Case{"MatMul", {2, 3, 5}, {5}},
                        Case{"Add", {2, 3, 4}, {4}}, Case{"Sub", {3, 1}, {1, 5}}, Case{"Mul", {2, 1, 4}, {3, 1}},
                        Case{"Div", {6}, {6}}, Case{"Relu", {3, 7}, {}}}) {
    std::vector<Tensor> host = {make_input(InputSpec{c.a}, DType::f32)};
    if (std::string(c.op) != "Relu") host.push_back(make_input(InputSpec{c.b, std::nullopt, 0.5, 2.0}, DType::f32));
    std::vector<Tensor> on_device;
    for (auto& t : host) on_device.push_back(t.to(d));
    Tensor y = call_op(c.op, on_device).at(0);
    EXPECT_EQ(y.device(), d) << c.op;
    Comparison cmp = compare(y, reference_op(c.op, host).at(0), 1e-5);
    EXPECT_TRUE(cmp.ok) << c.op << " " << shape_str(c.a) << " " << shape_str(c.b) << ": " << cmp.message;
  }
  // An op it has no kernel for runs on the cpu with copies, and the result comes back to it.
  Tensor x = make_input(InputSpec{{4, 4}}, DType::f32);
  Tensor y = call_op("Sigmoid", {x.to(d)}).at(0);
  EXPECT_EQ(y.device(), d);
  EXPECT_TRUE(compare(y, reference_op("Sigmoid", {x}).at(0), 1e-5).ok);
}

// Runs a bundled model on hostsim:0 and on the cpu; returns the plan on hostsim.
std::vector<NodePlan> run_model(const std::string& name) {
  Device d{hostsim(), 0};
  std::string dir = std::string(PORTA_SOURCE_DIR) + "/models/" + name;
  Model model = Model::load(dir + "/model.onnx");
  std::map<std::string, Tensor> inputs;
  inputs[model.inputs().at(0).name] = read_npy(dir + "/input_0.npy");
  SessionOptions o;
  o.device = d;
  Session on_device(model, o);
  std::vector<NodePlan> plan = on_device.plan(inputs);
  Session on_cpu(model, SessionOptions{});
  std::vector<Tensor> got = on_device.run(inputs), want = on_cpu.run(inputs);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    EXPECT_EQ(got[i].device(), d);
    Comparison c = compare(got[i], want[i].cast(DType::f64), 1e-4);
    EXPECT_TRUE(c.ok) << name << " output " << i << ": " << c.message;
  }
  return plan;
}

int count(const std::vector<NodePlan>& plan, Path path) {
  return static_cast<int>(std::count_if(plan.begin(), plan.end(), [&](auto& p) { return p.path == path; }));
}

TEST(BackendPlugin, ModelsRunNativeCompositeAndFallbackMatchingTheCpu) {
  hostsim();
  Stats before = stats();
  for (const char* model : {"image_custom", "mlp"}) {
    std::vector<NodePlan> plan = run_model(model);
    EXPECT_GT(count(plan, Path::native), 0) << model;
    EXPECT_GT(count(plan, Path::fallback), 0) << model;
    int plugin_kernels = 0;
    for (const NodePlan& p : plan) {
      bool plugin_kernel = p.path == Path::native && contains(p.reason, "hostsim kernel from example_hostsim");
      plugin_kernels += plugin_kernel;
      if (plugin_kernel || p.path == Path::composite) EXPECT_EQ(p.device.str(), "hostsim:0") << p.node;
      if (p.path == Path::fallback) EXPECT_EQ(p.device, Device::cpu()) << p.node;
    }
    EXPECT_GT(plugin_kernels, 0) << model;
    if (std::string(model) == "image_custom")  // NormalizeImage has no hostsim kernel
      EXPECT_GT(count(plan, Path::composite), 0);
  }
  EXPECT_GT(stats().peak, before.in_use);
  EXPECT_EQ(stats().in_use, before.in_use);  // sessions gone: their buffers were freed
}

TEST(BackendPlugin, CliExplainsEveryNodeOnTheDevice) {
  std::string model = std::string(PORTA_SOURCE_DIR) + "/models/image_custom/model.onnx";
  std::string out = cli("ops " + model + " --device hostsim:0");
  EXPECT_TRUE(contains(out, "exit 0\n")) << out;
  for (const char* part : {"native", "composite", "fallback", "example_hostsim"})
    EXPECT_TRUE(contains(out, part)) << part << " missing in:\n" << out;
  std::string devices = cli("devices --kernels");
  EXPECT_TRUE(contains(devices, "hostsim:0 available")) << devices;
  EXPECT_TRUE(contains(devices, "MatMul f32 (example_hostsim)")) << devices;
  std::string bad = cli("ops " + model + " --device nosuch:0");
  EXPECT_TRUE(contains(bad, "exit 2\n") && contains(bad, "unknown device 'nosuch:0'") && contains(bad, "hostsim:N"))
      << bad;
}

TEST(BackendPlugin, UnknownKindsAreRefusedNamingTheKnownOnes) {
  hostsim();
  std::string m = error_message<InvalidArgument>([] { Device::parse("tpu:0"); });
  EXPECT_TRUE(contains(m, "unknown device 'tpu:0'") && contains(m, "hostsim:N") && contains(m, "vulkan:N")) << m;
  EXPECT_TRUE(contains(error_message<InvalidArgument>([] { register_device_type("Bad-Name"); }), "'Bad-Name'"));
  EXPECT_TRUE(contains(error_message<InvalidArgument>([] { register_device_type("auto"); }), "not 'auto'"));
  m = error_message<BackendUnavailable>([] { backend_for(Device::parse("hostsim:1")); });
  EXPECT_TRUE(contains(m, "hostsim:1") && contains(m, "no such device")) << m;
  // A kind known by name but without a backend says so.
  DeviceType orphan = register_device_type("orphan_kind");
  m = error_message<BackendUnavailable>([&] { Tensor::empty({2}, DType::f32, Device{orphan, 0}); });
  EXPECT_TRUE(contains(m, "no backend for device kind 'orphan_kind'")) << m;

  int32_t id = 0;
  EXPECT_EQ(porta_device_type_find("nosuch", &id), PORTA_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(porta_last_error(), "known kinds: cpu, cuda, hip, vulkan")) << porta_last_error();
  porta_device d{};
  EXPECT_EQ(porta_device_parse("nosuch:0", &d), PORTA_ERROR_INVALID_ARGUMENT);
  const char* name = nullptr;
  EXPECT_EQ(porta_device_type_name(31, &name), PORTA_ERROR_INVALID_ARGUMENT);
  porta_tensor t = nullptr;
  int64_t shape[1] = {2};
  EXPECT_EQ(porta_tensor_create(porta_device{31, 0}, PORTA_F32, shape, 1, &t), PORTA_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(porta_last_error(), "registered kind id")) << porta_last_error();
}

TEST(BackendPlugin, AllocationFailureIsOutOfMemoryNamingBytes) {
  Device d{hostsim(), 0};
  Stats before = stats();
  set_capacity(before.in_use + 1000);
  std::string m = error_message<OutOfMemory>([&] { Tensor::empty({1024}, DType::f32, d); });
  EXPECT_TRUE(contains(m, "[hostsim:0] out of memory: requested 4096 bytes")) << m;
  EXPECT_TRUE(contains(m, "1000 free")) << m;  // the plugin's own account
  // Through the C ABI it is PORTA_ERROR_OUT_OF_MEMORY with the same message.
  porta_tensor t = nullptr;
  int64_t shape[1] = {1024};
  porta_device cd{d.type.id, 0};
  EXPECT_EQ(porta_tensor_create(cd, PORTA_F32, shape, 1, &t), PORTA_ERROR_OUT_OF_MEMORY);
  EXPECT_TRUE(contains(porta_last_error(), "requested 4096 bytes")) << porta_last_error();
  set_capacity(uint64_t{1} << 30);
  EXPECT_EQ(stats().in_use, before.in_use);
  EXPECT_NO_THROW(Tensor::empty({1024}, DType::f32, d));
}

// A def whose functions are never called (it is refused before use).
porta_backend_def dummy_def(const char* name) {
  porta_backend_def def{};
  def.struct_size = sizeof def;
  def.name = name;
  def.device_count = [](void*) { return int32_t{1}; };
  def.availability = [](void*, int32_t, int*, char*, size_t) { return PORTA_OK; };
  def.capabilities = [](void*, int32_t, porta_backend_caps*) { return PORTA_OK; };
  def.allocate = [](void*, int32_t, size_t, void**) { return PORTA_ERROR_OUT_OF_MEMORY; };
  def.deallocate = [](void*, int32_t, void*, size_t) {};
  def.copy_from_host = [](void*, int32_t, void*, size_t, const void*, size_t) { return PORTA_OK; };
  def.copy_to_host = [](void*, int32_t, void*, const void*, size_t, size_t) { return PORTA_OK; };
  def.copy_on_device = [](void*, int32_t, void*, size_t, const void*, size_t, size_t) { return PORTA_OK; };
  def.synchronize = [](void*, int32_t) { return PORTA_OK; };
  return def;
}

TEST(BackendPlugin, ASecondBackendForAKindIsRefused) {
  DeviceType t = hostsim();
  porta_backend_def def = dummy_def("hostsim");
  EXPECT_EQ(porta_register_backend(&def), PORTA_ERROR_ALREADY_EXISTS);
  EXPECT_TRUE(contains(porta_last_error(), "a backend for device kind 'hostsim' is already registered (from example_hostsim)"))
      << porta_last_error();
  def = dummy_def("cuda");
  EXPECT_EQ(porta_register_backend(&def), PORTA_ERROR_ALREADY_EXISTS);
  EXPECT_TRUE(contains(porta_last_error(), "'cuda' is built into porta")) << porta_last_error();
  def = dummy_def("hostsim2");
  def.copy_to_host = nullptr;
  EXPECT_EQ(porta_register_backend(&def), PORTA_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(porta_last_error(), "has no copy_to_host function")) << porta_last_error();

  // The same plugin from another file: refused as a whole, and the first one keeps working.
  std::string copy = (std::filesystem::temp_directory_path() / "porta_hostsim_copy.so").string();
  std::filesystem::copy_file(kPlugin, copy, std::filesystem::copy_options::overwrite_existing);
  try {
    load_plugin(copy);
    ADD_FAILURE() << "a second hostsim plugin was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "device kind 'hostsim' is already registered (from example_hostsim)")) << e.what();
  }
  std::filesystem::remove(copy);
  EXPECT_EQ(backend_source(t), "example_hostsim");
  Tensor x = Tensor::from_values({1, -2, 3}, {3}, DType::f32).to(Device{t, 0});
  EXPECT_EQ(call_op("Relu", {x}).at(0).to_doubles(), (std::vector<double>{1, 0, 3}));

  // A kernel naming a kind nobody registered.
  porta_kernel_def k{};
  k.struct_size = sizeof k;
  k.op = "Relu";
  k.backend_name = "nosuch";
  k.dtypes = PORTA_DTYPE_BIT(PORTA_F32);
  k.num_inputs = k.num_outputs = -1;
  k.fn = [](porta_kernel_context*, void*) { return PORTA_OK; };
  EXPECT_EQ(porta_register_kernel(&k), PORTA_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(porta_last_error(), "unknown device kind 'nosuch'")) << porta_last_error();
}

}  // namespace
}  // namespace porta::test
