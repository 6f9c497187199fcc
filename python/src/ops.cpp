// Eager ops from Python: porta.ops.<Name>(*inputs, **attributes) for every registered op
// (plugins' included), with inputs and attributes checked against the op's schema.
#include "python/src/bindings.hpp"

namespace porta::python {
namespace {

std::string type_name(py::handle h) { return py::str(py::type::of(h).attr("__name__")); }

bool is_int(py::handle h) { return py::isinstance<py::int_>(h) || py::hasattr(h, "__index__"); }
bool is_number(py::handle h) {
  return !py::isinstance<py::str>(h) && (is_int(h) || py::isinstance<py::float_>(h) || py::hasattr(h, "__float__"));
}

// One Python value as the attribute type the schema declares.
AttrValue to_attribute(const OpSchema& op, const AttrDef& def, py::handle value) {
  auto refuse = [&](const char* expected) -> AttrValue {
    throw InvalidArgument(str("[ops] ", op.qualified_name(), ": attribute '", def.name, "' should be ", expected,
                              ", got ", type_name(value), " ", std::string(py::repr(value))));
  };
  auto sequence = [&](auto&& accept, const char* expected) -> py::list {
    if (py::isinstance<py::str>(value) || !py::isinstance<py::sequence>(value)) refuse(expected);
    py::list items;
    for (py::handle h : value.cast<py::sequence>()) {
      if (!accept(h)) refuse(expected);
      items.append(h);
    }
    return items;
  };
  switch (def.type) {
    case AttrType::Int:
      if (!is_int(value) || py::isinstance<py::float_>(value)) return refuse("an int");
      return value.cast<int64_t>();
    case AttrType::Float:
      if (!is_number(value)) return refuse("a float");
      return value.cast<double>();
    case AttrType::String:
      if (!py::isinstance<py::str>(value)) return refuse("a str");
      return value.cast<std::string>();
    case AttrType::Ints: {
      py::list items = sequence([](py::handle h) { return is_int(h) && !py::isinstance<py::float_>(h); }, "a list of ints");
      std::vector<int64_t> v;
      for (py::handle h : items) v.push_back(h.cast<int64_t>());
      return v;
    }
    case AttrType::Floats: {
      py::list items = sequence(is_number, "a list of floats");
      std::vector<double> v;
      for (py::handle h : items) v.push_back(h.cast<double>());
      return v;
    }
    case AttrType::Strings: {
      py::list items = sequence([](py::handle h) { return py::isinstance<py::str>(h); }, "a list of str");
      std::vector<std::string> v;
      for (py::handle h : items) v.push_back(h.cast<std::string>());
      return v;
    }
    case AttrType::TensorValue:
      return tensor_from_python(value).to(Device::cpu());
  }
  return refuse("a value");
}

std::string attribute_names(const OpSchema& op) {
  std::string names;
  for (const AttrDef& a : op.attrs) names += (names.empty() ? "" : ", ") + a.name;
  return names.empty() ? "none" : names;
}

// Inputs a Python call may pass: the schema's, less the porta-internal ones at the end (a
// Conv's porta_residual, a MatMul's porta_bias), which only a session's graph fusion sets.
int public_max_inputs(const OpSchema& op) {
  int hi = op.max_inputs();
  if (hi < 0) return hi;
  while (hi > 0 && static_cast<size_t>(hi) <= op.inputs.size() && op.inputs[hi - 1].rfind("porta_", 0) == 0) --hi;
  return hi;
}

std::string input_count(const OpSchema& op) {
  int lo = op.min_inputs(), hi = public_max_inputs(op);
  if (hi < 0) return str("at least ", lo);
  if (lo == hi) return str(lo);
  return str(lo, " to ", hi);
}

// An op of the registry, callable from Python.
struct Op {
  const OpSchema* schema;

  py::object call(const py::args& args, const py::kwargs& kwargs) const {
    const OpSchema& op = *schema;
    int given = static_cast<int>(args.size());
    if (given < op.min_inputs() || (public_max_inputs(op) >= 0 && given > public_max_inputs(op)))
      throw InvalidArgument(str("[ops] ", op.qualified_name(), " takes ", input_count(op), " input(s), got ", given));
    int num_outputs = -1;
    Attributes attrs;
    for (auto [key, value] : kwargs) {
      std::string name = py::str(key);
      if (name == "num_outputs") {
        num_outputs = value.cast<int>();
        continue;
      }
      const AttrDef* def = nullptr;
      for (const AttrDef& a : op.attrs)
        if (a.name == name) def = &a;
      if (!def)
        throw InvalidArgument(str("[ops] ", op.qualified_name(), " has no attribute '", name,
                                  "'; its attributes: ", attribute_names(op)));
      attrs.set(name, to_attribute(op, *def, value));
    }
    std::vector<Tensor> inputs;
    for (py::handle h : args) inputs.push_back(h.is_none() ? Tensor() : tensor_from_python(h));
    std::vector<Tensor> outputs;
    {
      py::gil_scoped_release release;
      outputs = call_op(op.qualified_name(), inputs, attrs, num_outputs);
      inputs.clear();
    }
    if (outputs.size() == 1) return py::cast(outputs[0]);
    py::list results;
    for (const Tensor& t : outputs) results.append(t.defined() ? py::cast(t) : py::none());
    return py::tuple(results);
  }

  std::string doc() const {
    const OpSchema& op = *schema;
    std::string inputs, outputs, attrs;
    for (const auto& n : op.inputs) inputs += (inputs.empty() ? "" : ", ") + n;
    for (const auto& n : op.outputs) outputs += (outputs.empty() ? "" : ", ") + n;
    for (const AttrDef& a : op.attrs)
      attrs += str("\n  ", a.name, ": ", attr_type_name(a.type), a.required ? " (required)" : "");
    return str(op.qualified_name(), "(", inputs, ") -> ", outputs, "\nattributes:", attrs.empty() ? " none" : attrs);
  }
};

const OpSchema& find_schema(const std::string& name) {
  const OpSchema* op = find_op(name);
  if (!op) throw InvalidArgument(str("[ops] ", describe_unknown_op(name)));
  return *op;
}

}  // namespace

void bind_ops(py::module_& m) {
  py::class_<Op>(m, "Op", "A registered op; call it with inputs positional and attributes as keywords.")
      .def("__call__", &Op::call)
      .def_property_readonly("name", [](const Op& o) { return o.schema->qualified_name(); })
      .def_property_readonly("domain", [](const Op& o) { return o.schema->domain; })
      .def_property_readonly("inputs", [](const Op& o) { return o.schema->inputs; })
      .def_property_readonly("outputs", [](const Op& o) { return o.schema->outputs; })
      .def_property_readonly("attributes",
                             [](const Op& o) {
                               py::dict attrs;
                               for (const AttrDef& a : o.schema->attrs) attrs[py::str(a.name)] = std::string(attr_type_name(a.type));
                               return attrs;
                             })
      .def_property_readonly("signature", &Op::doc, "Inputs, outputs and attributes of the op.")
      .def("__repr__", [](const Op& o) { return str("porta.ops.", o.schema->qualified_name()); });

  m.def("find_op", [](const std::string& name) { return Op{&find_schema(name)}; }, py::arg("name"),
        "The op a name means ('MatMul', 'com.example::ScaledSwish'); InvalidArgument when none.");
  m.def("op_names", [] {
    std::vector<std::string> names;
    for (const OpSchema* op : all_ops()) names.push_back(op->qualified_name());
    return names;
  });
}

}  // namespace porta::python
