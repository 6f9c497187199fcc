// porta runtime — NumPy .npy reading and writing (format versions 1.0, 2.0, 3.0; C order).
#include "porta/npy.hpp"

#include <cstring>
#include <fstream>
#include <sstream>

#include "porta/error.hpp"
#include "porta/util.hpp"

namespace porta {
namespace {

constexpr size_t kMaxHeader = 1 << 16;

struct Descr {
  DType dtype;
  char byteorder;  // '<', '>', '|'
};

Descr parse_descr(const std::string& d, const std::string& what) {
  if (d.size() < 3) throw InvalidArgument(str("[npy] ", what, ": bad descr '", d, "'"));
  char order = d[0];
  std::string code = d.substr(1);
  DType t;
  if (code == "f4") t = DType::f32;
  else if (code == "f8") t = DType::f64;
  else if (code == "f2") t = DType::f16;
  else if (code == "i8") t = DType::i64;
  else if (code == "i4") t = DType::i32;
  else if (code == "i1") t = DType::i8;
  else if (code == "u1") t = DType::u8;
  else if (code == "b1") t = DType::boolean;
  else
    throw InvalidArgument(str("[npy] ", what, ": unsupported dtype '", d,
                              "', expected one of <f4 <f8 <f2 <i8 <i4 |i1 |u1 |b1"));
  if (order == '>' && dtype_size(t) > 1)
    throw InvalidArgument(str("[npy] ", what, ": big-endian data ('", d, "') is not supported"));
  return {t, order};
}

// Value of `key` in the header dict: the text after "'key':" up to the matching end.
std::string dict_value(const std::string& h, const std::string& key, const std::string& what) {
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) throw InvalidArgument(str("[npy] ", what, ": header lacks '", key, "'"));
  size_t colon = h.find(':', k);
  if (colon == std::string::npos) throw InvalidArgument(str("[npy] ", what, ": malformed header"));
  size_t p = h.find_first_not_of(' ', colon + 1);
  if (p == std::string::npos) throw InvalidArgument(str("[npy] ", what, ": malformed header"));
  if (h[p] == '\'') {
    size_t e = h.find('\'', p + 1);
    if (e == std::string::npos) throw InvalidArgument(str("[npy] ", what, ": malformed header"));
    return h.substr(p + 1, e - p - 1);
  }
  if (h[p] == '(') {
    size_t e = h.find(')', p);
    if (e == std::string::npos) throw InvalidArgument(str("[npy] ", what, ": malformed shape"));
    return h.substr(p, e - p + 1);
  }
  size_t e = h.find_first_of(",}", p);
  std::string value = h.substr(p, e == std::string::npos ? std::string::npos : e - p);
  if (value.find_first_not_of(' ') == std::string::npos)
    throw InvalidArgument(str("[npy] ", what, ": header has no value for '", key, "'"));
  return value;
}

Shape parse_shape(const std::string& s, const std::string& what) {
  if (s.size() < 2 || s.front() != '(' || s.back() != ')')
    throw InvalidArgument(str("[npy] ", what, ": shape '", s, "' is not a tuple such as (2, 3)"));
  Shape shape;
  std::string inner = s.substr(1, s.size() - 2);
  std::stringstream ss(inner);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t b = item.find_first_not_of(' ');
    if (b == std::string::npos) continue;
    item = item.substr(b, item.find_last_not_of(' ') - b + 1);
    if (item.empty() || item.size() > 18 || item.find_first_not_of("0123456789") != std::string::npos)
      throw InvalidArgument(str("[npy] ", what, ": bad dimension '", item, "' in shape ", s));
    shape.push_back(std::stoll(item));
  }
  return shape;
}

}  // namespace

