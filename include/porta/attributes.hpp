// porta — node attributes (ONNX attribute values).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "porta/tensor.hpp"

namespace porta {

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>, Tensor>;

/// Attribute kinds, in the order of AttrValue's alternatives.
enum class AttrType : uint8_t { Int, Float, String, Ints, Floats, Strings, TensorValue };
std::string_view attr_type_name(AttrType t);

/// An ordered name -> value list. Ops' schemas fill in defaults, so kernels can read every
/// attribute their op declares.
class Attributes {
 public:
  Attributes() = default;
  Attributes(std::initializer_list<std::pair<std::string, AttrValue>> list);

  bool has(std::string_view name) const;
  void set(std::string name, AttrValue value);
  const AttrValue* find(std::string_view name) const;
  /// Typed getters; throw InvalidArgument when missing or of another type. get_float also
  /// accepts an Int attribute, get_ints a single Int.
  int64_t get_int(std::string_view name) const;
  double get_float(std::string_view name) const;
  const std::string& get_string(std::string_view name) const;
  std::vector<int64_t> get_ints(std::string_view name) const;
  std::vector<double> get_floats(std::string_view name) const;
  const Tensor& get_tensor(std::string_view name) const;
  int64_t get_int(std::string_view name, int64_t fallback) const;
  double get_float(std::string_view name, double fallback) const;
  std::string get_string(std::string_view name, const std::string& fallback) const;
  std::vector<int64_t> get_ints(std::string_view name, std::vector<int64_t> fallback) const;

  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }
  size_t size() const { return items_.size(); }
  /// Stable text form ("axis=1,perm=[0,2,1]") used in cache keys and messages.
  std::string str() const;

 private:
  std::vector<std::pair<std::string, AttrValue>> items_;
};

}  // namespace porta
