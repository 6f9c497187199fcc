// ElementwiseChain (ai.porta, version 1): a program of elementwise ops (ops/elementwise_chain.hpp)
// run as one pass. Inputs X... (at least one, one float dtype) broadcast together; Y has the broadcast
// shape and their dtype. Sessions build it from chains of elementwise nodes whose intermediate
// values nothing else reads (runtime/elementwise_fusion.cpp), on devices that run it natively;
// elsewhere, and where a kernel declines a call, it decomposes back into those nodes, which are
// also its float64 reference.
#include "ops/elementwise_chain.hpp"

#include <cmath>
#include <limits>

#include "ops/custom_common.hpp"

namespace porta::opdef {
namespace chain {
namespace {

constexpr OpInfo kOps[] = {
    {"Add", 2, 0},     {"Sub", 2, 0},        {"Mul", 2, 0},      {"Div", 2, 0},         {"Pow", 2, 0},
    {"Max", 2, 0},     {"Min", 2, 0},        {"PRelu", 2, 0},    {"Relu", 1, 0},        {"Abs", 1, 0},
    {"Neg", 1, 0},     {"Exp", 1, 0},        {"Log", 1, 0},      {"Sqrt", 1, 0},        {"Reciprocal", 1, 0},
    {"Tanh", 1, 0},    {"Sigmoid", 1, 0},    {"Erf", 1, 0},      {"Sin", 1, 0},         {"Cos", 1, 0},
    {"Tan", 1, 0},     {"Floor", 1, 0},      {"Ceil", 1, 0},     {"Round", 1, 0},       {"Sign", 1, 0},
    {"Softplus", 1, 0}, {"Softsign", 1, 0},  {"HardSwish", 1, 0}, {"LeakyRelu", 1, 1},  {"Elu", 1, 1},
    {"Celu", 1, 1},    {"HardSigmoid", 1, 2}, {"Selu", 1, 2},    {"Clip", 1, 2},
};

const std::vector<std::string>* strings_of(const Attributes& a, std::string_view name) {
  const AttrValue* v = a.find(name);
  return v ? std::get_if<std::vector<std::string>>(v) : nullptr;
}

std::vector<double> floats_of(const Attributes& a, std::string_view name) {
  return a.find(name) ? a.get_floats(name) : std::vector<double>{};
}

[[noreturn]] void bad(const std::string& what) { throw InvalidModel(str("[ElementwiseChain] ", what)); }

}  // namespace

const OpInfo* find_op_info(std::string_view name) {
  for (const OpInfo& op : kOps)
    if (name == op.name) return &op;
  return nullptr;
}

size_t Program::floats() const {
  size_t n = constants.size();
  for (const Step& s : steps) n += static_cast<size_t>(s.op->params);
  return n;
}

Program parse(const Attributes& attrs, int inputs) {
  Program p;
  p.inputs = inputs;
  const std::vector<std::string>* ops = strings_of(attrs, "ops");
  if (!ops || ops->empty()) bad("ops should list at least one op");
  const size_t n = ops->size();
  const std::vector<int64_t> operands = attrs.get_ints("operands", {});
  const std::vector<double> alphas = floats_of(attrs, "alphas"), betas = floats_of(attrs, "betas");
  p.constants = floats_of(attrs, "constants");
  if (operands.size() != 2 * n) bad(str("operands should have 2 entries per op (", 2 * n, "), got ", operands.size()));
  if (alphas.size() != n || betas.size() != n)
    bad(str("alphas and betas should have one entry per op (", n, "), got ", alphas.size(), " and ", betas.size()));
  if (inputs < 1) bad(str("takes at least one input, got ", inputs));
  std::vector<bool> read(static_cast<size_t>(inputs) + n, false);
  for (size_t s = 0; s < n; ++s) {
    Step st;
    st.op = find_op_info((*ops)[s]);
    if (!st.op) bad(str("op ", s, " is '", (*ops)[s], "', which is not an elementwise op it runs"));
    st.a = operands[2 * s];
    st.b = operands[2 * s + 1];
    st.alpha = alphas[s];
    st.beta = betas[s];
    auto check = [&](int64_t v, const char* which) {
      if (is_immediate(v)) {
        if (immediate_index(v) >= p.constants.size())
          bad(str("op ", s, " (", st.op->name, ") reads constant ", immediate_index(v), " of ", p.constants.size()));
        return;
      }
      const int64_t limit = inputs + static_cast<int64_t>(s);
      if (v < 0 || v >= limit)
        bad(str("op ", s, " (", st.op->name, "): its ", which, " operand is ", v, "; it should be an input (0..",
                inputs - 1, ") or an earlier op's result (", inputs, "..", limit - 1, ")"));
      read[static_cast<size_t>(v)] = true;
    };
    check(st.a, "first");
    if (st.op->arity == 2) check(st.b, "second");
    else if (st.b != kNone) bad(str("op ", s, " (", st.op->name, ") takes one operand, got a second (", st.b, ")"));
    if (is_immediate(st.a) && (st.op->arity == 1 || is_immediate(st.b)))
      bad(str("op ", s, " (", st.op->name, ") reads only constants"));
    p.steps.push_back(st);
  }
  for (size_t r = 0; r + 1 < read.size(); ++r)
    if (!read[r])
      bad(r < static_cast<size_t>(inputs) ? str("input ", r, " is read by no op")
                                           : str("the result of op ", r - inputs, " is read by no later op"));
  return p;
}

Attributes to_attributes(const Program& p) {
  std::vector<std::string> ops;
  std::vector<int64_t> operands;
  std::vector<double> alphas, betas;
  for (const Step& s : p.steps) {
    ops.emplace_back(s.op->name);
    operands.push_back(s.a);
    operands.push_back(s.b);
    alphas.push_back(s.alpha);
    betas.push_back(s.beta);
  }
  Attributes a;
  a.set("ops", std::move(ops));
  a.set("operands", std::move(operands));
  a.set("alphas", std::move(alphas));
  a.set("betas", std::move(betas));
  a.set("constants", p.constants);
  return a;
}

}  // namespace chain

namespace {

// The step's node: immediates become scalar constants of the chain's dtype, attribute floats the
// op's attributes (Clip's bounds its inputs).
ValueId emit_step(GraphBuilder& b, const chain::Program& p, const chain::Step& s, const std::vector<ValueId>& regs,
                  DType dt) {
  auto operand = [&](int64_t v) {
    return chain::is_immediate(v) ? scalar_constant(b, p.constants[chain::immediate_index(v)], dt)
                                  : regs[static_cast<size_t>(v)];
  };
  const std::string name = s.op->name;
  if (s.op->arity == 2) return b.add1(name, {operand(s.a), operand(s.b)});
  if (name == "Clip") return b.add1(name, {operand(s.a), scalar_constant(b, s.alpha, dt), scalar_constant(b, s.beta, dt)});
  Attributes attrs;
  if (name == "Selu") {
    attrs.set("alpha", s.alpha);
    attrs.set("gamma", s.beta);
  } else if (s.op->params >= 1) {
    attrs.set("alpha", s.alpha);
    if (s.op->params == 2) attrs.set("beta", s.beta);
  }
  return b.add1(name, {operand(s.a)}, std::move(attrs));
}

AttrDef strings_attr(std::string name) { return attr_required(std::move(name), AttrType::Strings); }

}  // namespace

PORTA_REGISTER_OP(ElementwiseChain) {
  OpSchema s;
  s.name = "ElementwiseChain";
  s.domain = kPortaDomain;
  s.inputs = {"X..."};
  s.outputs = {"Y"};
  s.attrs = {strings_attr("ops"), attr_required("operands", AttrType::Ints), attr_required("alphas", AttrType::Floats),
             attr_required("betas", AttrType::Floats), attr_floats("constants", {})};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kFloats);
    require_same_dtype(ctx);
    chain::parse(*ctx.attrs, static_cast<int>(ctx.num_inputs()));
    infer_broadcast(ctx);
  };
  // No reference of its own: the float64 reference runs the decomposition, each op's reference.
  s.composite = [](GraphBuilder& b, std::span<const ValueId> in, const Attributes& a) {
    const chain::Program p = chain::parse(a, static_cast<int>(in.size()));
    std::vector<ValueId> regs(in.begin(), in.end());
    const DType dt = b.dtype(in[0]);
    for (const chain::Step& st : p.steps) regs.push_back(emit_step(b, p, st, regs, dt));
    return std::vector<ValueId>{regs.back()};
  };
  s.cases = [] {
    using chain::immediate_operand;
    constexpr int64_t N = chain::kNone;
    const double inf = std::numeric_limits<double>::infinity();
    auto program = [](std::vector<std::string> ops, std::vector<int64_t> operands, std::vector<double> constants = {},
                      std::vector<double> alphas = {}, std::vector<double> betas = {}) {
      alphas.resize(ops.size(), 0.0);
      betas.resize(ops.size(), 0.0);
      Attributes a;
      a.set("ops", std::move(ops));
      a.set("operands", std::move(operands));
      a.set("alphas", std::move(alphas));
      a.set("betas", std::move(betas));
      a.set("constants", std::move(constants));
      return a;
    };
    // The tail of a LayerNormalization written out (opset 13 exports): (x - mean) / sqrt(var + eps)
    // * gamma + beta, with x - mean and var as inputs: a per-row value and per-column ones.
    const Attributes norm_tail = program({"Add", "Sqrt", "Div", "Mul", "Add"},
                                         {1, immediate_operand(0), 4, N, 0, 5, 6, 2, 7, 3}, {1e-5});
    // Mish, x * tanh(softplus(x)): x read twice.
    const Attributes mish = program({"Softplus", "Tanh", "Mul"}, {0, N, 1, N, 0, 2});
    // A residual block's tail: (x * scale + y) then Relu.
    const Attributes scale_add_relu = program({"Mul", "Add", "Relu"}, {0, 1, 3, 2, 4, N});
    // Ops with attributes, in one chain.
    const Attributes with_params =
        program({"LeakyRelu", "HardSigmoid", "Selu", "Elu", "Celu", "Clip", "Clip"},
                {0, N, 1, N, 2, N, 3, N, 4, N, 5, N, 6, N}, {},
                {0.1, 0.2, 1.67, 0.5, 0.7, -0.3, -inf}, {0, 0.5, 1.05, 0, 0, 0.8, 0.5});
    // Immediates on either side, Pow, Max, Min, PRelu.
    const Attributes binaries =
        program({"Sub", "Pow", "Max", "Min", "PRelu", "Div"},
                {immediate_operand(0), 0, 2, immediate_operand(1), 3, 1, 4, immediate_operand(2), 5, 1,
                 immediate_operand(3), 6},
                {0.5, 2.0, 3.0, 1.5});
    // Twelve one-operand ops, each within the next one's domain.
    const Attributes unaries = program(
        {"Abs", "Neg", "Exp", "Log", "Sigmoid", "Tanh", "Erf", "Sin", "Cos", "Softsign", "HardSwish", "Sqrt"},
        {0, N, 1, N, 2, N, 3, N, 4, N, 5, N, 6, N, 7, N, 8, N, 9, N, 10, N, 11, N});
    const Attributes rounding = program({"Mul", "Floor", "Ceil", "Round", "Sign", "Reciprocal", "Add"},
                                        {0, immediate_operand(0), 1, N, 2, N, 3, N, 4, N, 5, N, 6, 0}, {3.7});
    std::vector<OpCase> c;
    c.push_back({"norm_tail", {in({2, 5, 12}), in({2, 5, 1}, 0.1, 2), in({12}), in({12})}, norm_tail, kF32 | kF16 | kF64});
    c.push_back({"norm_tail_odd", {in({3, 7, 9}), in({3, 7, 1}, 0.1, 2), in({9}), in({9})}, norm_tail, kF32});
    c.push_back({"mish", {in({3, 17}, -6, 6)}, mish, kF32 | kF16 | kF64});
    c.push_back({"mish_one", {in({1}, -6, 6)}, mish, kF32});
    c.push_back({"mish_empty", {in({0, 5})}, mish, kF32});
    c.push_back({"scale_add_relu_channels", {in({2, 8, 5, 4}), in({2, 8, 1, 1}), in({2, 8, 5, 4})}, scale_add_relu,
                 kF32 | kF16});
    // A channel scale shared by every image: element (i / block) % channels.
    c.push_back({"scale_add_relu_shared_channels", {in({3, 8, 4}), in({1, 8, 1}), in({3, 8, 4})}, scale_add_relu, kF32});
    c.push_back({"scale_add_relu_scalar", {in({5, 7}), in({}), in({5, 7})}, scale_add_relu, kF32});
    // Broadcasts both ways (3x1x5 and 1x4x1): the texel kernel declines, the decomposition runs.
    c.push_back({"scale_add_relu_outer", {in({3, 1, 5}), in({1, 4, 1}), in({3, 4, 5})}, scale_add_relu, kF32});
    c.push_back({"scale_add_relu_rows", {in({6, 3, 16}), in({16}), in({6, 3, 16})}, scale_add_relu, kF32});
    c.push_back({"scale_add_relu_transposed", {in({9, 12}), in({9, 12}), [] {
                   InputSpec t = in({9, 12});
                   t.transposed = true;
                   return t;
                 }()},
                 scale_add_relu, kF32});
    c.push_back({"with_params", {in({4, 33}, -4, 4)}, with_params, kF32 | kF16 | kF64});
    c.push_back({"binaries", {in({5, 13}, -2, 2), in({5, 13}, -1, 1)}, binaries, kF32 | kF64});
    c.push_back({"unaries", {in({2, 3, 11}, -2, 2)}, unaries, kF32 | kF64});
    c.push_back({"rounding", {in({7, 19}, 0.3, 4)}, rounding, kF32 | kF64});
    OpCase big{"4096x4096", {in({4096, 4096}), in({4096, 4096}), in({4096, 4096})}, scale_add_relu, kF32};
    big.perf = true;
    c.push_back(big);
    return c;
  };
  s.flops = [](const std::vector<Shape>&, const std::vector<Shape>& out, const Attributes& a) {
    const std::vector<std::string>* ops = chain::strings_of(a, "ops");
    return out.empty() || !ops ? 0.0 : static_cast<double>(ops->size()) * static_cast<double>(shape_numel(out[0]));
  };
  return s;
}

}  // namespace porta::opdef
