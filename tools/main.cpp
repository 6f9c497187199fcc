// porta — command-line program: devices, run, ops.
#include <cstring>
#include <iostream>

#include "tools/cli.hpp"
#include "porta/plugin.hpp"
#include "runtime/registry.hpp"
#include "tools/cmd_bench.hpp"

namespace {

const char* kUsage = R"(porta — run ONNX models and ops on CPU, Vulkan, CUDA and HIP

usage:
  porta devices [--caps] [--kernels]    list every device of every built backend (with its
                                        capability record, its kernels)
  porta run [MODEL.onnx] [--device D[,D...]|all] [--input NAME=FILE.npy]...
            [--output-dir DIR] [--repeat N] [--profile [--profile-runs N]] [--strict]
            [--precision f32|bf16|f16|auto] [--no-replay]
                                        run a model (default: the bundled example); --profile
                                        times every node (the median of N runs, default 1);
                                        --precision computes the model's f32 products in bf16
                                        or f16 (docs/ARCHITECTURE.md, "Compute precision");
                                        --no-replay records every run's device work
                                        (SessionOptions::replay)
  porta ops [MODEL.onnx] [--device D] [--all-devices] [--strict] [--precision P]
                                        what runs for every node, in which precision, and why
  porta check MODEL.onnx [--devices D[,D...]] [--input NAME=FILE.npy]... [--tolerance T] [--strict]
                          [--precision f32|bf16|f16|auto]
                                        every node's values on each device against the float64
                                        reference; exits 1 when a node's relative error > T
                                        (1e-4; with --precision bf16 3e-2, f16 4e-3), and names
                                        the first node whose error jumps
  porta bench [--op OP,...] [--device D,...|all] [--dtype T,...] [--case NAME,...]
              [--min-runs N] [--min-time S] [--warmup N] [--max-case-time S]
              [--json FILE] [--csv FILE] [--svg FILE] [--calibrate] [--compare A,B]
  porta bench MODEL.onnx [--device D,...] [--batch 1,8,32]
  porta bench --support [--markdown] | --list
                                        time ops (or a model) per device against the
                                        device's measured ceilings (docs/BENCH.md)
  porta test [--plugin LIB.so]... [--op OP,...] [--device D,...|all] [--dtype T,...] [--seed N]
                                        run every test case of the ops named (without --op:
                                        of every op the plugins add) on each device (default
                                        all) against the op's float64 reference; exits 1
                                        when one fails
  porta version

Ops are named "Name" (ONNX's default domain, then porta's ai.porta) or "domain::Name"
(com.example::ScaledSwish). --plugin LIB.so loads a plugin first (run, ops, check, bench, test).
Devices: cpu, vulkan:N, cuda:N, hip:N, auto (best available), all (every available one).
Errors in what you give porta (files, names, shapes) print one message and exit with 2.

Environment:
  PORTA_PLUGIN_PATH=A.so:DIR        plugins to load at start (files, or folders of *.so)
  PORTA_DISABLE_KERNELS=vulkan:Conv,cpu:Softmax:rows
                                    take kernels out of dispatch (BACKEND:OP[:IMPLEMENTATION]);
                                    an entry that disables nothing is an error here
  PORTA_MEMORY_LIMIT=cpu:2GiB,vulkan:0:512MiB
                                    cap the tensor bytes live on each device
  PORTA_FUSE=0                      no graph rewrites (Conv+BatchNormalization, Pad, activations)
  PORTA_MODELS_DIR=DIR              the bundled example models (default: next to porta)
  PORTA_THREAD_POLICY=fixed         cpu: always use every thread (no small-call or load rule)
  PORTA_CONV_WINOGRAD=0, PORTA_CONV_LAYOUT=...
                                    cpu Conv implementation switches (docs/PERFORMANCE.md)
  PORTA_CUDNN=0                     cuda Conv without cuDNN
  PORTA_CUDA_ALLOW_TF32=1           cuBLAS may use TF32 for f32 GEMMs
  PORTA_VULKAN_VALIDATION=1         Vulkan validation layers
  PORTA_FAULT_ALLOC=N, PORTA_VULKAN_DEVICE_LOST=submit:N
                                    fault injection for tests (docs/RELIABILITY.md)
)";

// Loads the plugins named by --plugin, and refuses a PORTA_DISABLE_KERNELS entry that
// disables nothing: the user would measure or test a kernel they believe is out.
void prepare(const porta::cli::Args& args) {
  for (const std::string& path : args.all("--plugin")) porta::load_plugin(path);
  std::vector<std::string> problems = porta::detail::disabled_kernel_problems();
  if (!problems.empty()) throw porta::InvalidArgument(porta::str("[env] ", problems.front()));
}

std::vector<std::string> with_plugin(std::vector<std::string> flags) {
  flags.push_back("--plugin");
  return flags;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace porta;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  try {
    if (cmd == "version" || cmd == "--version") {
      std::cout << "porta " << version() << "\n";
      return 0;
    }
    auto command = [&](int (*fn)(const cli::Args&), std::vector<std::string> valued,
                       std::vector<std::string> switches) {
      cli::Args args = cli::parse(argc, argv, 2, with_plugin(std::move(valued)), switches);
      prepare(args);
      return fn(args);
    };
    if (cmd == "devices") return command(cli::cmd_devices, {}, {"--kernels", "--caps"});
    if (cmd == "run")
      return command(cli::cmd_run, {"--device", "--input", "--output-dir", "--repeat", "--profile-runs", "--precision"},
                     {"--profile", "--strict", "--no-replay"});
    if (cmd == "ops")
      return command(cli::cmd_ops, {"--device", "--input", "--precision"}, {"--all-devices", "--strict"});
    if (cmd == "check") return command(cli::cmd_check, {"--devices", "--input", "--tolerance", "--precision"}, {"--strict"});
    if (cmd == "bench") return command(cli::cmd_bench, cli::bench::kValuedFlags, cli::bench::kSwitches);
    if (cmd == "test") return command(cli::cmd_test, {"--op", "--device", "--dtype", "--seed"}, {});
    std::cerr << "porta: unknown command '" << cmd << "'\n\n" << kUsage;
    return 2;
  } catch (const porta::Error& e) {
    std::cerr << "porta: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "porta: internal error: " << e.what() << "\n";
    return 1;
  }
}
