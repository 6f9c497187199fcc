// porta runtime — C ABI: registering op schemas and kernels given as C function pointers,
// directly or staged for the plugin being loaded.
#include <algorithm>
#include <cstddef>

#include "porta/porta.hpp"
#include "runtime/c_api_handles.hpp"
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
    case PORTA_ATTR_STRINGS: a.type = AttrType::Strings; break;
    case PORTA_ATTR_TENSOR: a.type = AttrType::TensorValue; break;
    default:
      refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[porta_register_op] ", op, ": attribute '", a.name,
                                               "' has type ", d.type, ", which is no porta_attr_type"));
  }
  return a;
}

AttrValue read_attr_value(const porta_attr_value& v, const std::string& where) {
  const char* fn = "porta_register_op";
  std::string name = v.name ? v.name : "";
  if (name.empty()) refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", where, ": an attribute has no name"));
  auto list = [&](const void* p) {
    if (v.count && !p)
      refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", where, ": attribute '", name, "' has count ", v.count,
                                               " and no values"));
  };
  switch (v.type) {
    case PORTA_ATTR_INT: return v.i;
    case PORTA_ATTR_FLOAT: return v.f;
    case PORTA_ATTR_STRING: return std::string(v.s ? v.s : "");
    case PORTA_ATTR_INTS: list(v.ints); return std::vector<int64_t>(v.ints, v.ints + v.count);
    case PORTA_ATTR_FLOATS: list(v.floats); return std::vector<double>(v.floats, v.floats + v.count);
    case PORTA_ATTR_STRINGS: {
      list(v.strings);
      std::vector<std::string> out;
      for (size_t i = 0; i < v.count; ++i) out.emplace_back(v.strings[i] ? v.strings[i] : "");
      return out;
    }
    default: break;
  }
  refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", where, ": attribute '", name, "' has type ", v.type,
                                           ", which is no porta_attr_type a case can carry (int, float, string, "
                                           "ints, floats, strings)"));
}

// A C test case as porta's OpCase (copied: the plugin's arrays need not outlive the call).
OpCase read_case(const porta_op_case& c, const OpSchema& op, size_t index) {
  const char* fn = "porta_register_op";
  OpCase out;
  out.name = c.name && *c.name ? c.name : str("case", index);
  std::string where = str(op.qualified_name(), " case '", out.name, "'");
  if (c.num_inputs && !c.inputs)
    refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", where, ": inputs should not be NULL for ", c.num_inputs, " inputs"));
  for (size_t i = 0; i < c.num_inputs; ++i) {
    const porta_case_input& in = c.inputs[i];
    InputSpec spec;
    spec.shape = read_shape(in.shape, in.rank, fn);
    if (in.dtype >= 0) spec.dtype = read_dtype(in.dtype, fn);
    if (in.lo != in.hi) {
      if (!(in.lo < in.hi))
        refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", where, ": input ", i, " range should have lo < hi, got [",
                                                 in.lo, ", ", in.hi, ")"));
      spec.lo = in.lo;
      spec.hi = in.hi;
    }
    spec.integers = in.integers != 0;
    spec.absent = in.absent != 0;
    if (in.num_values) {
      if (!in.values) refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", where, ": input ", i, " has num_values and no values"));
      if (static_cast<int64_t>(in.num_values) != shape_numel(spec.shape))
        refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", where, ": input ", i, " has ", in.num_values,
                                                 " fixed values for shape ", shape_str(spec.shape)));
      spec.values.assign(in.values, in.values + in.num_values);
    }
    out.inputs.push_back(std::move(spec));
  }
  if (c.num_attrs && !c.attrs)
    refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", where, ": attrs should not be NULL for ", c.num_attrs, " attributes"));
  for (size_t i = 0; i < c.num_attrs; ++i) out.attrs.set(c.attrs[i].name ? c.attrs[i].name : "", read_attr_value(c.attrs[i], where));
  try {
    complete_attributes(op, out.attrs, "");  // a case must be a valid call of the op
  } catch (const Error& e) {
    refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", where, ": ", e.what()));
  }
  const DTypeSet all = (1u << kNumDTypes) - 1;
  if (c.dtypes == 0 || (c.dtypes & ~all))
    refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", where, ": dtypes should be a non-empty set of PORTA_DTYPE_BIT values, got 0x",
                                             std::hex, c.dtypes));
  out.dtypes = c.dtypes;
  out.num_outputs = c.num_outputs > 0 ? c.num_outputs : std::max(1, op.max_outputs() < 0 ? op.min_outputs() : op.max_outputs());
  out.perf = c.perf != 0;
  if (!(c.tolerance >= 0)) refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", where, ": tolerance should be >= 0, got ", c.tolerance));
  out.tolerance = c.tolerance;
  return out;
}

std::string source_name() {
  auto* st = detail::current_staging();
  return st ? st->name() : "c_api";
}