Tensor parse_npy(const void* data, size_t size, const std::string& what) {
  const auto* p = static_cast<const unsigned char*>(data);
  if (size < 10 || std::memcmp(p, "\x93NUMPY", 6) != 0)
    throw InvalidArgument(str("[npy] ", what, ": not a .npy file (missing the \\x93NUMPY magic)"));
  int major = p[6];
  size_t header_len, header_start;
  if (major == 1) {
    header_len = p[8] | (p[9] << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) throw InvalidArgument(str("[npy] ", what, ": truncated header"));
    header_len = p[8] | (p[9] << 8) | (static_cast<size_t>(p[10]) << 16) | (static_cast<size_t>(p[11]) << 24);
    header_start = 12;
  } else {
    throw InvalidArgument(str("[npy] ", what, ": unsupported format version ", major));
  }
  if (header_len > kMaxHeader || header_start + header_len > size)
    throw InvalidArgument(str("[npy] ", what, ": header of ", header_len, " bytes does not fit in ",
                              size, " bytes"));
  std::string h(reinterpret_cast<const char*>(p + header_start), header_len);
  Descr descr = parse_descr(dict_value(h, "descr", what), what);
  std::string fortran = dict_value(h, "fortran_order", what);
  if (fortran.find("True") != std::string::npos)
    throw InvalidArgument(str("[npy] ", what, ": Fortran-order arrays are not supported (save with C order)"));
  Shape shape = parse_shape(dict_value(h, "shape", what), what);
  int64_t n;
  try {
    n = shape_numel(shape);
  } catch (const ShapeError&) {
    throw InvalidArgument(str("[npy] ", what, ": shape ", shape_str(shape), " is too large (its size overflows)"));
  }
  size_t elem = dtype_size(descr.dtype);
  size_t available = size - header_start - header_len;
  if (static_cast<uint64_t>(n) > available / elem)
    throw InvalidArgument(str("[npy] ", what, ": shape ", shape_str(shape), " of ",
                              dtype_name(descr.dtype), " needs ", static_cast<uint64_t>(n) * elem,
                              " bytes, file holds ", available));
  Tensor t = Tensor::from_host(p + header_start + header_len, shape, descr.dtype);
  if (descr.dtype == DType::boolean) {  // any byte may be in the file; a C++ bool is 0 or 1
    auto* b = static_cast<unsigned char*>(t.raw_data());
    for (int64_t i = 0; i < n; ++i) b[i] = b[i] != 0;
  }
  return t;
}

Tensor read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InvalidArgument(str("[npy] cannot open '", path, "'"));
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return parse_npy(bytes.data(), bytes.size(), path);
}

void write_npy(const std::string& path, const Tensor& tensor) {
  const char* descr = nullptr;
  switch (tensor.dtype()) {
    case DType::f32: descr = "<f4"; break;
    case DType::f64: descr = "<f8"; break;
    case DType::f16: descr = "<f2"; break;
    case DType::i64: descr = "<i8"; break;
    case DType::i32: descr = "<i4"; break;
    case DType::i8: descr = "|i1"; break;
    case DType::u8: descr = "|u1"; break;
    case DType::boolean: descr = "|b1"; break;
    case DType::bf16:
      throw InvalidArgument(str("[npy] ", path, ": NumPy has no bfloat16; cast to f32 first"));
  }
  std::string shape = "(";
  for (size_t i = 0; i < tensor.shape().size(); ++i)
    shape += std::to_string(tensor.shape()[i]) + (tensor.shape().size() == 1 || i + 1 < tensor.shape().size() ? "," : "");
  shape += ")";
  std::string header = str("{'descr': '", descr, "', 'fortran_order': False, 'shape': ", shape, ", }");
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::vector<char> data(tensor.nbytes());
  tensor.copy_to_host(data.data(), data.size());
  std::ofstream f(path, std::ios::binary);
  if (!f) throw InvalidArgument(str("[npy] cannot write '", path, "'"));
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                           static_cast<unsigned char>(header.size() & 0xff),
                           static_cast<unsigned char>(header.size() >> 8)};
  f.write(reinterpret_cast<const char*>(pre), 10);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!f) throw InvalidArgument(str("[npy] writing '", path, "' failed"));
}

}  // namespace porta
