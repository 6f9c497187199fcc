// porta runtime — registrations made while a plugin's init runs are staged here and committed
// to the registry only when the whole plugin is accepted (see runtime/plugin_loader.cpp).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "porta/backend.hpp"
#include "porta/op.hpp"

namespace porta::detail {

struct PluginStaging {
  std::string source;                ///< the plugin's file stem, until it names itself
  const char* const* info_name = nullptr;  ///< porta_plugin_info::name, set by porta_plugin_begin
  /// How messages and KernelDef::source name the plugin: the name it gave, else its file stem.
  std::string name() const { return info_name && *info_name && **info_name ? *info_name : source; }
  std::vector<OpSchema> ops;
  std::vector<KernelDef> kernels;
  std::vector<std::unique_ptr<Backend>> backends;  ///< porta_register_backend adapters
  std::vector<std::string> refused;  ///< messages of registrations that were refused
};

/// The staging area of the plugin whose init runs on this thread, or nullptr.
PluginStaging*& current_staging();

/// Ensures the plugins named by PORTA_PLUGIN_PATH are loaded (once per process; re-entrant
/// calls from a loading plugin return at once). Called by the registry's lookups.
void ensure_env_plugins();

/// Removes an op schema by its key (op_key; rolling back a refused plugin). Kernels go with
/// unregister_source.
void unregister_op(const std::string& key);
/// Takes a backend out of the registry (rolling back a refused plugin); the object is kept
/// alive, since pointers to it may have been handed out.
void unregister_backend(DeviceType type);

}  // namespace porta::detail
