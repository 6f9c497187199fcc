// plugins/torch — porta op schemas as torch schemas (the mapping: op_binding.hpp).
#include "op_binding.hpp"

#include <c10/util/Exception.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>

namespace porta_torch {
namespace {

// Words that cannot name an argument in torch's schema language or in a Python call.
const std::set<std::string>& reserved_words() {
  static const std::set<std::string> words{
      "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def",
      "del", "elif", "else", "except", "finally", "for", "from", "global", "graph", "if", "import", "in", "is",
      "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield", "self"};
  return words;
}

std::string identifier(const std::string& name) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  if (reserved_words().count(out)) out += "_";
  return out;
}

// The shortest decimal that reads back as `v` ("1e-06", "0.5"), or "" when torch cannot write it.
std::string float_literal(double v) {
  if (!std::isfinite(v)) return "";
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string type_of(porta::AttrType t) {
  switch (t) {
    case porta::AttrType::Int: return "int";
    case porta::AttrType::Float: return "float";
    case porta::AttrType::String: return "str";
    case porta::AttrType::Ints: return "int[]";
    case porta::AttrType::Floats: return "float[]";
    case porta::AttrType::Strings: return "str[]";
    case porta::AttrType::TensorValue: return "Tensor";
  }
  return "";
}

// The default as torch writes it, or "" when it cannot be written (the argument then takes None).
std::string default_literal(const porta::AttrValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* f = std::get_if<double>(&v)) return float_literal(*f);
  if (auto* s = std::get_if<std::string>(&v))
    return s->find_first_of("'\"\\\n") == std::string::npos ? "'" + *s + "'" : "";
  if (auto* is = std::get_if<std::vector<int64_t>>(&v)) {
    std::string out = "[";
    for (size_t k = 0; k < is->size(); ++k) out += (k ? ", " : "") + std::to_string((*is)[k]);
    return out + "]";
  }
  if (auto* fs = std::get_if<std::vector<double>>(&v)) {
    std::string out = "[";
    for (size_t k = 0; k < fs->size(); ++k) {
      std::string f = float_literal((*fs)[k]);
      if (f.empty()) return "";
      out += (k ? ", " : "") + f;
    }
    return out + "]";
  }
  return "";  // lists of strings, tensors: torch's schema language has no literal for them
}

struct Table {
  std::mutex mutex;
  std::map<std::string, OpBinding> bound;        // "porta::Name" -> binding
  std::map<std::string, std::string> unbound;    // porta name -> why
};
Table& table() {
  static Table* t = new Table;  // never destroyed: kernels may run during static destruction
  return *t;
}

}  // namespace

std::vector<std::string> torch_names(const porta::OpSchema& op) {
  std::vector<std::string> names;
  if (porta::find_op(op.name) == &op) names.push_back(identifier(op.name));
  if (!op.domain.empty() && op.domain != "ai.onnx") names.push_back(identifier(op.domain) + "__" + identifier(op.name));
  return names;
}

OpBinding bind_op(const porta::OpSchema& op) {
  OpBinding b;
  b.op = &op;
  b.qualified = op.qualified_name();
  std::set<std::string> used;
  auto unique = [&](std::string name) {
    while (used.count(name)) name += "_";
    used.insert(name);
    return name;
  };
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    std::string n = op.inputs[i];
    InputArg a;
    if (n.size() > 3 && n.compare(n.size() - 3, 3, "...") == 0) {
      a.kind = InputArg::variadic;
      n.resize(n.size() - 3);
      if (i + 1 != op.inputs.size())
        throw porta::InvalidArgument(porta::str("[", b.qualified, "] variadic input '", n, "' is not the last input"));
    } else if (!n.empty() && n.back() == '?') {
      a.kind = InputArg::optional;
      n.pop_back();
    }
    a.name = unique(identifier(n));
    b.inputs.push_back(a);
  }
  for (const porta::AttrDef& d : op.attrs) {
    AttrArg a;
    a.name = d.name;
    a.torch_name = unique(identifier(d.name));
    a.type = d.type;
    b.attrs.push_back(a);
  }
  b.num_outputs = op.max_outputs();

  // The signature: inputs positional, attributes keyword-only.
  std::string sig = "(";
  auto sep = [&] { if (sig.size() > 1) sig += ", "; };
  for (size_t i = 0; i < b.inputs.size(); ++i) {
    const InputArg& a = b.inputs[i];
    sep();
    if (a.kind == InputArg::variadic) {
      sig += "Tensor[] " + a.name;
    } else if (a.kind == InputArg::optional) {
      bool required_follows = false;
      for (size_t j = i + 1; j < b.inputs.size(); ++j) required_follows |= b.inputs[j].kind != InputArg::optional;
      sig += "Tensor? " + a.name + (required_follows ? "" : "=None");
    } else {
      sig += "Tensor " + a.name;
    }
  }
  if (!b.attrs.empty()) {
    sep();
    sig += "*";
  }
  for (size_t k = 0; k < b.attrs.size(); ++k) {
    AttrArg& a = b.attrs[k];
    const porta::AttrDef& d = op.attrs[k];
    std::string literal = d.default_value ? default_literal(*d.default_value) : "";
    sep();
    if (d.required && !d.default_value) {
      sig += type_of(a.type) + " " + a.torch_name;
    } else if (!literal.empty()) {
      sig += type_of(a.type) + " " + a.torch_name + "=" + literal;
    } else {
      a.none_default = true;
      sig += type_of(a.type) + "? " + a.torch_name + "=None";
    }
  }
  sig += ") -> ";
  if (b.num_outputs < 0) {
    sig += "Tensor[]";
  } else if (b.num_outputs == 1) {
    sig += "Tensor";
  } else {
    sig += "(";
    for (int k = 0; k < b.num_outputs; ++k) sig += k ? ", Tensor" : "Tensor";
    sig += ")";
  }
  b.signature = sig;
  return b;
}

void add_binding(const std::string& torch_name, OpBinding binding) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  t.bound[torch_name] = std::move(binding);
}

void add_unbound(const std::string& qualified, const std::string& reason) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  t.unbound[qualified] = reason;
}

const OpBinding& binding_of(const std::string& torch_name) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.bound.find(torch_name);
  TORCH_CHECK(it != t.bound.end(), "[", torch_name, "] is not an op libporta_torch bound");
  return it->second;  // entries are never removed, so the reference stays valid
}

std::vector<std::string> binding_table() {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  std::vector<std::string> out;
  for (auto& [name, b] : t.bound) out.push_back(name.substr(name.find("::") + 2) + "=" + b.qualified);
  for (auto& [name, why] : t.unbound) out.push_back("!" + name + ": " + why);
  return out;
}

}  // namespace porta_torch
