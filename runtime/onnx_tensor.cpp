// porta runtime — ONNX TensorProto conversion with untrusted-input checks.
#include "runtime/onnx_tensor.hpp"

#include <onnx/onnx_pb.h>
#include <sys/mman.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>

#include "porta/error.hpp"
#include "porta/half.hpp"
#include "porta/session.hpp"
#include "porta/util.hpp"

namespace fs = std::filesystem;

namespace porta {
namespace detail {

DType dtype_from_onnx(int t, const std::string& context) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return DType::f32;
    case onnx::TensorProto::UINT8: return DType::u8;
    case onnx::TensorProto::INT8: return DType::i8;
    case onnx::TensorProto::INT32: return DType::i32;
    case onnx::TensorProto::INT64: return DType::i64;
    case onnx::TensorProto::BOOL: return DType::boolean;
    case onnx::TensorProto::FLOAT16: return DType::f16;
    case onnx::TensorProto::DOUBLE: return DType::f64;
    case onnx::TensorProto::BFLOAT16: return DType::bf16;
    default: break;
  }
  std::string name = onnx::TensorProto::DataType_IsValid(t)
                         ? onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(t))
                         : std::to_string(t);
  throw Unsupported(str("[onnx] ", context, ": element type ", name,
                        " is not supported (porta has f32 f16 bf16 f64 i64 i32 i8 u8 bool)"));
}

int onnx_from_dtype(DType t) {
  switch (t) {
    case DType::f32: return onnx::TensorProto::FLOAT;
    case DType::u8: return onnx::TensorProto::UINT8;
    case DType::i8: return onnx::TensorProto::INT8;
    case DType::i32: return onnx::TensorProto::INT32;
    case DType::i64: return onnx::TensorProto::INT64;
    case DType::boolean: return onnx::TensorProto::BOOL;
    case DType::f16: return onnx::TensorProto::FLOAT16;
    case DType::f64: return onnx::TensorProto::DOUBLE;
    case DType::bf16: return onnx::TensorProto::BFLOAT16;
  }
  return 0;
}

namespace {

// Resolves an external-data location inside base_dir; refuses absolute paths, "..", and
// symlinks that lead outside.
fs::path resolve_external(const std::string& location, const std::string& base_dir,
                          const std::string& context) {
  if (base_dir.empty())
    throw InvalidModel(str("[onnx] ", context, ": external data '", location,
                           "' but the model was not loaded from a file"));
  fs::path rel(location);
  if (location.empty() || rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
    throw InvalidModel(str("[onnx] ", context, ": external data path '", location,
                           "' must be relative to the model's folder"));
  for (auto& part : rel)
    if (part == "..")
      throw InvalidModel(str("[onnx] ", context, ": external data path '", location,
                             "' may not contain '..'"));
  std::error_code ec;
  fs::path base = fs::canonical(base_dir, ec);
  if (ec) throw InvalidModel(str("[onnx] ", context, ": model folder '", base_dir, "' is not accessible"));
  fs::path full = fs::weakly_canonical(base / rel, ec);
  if (ec) throw InvalidModel(str("[onnx] ", context, ": external data '", location, "' cannot be resolved"));
  auto b = base.native(), f = full.native();
  if (f.size() <= b.size() || f.compare(0, b.size(), b) != 0 || f[b.size()] != '/')
    throw InvalidModel(str("[onnx] ", context, ": external data '", location,
                           "' resolves outside the model's folder (", full.string(), ")"));
  return full;
}

// Bytes of a bool tensor read from a file may hold any value; C++ bool may only be 0 or 1
// (reading another byte as bool is undefined), so they are made 0 or 1 at the boundary.
Tensor normalize_bools(Tensor t) {
  if (t.dtype() == DType::boolean) {
    auto* b = static_cast<unsigned char*>(t.raw_data());
    for (int64_t i = 0; i < t.numel(); ++i) b[i] = b[i] != 0;
  }
  return t;
}

// A tensor for weights about to be read from the model, on 4 KiB pages. The cpu backend advises
// large buffers for transparent huge pages (one fault per 2 MiB); but where the host reclaims
// the memory a guest frees (a VM balloon with free page reporting, as on this project's
// machines) a fresh huge page is the slowest memory there is to fault in: vgg11's 507 MiB of
// weights took 1.4-5 s on huge pages when another process had just freed memory, 0.4-0.5 s on
// 4 KiB pages. The cost is TLB misses where a kernel streams weights as stored (the batch-1
// 'gemv' Gemm: alexnet about 4% slower at 1 thread); weights that a kernel reorders or packs
// are read once, into oneDNN's own allocations. Advice only: failure is harmless. Smaller
// tensors (below the backend's 8 MiB for huge pages) are heap memory and left alone.
Tensor empty_weights(const Shape& shape, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  if (t.nbytes() < (size_t{8} << 20)) return t;
  constexpr uintptr_t kPage = 4096;
  auto start = reinterpret_cast<uintptr_t>(t.raw_data());
  uintptr_t begin = (start + kPage - 1) & ~(kPage - 1), end = (start + t.nbytes()) & ~(kPage - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_NOHUGEPAGE);
  return t;
}

template <typename T, typename Field>
void copy_field(const Field& field, Tensor& t, int64_t n, const std::string& context, const char* name) {
  if (field.size() != n)
    throw InvalidModel(str("[onnx] ", context, ": ", name, " holds ", field.size(),
                           " values, shape needs ", n));
  T* dst = t.data<T>();
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(field.Get(static_cast<int>(i)));
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir,
                         const std::string& context_in, const RawData* raw) {
  std::string context = context_in.empty() ? str("tensor '", proto.name(), "'") : context_in;
  DType dtype = dtype_from_onnx(proto.data_type(), context);
  Shape shape;
  for (int64_t d : proto.dims()) {
    if (d < 0) throw InvalidModel(str("[onnx] ", context, ": negative dimension ", d));
    shape.push_back(d);
  }
  int64_t n;
  try {
    n = shape_numel(shape);
  } catch (const ShapeError&) {
    throw InvalidModel(str("[onnx] ", context, ": element count of ", shape_str(shape), " overflows"));
  }
  if (static_cast<uint64_t>(n) > std::numeric_limits<uint64_t>::max() / 8)
    throw InvalidModel(str("[onnx] ", context, ": shape ", shape_str(shape), " is too large"));
  uint64_t bytes = static_cast<uint64_t>(n) * dtype_size(dtype);

  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (auto& kv : proto.external_data()) {
      try {
        if (kv.key() == "location") location = kv.value();
        else if (kv.key() == "offset") offset = std::stoll(kv.value());
        else if (kv.key() == "length") length = std::stoll(kv.value());
      } catch (...) {
        throw InvalidModel(str("[onnx] ", context, ": bad external data ", kv.key(), " '", kv.value(), "'"));
      }
    }
    fs::path file = resolve_external(location, base_dir, context);
    std::error_code ec;
    uint64_t file_size = fs::file_size(file, ec);
    if (ec) throw InvalidModel(str("[onnx] ", context, ": external data file '", location, "' cannot be read"));
    if (offset < 0 || (length >= 0 && static_cast<uint64_t>(length) != bytes))
      throw InvalidModel(str("[onnx] ", context, ": external data declares offset ", offset, " length ",
                             length, ", shape ", shape_str(shape), " of ", dtype_name(dtype), " needs ",
                             bytes, " bytes"));
    if (static_cast<uint64_t>(offset) > file_size || file_size - static_cast<uint64_t>(offset) < bytes)
      throw InvalidModel(str("[onnx] ", context, ": external data '", location, "' holds ", file_size,
                             " bytes, ", bytes, " needed from offset ", offset));
    Tensor t = empty_weights(shape, dtype);
    std::ifstream f(file, std::ios::binary);
    f.seekg(offset);
    f.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(bytes));
    if (!f) throw InvalidModel(str("[onnx] ", context, ": reading external data '", location, "' failed"));
    return normalize_bools(std::move(t));
  }

