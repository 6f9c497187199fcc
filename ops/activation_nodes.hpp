// porta ops — an activation of ops/fused_activation.hpp written as standalone ONNX nodes, for
// the decompositions of ops that apply one (SqueezeExcite, GatedLinear): the device running
// the decomposition may have no kernel that fuses it.
#pragma once
#include <string>

#include "ops/custom_common.hpp"
#include "ops/fused_activation.hpp"

namespace porta::opdef {

/// `f` applied to `x` as ONNX nodes (Swish as Mul(x, Sigmoid(x)), GeluTanh as Gelu with
/// approximate "tanh"); `x` itself for none.
inline ValueId activation_nodes(GraphBuilder& b, const FusedActivation& f, ValueId x) {
  using K = FusedActivation::Kind;
  const DType dt = b.dtype(x);
  switch (f.kind) {
    case K::none: return x;
    case K::relu: return b.add1("Relu", {x});
    case K::clip: return b.add1("Clip", {x, scalar_constant(b, f.alpha, dt), scalar_constant(b, f.beta, dt)});
    case K::leaky_relu: return b.add1("LeakyRelu", {x}, {{"alpha", f.alpha}});
    case K::sigmoid: return b.add1("Sigmoid", {x});
    case K::tanh: return b.add1("Tanh", {x});
    case K::hard_sigmoid: return b.add1("HardSigmoid", {x}, {{"alpha", f.alpha}, {"beta", f.beta}});
    case K::hard_swish: return b.add1("HardSwish", {x});
    case K::elu: return b.add1("Elu", {x}, {{"alpha", f.alpha}});
    case K::swish: return b.add1("Mul", {x, b.add1("Sigmoid", {x})});
    case K::gelu: return b.add1("Gelu", {x});
    case K::gelu_tanh: return b.add1("Gelu", {x}, {{"approximate", std::string("tanh")}});
  }
  return x;
}

}  // namespace porta::opdef
