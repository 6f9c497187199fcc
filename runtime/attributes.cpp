// porta runtime — attribute lists.
#include "porta/attributes.hpp"

#include <cmath>

#include "porta/error.hpp"
#include "porta/util.hpp"

namespace porta {

std::string_view attr_type_name(AttrType t) {
  static constexpr const char* names[] = {"int", "float", "string", "ints", "floats", "strings", "tensor"};
  return names[static_cast<int>(t)];
}

Attributes::Attributes(std::initializer_list<std::pair<std::string, AttrValue>> list) {
  for (auto& [k, v] : list) set(k, v);
}

bool Attributes::has(std::string_view name) const { return find(name) != nullptr; }

const AttrValue* Attributes::find(std::string_view name) const {
  for (auto& [k, v] : items_)
    if (k == name) return &v;
  return nullptr;
}

void Attributes::set(std::string name, AttrValue value) {
  for (auto& [k, v] : items_)
    if (k == name) {
      v = std::move(value);
      return;
    }
  items_.emplace_back(std::move(name), std::move(value));
}

static const AttrValue& need(const Attributes& a, std::string_view name) {
  const AttrValue* v = a.find(name);
  if (!v) throw InvalidArgument(porta::str("[attributes] missing attribute '", name, "'"));
  return *v;
}

static std::string got_type(const AttrValue& v) {
  return std::string(attr_type_name(static_cast<AttrType>(v.index())));
}

int64_t Attributes::get_int(std::string_view name) const {
  const AttrValue& v = need(*this, name);
  if (auto p = std::get_if<int64_t>(&v)) return *p;
  throw InvalidArgument(porta::str("[attributes] '", name, "' should be an int, got ", got_type(v)));
}

double Attributes::get_float(std::string_view name) const {
  const AttrValue& v = need(*this, name);
  if (auto p = std::get_if<double>(&v)) return *p;
  if (auto p = std::get_if<int64_t>(&v)) return static_cast<double>(*p);
  throw InvalidArgument(porta::str("[attributes] '", name, "' should be a float, got ", got_type(v)));
}

const std::string& Attributes::get_string(std::string_view name) const {
  const AttrValue& v = need(*this, name);
  if (auto p = std::get_if<std::string>(&v)) return *p;
  throw InvalidArgument(porta::str("[attributes] '", name, "' should be a string, got ", got_type(v)));
}

std::vector<int64_t> Attributes::get_ints(std::string_view name) const {
  const AttrValue& v = need(*this, name);
  if (auto p = std::get_if<std::vector<int64_t>>(&v)) return *p;
  if (auto p = std::get_if<int64_t>(&v)) return {*p};
  throw InvalidArgument(porta::str("[attributes] '", name, "' should be a list of ints, got ", got_type(v)));
}

std::vector<double> Attributes::get_floats(std::string_view name) const {
  const AttrValue& v = need(*this, name);
  if (auto p = std::get_if<std::vector<double>>(&v)) return *p;
  if (auto p = std::get_if<double>(&v)) return {*p};
  if (auto p = std::get_if<std::vector<int64_t>>(&v)) return {p->begin(), p->end()};
  throw InvalidArgument(porta::str("[attributes] '", name, "' should be a list of floats, got ", got_type(v)));
}

const Tensor& Attributes::get_tensor(std::string_view name) const {
  const AttrValue& v = need(*this, name);
  if (auto p = std::get_if<Tensor>(&v)) return *p;
  throw InvalidArgument(porta::str("[attributes] '", name, "' should be a tensor, got ", got_type(v)));
}

int64_t Attributes::get_int(std::string_view name, int64_t fallback) const {
  return has(name) ? get_int(name) : fallback;
}
double Attributes::get_float(std::string_view name, double fallback) const {
  return has(name) ? get_float(name) : fallback;
}
std::string Attributes::get_string(std::string_view name, const std::string& fallback) const {
  return has(name) ? get_string(name) : fallback;
}
std::vector<int64_t> Attributes::get_ints(std::string_view name, std::vector<int64_t> fallback) const {
  return has(name) ? get_ints(name) : fallback;
}

std::string Attributes::str() const {
  std::ostringstream os;
  bool first = true;
  for (auto& [k, v] : items_) {
    if (!first) os << ",";
    first = false;
    os << k << "=";
    std::visit(
        [&](auto& x) {
          using X = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<X, int64_t> || std::is_same_v<X, std::string>) {
            os << x;
          } else if constexpr (std::is_same_v<X, double>) {
            os.precision(17);
            os << x;
          } else if constexpr (std::is_same_v<X, Tensor>) {
            os << x.describe();
          } else {
            os << "[";
            for (size_t i = 0; i < x.size(); ++i) os << (i ? "," : "") << x[i];
            os << "]";
          }
        },
        v);
  }
  return os.str();
}

}  // namespace porta
