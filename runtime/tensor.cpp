// porta runtime — Storage and Tensor. Device memory is reached only through the backend.
#include "porta/tensor.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "porta/backend.hpp"
#include "porta/error.hpp"
#include "porta/half.hpp"
#include "porta/util.hpp"
#include "runtime/memory_limits.hpp"

namespace porta {

int64_t shape_numel(const Shape& shape) {
  // `span` multiplies the dimensions taken as at least 1, as contiguous strides do: a shape
  // with a zero dimension holds no elements, yet (0, 2^40, 2^40) has no representable strides.
  int64_t n = 1, span = 1;
  for (int64_t d : shape) {
    if (d < 0) throw ShapeError(str("[tensor] negative dimension in shape ", shape_str(shape)));
    int64_t m = std::max<int64_t>(d, 1);
    if (span > std::numeric_limits<int64_t>::max() / m)
      throw ShapeError(str("[tensor] element count of shape ", shape_str(shape), " overflows"));
    span *= m;
    n *= d;
  }
  return n;
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(shape[i], 1);
  }
  return strides;
}

// ---- Storage ------------------------------------------------------------------------------

Storage::Storage(Device device, Backend* backend, void* handle, size_t bytes, bool owned,
                 std::shared_ptr<void> keep_alive)
    : device_(device), backend_(backend), handle_(handle), bytes_(bytes), owned_(owned),
      keep_alive_(std::move(keep_alive)) {}

Storage::~Storage() {
  if (owned_ && backend_ && !released_.load(std::memory_order_relaxed)) {
    backend_->deallocate(device_.index, handle_, bytes_);
    detail::note_free(device_, bytes_);
  }
}

bool Storage::release(std::function<void(void*)> rebuild) {
  if (!owned_ || !backend_ || keep_alive_ || device_.type != DeviceType::cpu || !rebuild || bytes_ == 0)
    return false;
  std::lock_guard lock(release_mutex_);
  if (released_.load(std::memory_order_relaxed)) return false;
  backend_->deallocate(device_.index, handle_, bytes_);
  detail::note_free(device_, bytes_);
  handle_ = nullptr;
  rebuild_ = std::move(rebuild);
  released_.store(true, std::memory_order_release);
  return true;
}

void* Storage::rebuilt() const {
  std::lock_guard lock(release_mutex_);
  if (!released_.load(std::memory_order_relaxed)) return handle_;
  detail::check_allocation(device_, bytes_);
  void* h = nullptr;
  try {
    h = backend_->allocate(device_.index, bytes_);
  } catch (...) {
    detail::note_failed(device_, bytes_);
    throw;
  }
  try {
    rebuild_(h);
  } catch (...) {
    backend_->deallocate(device_.index, h, bytes_);
    detail::note_free(device_, bytes_);
    throw;
  }
  handle_ = h;
  rebuild_ = nullptr;
  released_.store(false, std::memory_order_release);
  return handle_;
}

std::shared_ptr<Storage> Storage::allocate(Device device, size_t bytes) {
  // The cpu backend is always available: skip backend_for's availability query (which builds
  // a description string) on the allocation path of every eager call and session output.
  static Backend* const cpu = find_backend(DeviceType::cpu);
  Backend& backend = device.type == DeviceType::cpu && cpu ? *cpu : backend_for(device);
  detail::check_allocation(device, bytes);  // fault injection and memory limits
  void* handle = nullptr;
  try {
    handle = backend.allocate(device.index, bytes);
  } catch (...) {
    detail::note_failed(device, bytes);
    throw;
  }
  try {
    return std::make_shared<Storage>(device, &backend, handle, bytes, true);
  } catch (...) {
    backend.deallocate(device.index, handle, bytes);
    detail::note_free(device, bytes);
    throw;
  }
}

// ---- Tensor construction ------------------------------------------------------------------

static size_t checked_bytes(const Shape& shape, DType dtype) {
  int64_t n = shape_numel(shape);
  if (static_cast<uint64_t>(n) > std::numeric_limits<size_t>::max() / 8)
    throw ShapeError(str("[tensor] byte size of shape ", shape_str(shape), " overflows"));
  return static_cast<size_t>(n) * dtype_size(dtype);
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  Tensor t;
  size_t bytes = checked_bytes(shape, dtype);
  t.storage_ = Storage::allocate(device, bytes);
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  Tensor host = empty(shape, dtype, Device::cpu());
  std::memset(host.raw_data(), 0, host.nbytes());
  return host.to(device);
}

