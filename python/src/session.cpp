// porta.Session (models: run, metadata, placement, profile), porta.devices(), porta.check()
// and plugins.
#include <chrono>

#include "porta/plugin.hpp"
#include "python/src/bindings.hpp"

namespace porta::python {
namespace {

// A dimension for Python: its size, the symbolic name of a dynamic one, or None.
py::object dim_value(const ValueDesc& d, size_t i) {
  if (d.shape[i] >= 0) return py::int_(d.shape[i]);
  if (i < d.dim_names.size() && !d.dim_names[i].empty()) return py::str(d.dim_names[i]);
  return py::none();
}

std::map<std::string, Tensor> feeds_from_python(const py::dict& feeds) {
  std::map<std::string, Tensor> inputs;
  for (auto [key, value] : feeds) {
    if (!py::isinstance<py::str>(key))
      throw InvalidArgument(str("[session] feed names should be strings, got ",
                                std::string(py::str(py::type::of(key).attr("__name__")))));
    inputs[key.cast<std::string>()] = tensor_from_python(value, /*borrow_read_only=*/true);
  }
  return inputs;
}

// Positions of the requested outputs among the model's (all of them for None).
std::vector<size_t> output_positions(const Model& model, const py::object& names) {
  const auto& outputs = model.outputs();
  std::vector<size_t> positions;
  if (names.is_none()) {
    for (size_t i = 0; i < outputs.size(); ++i) positions.push_back(i);
    return positions;
  }
  if (py::isinstance<py::str>(names))
    throw InvalidArgument("[session] outputs should be a list of names or None, got a string");
  for (py::handle h : names) {
    std::string name = py::str(h);
    size_t i = 0;
    while (i < outputs.size() && outputs[i].name != name) ++i;
    if (i == outputs.size()) {
      std::string known;
      for (const auto& o : outputs) known += (known.empty() ? "'" : ", '") + o.name + "'";
      throw InvalidArgument(str("[session] the model has no output '", name, "'; its outputs are ", known));
    }
    positions.push_back(i);
  }
  return positions;
}

py::dict plan_record(const NodePlan& p) {
  py::dict r;
  r["node"] = p.node;
  r["op"] = p.op;
  r["device"] = p.device.str();
  r["path"] = std::string(path_name(p.path));
  r["reason"] = p.reason;
  r["fallback_bytes"] = p.fallback_bytes;
  r["precision"] = std::string(dtype_name(p.precision));
  r["precision_note"] = p.precision_note;
  return r;
}

// Session::run timed in C++ (for bench/python_overhead.py): microseconds per call.
double time_cpp_runs(Session& session, const std::map<std::string, Tensor>& inputs, int calls) {
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) session.run(inputs);
  std::chrono::duration<double, std::micro> total = std::chrono::steady_clock::now() - start;
  return total.count() / std::max(calls, 1);
}

}  // namespace

