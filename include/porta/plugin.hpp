// porta — kernel plugins from C++ (the plugin side is C: see porta/plugin.h).
#pragma once
#include <string>
#include <vector>

namespace porta {

/// A plugin that was accepted.
struct PluginInfo {
  std::string name;                  ///< the name it gave; its kernels' KernelDef::source
  std::string path;                  ///< canonical path of the shared library
  std::vector<std::string> ops;      ///< ops it added
  std::vector<std::string> kernels;  ///< kernels it added, as "backend:Op"
  std::vector<std::string> backends; ///< device kinds it added a backend for ("hostsim")
};

/// Loads a plugin now and returns its name; loading the same file again does nothing. A
/// plugin, once accepted, is never unloaded (its backends may hold memory until exit).
/// Throws (InvalidArgument, Unsupported, or an Error with the ABI versions) when the file is
/// not a porta plugin, was built for another ABI version, or registers an op that exists or a
/// kernel that disagrees with its op; nothing of a refused plugin stays registered.
std::string load_plugin(const std::string& path);
/// Plugins accepted so far (PORTA_PLUGIN_PATH and load_plugin).
std::vector<PluginInfo> loaded_plugins();
/// Why plugins named by PORTA_PLUGIN_PATH were refused (also printed to stderr).
std::vector<std::string> plugin_errors();

}  // namespace porta
