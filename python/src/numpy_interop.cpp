// porta tensors from and to numpy arrays (borrowing memory both ways where it can).
#include <bit>

#include "python/src/bindings.hpp"

namespace porta::python {

std::shared_ptr<void> hold_python_object(py::object obj) {
  auto* held = new py::object(std::move(obj));
  return std::shared_ptr<void>(held, [](void* p) {
    auto* o = static_cast<py::object*>(p);
    // At interpreter exit the object is gone with everything else: leak the handle.
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    delete o;
  });
}

DType dtype_from_numpy(const py::dtype& dtype) {
  const char kind = dtype.kind();
  const auto size = dtype.itemsize();
  if (kind == 'f' && size == 4) return DType::f32;
  if (kind == 'f' && size == 8) return DType::f64;
  if (kind == 'f' && size == 2) return DType::f16;
  if (kind == 'i' && size == 8) return DType::i64;
  if (kind == 'i' && size == 4) return DType::i32;
  if (kind == 'i' && size == 1) return DType::i8;
  if (kind == 'u' && size == 1) return DType::u8;
  if (kind == 'b' && size == 1) return DType::boolean;
  throw DTypeError(str("[python] numpy dtype ", dtype.attr("name").cast<std::string>(),
                       " has no porta dtype; porta takes float32, float64, float16, int64, int32, int8, "
                       "uint8 and bool (bfloat16 through DLPack)"));
}

py::dtype numpy_dtype(DType dtype) {
  switch (dtype) {
    case DType::f32: return py::dtype::of<float>();
    case DType::f64: return py::dtype::of<double>();
    case DType::f16: return py::dtype("float16");
    case DType::i64: return py::dtype::of<int64_t>();
    case DType::i32: return py::dtype::of<int32_t>();
    case DType::i8: return py::dtype::of<int8_t>();
    case DType::u8: return py::dtype::of<uint8_t>();
    case DType::boolean: return py::dtype::of<bool>();
    case DType::bf16: break;
  }
  throw DTypeError("[python] numpy has no bfloat16; porta widens bf16 to float32 for numpy (exact)");
}

namespace {

// Whether porta can view the array's memory as it is: native byte order, element-aligned,
// strides that are non-negative multiples of the element size.
bool borrowable(const py::array& a) {
  const auto size = a.itemsize();
  const char order = a.dtype().byteorder();  // '=' native, '|' not applicable, '<' or '>'
  if (order == (std::endian::native == std::endian::little ? '>' : '<')) return false;
  if (reinterpret_cast<uintptr_t>(a.data()) % static_cast<uintptr_t>(size) != 0) return false;
  for (py::ssize_t i = 0; i < a.ndim(); ++i)
    if (a.strides(i) < 0 || a.strides(i) % size != 0) return false;
  return true;
}

}  // namespace

Tensor tensor_from_array(py::handle obj, bool borrow_read_only) {
  // An ndarray is taken as it is (the common case, kept free of Python calls).
  py::array a = py::isinstance<py::array>(obj) ? py::reinterpret_borrow<py::array>(obj)
                                                : py::array(py::module_::import("numpy").attr("asarray")(obj));
  DType dtype = dtype_from_numpy(a.dtype());
  if (!borrowable(a) || (!borrow_read_only && !a.writeable()))
    a = py::module_::import("numpy").attr("array")(a, a.dtype().attr("newbyteorder")("="), py::arg("order") = "C");
  const auto size = a.itemsize();
  Shape shape(a.shape(), a.shape() + a.ndim());
  std::vector<int64_t> strides(a.ndim());
  size_t extent = shape_numel(shape) > 0 ? size : 0;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) {
    strides[i] = a.strides(i) / size;
    if (shape[i] > 0) extent += static_cast<size_t>((shape[i] - 1) * a.strides(i));
  }
  void* data = const_cast<void*>(a.data());
  return Tensor::wrap_host(data, extent, shape, strides, 0, dtype, hold_python_object(a));
}

py::array tensor_to_numpy(const Tensor& tensor) {
  if (!tensor.defined()) throw InvalidArgument("[python] an undefined tensor has no elements to convert");
  Tensor t = tensor;
  if (t.device() != Device::cpu() || t.dtype() == DType::bf16) {
    py::gil_scoped_release release;  // a device-to-host copy waits for the device
    t = t.to(Device::cpu());
    if (t.dtype() == DType::bf16) t = t.cast(DType::f32);
  }
  const size_t size = dtype_size(t.dtype());
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  std::vector<py::ssize_t> strides;
  for (int64_t s : t.strides()) strides.push_back(static_cast<py::ssize_t>(s * static_cast<int64_t>(size)));
  void* data = t.numel() > 0 ? t.raw_data() : nullptr;
  // The array's base owns a copy of the tensor: the storage lives as long as the array.
  py::capsule base(new Tensor(t), [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(numpy_dtype(t.dtype()), shape, strides, data, base);
}

}  // namespace porta::python
