// porta's Python extension (porta._porta): what the binding files share.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "porta/porta.hpp"

namespace porta::python {

namespace py = pybind11;

void bind_errors(py::module_& m);
void bind_tensor(py::module_& m);
void bind_session(py::module_& m);
void bind_ops(py::module_& m);

/// porta's dtype for a numpy dtype; DTypeError naming porta's dtypes when there is none.
DType dtype_from_numpy(const py::dtype& dtype);
/// The numpy dtype of a porta dtype (bf16 has none: DTypeError).
py::dtype numpy_dtype(DType dtype);

/// A cpu tensor that borrows a numpy array's memory (kept alive by the tensor) when its strides
/// allow, else a copy. Anything numpy.asarray accepts is accepted. A read-only array is copied
/// unless `borrow_read_only`: a tensor that may reach the user again (porta.Tensor, an eager
/// op's input, which a view-like op returns) must not make its memory writable through numpy;
/// a session's feeds never come back, so they borrow.
Tensor tensor_from_array(py::handle obj, bool borrow_read_only = false);
/// A cpu tensor viewing a DLPack producer's memory (an object with __dlpack__ or a capsule).
Tensor from_dlpack(py::handle obj);
/// A porta tensor for a Python object: a porta.Tensor as it is, an object with __dlpack__ that
/// is not a numpy array through DLPack (zero copy), anything else through tensor_from_array.
Tensor tensor_from_python(py::handle obj, bool borrow_read_only = false);
/// A numpy array of a tensor's elements: shares the tensor's storage when it is on the cpu (the
/// array's base keeps it alive), else a copy from the device. bf16 is widened to float32.
py::array tensor_to_numpy(const Tensor& tensor);
/// A Python object that owns `obj` for C++: released (with the GIL) when the last copy goes.
std::shared_ptr<void> hold_python_object(py::object obj);

}  // namespace porta::python
