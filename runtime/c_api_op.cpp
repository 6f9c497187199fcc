// porta runtime — C ABI: attribute builders and calling one op.
#include <algorithm>

#include "porta/porta.hpp"
#include "runtime/c_api_handles.hpp"
#include "runtime/registry.hpp"

using namespace porta;
using namespace porta::capi;

namespace porta::capi {
porta_tensor wrap_tensor(Tensor t);
}

namespace {

porta_attrs_s& owned_attrs(porta_attrs a, const char* fn, const char* name) {
  porta_attrs_s& h = get(a, fn, "attrs");
  if (h.lent) bad_argument(str("[", fn, "] attributes lent to a callback are read-only"));
  need(name, fn, "name");
  if (!*name) bad_argument(str("[", fn, "] attribute name should not be empty"));
  return h;
}

const AttrValue& read_attr(porta_attrs a, const char* fn, const char* name) {
  porta_attrs_s& h = get(a, fn, "attrs");
  need(name, fn, "name");
  const AttrValue* v = h.get().find(name);
  if (!v) bad_argument(str("[", fn, "] no attribute '", name, "' (have: ", h.get().str(), ")"));
  return *v;
}

[[noreturn]] void wrong_type(const char* fn, const char* name, const char* expected, const AttrValue& v) {
  bad_argument(str("[", fn, "] attribute '", name, "' should be ", expected, ", got ",
                   attr_type_name(static_cast<AttrType>(v.index()))));
}

// The schema of `name`, remembered per thread until the registry changes: porta_op_call is
// called in loops with the same op, and the registry lookup is a lock plus a map search.
const OpSchema* cached_find_op(const char* name) {
  thread_local std::string last_name;
  thread_local const OpSchema* last_op = nullptr;
  thread_local uint64_t last_generation = 0;
  uint64_t generation = detail::registry_generation();
  if (last_op && generation == last_generation && last_name == name) return last_op;
  const OpSchema* op = find_op(name);
  if (op) {
    last_name = name;
    last_op = op;
    last_generation = generation;
  }
  return op;
}

}  // namespace

