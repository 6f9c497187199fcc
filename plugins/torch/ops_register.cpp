// plugins/torch — registers every op of porta's registry (built-in ones, and those of the
// plugins PORTA_PLUGIN_PATH names, which porta loads at the registry's first use) as
// torch.ops.porta.*, when the library loads. Plugins loaded later through
// torch.ops.porta.load_plugin(path) add theirs then.
#include <memory>
#include <map>

#include "ops_call.hpp"
#include "porta/plugin.hpp"

namespace porta_torch {
namespace {

struct Libraries {
  std::mutex mutex;
  std::vector<std::unique_ptr<torch::Library>> libraries;  // torch keeps ops while these live
  std::map<std::string, std::string> bound;                // torch name -> porta's name for the op
};
Libraries& libraries() {
  static Libraries* l = new Libraries;  // never destroyed: torch's registry outlives statics
  return *l;
}

// Defines the ops not bound yet in a new library fragment; returns their torch names.
std::vector<std::string> bind_new_ops(torch::Library::Kind kind = torch::Library::FRAGMENT) {
  Libraries& l = libraries();
  std::lock_guard lock(l.mutex);
  auto lib = std::make_unique<torch::Library>(kind, "porta", c10::nullopt, __FILE__, __LINE__);
  std::vector<std::string> added;
  for (const porta::OpSchema* op : porta::all_ops()) {
    std::vector<std::string> names = torch_names(*op);
    try {
      OpBinding b = bind_op(*op);
      for (const std::string& name : names) {
        auto taken = l.bound.find(name);
        if (taken != l.bound.end()) {
          if (taken->second != b.qualified)
            add_unbound(b.qualified, porta::str("torch.ops.porta.", name, " is taken by ", taken->second));
          continue;
        }
        lib->def(torch::schema((name + b.signature).c_str(), c10::AliasAnalysisKind::FROM_SCHEMA));
        // Every backend key (and calls without tensors, e.g. an empty list): device_kernel runs
        // porta or names the device porta lacks. Autograd first, for gradients.
        lib->impl(name.c_str(), torch::dispatch(c10::DispatchKey::CompositeExplicitAutograd,
                                                torch::CppFunction::makeFromBoxedFunction<&device_kernel>()));
        lib->impl(name.c_str(), torch::dispatch(c10::DispatchKey::Autograd,
                                                torch::CppFunction::makeFromBoxedFunction<&autograd_kernel>()));
        add_binding("porta::" + name, b);
        l.bound[name] = b.qualified;
        added.push_back(name);
      }
    } catch (const std::exception& e) {
      add_unbound(op->qualified_name(), e.what());
    }
  }
  l.libraries.push_back(std::move(lib));
  return added;
}

std::vector<std::string> op_table() { return binding_table(); }

std::vector<std::string> load_plugin(c10::string_view path) {
  try {
    porta::load_plugin(std::string(path));
  } catch (const std::exception& e) {
    TORCH_CHECK(false, e.what());
  }
  return bind_new_ops(torch::Library::FRAGMENT);
}

// At load: the two helpers first (an op of the same name is then reported unbound), then the ops.
const bool registered = [] {
  {
    Libraries& l = libraries();
    std::lock_guard lock(l.mutex);
    auto lib = std::make_unique<torch::Library>(torch::Library::DEF, "porta", c10::nullopt, __FILE__, __LINE__);
    lib->def("_op_table() -> str[]", &op_table);
    lib->def("load_plugin(str path) -> str[]", &load_plugin);
    l.bound["_op_table"] = l.bound["load_plugin"] = "libporta_torch's own helper";
    l.libraries.push_back(std::move(lib));
  }
  bind_new_ops(torch::Library::FRAGMENT);
  return true;
}();

}  // namespace
}  // namespace porta_torch
