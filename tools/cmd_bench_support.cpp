// porta bench --support — the support matrix: every op x every built backend, each cell what
// the dispatcher resolves for the op's main dtype (native / composite / fallback:cpu /
// unsupported), with the dtypes the backend's own kernels accept. docs/ops.md is this table
// in markdown (scripts/gen_ops_doc.sh).
//
// It asks porta::resolve, the same answer `porta ops` prints per node; a kernel whose
// `supports` declines particular calls (sizes, attributes) shows as native here.
#include <algorithm>
#include <iomanip>

#include "tools/cmd_bench.hpp"

namespace porta::cli::bench {
namespace {

// f32 when any kernel of the op takes it (or none exists), else the lowest dtype some kernel takes.
DType main_dtype(const OpSchema& op) {
  DTypeSet all = 0;
  for (const KernelDef* k : kernels_for(op)) all |= k->dtypes;
  if (all == 0 || dtype_in(all, DType::f32)) return DType::f32;
  for (int i = 0; i < kNumDTypes; ++i)
    if (dtype_in(all, static_cast<DType>(i))) return static_cast<DType>(i);
  return DType::f32;
}

std::string native_dtypes(const OpSchema& op, DeviceType type) {
  DTypeSet set = 0;
  for (const KernelDef* k : kernels_for(op))
    if (k->backend == type) set |= k->dtypes;
  return set ? dtype_set_names(set) : "";
}

std::string cell(const OpSchema& op, DeviceType type, DType dtype) {
  const Resolution& r = resolve(op, Device{type, 0}, dtype);
  std::string s(path_name(r.path));
  std::string dts = native_dtypes(op, type);
  if (!dts.empty()) s += " (" + dts + ")";
  return s;
}

}  // namespace

void print_support(std::ostream& os, bool markdown) {
  std::vector<const OpSchema*> ops = all_ops();
  std::sort(ops.begin(), ops.end(), [](const OpSchema* a, const OpSchema* b) {
    return a->domain != b->domain ? a->domain < b->domain : a->name < b->name;
  });
  std::vector<DeviceType> backends = built_backends();
  auto op_name = [](const OpSchema* op) { return op->qualified_name(); };
  if (markdown) {
    os << "| op | dtype |";
    for (DeviceType b : backends) os << " " << device_type_name(b) << " |";
    os << "\n|---|---|";
    for (size_t i = 0; i < backends.size(); ++i) os << "---|";
    os << "\n";
    for (const OpSchema* op : ops) {
      DType dt = main_dtype(*op);
      os << "| " << op_name(op) << " | " << dtype_name(dt) << " |";
      for (DeviceType b : backends) os << " " << cell(*op, b, dt) << " |";
      os << "\n";
    }
    return;
  }
  // Columns as wide as their widest cell, so a row always splits on runs of spaces.
  std::vector<std::vector<std::string>> rows;
  for (const OpSchema* op : ops) {
    DType dt = main_dtype(*op);
    std::vector<std::string> row = {op_name(op), std::string(dtype_name(dt))};
    for (DeviceType b : backends) row.push_back(cell(*op, b, dt));
    rows.push_back(std::move(row));
  }
  std::vector<std::string> header = {"op", "dtype"};
  for (DeviceType b : backends) header.emplace_back(device_type_name(b));
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  auto print_row = [&](const std::vector<std::string>& row) {
    for (size_t c = 0; c < row.size(); ++c)
      os << std::left << std::setw(static_cast<int>(c + 1 < row.size() ? width[c] + 2 : 0)) << row[c];
    os << "\n";
  };
  print_row(header);
  for (auto& row : rows) print_row(row);
}

}  // namespace porta::cli::bench
