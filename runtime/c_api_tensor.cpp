// porta runtime — C ABI: devices and tensors.
#include <algorithm>
#include <cstring>

#include "porta/porta.hpp"
#include "runtime/c_api_handles.hpp"

using namespace porta;
using namespace porta::capi;

namespace {

porta_tensor new_tensor(Tensor t) {
  porta_tensor h = make_handle<porta_tensor_s>();
  h->tensor = std::move(t);
  return h;
}

void check_bytes(const Tensor& t, size_t bytes, const char* fn) {
  if (bytes != t.nbytes())
    bad_argument(str("[", fn, "] byte count should be ", t.nbytes(), " for ", t.describe(), ", got ", bytes));
}

}  // namespace

namespace porta::capi {
porta_tensor wrap_tensor(Tensor t) { return new_tensor(std::move(t)); }
}  // namespace porta::capi

extern "C" {

porta_status porta_device_list(porta_device* devices, size_t capacity, size_t* count) {
  PORTA_C_GUARD({
    need(count, "porta_device_list", "count");
    std::vector<Device> all = all_devices();
    if (devices && capacity < all.size())
      bad_argument(str("[porta_device_list] capacity should be at least ", all.size(), ", got ", capacity));
    for (size_t i = 0; devices && i < all.size(); ++i) devices[i] = to_c(all[i]);
    *count = all.size();
  })
}

porta_status porta_device_parse(const char* text, porta_device* device) {
  PORTA_C_GUARD({
    need(text, "porta_device_parse", "text");
    need(device, "porta_device_parse", "device");
    *device = to_c(Device::parse(text));
  })
}

porta_status porta_device_available(porta_device device, int* available, char* detail,
                                    size_t detail_capacity) {
  PORTA_C_GUARD({
    need(available, "porta_device_available", "available");
    Device d = read_device(device, "porta_device_available");
    Availability a;
    Backend* b = find_backend(d.type);
    if (!b)
      a = {false, str("no backend for device kind '", device_type_name(d.type),
                      "' is registered (not built into this porta, or its plugin is not loaded)")};
    else if (d.index >= b->device_count())
      a = {false, str("no such device (", b->device_count(), " ", device_type_name(d.type), " device(s))")};
    else
      a = b->availability(d.index);
    *available = a.available ? 1 : 0;
    if (detail && detail_capacity > 0) {
      size_t n = std::min(a.detail.size(), detail_capacity - 1);
      std::memcpy(detail, a.detail.data(), n);
      detail[n] = '\0';
    }
  })
}

porta_status porta_tensor_create(porta_device device, porta_dtype dtype, const int64_t* shape,
                                 size_t rank, porta_tensor* out) {
  PORTA_C_GUARD({
    const char* fn = "porta_tensor_create";
    need(out, fn, "out");
    Tensor t = Tensor::empty(read_shape(shape, rank, fn), read_dtype(dtype, fn), read_device(device, fn));
    *out = new_tensor(std::move(t));
  })
}

porta_status porta_tensor_wrap_host(void* data, size_t bytes, porta_dtype dtype, const int64_t* shape,
                                    size_t rank, porta_tensor* out) {
  PORTA_C_GUARD({
    const char* fn = "porta_tensor_wrap_host";
    need(out, fn, "out");
    Shape s = read_shape(shape, rank, fn);
    DType dt = read_dtype(dtype, fn);
    size_t want = static_cast<size_t>(shape_numel(s)) * dtype_size(dt);
    if (bytes != want)
      bad_argument(str("[", fn, "] byte count should be ", want, " for ", dtype_name(dt), " ",
                       shape_str(s), ", got ", bytes));
    if (!data && want > 0) bad_argument(str("[", fn, "] data should not be NULL for ", want, " bytes"));
    *out = new_tensor(Tensor::wrap_host(data, s, dt));
  })
}

porta_status porta_tensor_copy_from_host(porta_tensor tensor, const void* src, size_t bytes) {
  PORTA_C_GUARD({
    const char* fn = "porta_tensor_copy_from_host";
    Tensor& t = data_tensor(tensor, fn);
    check_bytes(t, bytes, fn);
    if (bytes) need(src, fn, "src");
    t.copy_from_host(src, bytes);
  })
}

porta_status porta_tensor_copy_to_host(porta_tensor tensor, void* dst, size_t bytes) {
  PORTA_C_GUARD({
    const char* fn = "porta_tensor_copy_to_host";
    Tensor& t = data_tensor(tensor, fn);
    check_bytes(t, bytes, fn);
    if (bytes) need(dst, fn, "dst");
    t.copy_to_host(dst, bytes);
  })
}

porta_status porta_tensor_to_device(porta_tensor tensor, porta_device device, porta_tensor* out) {
  PORTA_C_GUARD({
    const char* fn = "porta_tensor_to_device";
    Tensor& t = data_tensor(tensor, fn);
    need(out, fn, "out");
    *out = new_tensor(t.to(read_device(device, fn)));
  })
}

porta_status porta_tensor_rank(porta_tensor tensor, size_t* rank) {
  PORTA_C_GUARD({
    Tensor& t = get(tensor, "porta_tensor_rank", "tensor").tensor;
    need(rank, "porta_tensor_rank", "rank");
    *rank = static_cast<size_t>(t.rank());
  })
}

porta_status porta_tensor_shape(porta_tensor tensor, int64_t* dims, size_t capacity) {
  PORTA_C_GUARD({
    const char* fn = "porta_tensor_shape";
    Tensor& t = get(tensor, fn, "tensor").tensor;
    size_t rank = static_cast<size_t>(t.rank());
    if (capacity < rank)
      bad_argument(str("[", fn, "] capacity should be at least the rank ", rank, ", got ", capacity));
    if (rank) need(dims, fn, "dims");
    std::copy(t.shape().begin(), t.shape().end(), dims);
  })
}

porta_status porta_tensor_dtype(porta_tensor tensor, porta_dtype* dtype) {
  PORTA_C_GUARD({
    Tensor& t = get(tensor, "porta_tensor_dtype", "tensor").tensor;
    need(dtype, "porta_tensor_dtype", "dtype");
    *dtype = static_cast<porta_dtype>(t.dtype());
  })
}

porta_status porta_tensor_device(porta_tensor tensor, porta_device* device) {
  PORTA_C_GUARD({
    Tensor& t = get(tensor, "porta_tensor_device", "tensor").tensor;
    need(device, "porta_tensor_device", "device");
    *device = to_c(t.device());
  })
}

porta_status porta_tensor_nbytes(porta_tensor tensor, size_t* bytes) {
  PORTA_C_GUARD({
    Tensor& t = get(tensor, "porta_tensor_nbytes", "tensor").tensor;
    need(bytes, "porta_tensor_nbytes", "bytes");
    *bytes = t.nbytes();
  })
}

porta_status porta_tensor_data(porta_tensor tensor, void** data) {
  PORTA_C_GUARD({
    Tensor& t = data_tensor(tensor, "porta_tensor_data");
    need(data, "porta_tensor_data", "data");
    if (t.device().type == DeviceType::cpu) {
      *data = t.raw_data();
    } else {
      Backend* b = t.defined() ? t.storage()->backend() : nullptr;
      void* p = b ? b->kernel_pointer(t.storage()->handle(), static_cast<size_t>(t.offset()) * dtype_size(t.dtype()))
                  : nullptr;
      if (!p)
        throw DeviceMismatch(str("[porta_tensor_data] data pointers exist only for cpu tensors and backends whose ",
                                 "handles are pointers, got ", t.describe(), "; copy it with porta_tensor_copy_to_host, ",
                                 "or get its handle with porta_tensor_device_handle"));
      *data = p;
    }
  })
}

porta_status porta_tensor_free(porta_tensor tensor) {
  PORTA_C_GUARD({
    if (!tensor) return PORTA_OK;
    porta_tensor_s& t = get(tensor, "porta_tensor_free", "tensor");
    if (t.lent)
      bad_argument("[porta_tensor_free] this tensor is lent to a kernel callback by porta and "
                   "freed by porta when the callback returns");
    destroy_handle(tensor);
  })
}

}  // extern "C"
