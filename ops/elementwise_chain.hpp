// porta ops — the program of ElementwiseChain (ai.porta): several elementwise ops run as one
// pass over their broadcast output. Shared by the op (ops/elementwise_chain.cpp), the rewrite
// that builds it (runtime/elementwise_fusion.cpp) and the kernels that run it.
//
// A program is a list of steps. Registers 0..I-1 are the op's I inputs, broadcast to the
// output's shape; step s writes register I + s. A step is one ONNX elementwise op of one or two
// operands, each a register written before it or an immediate (a scalar constant of the model,
// `constants`). The op's output is the last step's register. Ops with attributes carry them in
// the step's alpha and beta: LeakyRelu, Elu, Celu (alpha), HardSigmoid (alpha, beta), Selu
// (alpha, gamma as beta), Clip (min and max as alpha and beta; -inf / +inf when absent).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "porta/attributes.hpp"

namespace porta::opdef::chain {

// A program has any number of inputs, steps and constants. What one kernel call takes at most
// (the tensors one dispatch binds, the steps it unrolls, the floats of its push constants) is the
// kernel's to declare (KernelDef::limits "inputs", "steps" and "floats"), and the rewrite that
// builds chains keeps to the limits of the device's kernels.

struct OpInfo {
  const char* name;
  int arity;       ///< 1 or 2 operands
  int params;      ///< attribute floats the step carries (0, 1 = alpha, 2 = alpha and beta)
};
/// The ops a step may be; nullptr for any other name.
const OpInfo* find_op_info(std::string_view name);

/// Operand encoding in the `operands` attribute (two per step): k >= 0 a register, -1 none (the
/// second operand of a one-operand op), k <= -2 the immediate constants[-k - 2].
inline constexpr int64_t kNone = -1;
inline int64_t immediate_operand(size_t k) { return -2 - static_cast<int64_t>(k); }
inline bool is_immediate(int64_t operand) { return operand <= -2; }
inline size_t immediate_index(int64_t operand) { return static_cast<size_t>(-2 - operand); }

struct Step {
  const OpInfo* op = nullptr;
  int64_t a = kNone, b = kNone;
  double alpha = 0.0, beta = 0.0;
};

struct Program {
  int inputs = 0;
  std::vector<Step> steps;
  std::vector<double> constants;
  /// Floats a kernel passes: the immediates and each step's attribute floats.
  size_t floats() const;
};

/// Reads and checks the op's attributes (`ops`, `operands`, `alphas`, `betas`, `constants`) for a
/// node with `inputs` tensor inputs; throws InvalidModel saying what is wrong (a model file may
/// carry this op). Every input and every step's result but the last must be read by a later
/// step, so the output's shape is the broadcast of all inputs.
Program parse(const Attributes& attrs, int inputs);
/// The attributes that describe `p` (parse's inverse).
Attributes to_attributes(const Program& p);

}  // namespace porta::opdef::chain