Tensor Tensor::from_host(const void* data, const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.copy_from_host(data, t.nbytes());
  return t;
}

Tensor Tensor::wrap_host(void* data, const Shape& shape, DType dtype) {
  Tensor t;
  size_t bytes = checked_bytes(shape, dtype);
  if (!data && bytes) throw InvalidArgument("[tensor] wrap_host got a null pointer");
  t.storage_ = std::make_shared<Storage>(Device::cpu(), find_backend(DeviceType::cpu), data,
                                         bytes, false);
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::wrap_host(void* data, size_t bytes, const Shape& shape,
                         const std::vector<int64_t>& strides, int64_t offset, DType dtype,
                         std::shared_ptr<void> owner) {
  if (shape.size() != strides.size())
    throw ShapeError(str("[tensor] wrap_host: ", shape.size(), " dimensions but ", strides.size(), " strides"));
  int64_t count = shape_numel(shape);
  if (!data && count > 0) throw InvalidArgument("[tensor] wrap_host got a null pointer");
  // The last element's index (in elements from data), checked against the bytes given.
  int64_t last = offset;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (strides[i] < 0)
      throw ShapeError(str("[tensor] wrap_host: strides should not be negative, got ", shape_str(strides)));
    if (shape[i] > 0) last += (shape[i] - 1) * strides[i];
  }
  size_t size = dtype_size(dtype);
  if (offset < 0 || (count > 0 && static_cast<size_t>(last + 1) * size > bytes))
    throw ShapeError(str("[tensor] wrap_host: shape ", shape_str(shape), " with strides ", shape_str(strides),
                         " and offset ", offset, " reaches past the ", bytes, " bytes given"));
  Tensor t;
  t.storage_ = std::make_shared<Storage>(Device::cpu(), find_backend(DeviceType::cpu), data, bytes, false,
                                         std::move(owner));
  t.shape_ = shape;
  t.strides_ = strides;
  t.offset_ = offset;
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::from_values(const std::vector<double>& values, const Shape& shape, DType dtype) {
  Tensor t = empty(shape, dtype, Device::cpu());
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw ShapeError(str("[tensor] ", values.size(), " values given for shape ", shape_str(shape)));
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = from_double<T>(values[i]);
  });
  return t;
}

Tensor Tensor::scalar(double value, DType dtype) { return from_values({value}, {}, dtype); }

// ---- accessors ----------------------------------------------------------------------------

