// porta devices — one line per device of every built backend, then one per backend this build
// left out (with why: e.g. no GPU driver here); --caps adds each device's
// capability record, --kernels its kernels (several for one op are listed in the order the
// dispatcher tries them).
#include <iostream>

#include "tools/cli.hpp"

namespace porta::cli {

int cmd_devices(const Args& args) {
  for (Device d : all_devices()) {
    Backend* b = find_backend(d.type);
    Availability a = d.index < b->device_count() ? b->availability(d.index)
                                                 : Availability{false, "no device found"};
    std::cout << d.str() << (a.available ? " available " : " unavailable ") << a.detail;
    if (a.available) {
      Capabilities c = b->capabilities(d.index);
      if (!c.type.empty() && d.type != DeviceType::cpu) std::cout << " (" << c.type << ")";
    }
    std::cout << "\n";
    if (args.has("--caps") && a.available) {
      Capabilities c = b->capabilities(d.index);
      if (c.fast_dtypes)
        std::cout << "  fast formats (precision auto): " << dtype_set_names(c.fast_dtypes) << "\n";
      for (const auto& [key, value] : c.extra) std::cout << "  " << key << ": " << value << "\n";
    }
    if (args.has("--kernels") && a.available) {
      for (const OpSchema* op : all_ops())
        for (const KernelDef* k : kernels_for(*op))
          if (k->backend == d.type)
            std::cout << "  " << op->qualified_name() << " " << dtype_set_names(k->dtypes)
                      << (k->impl.name.empty() ? "" : str(" '", k->impl.name, "' priority ", k->impl.priority))
                      << (k->supports ? " (may decline)" : "") << " (" << k->source << ")\n";
    }
  }
  for (const UnbuiltBackend& u : backends_not_built())
    std::cout << u.kind << " not built here: " << u.reason << "\n";
  return 0;
}

}  // namespace porta::cli