// The op a kernel names: one the same plugin staged (by its qualified name, or by its plain
// name when the plugin staged only one op of that name), else what find_op finds. So a
// plugin's kernel for its own FusedLeakyReLU stays its own when porta adds an op of that name.
const OpSchema* schema_for(const std::string& op) {
  if (auto* st = detail::current_staging()) {
    const OpSchema* own = nullptr;
    int named = 0;
    for (auto& s : st->ops) {
      if (s.qualified_name() == op) return &s;
      if (s.name == op) own = &s, ++named;
    }
    if (named == 1) return own;
  }
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
    // cases and the version range were appended: read them when struct_size covers them.
    const size_t before_cases = offsetof(porta_op_schema, cases);
    if (c->struct_size < before_cases)
      refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] schema struct_size should be at least ",
                                               before_cases, ", got ", c->struct_size));
    const bool has_cases = c->struct_size >= offsetof(porta_op_schema, num_cases) + sizeof(c->num_cases);
    const bool has_versions = c->struct_size >= offsetof(porta_op_schema, until_version) + sizeof(c->until_version);
    OpSchema s;
    s.name = read_name(c->name, fn, "name");
    s.domain = c->domain ? c->domain : "";
    if (s.domain == "ai.onnx") s.domain.clear();
    if (s.name.find(':') != std::string::npos || s.domain.find(':') != std::string::npos)
      refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] op '", s.name, "' (domain '", s.domain,
                                               "'): names and domains should not contain ':'"));
    s.inputs = read_names(c->inputs, c->num_inputs, fn, "input names");
    s.outputs = read_names(c->outputs, c->num_outputs, fn, "output names");
    if (s.outputs.empty()) refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", s.name, ": an op needs at least one output"));
    if (c->num_attrs && !c->attrs) refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", s.name, ": attrs should not be NULL"));
    for (size_t i = 0; i < c->num_attrs; ++i) s.attrs.push_back(read_attr_def(c->attrs[i], s.name));
    if (!c->infer) refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", s.name, ": shape inference (infer) is required"));
    if (!c->reference && !c->composite)
      refuse(PORTA_ERROR_INVALID_ARGUMENT,
             str("[", fn, "] ", s.name, ": a reference or a composite is required (CPU fallback and tests use them)"));
    // Ops are told apart by (domain, name): LeakyRelu in com.example is not ONNX's LeakyRelu.
    bool exists = find_op(s.domain, s.name) != nullptr;
    if (auto* st = detail::current_staging())
      for (auto& o : st->ops) exists |= o.qualified_name() == s.qualified_name();
    if (exists)
      refuse(PORTA_ERROR_ALREADY_EXISTS,
             str("[", fn, "] op '", s.qualified_name(), "' already exists",
                 s.domain.empty() ? " in ONNX's default domain" : "", "; refusing to replace it",
                 s.domain.empty() ? " (a plugin's op belongs in its own domain, e.g. com.example)" : ""));
    if (has_versions) {
      if (c->since_version < 0 || c->until_version < 0 || (c->until_version && c->until_version < std::max(1, c->since_version)))
        refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", s.qualified_name(), ": versions should be 0 or positive with since <= until, got since ",
                                                 c->since_version, ", until ", c->until_version));
      s.since_version = std::max(1, c->since_version);
      s.until_version = c->until_version;
    }
    if (has_cases && c->num_cases) {
      if (!c->cases) refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", s.qualified_name(), ": cases should not be NULL for ", c->num_cases, " cases"));
      auto cases = std::make_shared<std::vector<OpCase>>();
      for (size_t i = 0; i < c->num_cases; ++i) cases->push_back(read_case(c->cases[i], s, i));
      s.cases = [cases] { return *cases; };
    }
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
    // supports, impl_name and priority were appended later still: read what struct_size covers.
    auto covers = [&](size_t offset, size_t size) { return c->struct_size >= offset + size; };
    const char* kind_name = covers(offsetof(porta_kernel_def, backend_name), sizeof(c->backend_name)) ? c->backend_name : nullptr;
    porta_supports_fn supports = covers(offsetof(porta_kernel_def, supports), sizeof(c->supports)) ? c->supports : nullptr;
    const char* impl_name = covers(offsetof(porta_kernel_def, impl_name), sizeof(c->impl_name)) ? c->impl_name : nullptr;
    int32_t priority = covers(offsetof(porta_kernel_def, priority), sizeof(c->priority)) ? c->priority : 0;
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
    k.op = schema->qualified_name();  // bound now: a later op of the same plain name is another op
    k.backend = kind;
    k.dtypes = c->dtypes;
    k.source = source_name();
    k.fn = adapt_kernel(c->fn, c->user_data, op, k.source);
    if (supports) k.supports = adapt_supports(supports, c->user_data, op, k.source);
    k.impl = KernelImpl{impl_name ? impl_name : "", priority};
    std::vector<const KernelDef*> existing;
    if (find_op(k.op) == schema) existing = kernels_for(*schema);
    if (auto* st = detail::current_staging())
      for (auto& s : st->kernels)
        if (s.op == k.op) existing.push_back(&s);
    for (const KernelDef* e : existing)
      if (e->backend == k.backend && (e->dtypes & k.dtypes) && e->impl.priority == k.impl.priority)
        refuse(PORTA_ERROR_ALREADY_EXISTS,
               str("[", fn, "] a ", kernel_label(*e), " for '", op, "' with dtypes ",
                   dtype_set_names(e->dtypes & k.dtypes), " and priority ", e->impl.priority,
                   " is already registered", e->source == k.source ? "" : str(" (from ", e->source, ")"),
                   "; another implementation for those dtypes needs a different priority"));
    if (auto* st = detail::current_staging()) st->kernels.push_back(std::move(k));
    else register_kernel(std::move(k));
  })
}

}  // extern "C"
