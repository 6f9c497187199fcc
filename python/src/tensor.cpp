// porta.Tensor: numpy in and out, device copies, and DLPack both ways (zero copy on the cpu).
#include <optional>

#include "python/src/bindings.hpp"
#include "python/src/dlpack_abi.hpp"

namespace porta::python {
namespace {

DType dtype_from_dlpack(const dlpack::DataType& t) {
  if (t.lanes != 1)
    throw DTypeError(str("[dlpack] expected one lane per element, got ", t.lanes));
  switch (t.code) {
    case dlpack::kFloat:
      if (t.bits == 32) return DType::f32;
      if (t.bits == 64) return DType::f64;
      if (t.bits == 16) return DType::f16;
      break;
    case dlpack::kBfloat:
      if (t.bits == 16) return DType::bf16;
      break;
    case dlpack::kInt:
      if (t.bits == 64) return DType::i64;
      if (t.bits == 32) return DType::i32;
      if (t.bits == 8) return DType::i8;
      break;
    case dlpack::kUInt:
      if (t.bits == 8) return DType::u8;
      break;
    case dlpack::kBool:
      if (t.bits == 8) return DType::boolean;
      break;
  }
  throw DTypeError(str("[dlpack] type code ", int(t.code), " of ", int(t.bits),
                       " bits has no porta dtype; porta takes float 16/32/64, bfloat 16, int 8/32/64, uint 8, bool"));
}

dlpack::DataType dtype_to_dlpack(DType t) {
  uint8_t bits = static_cast<uint8_t>(dtype_size(t) * 8);
  switch (t) {
    case DType::f32: case DType::f64: case DType::f16: return {dlpack::kFloat, bits, 1};
    case DType::bf16: return {dlpack::kBfloat, bits, 1};
    case DType::i64: case DType::i32: case DType::i8: return {dlpack::kInt, bits, 1};
    case DType::u8: return {dlpack::kUInt, bits, 1};
    case DType::boolean: return {dlpack::kBool, bits, 1};
  }
  return {dlpack::kFloat, bits, 1};
}

// What a porta.Tensor's __dlpack__ hands out: the DLPack record, with the tensor (sharing the
// storage) and the shape and strides it points to.
struct Export {
  dlpack::ManagedTensor managed{};
  Tensor tensor;
  std::vector<int64_t> shape, strides;
};

py::capsule to_dlpack(const Tensor& t) {
  if (!t.defined()) throw InvalidArgument("[dlpack] an undefined tensor cannot be exported");
  if (t.device() != Device::cpu())
    throw DeviceMismatch(str("[dlpack] porta exports cpu tensors only, got ", t.describe(),
                             "; copy it first with .to('cpu')"));
  auto* e = new Export;
  e->tensor = t;
  e->shape = t.shape();
  e->strides = t.strides();
  dlpack::Tensor& dl = e->managed.dl_tensor;
  dl.data = t.numel() > 0 ? t.raw_data() : nullptr;
  dl.device = {dlpack::kCPU, 0};
  dl.ndim = t.rank();
  dl.dtype = dtype_to_dlpack(t.dtype());
  dl.shape = e->shape.data();
  dl.strides = e->strides.data();
  dl.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = [](dlpack::ManagedTensor* self) { delete static_cast<Export*>(self->manager_ctx); };
  // A capsule nobody consumed still owns the record; a consumer renames it and calls the
  // deleter itself when done.
  PyObject* capsule = PyCapsule_New(&e->managed, dlpack::kCapsuleName, [](PyObject* cap) {
    if (!PyCapsule_IsValid(cap, dlpack::kCapsuleName)) return;
    auto* m = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(cap, dlpack::kCapsuleName));
    if (m && m->deleter) m->deleter(m);
  });
  if (!capsule) {
    delete e;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

// Takes a "dltensor" capsule: the tensor views the producer's memory and calls its deleter
// when the last view is gone.
Tensor tensor_from_capsule(py::handle capsule) {
  if (!PyCapsule_IsValid(capsule.ptr(), dlpack::kCapsuleName))
    throw InvalidArgument("[dlpack] expected an unconsumed 'dltensor' capsule (a capsule can be taken once)");
  auto* m = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), dlpack::kCapsuleName));
  const dlpack::Tensor& dl = m->dl_tensor;
  if (dl.device.device_type != dlpack::kCPU)
    throw DeviceMismatch(str("[dlpack] porta takes host (kDLCPU) memory, got DLPack device type ",
                             dl.device.device_type, " index ", dl.device.device_id, "; copy it to the cpu first"));
  DType dtype = dtype_from_dlpack(dl.dtype);
  Shape shape(dl.shape, dl.shape + dl.ndim);
  std::vector<int64_t> strides = dl.strides ? std::vector<int64_t>(dl.strides, dl.strides + dl.ndim)
                                            : contiguous_strides(shape);
  for (int64_t s : strides)
    if (s < 0)
      throw ShapeError(str("[dlpack] porta views memory with non-negative strides only, got strides ",
                           shape_str(strides), " for shape ", shape_str(shape), "; pass a contiguous copy"));
  size_t extent = 0;
  if (shape_numel(shape) > 0) {
    int64_t last = 0;
    for (size_t i = 0; i < shape.size(); ++i) last += (shape[i] - 1) * strides[i];
    extent = static_cast<size_t>(last + 1) * dtype_size(dtype);
  }
  // From here the deleter is ours to call: rename the capsule so its destructor leaves it.
  std::shared_ptr<void> owner(m, [](void* p) {
    auto* managed = static_cast<dlpack::ManagedTensor*>(p);
    if (!managed->deleter || !Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;  // producers such as numpy release Python objects
    managed->deleter(managed);
  });
  PyCapsule_SetName(capsule.ptr(), dlpack::kUsedCapsuleName);
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  return Tensor::wrap_host(data, extent, shape, strides, 0, dtype, std::move(owner));
}

}  // namespace

