// porta CLI — argument parsing and shared helpers for the subcommands.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "porta/porta.hpp"

namespace porta::cli {

/// Parsed command line: positional arguments and --flag [value] options (repeatable).
struct Args {
  std::vector<std::string> positional;
  std::multimap<std::string, std::string> options;

  bool has(const std::string& flag) const { return options.count(flag) > 0; }
  std::string get(const std::string& flag, const std::string& fallback = "") const;
  std::vector<std::string> all(const std::string& flag) const;
  /// Comma-separated values of all occurrences of a flag.
  std::vector<std::string> list(const std::string& flag) const;
  int get_int(const std::string& flag, int fallback) const;
};

/// Parses argv; `valued` lists flags that take a value. Throws InvalidArgument on an
/// unknown flag or a missing value.
Args parse(int argc, char** argv, int first, const std::vector<std::string>& valued,
           const std::vector<std::string>& switches);

/// The bundled example models folder (PORTA_MODELS_DIR, next to the binary, or the source tree).
std::string models_dir();
/// models/cnn/model.onnx in the bundled folder.
std::string default_model();

/// Inputs for a model: from --input NAME=FILE.npy, else the files listed in the model folder's
/// inputs.txt ("name file" lines), else random values from the model's shapes (dynamic dims = 1).
std::map<std::string, Tensor> model_inputs(const Model& model, const std::string& model_path,
                                           const std::vector<std::string>& input_flags);
/// Reference outputs listed in the model folder's outputs.txt ("name file"), if present.
std::map<std::string, Tensor> reference_outputs(const std::string& model_path);

/// Devices named by --device: "all" = every available device of every built backend.
std::vector<Device> parse_devices(const std::vector<std::string>& names);

int cmd_devices(const Args& args);
int cmd_run(const Args& args);
int cmd_ops(const Args& args);
int cmd_check(const Args& args);
int cmd_test(const Args& args);

}  // namespace porta::cli