int64_t Tensor::dim(int i) const {
  int r = rank();
  if (i < -r || i >= r)
    throw ShapeError(str("[tensor] axis ", i, " out of range for rank ", r));
  return shape_[i < 0 ? i + r : i];
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

Device Tensor::device() const { return storage_ ? storage_->device() : Device::cpu(); }

bool Tensor::is_contiguous() const {
  // An empty tensor has no elements to be out of order (and contiguous_strides need not
  // match the check below for it: reshape/contiguous would recurse forever).
  if (numel() == 0) return true;
  int64_t expected = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

void* Tensor::raw_data() const {
  if (!storage_) throw InvalidArgument("[tensor] data of an undefined tensor");
  if (storage_->device().type != DeviceType::cpu)
    throw DeviceMismatch(str("[tensor] host access to ", describe(),
                             ": copy it with .to(Device::cpu()) first"));
  return static_cast<char*>(storage_->handle()) + offset_ * static_cast<int64_t>(dtype_size(dtype_));
}

std::string Tensor::describe() const {
  if (!storage_) return "Tensor(undefined)";
  return str("Tensor(", dtype_name(dtype_), " ", shape_str(shape_), " ", device().str(), ")");
}

// ---- views --------------------------------------------------------------------------------

Tensor Tensor::as_strided(const Shape& shape, const std::vector<int64_t>& strides,
                          int64_t offset) const {
  if (shape.size() != strides.size())
    throw ShapeError("[tensor] as_strided: shape and strides differ in rank");
  Tensor t = *this;
  t.shape_ = shape;
  t.strides_ = strides;
  t.offset_ = offset;
  return t;
}

Tensor Tensor::reinterpret(const Shape& shape, DType dtype) const {
  size_t start = static_cast<size_t>(offset_) * dtype_size(dtype_);
  size_t need = static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
  if (!storage_ || start + need > storage_->bytes() || start % dtype_size(dtype) != 0)
    throw ShapeError(str("[tensor] cannot reinterpret ", describe(), " as ", dtype_name(dtype), " ",
                         shape_str(shape)));
  Tensor t;
  t.storage_ = storage_;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.offset_ = static_cast<int64_t>(start / dtype_size(dtype));
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::reshape(const Shape& shape) const {
  if (shape_numel(shape) != numel())
    throw ShapeError(str("[reshape] cannot view ", shape_str(shape_), " (", numel(),
                         " elements) as ", shape_str(shape)));
  if (!is_contiguous()) return contiguous().reshape(shape);
  Tensor t = *this;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  return t;
}

Tensor Tensor::permute(const std::vector<int>& dims) const {
  if (static_cast<int>(dims.size()) != rank())
    throw ShapeError(str("[permute] got ", dims.size(), " axes for a rank-", rank(), " tensor"));
  std::vector<bool> seen(dims.size(), false);
  Tensor t = *this;
  for (size_t i = 0; i < dims.size(); ++i) {
    int d = dims[i] < 0 ? dims[i] + rank() : dims[i];
    if (d < 0 || d >= rank() || seen[d])
      throw ShapeError(str("[permute] axis ", dims[i], " is out of range or repeated"));
    seen[d] = true;
    t.shape_[i] = shape_[d];
    t.strides_[i] = strides_[d];
  }
  return t;
}

Tensor Tensor::transpose(int a, int b) const {
  std::vector<int> dims(rank());
  for (int i = 0; i < rank(); ++i) dims[i] = i;
  int r = rank();
  if (a < 0) a += r;
  if (b < 0) b += r;
  if (a < 0 || a >= r || b < 0 || b >= r)
    throw ShapeError(str("[transpose] axes out of range for rank ", r));
  std::swap(dims[a], dims[b]);
  return permute(dims);
}

Tensor Tensor::slice(int axis, int64_t start, int64_t end, int64_t step) const {
  int r = rank();
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) throw ShapeError(str("[slice] axis out of range for rank ", r));
  if (step <= 0) throw ShapeError("[slice] view slicing needs a positive step");
  int64_t n = shape_[axis];
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Tensor t = *this;
  t.offset_ += start * strides_[axis];
  t.shape_[axis] = (end - start + step - 1) / step;
  t.strides_[axis] *= step;
  return t;
}

Tensor Tensor::expand(const Shape& shape) const {
  if (shape.size() < shape_.size())
    throw ShapeError(str("[expand] cannot expand ", shape_str(shape_), " to ", shape_str(shape)));
  Tensor t = *this;
  size_t lead = shape.size() - shape_.size();
  t.shape_ = shape;
  t.strides_.assign(shape.size(), 0);
  for (size_t i = 0; i < shape_.size(); ++i) {
    int64_t d = shape_[i];
    if (d == shape[lead + i]) {
      t.strides_[lead + i] = d == 1 ? 0 : strides_[i];
    } else if (d == 1) {
      t.strides_[lead + i] = 0;
    } else {
      throw ShapeError(str("[expand] cannot expand ", shape_str(shape_), " to ", shape_str(shape)));
    }
  }
  return t;
}

// ---- copies -------------------------------------------------------------------------------

namespace {

// Copies a strided view between host buffers of the same dtype. Views that are contiguous on
// both sides (the common case: clones, outputs handed to the caller) are one memcpy.
void strided_copy_host(const char* src, const std::vector<int64_t>& src_strides, char* dst,
                       const std::vector<int64_t>& dst_strides, const Shape& shape, size_t elem) {
  int64_t n = shape_numel(shape);
  if (n == 0) return;
  int r = static_cast<int>(shape.size());
  {
    bool dense = true;
    int64_t expected = 1;
    for (int i = r - 1; i >= 0 && dense; --i) {
      if (shape[i] == 1) continue;
      dense = src_strides[i] == expected && dst_strides[i] == expected;
      expected *= shape[i];
    }
    if (dense) {
      std::memcpy(dst, src, static_cast<size_t>(n) * elem);
      return;
    }
  }
  // Row by row along the innermost axis: offsets advance incrementally, and the row is a
  // memcpy when it is dense on both sides, else a typed strided loop.
  const int64_t inner = shape[r - 1], s_in = src_strides[r - 1], d_in = dst_strides[r - 1];
  const bool dense_row = s_in == 1 && d_in == 1;
  auto copy_row = [&](const char* s, char* d) {
    if (dense_row) {
      std::memcpy(d, s, static_cast<size_t>(inner) * elem);
      return;
    }
    auto strided = [&](auto tag) {
      using T = decltype(tag);
      const T* ps = reinterpret_cast<const T*>(s);
      T* pd = reinterpret_cast<T*>(d);
      for (int64_t j = 0; j < inner; ++j) std::memcpy(pd + j * d_in, ps + j * s_in, sizeof(T));
    };
    switch (elem) {
      case 1: strided(uint8_t{}); break;
      case 2: strided(uint16_t{}); break;
      case 4: strided(uint32_t{}); break;
      case 8: strided(uint64_t{}); break;
      default:
        for (int64_t j = 0; j < inner; ++j)
          std::memcpy(d + j * d_in * static_cast<int64_t>(elem), s + j * s_in * static_cast<int64_t>(elem), elem);
    }
  };
  const int64_t rows = inner == 0 ? 0 : n / inner;
  std::vector<int64_t> idx(r, 0);
  int64_t so = 0, d = 0;  // element offsets of the current row's start
  for (int64_t row = 0; row < rows; ++row) {
    copy_row(src + so * static_cast<int64_t>(elem), dst + d * static_cast<int64_t>(elem));
    for (int i = r - 2; i >= 0; --i) {
      so += src_strides[i];
      d += dst_strides[i];
      if (++idx[i] < shape[i]) break;
      so -= src_strides[i] * shape[i];
      d -= dst_strides[i] * shape[i];
      idx[i] = 0;
    }
  }
}

// Smallest element range [lo, hi) of the storage that a view touches.
std::pair<int64_t, int64_t> view_span(const Tensor& t) {
  int64_t lo = t.offset(), hi = t.offset();
  if (t.numel() == 0) return {lo, lo};
  for (int i = 0; i < t.rank(); ++i) {
    int64_t extent = (t.shape()[i] - 1) * t.strides()[i];
    if (extent < 0) lo += extent; else hi += extent;
  }
  return {lo, hi + 1};
}

}  // namespace

Tensor Tensor::contiguous() const {
  if (!defined() || is_contiguous()) return *this;
  Tensor out = empty(shape_, dtype_, device());
  out.copy_(*this);
  return out;
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape_, dtype_, device());
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(Device target) const {
  if (!defined() || device() == target) return *this;
  Tensor out = empty(shape_, dtype_, target);
  out.copy_(*this);
  return out;
}

void Tensor::copy_from_host(const void* src, size_t bytes) {
  if (bytes != nbytes())
    throw InvalidArgument(str("[tensor] copy_from_host: ", bytes, " bytes given, ", describe(),
                              " holds ", nbytes()));
  if (bytes == 0) return;
  if (!is_contiguous()) {
    Tensor tmp = from_host(src, shape_, dtype_, Device::cpu());
    copy_(tmp);
    return;
  }
  Device d = device();
  size_t off = static_cast<size_t>(offset_) * dtype_size(dtype_);
  storage_->backend()->copy_from_host(d.index, storage_->handle(), off, src, bytes);
}

void Tensor::copy_to_host(void* dst, size_t bytes) const {
  if (bytes != nbytes())
    throw InvalidArgument(str("[tensor] copy_to_host: ", bytes, " bytes asked, ", describe(),
                              " holds ", nbytes()));
  if (bytes == 0) return;
  if (!is_contiguous()) {
    Tensor tmp = empty(shape_, dtype_, Device::cpu());
    tmp.copy_(*this);
    std::memcpy(dst, tmp.raw_data(), bytes);
    return;
  }
  size_t off = static_cast<size_t>(offset_) * dtype_size(dtype_);
  storage_->backend()->copy_to_host(device().index, dst, storage_->handle(), off, bytes);
}

void Tensor::copy_(const Tensor& src) {
  if (!defined() || !src.defined()) throw InvalidArgument("[tensor] copy_ with an undefined tensor");
  if (src.shape_ != shape_ || src.dtype_ != dtype_)
    throw ShapeError(str("[tensor] copy_ from ", src.describe(), " into ", describe()));
  if (numel() == 0) return;
  size_t elem = dtype_size(dtype_);
  Device sd = src.device(), dd = device();
  bool src_host = sd.type == DeviceType::cpu, dst_host = dd.type == DeviceType::cpu;
  if (src_host && dst_host) {
    strided_copy_host(static_cast<const char*>(src.raw_data()), src.strides_,
                      static_cast<char*>(raw_data()), strides_, shape_, elem);
    return;
  }
  if (sd == dd && src.is_contiguous() && is_contiguous()) {
    storage_->backend()->copy_on_device(dd.index, storage_->handle(), offset_ * elem,
                                        src.storage_->handle(), src.offset_ * elem, nbytes());
    return;
  }
  // General case: bring src to host (its whole span when strided), then push.
  Tensor host_src;
  if (src_host) {
    host_src = src;
  } else if (src.is_contiguous()) {
    host_src = empty(shape_, dtype_, Device::cpu());
    src.copy_to_host(host_src.raw_data(), nbytes());
  } else {
    auto [lo, hi] = view_span(src);
    Tensor span = empty({hi - lo}, dtype_, Device::cpu());
    src.storage_->backend()->copy_to_host(sd.index, span.raw_data(), src.storage_->handle(),
                                          static_cast<size_t>(lo) * elem,
                                          static_cast<size_t>(hi - lo) * elem);
    host_src = span.as_strided(shape_, src.strides_, src.offset_ - lo);
  }
  if (dst_host) {
    strided_copy_host(static_cast<const char*>(host_src.raw_data()), host_src.strides_,
                      static_cast<char*>(raw_data()), strides_, shape_, elem);
    return;
  }
  Tensor packed = host_src.contiguous();
  if (is_contiguous()) {
    storage_->backend()->copy_from_host(dd.index, storage_->handle(), offset_ * elem,
                                        packed.raw_data(), nbytes());
    return;
  }
  // Strided device destination: read-modify-write of its span through the host.
  auto [lo, hi] = view_span(*this);
  Tensor span = empty({hi - lo}, dtype_, Device::cpu());
  storage_->backend()->copy_to_host(dd.index, span.raw_data(), storage_->handle(), lo * elem,
                                    (hi - lo) * elem);
  Tensor view = span.as_strided(shape_, strides_, offset_ - lo);
  strided_copy_host(static_cast<const char*>(packed.raw_data()), packed.strides_,
                    static_cast<char*>(view.raw_data()), view.strides_, shape_, elem);
  storage_->backend()->copy_from_host(dd.index, storage_->handle(), lo * elem, span.raw_data(),
                                      (hi - lo) * elem);
}

Tensor Tensor::cast(DType dtype) const {
  Tensor src = to(Device::cpu()).contiguous();
  Tensor out = empty(shape_, dtype, Device::cpu());
  int64_t n = numel();
  visit_dtype(dtype_, [&](auto stag) {
    using S = decltype(stag);
    const S* s = src.data<S>();
    visit_dtype(dtype, [&](auto dtag) {
      using D = decltype(dtag);
      D* d = out.data<D>();
      for (int64_t i = 0; i < n; ++i) d[i] = from_double<D>(to_double(s[i]));
    });
  });
  return out;
}

std::vector<double> Tensor::to_doubles() const {
  if (!defined()) return {};
  Tensor host = to(Device::cpu()).contiguous();
  std::vector<double> out(static_cast<size_t>(numel()));
  visit_dtype(dtype_, [&](auto tag) {
    using T = decltype(tag);
    const T* p = host.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = to_double(p[i]);
  });
  return out;
}

}  // namespace porta