Tensor from_dlpack(py::handle obj) {
  if (PyCapsule_CheckExact(obj.ptr())) return tensor_from_capsule(obj);
  if (!py::hasattr(obj, "__dlpack__"))
    throw InvalidArgument(str("[dlpack] expected an object with __dlpack__ or a 'dltensor' capsule, got ",
                              std::string(py::str(py::type::of(obj).attr("__name__")))));
  if (py::hasattr(obj, "__dlpack_device__")) {
    auto [kind, index] = obj.attr("__dlpack_device__")().cast<std::pair<int, int>>();
    if (kind != dlpack::kCPU)
      throw DeviceMismatch(str("[dlpack] porta takes host (kDLCPU) memory, got DLPack device type ", kind,
                               " index ", index, "; copy it to the cpu first"));
  }
  py::object capsule = obj.attr("__dlpack__")();
  return tensor_from_capsule(capsule);
}

Tensor tensor_from_python(py::handle obj, bool borrow_read_only) {
  if (py::isinstance<Tensor>(obj)) return obj.cast<Tensor>();
  if (!py::isinstance<py::array>(obj) && py::hasattr(obj, "__dlpack__")) return from_dlpack(obj);
  return tensor_from_array(obj, borrow_read_only);
}

void bind_tensor(py::module_& m) {
  py::class_<Tensor>(m, "Tensor", R"(An n-dimensional array on a porta device.

Tensor(data, device=None): `data` is a numpy array (or anything numpy.asarray takes), a DLPack
producer or a porta.Tensor. On the cpu the tensor borrows the array's memory when its strides
allow (writes show on both sides), else it holds a copy; on another device it is a copy.
device=None leaves a porta.Tensor where it is and puts anything else on the cpu.)")
      .def(py::init([](py::handle data, std::optional<std::string> device) {
             Tensor t = tensor_from_python(data);
             if (!device) return t;
             Device d = Device::parse(*device);
             py::gil_scoped_release release;
             return t.to(d);  // the tensor itself when it is on `d` already
           }),
           py::arg("data"), py::arg("device") = py::none())
      .def_property_readonly("shape", [](const Tensor& t) { return py::tuple(py::cast(t.shape())); })
      .def_property_readonly("strides", [](const Tensor& t) { return py::tuple(py::cast(t.strides())); },
                             "Strides in elements.")
      .def_property_readonly("dtype", [](const Tensor& t) { return std::string(dtype_name(t.dtype())); },
                             "porta's dtype name: f32, f16, bf16, f64, i64, i32, i8, u8, bool.")
      .def_property_readonly("device", [](const Tensor& t) { return t.device().str(); })
      .def_property_readonly("ndim", &Tensor::rank)
      .def_property_readonly("size", &Tensor::numel, "Number of elements.")
      .def("is_contiguous", &Tensor::is_contiguous)
      .def("data_ptr",
           [](const Tensor& t) {
             return t.numel() > 0 ? reinterpret_cast<uintptr_t>(t.raw_data()) : uintptr_t{0};
           },
           "Address of the first element (cpu tensors only).")
      .def("numpy", &tensor_to_numpy,
           "The elements as a numpy array: shares the memory of a cpu tensor, copies from other "
           "devices; bf16 becomes float32.")
      .def("__array__",
           [](const Tensor& t, py::object dtype) {
             py::array a = tensor_to_numpy(t);
             return dtype.is_none() ? a : py::array(a.attr("astype")(dtype));
           },
           py::arg("dtype") = py::none())
      .def("to",
           [](const Tensor& t, const std::string& device) {
             Device d = Device::parse(device);
             py::gil_scoped_release release;
             return t.to(d);
           },
           py::arg("device"), "A copy on another device (the tensor itself when already there).")
      .def("cast",
           [](const Tensor& t, const std::string& dtype) {
             DType d = dtype_from_name(dtype);
             py::gil_scoped_release release;
             return t.to(Device::cpu()).cast(d);
           },
           py::arg("dtype"), "A cpu copy converted to another dtype ('f32', 'bf16', ...).")
      .def("contiguous", &Tensor::contiguous, py::call_guard<py::gil_scoped_release>())
      .def("__dlpack__", [](const Tensor& t, py::object /*stream*/) { return to_dlpack(t); },
           py::arg("stream") = py::none(), "DLPack capsule viewing this tensor (cpu tensors only).")
      .def("__dlpack_device__",
           [](const Tensor& t) {
             Device d = t.device();
             int kind = d.type == DeviceType::cpu      ? dlpack::kCPU
                        : d.type == DeviceType::cuda   ? dlpack::kCUDA
                        : d.type == DeviceType::hip    ? dlpack::kROCM
                        : d.type == DeviceType::vulkan ? dlpack::kVulkan
                                                       : 0;
             return py::make_tuple(kind, d.index);
           })
      .def("__len__",
           [](const Tensor& t) {
             if (t.rank() == 0) throw py::type_error("len() of a 0-d porta.Tensor");
             return t.dim(0);
           })
      .def("__repr__", &Tensor::describe);

  m.def("from_dlpack", &from_dlpack, py::arg("obj"),
        "A porta.Tensor viewing the memory of a DLPack producer (an object with __dlpack__, such as "
        "a torch tensor or a numpy array, or a 'dltensor' capsule) without copying; host memory only.");
  m.def("tensor", [](py::handle data) { return tensor_from_python(data); }, py::arg("data"),
        "A cpu porta.Tensor for a numpy array, a DLPack producer or a porta.Tensor (zero copy when "
        "the memory can be viewed).");
}

}  // namespace porta::python
