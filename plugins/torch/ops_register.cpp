// plugins/torch — registers every op of porta's registry (built-in ones, and those of the
// plugins PORTA_PLUGIN_PATH names, which porta loads at the registry's first use) as
// torch.ops.porta.*, when the library loads. Plugins loaded later through
// torch.ops.porta.load_plugin(path) add theirs then.
#include <memory>
#include <set>

#include "ops_call.hpp"
#include "porta/plugin.hpp"

namespace porta_torch {
namespace {

struct Libraries {
  std::mutex mutex;
  std::vector<std::unique_ptr<torch::Library>> libraries;  // torch keeps ops while these live
  std::set<std::string> bound;                             // torch names defined so far
};
Libraries& libraries() {
  static Libraries* l = new Libraries;  // never destroyed: torch's registry outlives statics
  return *l;
}

// Defines the ops not bound yet in a new library fragment; returns their torch names.
std::vector<std::string> bind_new_ops(torch::Library::Kind kind) {
  Libraries& l = libraries();
  std::lock_guard lock(l.mutex);
  auto lib = std::make_unique<torch::Library>(kind, "porta", c10::nullopt, __FILE__, __LINE__);
  std::vector<std::string> added;
  for (const porta::OpSchema* op : porta::all_ops()) {
    std::vector<std::string> names = torch_names(*op);
    try {
      OpBinding b = bind_op(*op);
      for (const std::string& name : names) {
        if (l.bound.count(name)) continue;
        lib->def(torch::schema((name + b.signature).c_str(), c10::AliasAnalysisKind::FROM_SCHEMA));
        // Every backend key (and calls without tensors, e.g. an empty list): device_kernel runs
        // porta or names the device porta lacks. Autograd first, for gradients.
        lib->impl(name.c_str(), torch::dispatch(c10::DispatchKey::CompositeExplicitAutograd,
                                                torch::CppFunction::makeFromBoxedFunction<&device_kernel>()));
        lib->impl(name.c_str(), torch::dispatch(c10::DispatchKey::Autograd,
                                                torch::CppFunction::makeFromBoxedFunction<&autograd_kernel>()));
        add_binding("porta::" + name, b);
        l.bound.insert(name);
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

// Defined first, at load: the ops, and the two helpers (lower-case, so no op name clashes).
const bool registered = [] {
  bind_new_ops(torch::Library::DEF);
  Libraries& l = libraries();
  std::lock_guard lock(l.mutex);
  auto lib = std::make_unique<torch::Library>(torch::Library::FRAGMENT, "porta", c10::nullopt, __FILE__, __LINE__);
  lib->def("_op_table() -> str[]", &op_table);
  lib->def("load_plugin(str path) -> str[]", &load_plugin);
  l.libraries.push_back(std::move(lib));
  return true;
}();

}  // namespace
}  // namespace porta_torch