extern "C" {

porta_status porta_attrs_create(porta_attrs* out) {
  PORTA_C_GUARD({
    need(out, "porta_attrs_create", "out");
    *out = make_handle<porta_attrs_s>();
  })
}

porta_status porta_attrs_set_int(porta_attrs attrs, const char* name, int64_t value) {
  PORTA_C_GUARD(owned_attrs(attrs, "porta_attrs_set_int", name).owned.set(name, value))
}

porta_status porta_attrs_set_float(porta_attrs attrs, const char* name, double value) {
  PORTA_C_GUARD(owned_attrs(attrs, "porta_attrs_set_float", name).owned.set(name, value))
}

porta_status porta_attrs_set_string(porta_attrs attrs, const char* name, const char* value) {
  PORTA_C_GUARD({
    porta_attrs_s& h = owned_attrs(attrs, "porta_attrs_set_string", name);
    need(value, "porta_attrs_set_string", "value");
    h.owned.set(name, std::string(value));
  })
}

porta_status porta_attrs_set_ints(porta_attrs attrs, const char* name, const int64_t* values, size_t count) {
  PORTA_C_GUARD({
    porta_attrs_s& h = owned_attrs(attrs, "porta_attrs_set_ints", name);
    if (count) need(values, "porta_attrs_set_ints", "values");
    h.owned.set(name, std::vector<int64_t>(values, values + count));
  })
}

porta_status porta_attrs_set_floats(porta_attrs attrs, const char* name, const double* values, size_t count) {
  PORTA_C_GUARD({
    porta_attrs_s& h = owned_attrs(attrs, "porta_attrs_set_floats", name);
    if (count) need(values, "porta_attrs_set_floats", "values");
    h.owned.set(name, std::vector<double>(values, values + count));
  })
}

porta_status porta_attrs_set_strings(porta_attrs attrs, const char* name, const char* const* values, size_t count) {
  PORTA_C_GUARD({
    const char* fn = "porta_attrs_set_strings";
    porta_attrs_s& h = owned_attrs(attrs, fn, name);
    if (count) need(values, fn, "values");
    std::vector<std::string> list;
    for (size_t i = 0; i < count; ++i) {
      if (!values[i]) bad_argument(str("[", fn, "] string ", i, " of '", name, "' should not be NULL"));
      list.emplace_back(values[i]);
    }
    h.owned.set(name, std::move(list));
  })
}

porta_status porta_attrs_set_tensor(porta_attrs attrs, const char* name, porta_tensor value) {
  PORTA_C_GUARD({
    const char* fn = "porta_attrs_set_tensor";
    porta_attrs_s& h = owned_attrs(attrs, fn, name);
    Tensor& t = data_tensor(value, fn);
    if (t.device().type != DeviceType::cpu)
      throw DeviceMismatch(str("[", fn, "] a tensor attribute should be a cpu tensor, got ", t.describe()));
    h.owned.set(name, t.contiguous());
  })
}

porta_status porta_attrs_type(porta_attrs attrs, const char* name, int* present, int32_t* type) {
  PORTA_C_GUARD({
    const char* fn = "porta_attrs_type";
    porta_attrs_s& h = get(attrs, fn, "attrs");
    need(name, fn, "name");
    need(present, fn, "present");
    need(type, fn, "type");
    const AttrValue* v = h.get().find(name);
    *present = v ? 1 : 0;
    *type = v ? static_cast<int32_t>(v->index()) : -1;
  })
}

porta_status porta_attrs_get_string(porta_attrs attrs, const char* name, const char** value) {
  PORTA_C_GUARD({
    const char* fn = "porta_attrs_get_string";
    const AttrValue& v = read_attr(attrs, fn, name);
    need(value, fn, "value");
    if (!std::holds_alternative<std::string>(v)) wrong_type(fn, name, "a string", v);
    *value = std::get<std::string>(v).c_str();
  })
}

porta_status porta_attrs_get_floats(porta_attrs attrs, const char* name, double* values, size_t capacity,
                                    size_t* count) {
  PORTA_C_GUARD({
    const char* fn = "porta_attrs_get_floats";
    const AttrValue& v = read_attr(attrs, fn, name);
    need(count, fn, "count");
    if (!std::holds_alternative<std::vector<double>>(v)) wrong_type(fn, name, "floats", v);
    const auto& list = std::get<std::vector<double>>(v);
    if (capacity && !values) bad_argument(str("[", fn, "] values should not be NULL with capacity ", capacity));
    std::copy_n(list.begin(), std::min(capacity, list.size()), values);
    *count = list.size();
  })
}

porta_status porta_attrs_get_strings(porta_attrs attrs, const char* name, const char** values, size_t capacity,
                                     size_t* count) {
  PORTA_C_GUARD({
    const char* fn = "porta_attrs_get_strings";
    const AttrValue& v = read_attr(attrs, fn, name);
    need(count, fn, "count");
    if (!std::holds_alternative<std::vector<std::string>>(v)) wrong_type(fn, name, "strings", v);
    const auto& list = std::get<std::vector<std::string>>(v);
    if (capacity && !values) bad_argument(str("[", fn, "] values should not be NULL with capacity ", capacity));
    for (size_t i = 0; i < std::min(capacity, list.size()); ++i) values[i] = list[i].c_str();
    *count = list.size();
  })
}

porta_status porta_attrs_get_tensor(porta_attrs attrs, const char* name, porta_tensor* value) {
  PORTA_C_GUARD({
    const char* fn = "porta_attrs_get_tensor";
    const AttrValue& v = read_attr(attrs, fn, name);
    need(value, fn, "value");
    if (!std::holds_alternative<Tensor>(v)) wrong_type(fn, name, "a tensor", v);
    *value = wrap_tensor(std::get<Tensor>(v));
  })
}

porta_status porta_attrs_get_int(porta_attrs attrs, const char* name, int64_t* value) {
  PORTA_C_GUARD({
    const AttrValue& v = read_attr(attrs, "porta_attrs_get_int", name);
    need(value, "porta_attrs_get_int", "value");
    if (!std::holds_alternative<int64_t>(v))
      bad_argument(str("[porta_attrs_get_int] attribute '", name, "' should be an int, got ",
                       attr_type_name(static_cast<AttrType>(v.index()))));
    *value = std::get<int64_t>(v);
  })
}

porta_status porta_attrs_get_float(porta_attrs attrs, const char* name, double* value) {
  PORTA_C_GUARD({
    const AttrValue& v = read_attr(attrs, "porta_attrs_get_float", name);
    need(value, "porta_attrs_get_float", "value");
    if (std::holds_alternative<double>(v)) *value = std::get<double>(v);
    else if (std::holds_alternative<int64_t>(v)) *value = static_cast<double>(std::get<int64_t>(v));
    else bad_argument(str("[porta_attrs_get_float] attribute '", name, "' should be a float, got ",
                          attr_type_name(static_cast<AttrType>(v.index()))));
  })
}

porta_status porta_attrs_get_ints(porta_attrs attrs, const char* name, int64_t* values, size_t capacity,
                                  size_t* count) {
  PORTA_C_GUARD({
    const char* fn = "porta_attrs_get_ints";
    const AttrValue& v = read_attr(attrs, fn, name);
    need(count, fn, "count");
    std::vector<int64_t> list;
    if (std::holds_alternative<std::vector<int64_t>>(v)) list = std::get<std::vector<int64_t>>(v);
    else if (std::holds_alternative<int64_t>(v)) list = {std::get<int64_t>(v)};
    else bad_argument(str("[", fn, "] attribute '", name, "' should be ints, got ",
                          attr_type_name(static_cast<AttrType>(v.index()))));
    if (capacity && !values) bad_argument(str("[", fn, "] values should not be NULL with capacity ", capacity));
    std::copy_n(list.begin(), std::min(capacity, list.size()), values);
    *count = list.size();
  })
}

porta_status porta_attrs_free(porta_attrs attrs) {
  PORTA_C_GUARD({
    if (!attrs) return PORTA_OK;
    porta_attrs_s& h = get(attrs, "porta_attrs_free", "attrs");
    if (h.lent) bad_argument("[porta_attrs_free] attributes lent to a callback are freed by porta");
    destroy_handle(attrs);
  })
}

porta_status porta_op_call(const char* op, const porta_tensor* inputs, size_t num_inputs, porta_attrs attrs,
                           porta_tensor* outputs, size_t num_outputs) {
  PORTA_C_GUARD({
    const char* fn = "porta_op_call";
    need(op, fn, "op");
    if (num_inputs) need(inputs, fn, "inputs");
    if (num_outputs) need(outputs, fn, "outputs");
    const OpSchema* schema = cached_find_op(op);
    if (!schema) throw Unsupported(str("[", fn, "] ", describe_unknown_op(op)));
    int lo = schema->min_outputs(), hi = schema->max_outputs();
    if (static_cast<int64_t>(num_outputs) < std::max(lo, 1) ||
        (hi >= 0 && static_cast<int64_t>(num_outputs) > hi))
      bad_argument(str("[", op, "] num_outputs should be ", std::max(lo, 1),
                       hi == std::max(lo, 1) ? "" : str("..", hi < 0 ? "n" : std::to_string(hi)),
                       ", got ", num_outputs));
    std::vector<Tensor> ins(num_inputs);
    for (size_t i = 0; i < num_inputs; ++i)
      if (inputs[i]) ins[i] = get(inputs[i], fn, "each input (or NULL for an absent one)").tensor;
    static const Attributes kNone;
    const Attributes& a = attrs ? get(attrs, fn, "attrs").get() : kNone;
    std::vector<Tensor> outs = call_op(op, ins, a, static_cast<int>(num_outputs));
    if (outs.size() != num_outputs)
      throw Unsupported(str("[", op, "] produced ", outs.size(), " outputs, ", num_outputs, " were asked for"));
    // Every handle is made before any is handed out, so a failure leaks nothing.
    size_t made = 0;
    try {
      for (; made < outs.size(); ++made)
        outputs[made] = outs[made].defined() ? wrap_tensor(std::move(outs[made])) : nullptr;
    } catch (...) {
      for (size_t i = 0; i < made; ++i)
        if (outputs[i]) destroy_handle(outputs[i]);
      for (size_t i = 0; i < num_outputs; ++i) outputs[i] = nullptr;
      throw;
    }
  })
}

}  // extern "C"
