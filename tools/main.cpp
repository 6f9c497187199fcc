// porta — command-line program: devices, run, ops.
#include <cstring>
#include <iostream>

#include "tools/cli.hpp"
#include "tools/cmd_bench.hpp"

namespace {

const char* kUsage = R"(porta — run ONNX models and ops on CPU, Vulkan, CUDA and HIP

usage:
  porta devices [--caps] [--kernels]    list every device of every built backend (with its
                                        capability record, its kernels)
  porta run [MODEL.onnx] [--device D[,D...]|all] [--input NAME=FILE.npy]...
            [--output-dir DIR] [--repeat N] [--profile [--profile-runs N]] [--strict]
                                        run a model (default: the bundled example); --profile
                                        times every node (the median of N runs, default 1)
  porta ops [MODEL.onnx] [--device D] [--all-devices] [--strict]
                                        what runs for every node, and why
  porta check MODEL.onnx [--devices D[,D...]] [--input NAME=FILE.npy]... [--tolerance T] [--strict]
                                        every node's values on each device against the float64
                                        reference; exits 1 when a node's relative error > T (1e-4)
  porta bench [--op OP,...] [--device D,...|all] [--dtype T,...] [--case NAME,...]
              [--min-runs N] [--min-time S] [--warmup N] [--max-case-time S]
              [--json FILE] [--csv FILE] [--svg FILE] [--calibrate] [--compare A,B]
  porta bench MODEL.onnx [--device D,...] [--batch 1,8,32]
  porta bench --support [--markdown] | --list
                                        time ops (or a model) per device against the
                                        device's measured ceilings (docs/BENCH.md)
  porta version

Devices: cpu, vulkan:N, cuda:N, hip:N, auto (best available), all (every available one).
Errors in what you give porta (files, names, shapes) print one message and exit with 2.
)";

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
    if (cmd == "devices")
      return cli::cmd_devices(cli::parse(argc, argv, 2, {}, {"--kernels", "--caps"}));
    if (cmd == "run")
      return cli::cmd_run(cli::parse(argc, argv, 2, {"--device", "--input", "--output-dir", "--repeat", "--profile-runs"},
                                     {"--profile", "--strict"}));
    if (cmd == "ops")
      return cli::cmd_ops(cli::parse(argc, argv, 2, {"--device", "--input"}, {"--all-devices", "--strict"}));
    if (cmd == "check")
      return cli::cmd_check(cli::parse(argc, argv, 2, {"--devices", "--input", "--tolerance"}, {"--strict"}));
    if (cmd == "bench")
      return cli::cmd_bench(cli::parse(argc, argv, 2, cli::bench::kValuedFlags, cli::bench::kSwitches));
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
