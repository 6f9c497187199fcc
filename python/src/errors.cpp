// porta::Error and its kinds as Python exceptions: porta.Error (a RuntimeError) and one
// subclass per kind, each carrying porta's message.
#include <map>
#include <string>

#include "python/src/bindings.hpp"

namespace porta::python {

void bind_errors(py::module_& m) {
  // Created once and never freed: the classes live as long as the interpreter.
  static PyObject* base = nullptr;
  static std::map<std::string, PyObject*> kinds;
  base = PyErr_NewExceptionWithDoc("porta.Error", "Base of every error porta reports.", PyExc_RuntimeError, nullptr);
  m.attr("Error") = py::handle(base);
  const std::pair<const char*, const char*> docs[] = {
      {"InvalidModel", "The model file is malformed, truncated, or refers to things that do not exist."},
      {"ShapeError", "Shapes do not fit together (or an index is out of range)."},
      {"DTypeError", "A dtype is not accepted where it was given."},
      {"DeviceMismatch", "Tensors of one call live on different devices."},
      {"Unsupported", "The op, attribute value or combination is not implemented anywhere."},
      {"OutOfMemory", "A device or host allocation failed."},
      {"BackendUnavailable", "The requested backend or device is not built or not present."},
      {"BackendError", "A device runtime call failed."},
      {"InvalidArgument", "Bad argument to an API call."},
  };
  for (const auto& [name, doc] : docs) {
    PyObject* cls = PyErr_NewExceptionWithDoc((std::string("porta.") + name).c_str(), doc, base, nullptr);
    kinds[name] = cls;
    m.attr(name) = py::handle(cls);
  }
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      auto it = kinds.find(e.kind());
      PyErr_SetString(it == kinds.end() ? base : it->second, e.what());
    }
  });
}

}  // namespace porta::python
