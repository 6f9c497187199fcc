// porta runtime — C ABI: registering op schemas and kernels given as C function pointers,
// directly or staged for the plugin being loaded.
#include <algorithm>
#include <cstddef>

#include "porta/porta.hpp"
#include "runtime/c_api_callbacks.hpp"
#include "runtime/plugin_staging.hpp"

using namespace porta;
using namespace porta::capi;

namespace {

[[noreturn]] void refuse(porta_status s, const std::string& message) {
  if (auto* st = detail::current_staging()) st->refused.push_back(message);
  throw StatusError(s, message);
}

std::string read_name(const char* s, const char* fn, const char* what) {
  if (!s || !*s) refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", what, " should be a non-empty string"));
  return s;
}

std::vector<std::string> read_names(const char* const* names, size_t n, const char* fn, const char* what) {
  if (n && !names) refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", what, " should not be NULL for ", n, " names"));
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(read_name(names[i], fn, what));
  return out;
}

AttrDef read_attr_def(const porta_attr_def& d, const std::string& op) {
  AttrDef a;
  a.name = read_name(d.name, "porta_register_op", "attribute name");
  a.required = d.required != 0;
  switch (d.type) {
    case PORTA_ATTR_INT: a.type = AttrType::Int; if (!a.required) a.default_value = d.default_int; break;
    case PORTA_ATTR_FLOAT: a.type = AttrType::Float; if (!a.required) a.default_value = d.default_float; break;
    case PORTA_ATTR_STRING:
      a.type = AttrType::String;
      if (!a.required) a.default_value = std::string(d.default_string ? d.default_string : "");
      break;
    case PORTA_ATTR_INTS: a.type = AttrType::Ints; break;
    case PORTA_ATTR_FLOATS: a.type = AttrType::Floats; break;
    default:
      refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[porta_register_op] ", op, ": attribute '", a.name,
                                               "' has type ", d.type, ", which is no porta_attr_type"));
  }
  return a;
}

std::string source_name() {
  auto* st = detail::current_staging();
  return st ? st->source : "c_api";
}

// The schema a kernel is checked against: registered, or staged by the same plugin.
const OpSchema* schema_for(const std::string& op) {
  if (auto* st = detail::current_staging())
    for (auto& s : st->ops)
      if (s.name == op) return &s;
  return find_op(op);
}

void check_count(int32_t given, int lo, int hi, const std::string& op, const char* what) {
  if (given < 0) return;  // the kernel takes what the schema says
  if (given < lo || (hi >= 0 && given > hi))
    refuse(PORTA_ERROR_INVALID_ARGUMENT,
           str("[porta_register_kernel] kernel signature disagrees with the schema of '", op, "': it takes ",
               given, " ", what, ", the op has ", lo, hi == lo ? "" : str(" to ", hi < 0 ? "any" : std::to_string(hi)),
               " ", what));
}

}  // namespace

extern "C" {

porta_status porta_register_op(const porta_op_schema* c) {
  PORTA_C_GUARD({
    const char* fn = "porta_register_op";
    if (!c) refuse(PORTA_ERROR_INVALID_ARGUMENT, "[porta_register_op] schema should not be NULL");
    if (c->struct_size < sizeof(porta_op_schema))
      refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] schema struct_size should be at least ",
                                               sizeof(porta_op_schema), ", got ", c->struct_size));
    OpSchema s;
    s.name = read_name(c->name, fn, "name");
    s.domain = c->domain ? c->domain : "";
    s.inputs = read_names(c->inputs, c->num_inputs, fn, "input names");
    s.outputs = read_names(c->outputs, c->num_outputs, fn, "output names");
    if (s.outputs.empty()) refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", s.name, ": an op needs at least one output"));
    if (c->num_attrs && !c->attrs) refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", s.name, ": attrs should not be NULL"));
    for (size_t i = 0; i < c->num_attrs; ++i) s.attrs.push_back(read_attr_def(c->attrs[i], s.name));
    if (!c->infer) refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", s.name, ": shape inference (infer) is required"));
    if (!c->reference && !c->composite)
      refuse(PORTA_ERROR_INVALID_ARGUMENT,
             str("[", fn, "] ", s.name, ": a reference or a composite is required (CPU fallback and tests use them)"));
    if (const OpSchema* existing = schema_for(s.name))
      refuse(PORTA_ERROR_ALREADY_EXISTS, str("[", fn, "] op '", s.name, "' already exists (domain '",
                                             existing->domain, "'); refusing to replace it"));
    s.infer = adapt_infer(c->infer, c->user_data, s.name);
    if (c->reference) s.reference = adapt_kernel(c->reference, c->user_data, s.name, source_name() + " reference");
    if (c->composite) s.composite = adapt_composite(c->composite, c->user_data, s.name, s.outputs.size());
    if (auto* st = detail::current_staging()) st->ops.push_back(std::move(s));
    else register_op(std::move(s));
  })
}

