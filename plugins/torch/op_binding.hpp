// plugins/torch — how a porta op (ONNX-style schema) becomes a torch operator schema, and the
// table of bound ops the kernels look their op up in. The mapping (documented in README.md,
// "torch.ops.porta"):
//   inputs      positional Tensor arguments in schema order; optional -> `Tensor? X=None`
//               (no default when a required input follows); variadic -> `Tensor[] X`
//   attributes  keyword-only arguments (after `*`) with the schema's default; an attribute
//               without a default, or whose default torch's schema syntax cannot write (a list
//               of strings, a non-finite float, a string with quotes, a tensor), is `T? a=None`,
//               None meaning "absent" (porta fills in its default); a required one has no default
//   outputs     `Tensor` for one, a tuple for a fixed number (optional outputs included: the
//               call computes every output, as porta's eager calls do), `Tensor[]` for variadic
//   names       torch.ops.porta.<Name> for the op a plain name means in porta (ONNX's domain,
//               then ai.porta, then the only domain with that name); every op of another domain
//               also as torch.ops.porta.<domain>__<Name>, the domain's '.' and '-' as '_'
//               (com.stylegan2::FusedLeakyReLU is torch.ops.porta.com_stylegan2__FusedLeakyReLU)
#pragma once
#include <string>
#include <vector>

#include "porta/porta.hpp"

namespace porta_torch {

struct InputArg {
  enum Kind { required, optional, variadic };
  std::string name;  ///< the torch argument name (porta's, made an identifier)
  Kind kind = required;
};

struct AttrArg {
  std::string name;        ///< porta's attribute name
  std::string torch_name;  ///< the torch argument name
  porta::AttrType type;
  bool none_default = false;  ///< `T? name=None`: None leaves the attribute absent
};

/// One porta op as torch sees it.
struct OpBinding {
  const porta::OpSchema* op = nullptr;
  std::string qualified;  ///< porta's name for calls: "Name" or "domain::Name"
  std::vector<InputArg> inputs;
  std::vector<AttrArg> attrs;
  int num_outputs = 1;    ///< fixed count, or -1 for variadic outputs (`Tensor[]`)
  /// The schema after the op name: "(Tensor X, *, float epsilon=1e-06) -> Tensor".
  std::string signature;
};

/// The binding of a porta op (throws porta::Error when the op cannot be written as a torch schema).
OpBinding bind_op(const porta::OpSchema& op);
/// The names torch.ops.porta gives the op: its plain name when that resolves to it in porta,
/// and `<domain>__<Name>` for an op of a domain other than ONNX's.
std::vector<std::string> torch_names(const porta::OpSchema& op);

/// Records a bound op under its torch name ("porta::Name"); the kernels find it there.
void add_binding(const std::string& torch_name, OpBinding binding);
/// The binding of a torch operator name ("porta::Name"); throws c10::Error when unknown.
const OpBinding& binding_of(const std::string& torch_name);
/// Every bound op as "torch name=porta name" and every op porta has that could not be bound as
/// "!porta name: reason", for torch.ops.porta._op_table().
std::vector<std::string> binding_table();
void add_unbound(const std::string& qualified, const std::string& reason);

}  // namespace porta_torch