void bind_session(py::module_& m) {
  py::class_<ValueDesc>(m, "ValueInfo", "A graph input or output: name, shape, dtype.")
      .def_readonly("name", &ValueDesc::name)
      .def_property_readonly("shape",
                             [](const ValueDesc& d) -> py::object {
                               if (!d.rank_known) return py::none();
                               py::list dims;
                               for (size_t i = 0; i < d.shape.size(); ++i) dims.append(dim_value(d, i));
                               return py::tuple(dims);
                             },
                             "Sizes; a dynamic dimension is its symbolic name or None. None when the "
                             "model declares no shape.")
      .def_property_readonly("dtype", [](const ValueDesc& d) { return std::string(dtype_name(d.dtype)); })
      .def_property_readonly("numpy_dtype",
                             [](const ValueDesc& d) {
                               return numpy_dtype(d.dtype == DType::bf16 ? DType::f32 : d.dtype);
                             })
      .def("__repr__", [](const ValueDesc& d) {
        std::string dims;
        for (size_t i = 0; i < d.shape.size(); ++i)
          dims += str(i ? ", " : "", std::string(py::repr(dim_value(d, i))));
        return str("ValueInfo(name='", d.name, "', shape=(", dims, d.shape.size() == 1 ? ",)" : ")",
                   ", dtype='", dtype_name(d.dtype), "')");
      });

  py::class_<Session>(m, "Session", "A model loaded for one device (see porta.Session).")
      .def(py::init([](py::object model, const std::string& device, bool strict, bool profile,
                       const std::string& precision, bool replay) {
             SessionOptions o;
             o.device = Device::parse(device);
             o.strict = strict;
             o.profile = profile;
             o.precision = parse_precision(precision);
             o.replay = replay;
             if (py::isinstance<py::bytes>(model)) {
               std::string bytes = model.cast<std::string>();
               py::gil_scoped_release release;
               return Session(Model::from_bytes(bytes.data(), bytes.size()), o);
             }
             std::string path = py::str(py::module_::import("os").attr("fspath")(model));
             py::gil_scoped_release release;
             return Session(Model::load(path), o);
           }),
           py::arg("model"), py::arg("device") = "cpu", py::arg("strict") = false, py::arg("profile") = false,
           py::arg("precision") = "f32", py::arg("replay") = true)
      .def_property_readonly("replayed", &Session::replayed,
                             "Whether the last run resubmitted device work kept from an earlier run (replay=True).")
      .def_property_readonly("replay_blocker", &Session::replay_blocker,
                             "Why the last run's plan is not replayed ('' while it may be).")
      .def_property_readonly("inputs", [](const Session& s) { return s.model().inputs(); })
      .def_property_readonly("outputs", [](const Session& s) { return s.model().outputs(); })
      .def("get_inputs", [](const Session& s) { return s.model().inputs(); }, "ONNX Runtime's spelling of .inputs.")
      .def("get_outputs", [](const Session& s) { return s.model().outputs(); }, "ONNX Runtime's spelling of .outputs.")
      .def_property_readonly("device", [](const Session& s) { return s.options().device.str(); })
      .def_property_readonly("strict", [](const Session& s) { return s.options().strict; })
      .def_property_readonly("precision",
                             [](const Session& s) { return std::string(precision_name(s.options().precision)); })
      .def(
          "run",
          [](Session& s, py::object outputs, py::object feeds, bool as_tensors) {
            if (!py::isinstance<py::dict>(feeds))
              throw InvalidArgument(str("[session] feeds should be a dict of input name -> array, got ",
                                        std::string(py::str(py::type::of(feeds).attr("__name__")))));
            std::vector<size_t> positions = output_positions(s.model(), outputs);
            std::map<std::string, Tensor> inputs = feeds_from_python(feeds);
            std::vector<Tensor> results;
            {
              py::gil_scoped_release release;
              results = s.run(inputs);
              inputs.clear();  // drop borrowed arrays while the GIL is free to release them
            }
            py::list out;
            for (size_t i : positions) out.append(as_tensors ? py::cast(results.at(i)) : tensor_to_numpy(results.at(i)));
            return out;
          },
          py::arg("outputs") = py::none(), py::arg("feeds") = py::none(), py::arg("as_tensors") = false)
      .def(
          "plan",
          [](Session& s, py::object feeds) {
            std::vector<NodePlan> plan;
            if (feeds.is_none()) {
              // The declared shapes, dynamic dimensions taken as 1.
              std::map<std::string, Shape> shapes;
              for (const ValueDesc& d : s.model().inputs()) {
                Shape shape = d.shape;
                for (int64_t& x : shape)
                  if (x < 0) x = 1;
                shapes[d.name] = shape;
              }
              py::gil_scoped_release release;
              plan = s.plan(shapes);
            } else {
              std::map<std::string, Tensor> inputs = feeds_from_python(feeds.cast<py::dict>());
              py::gil_scoped_release release;
              plan = s.plan(inputs);
              inputs.clear();
            }
            py::list records;
            for (const NodePlan& p : plan) records.append(plan_record(p));
            return records;
          },
          py::arg("feeds") = py::none())
      .def("profile",
           [](const Session& s) {
             py::list records;
             for (const NodeProfile& p : s.profile()) {
               py::dict r;
               r["node"] = p.node;
               r["op"] = p.op;
               r["device"] = p.device.str();
               r["time_us"] = p.time_us;
               r["kernel"] = p.kernel;
               records.append(r);
             }
             return records;
           })
      .def("peak_memory", &Session::peak_memory);

  m.def(
      "_time_cpp_runs",
      [](Session& s, py::dict feeds, int calls) {
        std::map<std::string, Tensor> inputs = feeds_from_python(feeds);
        py::gil_scoped_release release;
        double us = time_cpp_runs(s, inputs, calls);
        inputs.clear();
        return us;
      },
      py::arg("session"), py::arg("feeds"), py::arg("calls"),
      "Microseconds per Session::run call over `calls` calls made from C++ (for bench/).");

  m.def("devices", [] {
    py::list records;
    for (Device d : all_devices()) {
      Backend* b = find_backend(d.type);
      Availability a = d.index < b->device_count() ? b->availability(d.index) : Availability{false, "no device found"};
      py::dict r;
      r["device"] = d.str();
      r["kind"] = std::string(device_type_name(d.type));
      r["index"] = d.index;
      r["available"] = a.available;
      r["detail"] = a.detail;
      r["type"] = a.available ? b->capabilities(d.index).type : std::string();
      records.append(r);
    }
    return records;
  });

  m.def(
      "_check",
      [](const std::string& path, py::dict feeds, const std::vector<std::string>& devices, bool strict,
         double tolerance, const std::string& precision) {
        CheckOptions o;
        o.devices.clear();
        for (const std::string& d : devices) o.devices.push_back(Device::parse(d));
        o.strict = strict;
        o.tolerance = tolerance;
        o.precision = parse_precision(precision);
        std::map<std::string, Tensor> inputs = feeds_from_python(feeds);
        std::vector<NodeError> table;
        {
          py::gil_scoped_release release;
          table = check_model(Model::load(path), inputs, o);
          inputs.clear();
        }
        py::list records;
        for (const NodeError& e : table) {
          py::dict r;
          r["node"] = e.node;
          r["op"] = e.op;
          r["device"] = e.device.str();
          r["max_abs"] = e.max_abs;
          r["rel"] = e.rel;
          r["computed"] = e.computed;
          r["over"] = e.over;
          r["precision"] = std::string(dtype_name(e.precision));
          r["jump"] = e.jump;
          r["fused"] = e.fused;
          records.append(r);
        }
        return records;
      },
      py::arg("model"), py::arg("feeds"), py::arg("devices"), py::arg("strict"), py::arg("tolerance"),
      py::arg("precision"));

  m.def(
      "load_plugin",
      [](const std::string& path) {
        std::string name;
        {
          py::gil_scoped_release release;
          name = load_plugin(path);
        }
        for (const PluginInfo& p : loaded_plugins()) {
          if (p.name != name) continue;
          py::dict r;
          r["name"] = p.name;
          r["path"] = p.path;
          r["ops"] = p.ops;
          r["kernels"] = p.kernels;
          r["backends"] = p.backends;
          return r;
        }
        throw InvalidArgument(str("[plugin] '", name, "' was loaded from '", path, "' but is not listed"));
      },
      py::arg("path"),
      "Loads a porta plugin (a shared library) and returns what it added: name, path, ops, "
      "kernels, backends. Loading the same file again does nothing.");
}

}  // namespace porta::python
