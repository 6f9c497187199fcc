// porta runtime — loading kernel plugins (shared libraries exporting porta_plugin_init).
//
// A plugin's registrations are staged while its init runs and committed only when it is
// accepted: right ABI version, init returned PORTA_OK, no registration refused. A refused
// plugin leaves nothing behind and is closed; porta carries on.
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <vector>

#include "porta/plugin.h"
#include "porta/plugin.hpp"
#include "porta/porta.hpp"
#include "runtime/c_api_handles.hpp"
#include "runtime/plugin_staging.hpp"
#include "runtime/registry.hpp"

namespace porta {
namespace detail {

PluginStaging*& current_staging() {
  thread_local PluginStaging* s = nullptr;
  return s;
}

}  // namespace detail

namespace {

struct Loaded {
  std::vector<PluginInfo> plugins;
  std::vector<std::string> errors;
  std::recursive_mutex mutex;
};
Loaded& loaded() {
  static auto* l = new Loaded();
  return *l;
}

const porta_plugin_api& api_table(uint32_t version = PORTA_ABI_VERSION) {
  static const porta_plugin_api api = [] {
    porta_plugin_api a{};
    a.abi_version = PORTA_ABI_VERSION;
    a.struct_size = sizeof(porta_plugin_api);
    a.register_op = porta_register_op;
    a.register_kernel = porta_register_kernel;
    a.set_error = porta_set_error;
    a.kernel_num_inputs = porta_kernel_num_inputs;
    a.kernel_num_outputs = porta_kernel_num_outputs;
    a.kernel_input = porta_kernel_input;
    a.kernel_output = porta_kernel_output;
    a.kernel_attrs = porta_kernel_attrs;
    a.kernel_device = porta_kernel_device;
    a.tensor_rank = porta_tensor_rank;
    a.tensor_shape = porta_tensor_shape;
    a.tensor_dtype = porta_tensor_dtype;
    a.tensor_nbytes = porta_tensor_nbytes;
    a.tensor_data = porta_tensor_data;
    a.tensor_create = porta_tensor_create;
    a.tensor_copy_from_host = porta_tensor_copy_from_host;
    a.tensor_free = porta_tensor_free;
    a.attrs_create = porta_attrs_create;
    a.attrs_set_int = porta_attrs_set_int;
    a.attrs_set_float = porta_attrs_set_float;
    a.attrs_get_int = porta_attrs_get_int;
    a.attrs_get_float = porta_attrs_get_float;
    a.attrs_get_ints = porta_attrs_get_ints;
    a.attrs_free = porta_attrs_free;
    a.infer_num_inputs = porta_infer_num_inputs;
    a.infer_input = porta_infer_input;
    a.infer_attrs = porta_infer_attrs;
    a.infer_set_output = porta_infer_set_output;
    a.builder_add = porta_builder_add;
    a.builder_constant = porta_builder_constant;
    a.builder_value = porta_builder_value;
    a.vulkan_register_shader = porta_vulkan_register_shader;
    a.vulkan_dispatch = porta_vulkan_dispatch;
    a.register_backend = porta_register_backend;
    a.device_type_find = porta_device_type_find;
    a.tensor_device_handle = porta_tensor_device_handle;
    a.attrs_set_string = porta_attrs_set_string;
    a.attrs_set_ints = porta_attrs_set_ints;
    a.attrs_set_floats = porta_attrs_set_floats;
    a.attrs_set_strings = porta_attrs_set_strings;
    a.attrs_set_tensor = porta_attrs_set_tensor;
    a.attrs_type = porta_attrs_type;
    a.attrs_get_string = porta_attrs_get_string;
    a.attrs_get_floats = porta_attrs_get_floats;
    a.attrs_get_strings = porta_attrs_get_strings;
    a.attrs_get_tensor = porta_attrs_get_tensor;
    a.tensor_copy_to_host = porta_tensor_copy_to_host;
    a.tensor_device_pointer = porta_tensor_device_pointer;
    a.kernel_stream = porta_kernel_stream;
    a.kernel_scratch = porta_kernel_scratch;
    return a;
  }();
  // An older plugin gets the same table (its fields are a prefix of this one) with its own
  // version number, so that its porta_plugin_begin accepts it.
  static const auto older = [] {
    std::vector<porta_plugin_api> v;
    for (uint32_t i = 0; i < PORTA_ABI_VERSION; ++i) {
      v.push_back(api);
      v.back().abi_version = i;
    }
    return v;
  }();
  return version < PORTA_ABI_VERSION ? older[version] : api;
}

// Registers what the plugin staged (backends first, so its kernels' kinds have one); on a
// conflict found only now, removes what was added.
void commit(detail::PluginStaging& st) {
  std::vector<std::string> added_ops;
  std::vector<DeviceType> added_backends;
  try {
    for (auto& b : st.backends) {
      DeviceType t = b->type();
      register_backend(std::move(b), st.source);
      added_backends.push_back(t);
    }
    for (auto& op : st.ops) {
      std::string name = op.qualified_name();
      register_op(std::move(op));
      added_ops.push_back(name);
    }
    for (auto& k : st.kernels) register_kernel(std::move(k));
  } catch (...) {
    detail::unregister_source(st.source);
    for (auto& name : added_ops) detail::unregister_op(name);
    for (DeviceType t : added_backends) detail::unregister_backend(t);
    throw;
  }
}

struct DlCloser {
  void* handle;
  bool keep = false;
  ~DlCloser() { if (handle && !keep) dlclose(handle); }
};

}  // namespace

std::string load_plugin(const std::string& path) {
  detail::ensure_env_plugins();
  std::error_code ec;
  std::string canonical = std::filesystem::weakly_canonical(path, ec).string();
  if (ec || !std::filesystem::is_regular_file(canonical))
    throw InvalidArgument(str("[plugin] ", path, ": no such file"));
  Loaded& l = loaded();
  std::lock_guard lock(l.mutex);
  for (auto& p : l.plugins)
    if (p.path == canonical) return p.name;  // loading twice is a no-op

  DlCloser lib{dlopen(canonical.c_str(), RTLD_NOW | RTLD_LOCAL)};
  if (!lib.handle) throw InvalidArgument(str("[plugin] ", path, ": cannot be loaded: ", dlerror()));
  auto init = reinterpret_cast<porta_plugin_init_fn>(dlsym(lib.handle, "porta_plugin_init"));
  if (!init)
    throw InvalidArgument(str("[plugin] ", path, ": exports no porta_plugin_init (is it a porta plugin?)"));

  detail::PluginStaging staging;
  porta_plugin_info info{0, nullptr};
  porta_status status;
  auto run_init = [&](uint32_t version) {
    staging = detail::PluginStaging();
    info = porta_plugin_info{0, nullptr};
    detail::PluginStaging*& slot = detail::current_staging();
    detail::PluginStaging* outer = slot;
    staging.source = std::filesystem::path(canonical).stem().string();
    staging.info_name = &info.name;
    slot = &staging;
    capi::set_error(PORTA_OK, "");
    status = init(&api_table(version), &info);
    slot = outer;
  };
  run_init(PORTA_ABI_VERSION);
  // A plugin of an older version that refused the table as its contract says (nothing
  // registered): the table only grew since, so it runs with its own version number.
  if (info.abi_version >= PORTA_ABI_VERSION_OLDEST && info.abi_version < PORTA_ABI_VERSION &&
      status == PORTA_ERROR_ABI_MISMATCH && staging.ops.empty() && staging.kernels.empty() &&
      staging.backends.empty() && staging.refused.empty())
    run_init(info.abi_version);
  std::string name = info.name && *info.name ? info.name : staging.source;
  if (info.abi_version < PORTA_ABI_VERSION_OLDEST || info.abi_version > PORTA_ABI_VERSION)
    throw capi::StatusError(PORTA_ERROR_ABI_MISMATCH, str("[plugin] ", name, " (", path, ") was built for porta ABI version ",
                          info.abi_version, ", this porta implements ABI version ", PORTA_ABI_VERSION,
                          " and loads plugins of versions ", PORTA_ABI_VERSION_OLDEST, " to ", PORTA_ABI_VERSION,
                          "; rebuild the plugin against this porta"));
  if (status != PORTA_OK) {
    std::string why = !staging.refused.empty() ? staging.refused.front() : capi::last_error();
    throw Unsupported(str("[plugin] ", name, " (", path, ") failed to initialise (",
                          porta_status_name(status), "): ", why.empty() ? "no message" : why));
  }
  if (!staging.refused.empty())
    throw Unsupported(str("[plugin] ", name, " (", path, ") was refused: ", staging.refused.front()));
  for (auto& p : l.plugins)
    if (p.name == name) throw Unsupported(str("[plugin] ", path, ": a plugin named '", name, "' is already loaded from ", p.path));
  // Kernels name the plugin by the name it gave, not the file name.
  for (auto& k : staging.kernels) k.source = name;
  staging.source = name;
  PluginInfo pi{name, canonical, {}, {}, {}};  // before commit, which moves the staged entries
  for (auto& op : staging.ops) pi.ops.push_back(op.qualified_name());
  for (auto& k : staging.kernels) pi.kernels.push_back(str(device_type_name(k.backend), ":", k.op));
  for (auto& b : staging.backends) pi.backends.emplace_back(device_type_name(b->type()));
  commit(staging);
  // Kernels and backends point into it from now on: never closed, so memory a plugin device
  // handed out can be freed at any time, even while the process exits.
  lib.keep = true;
  l.plugins.push_back(std::move(pi));
  return name;
}

std::vector<PluginInfo> loaded_plugins() {
  std::lock_guard lock(loaded().mutex);
  return loaded().plugins;
}

std::vector<std::string> plugin_errors() {
  std::lock_guard lock(loaded().mutex);
  return loaded().errors;
}

namespace detail {

void ensure_env_plugins() {
  static std::atomic<bool> done{false};
  static std::mutex once;
  thread_local bool loading = false;
  if (done.load(std::memory_order_acquire) || loading) return;
  std::lock_guard lock(once);
  if (done.load()) return;
  loading = true;
  const char* env = std::getenv("PORTA_PLUGIN_PATH");
  std::string list = env ? env : "";
  size_t start = 0;
  while (start <= list.size() && !list.empty()) {
    size_t colon = list.find(':', start);
    std::string item = list.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    start = colon == std::string::npos ? list.size() + 1 : colon + 1;
    if (item.empty()) continue;
    std::vector<std::string> files;
    std::error_code ec;
    if (std::filesystem::is_directory(item, ec)) {
      for (auto& e : std::filesystem::directory_iterator(item, ec))
        if (e.path().extension() == ".so") files.push_back(e.path().string());
      std::sort(files.begin(), files.end());
    } else {
      files.push_back(item);
    }
    for (auto& f : files) {
      try {
        load_plugin(f);
      } catch (const std::exception& e) {
        std::lock_guard l(loaded().mutex);
        loaded().errors.push_back(e.what());
        std::cerr << "porta: " << e.what() << "\n";
      }
    }
  }
  loading = false;
  done.store(true, std::memory_order_release);
}

}  // namespace detail
}  // namespace porta

extern "C" porta_status porta_load_plugin(const char* path) {
  PORTA_C_GUARD({
    porta::capi::need(path, "porta_load_plugin", "path");
    porta::load_plugin(path);
  })
}
