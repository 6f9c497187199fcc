// porta._porta: the extension module behind `import porta` (python/porta/ holds the Python side).
#include "python/src/bindings.hpp"

PYBIND11_MODULE(_porta, m) {
  m.doc() = "porta's C++ API for Python; use the `porta` package, which re-exports it";
  m.attr("__version__") = porta::version();
  porta::python::bind_errors(m);
  porta::python::bind_tensor(m);
  porta::python::bind_session(m);
  porta::python::bind_ops(m);
}