porta_status porta_register_kernel(const porta_kernel_def* c) {
  PORTA_C_GUARD({
    const char* fn = "porta_register_kernel";
    if (!c) refuse(PORTA_ERROR_INVALID_ARGUMENT, "[porta_register_kernel] kernel should not be NULL");
    // backend_name was appended in ABI version 2: a smaller struct names its kind by number.
    const size_t before_name = offsetof(porta_kernel_def, backend_name);
    if (c->struct_size < before_name)
      refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] kernel struct_size should be at least ",
                                               before_name, ", got ", c->struct_size));
    const char* kind_name = c->struct_size >= sizeof(porta_kernel_def) ? c->backend_name : nullptr;
    std::string op = read_name(c->op, fn, "op");
    if (!c->fn) refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] kernel for '", op, "' has no function"));
    DeviceType kind;
    if (kind_name) {
      auto t = find_device_type(kind_name);
      if (!t) {
        std::string known;
        for (DeviceType k : device_types()) known += str(known.empty() ? "" : ", ", device_type_name(k));
        refuse(PORTA_ERROR_INVALID_ARGUMENT,
               str("[", fn, "] kernel for '", op, "': unknown device kind '", kind_name, "' (known: ", known,
                   "; a plugin's backend registers its kind before its kernels)"));
      }
      kind = *t;
    } else {
      int kinds = static_cast<int>(device_types().size());
      if (c->backend < 0 || c->backend >= kinds)
        refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] kernel for '", op, "': backend should be a porta_device_type or a registered kind id (0..",
                                                 kinds - 1, "), got ", c->backend));
      kind = DeviceType(static_cast<uint8_t>(c->backend));
    }
    const DTypeSet all = (1u << kNumDTypes) - 1;
    if (c->dtypes == 0 || (c->dtypes & ~all))
      refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] kernel for '", op, "': dtypes should be a non-empty set of PORTA_DTYPE_BIT values, got 0x",
                                               std::hex, c->dtypes));
    const OpSchema* schema = schema_for(op);
    if (!schema) refuse(PORTA_ERROR_UNSUPPORTED, str("[", fn, "] kernel for unknown op '", op, "' (register its schema first)"));
    check_count(c->num_inputs, schema->min_inputs(), schema->max_inputs(), op, "inputs");
    check_count(c->num_outputs, schema->min_outputs(), schema->max_outputs(), op, "outputs");
    KernelDef k;
    k.op = op;
    k.backend = kind;
    k.dtypes = c->dtypes;
    k.source = source_name();
    k.fn = adapt_kernel(c->fn, c->user_data, op, k.source);
    std::vector<const KernelDef*> existing = kernels_for(op);
    if (auto* st = detail::current_staging())
      for (auto& s : st->kernels)
        if (s.op == op) existing.push_back(&s);
    for (const KernelDef* e : existing)
      if (e->backend == k.backend && (e->dtypes & k.dtypes))
        refuse(PORTA_ERROR_ALREADY_EXISTS,
               str("[", fn, "] a ", device_type_name(k.backend), " kernel for '", op, "' with dtypes ",
                   dtype_set_names(e->dtypes & k.dtypes), " is already registered (from ", e->source, ")"));
    if (auto* st = detail::current_staging()) st->kernels.push_back(std::move(k));
    else register_kernel(std::move(k));
  })
}

}  // extern "C"
