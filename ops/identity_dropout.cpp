// Identity (any dtype) and Dropout in inference: output = input, optional mask all true. In a
// session both are views of their input (alias_input0) when only the output is read.
// Dropout must be the identity (ops/dropout_util.hpp): training_mode = true is accepted only
// with ratio 0, refused at inference when the values are known and otherwise by the kernel.
#include "ops/dropout_util.hpp"
#include "ops/elementwise_common.hpp"

namespace porta::opdef {

PORTA_REGISTER_OP(Identity) {
  OpSchema s;
  s.name = "Identity";
  s.inputs = {"input"};
  s.outputs = {"output"};
  s.infer = infer_same_as_input0;
  s.alias_input0 = true;
  s.reference = [](KernelContext& ctx) { ctx.out(0).copy_(ctx.in(0)); };
  s.cases = [] {
    std::vector<OpCase> c;
    c.push_back({"scalar", {in({})}, {}, kAllTypes});
    c.push_back({"empty", {in({0, 3})}, {}, kF32 | kBool});
    c.push_back({"odd", {in({3, 5, 7}, -100, 100)}, {}, kAllTypes});
    OpCase big{"4096x4096", {in({4096, 4096})}, {}, kF32};
    big.perf = true;
    c.push_back(big);
    return c;
  };
  s.flops = flops_per_output_element(0);
  return s;
}

PORTA_REGISTER_OP(Dropout) {
  OpSchema s;
  s.name = "Dropout";
  s.inputs = {"data", "ratio?", "training_mode?"};
  s.outputs = {"output", "mask?"};
  s.attrs = {attr_optional("seed", AttrType::Int)};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kFloats);
    if (ctx.has_input(1)) {
      require_dtype(ctx, 1, kFloats);
      if (shape_numel(ctx.shape(1)) != 1)
        throw ShapeError(str("[Dropout] ratio must be a scalar, got shape ", shape_str(ctx.shape(1))));
    }
    if (ctx.has_input(2)) {
      require_dtype(ctx, 2, kBool);
      if (shape_numel(ctx.shape(2)) != 1)
        throw ShapeError(str("[Dropout] training_mode must be a scalar, got shape ",
                             shape_str(ctx.shape(2))));
      const Tensor* v = ctx.inputs[2].value;
      const Tensor* r = ctx.has_input(1) ? ctx.inputs[1].value : nullptr;
      if (v && v->to(Device::cpu()).to_doubles().at(0) != 0.0 && (r || !ctx.has_input(1))) {
        double ratio = r ? r->to(Device::cpu()).to_doubles().at(0) : 0.5;
        require_identity_dropout(true, ctx.has_input(1) ? &ratio : nullptr);
      }
    }
    ctx.set_output(0, ctx.shape(0), ctx.dtype(0));
    ctx.set_output(1, ctx.shape(0), DType::boolean);
  };
  s.alias_input0 = true;  // in a session, a view when the mask is unread and the mode known
  s.reference = [](KernelContext& ctx) {
    ctx.out(0).copy_(ctx.in(0));
    if (ctx.outputs.size() > 1 && ctx.out(1).defined()) {
      double* m = ctx.out(1).data<double>();
      for (int64_t i = 0; i < ctx.out(1).numel(); ++i) m[i] = 1.0;
    }
  };
  s.cases = [] {
    std::vector<OpCase> c;
    c.push_back({"plain", {in({3, 5, 7})}, {}, kFloats});
    c.push_back({"scalar", {in({})}, {}, kF32});
    c.push_back({"empty", {in({0, 3})}, {}, kF32});
    c.push_back({"ratio", {in({4, 9}), in_values({}, DType::f32, {0.3})}, {}, kFloats});
    // training_mode = true with ratio 0 is the identity (torchvision swin_t exports it).
    c.push_back({"training_ratio0",
                 {in({4, 9}), in_values({}, DType::f32, {0.0}), in_values({}, DType::boolean, {1})},
                 {}, kF32 | kF64});
    c.push_back({"inference_mode",
                 {in({4, 9}), in_values({}, DType::f32, {0.5}), in_values({}, DType::boolean, {0})},
                 {}, kF32 | kF64});
    OpCase mask{"mask", {in({5, 3}), in_values({}, DType::f32, {0.5})}, {}, kFloats};
    mask.num_outputs = 2;
    c.push_back(mask);
    OpCase mask_empty{"mask_empty", {in({0, 3})}, {}, kF32};
    mask_empty.num_outputs = 2;
    c.push_back(mask_empty);
    OpCase big{"4096x4096", {in({4096, 4096})}, {}, kF32};
    big.perf = true;
    c.push_back(big);
    return c;
  };
  s.flops = flops_per_output_element(0);
  return s;
}

}  // namespace porta::opdef