  if (raw || proto.has_raw_data()) {
    uint64_t held = raw ? raw->size : proto.raw_data().size();
    if (held != bytes)
      throw InvalidModel(str("[onnx] ", context, ": raw_data holds ", held, " bytes, shape ", shape_str(shape),
                             " of ", dtype_name(dtype), " needs ", bytes));
    Tensor t = empty_weights(shape, dtype);
    if (raw) raw->source->read(raw->offset, t.raw_data(), bytes);
    else if (bytes) std::memcpy(t.raw_data(), proto.raw_data().data(), bytes);
    return normalize_bools(std::move(t));
  }
  // Typed fields: checked against the shape before anything large is allocated.
  int64_t field_count = 0;
  switch (dtype) {
    case DType::f32: field_count = proto.float_data_size(); break;
    case DType::f64: field_count = proto.double_data_size(); break;
    case DType::i64: field_count = proto.int64_data_size(); break;
    default: field_count = proto.int32_data_size(); break;
  }
  if (field_count != n)
    throw InvalidModel(str("[onnx] ", context, ": holds ", field_count, " values, shape ",
                           shape_str(shape), " needs ", n));
  Tensor t = empty_weights(shape, dtype);
  switch (dtype) {
    case DType::f32: copy_field<float>(proto.float_data(), t, n, context, "float_data"); break;
    case DType::f64: copy_field<double>(proto.double_data(), t, n, context, "double_data"); break;
    case DType::i64: copy_field<int64_t>(proto.int64_data(), t, n, context, "int64_data"); break;
    case DType::i32: copy_field<int32_t>(proto.int32_data(), t, n, context, "int32_data"); break;
    case DType::i8: copy_field<int8_t>(proto.int32_data(), t, n, context, "int32_data"); break;
    case DType::u8: copy_field<uint8_t>(proto.int32_data(), t, n, context, "int32_data"); break;
    case DType::boolean: copy_field<bool>(proto.int32_data(), t, n, context, "int32_data"); break;
    case DType::f16:
    case DType::bf16: {
      uint16_t* dst = static_cast<uint16_t*>(t.raw_data());
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<uint16_t>(proto.int32_data(static_cast<int>(i)));
      break;
    }
  }
  return t;
}

}  // namespace detail

Tensor read_tensor_proto(const std::string& path) {
  std::unique_ptr<detail::ByteSource> source;
  try {
    source = std::make_unique<detail::ByteSource>(path);
  } catch (const InvalidModel&) {
    throw InvalidArgument(str("[onnx] cannot open '", path, "'"));
  }
  // As for a model: raw_data is read once, into the tensor (onnx_source.hpp).
  std::optional<detail::StrippedMessage> stripped = detail::strip_tensor_raw_data(*source);
  onnx::TensorProto proto;
  bool parsed = false;
  if (stripped) {
    parsed = proto.ParseFromString(stripped->bytes);
  } else {
    std::string bytes(source->size(), '\0');
    source->read(0, bytes.data(), bytes.size());
    parsed = proto.ParseFromString(bytes);
  }
  if (!parsed) throw InvalidArgument(str("[onnx] '", path, "' is not a serialized TensorProto"));
  const std::optional<detail::RawData>* raw = stripped ? &stripped->raw.at(0) : nullptr;
  return detail::tensor_from_proto(proto, fs::path(path).parent_path().string(), path,
                                   raw && *raw ? &**raw : nullptr);
}

}  // namespace porta
