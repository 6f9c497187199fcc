// porta vulkan kernels — launch helper: binds tensors (aligned windows of the suballocated
// buffers), checks limits, records the dispatch.
#include "kernels/vulkan/vk_kernel.hpp"

#include "backends/vulkan/vk_validation.hpp"
#include "ops/broadcast_util.hpp"
#include "ops/fused_activation.hpp"

#include <algorithm>

namespace porta::vk {

std::string variant_for(DType t) {
  if (t == DType::f16) return "f16";
  return "f32";
}

Context& device_context(const KernelContext& ctx) { return context(ctx.device.index); }
const DeviceCaps& device_caps(const KernelContext& ctx) { return context(ctx.device.index).caps(); }

void set_grid(Launch& l, const DeviceCaps& caps, uint64_t groups) {
  uint64_t x = std::min<uint64_t>(groups, caps.max_groups[0]);
  uint64_t y = x ? (groups + x - 1) / x : 0;
  if (y > caps.max_groups[1])
    throw BackendError(str("[vulkan] ", groups, " workgroups exceed the device's grid"));
  l.groups[0] = static_cast<uint32_t>(x);
  l.groups[1] = static_cast<uint32_t>(y);
  l.groups[2] = 1;
}

uint64_t binding_limit(const KernelContext& ctx) {
  uint64_t limit = device_caps(ctx).max_storage_range, forced = binding_limit_override();
  return forced ? std::min(limit, forced) : limit;
}

void launch(const KernelContext& ctx, Launch l) {
  uint64_t max_range = binding_limit(ctx);
  Context& c = device_context(ctx);
  std::lock_guard lock(c.mutex);
  const DeviceCaps& caps = c.caps();
  if (l.push.size() * 4 > 128)
    throw BackendError(str("[", l.shader, "] ", l.push.size() * 4, " bytes of push constants (at most 128)"));
  std::vector<Tensor> keep;  // aligned copies of misaligned inputs, alive until recorded
  std::vector<BindingRange> bindings;
  for (Arg& a : l.args) {
    if (!a.tensor.defined()) throw BackendError(str("[", l.shader, "] undefined tensor bound"));
    if (a.tensor.device() != ctx.device) {
      // An input a session keeps on the host (a constant of the op's host_inputs, e.g. Range's
      // start) that this kernel reads on the device: bind an uploaded copy.
      if (a.write) throw BackendError(str("[", l.shader, "] output on ", a.tensor.device().str()));
      keep.push_back(a.tensor.to(ctx.device).contiguous());
      a.tensor = keep.back();
    }
    size_t elem = dtype_size(a.tensor.dtype());
    auto* rec = static_cast<Buffer*>(a.tensor.storage()->handle());
    size_t bytes = a.bytes == SIZE_MAX ? a.tensor.nbytes() - a.byte_offset : a.bytes;
    VkDeviceSize start = rec->offset + static_cast<VkDeviceSize>(a.tensor.offset()) * elem + a.byte_offset;
    const VkDeviceSize texel_bytes = (a.texel_scalar ? 1 : 4) * elem;
    const VkDeviceSize alignment = a.texel ? std::max<VkDeviceSize>(caps.texel_alignment, texel_bytes)
                                           : caps.storage_alignment;
    if (start % alignment) {
      // A view starting between alignment boundaries: bind an aligned copy (inputs only;
      // outputs are fresh allocations, which are always aligned).
      if (a.write) throw BackendError(str("[", l.shader, "] output binding is not aligned"));
      Tensor copy = a.tensor.clone();
      keep.push_back(copy);
      rec = static_cast<Buffer*>(copy.storage()->handle());
      start = rec->offset + a.byte_offset;
    }
    VkDeviceSize end_of_record = rec->offset + rec->size;
    if (a.texel) {
      if (a.write) throw BackendError(str("[", l.shader, "] a texel binding is read-only"));
      VkFormat format = a.texel_scalar && a.texel_bits ? (elem == 4   ? VK_FORMAT_R32_UINT
                                                          : elem == 2 ? VK_FORMAT_R16_UINT
                                                                      : VK_FORMAT_UNDEFINED)
                        : a.texel_scalar ? (a.tensor.dtype() == DType::f32   ? VK_FORMAT_R32_SFLOAT
                                          : a.tensor.dtype() == DType::f16 ? VK_FORMAT_R16_SFLOAT
                                                                           : VK_FORMAT_UNDEFINED)
                        : a.texel_bits ? (elem == 4   ? VK_FORMAT_R32G32B32A32_UINT
                                        : elem == 2 ? VK_FORMAT_R16G16B16A16_UINT
                                                    : VK_FORMAT_UNDEFINED)
                        : a.tensor.dtype() == DType::f32 ? VK_FORMAT_R32G32B32A32_SFLOAT
                        : a.tensor.dtype() == DType::f16 ? VK_FORMAT_R16G16B16A16_SFLOAT
                                                         : VK_FORMAT_UNDEFINED;
      if (format == VK_FORMAT_UNDEFINED)
        throw BackendError(str("[", l.shader, "] no texel format for ", dtype_name(a.tensor.dtype())));
      // Whole texels; allocations are multiples of 256 bytes, so the last one stays inside.
      VkDeviceSize range = std::min<VkDeviceSize>((std::max<size_t>(bytes, 1) + texel_bytes - 1) / texel_bytes * texel_bytes,
                                                  (end_of_record - start) / texel_bytes * texel_bytes);
      if (range / texel_bytes > caps.max_texels)
        throw BackendError(str("[", l.shader, "] texel binding of ", range / texel_bytes,
                               " texels exceeds maxTexelBufferElements ", caps.max_texels,
                               " (the kernel should have declined)"));
      bindings.push_back({rec->buffer, start, range, false, format, rec});
      continue;
    }
    VkDeviceSize range = std::min<VkDeviceSize>(std::max<size_t>(bytes, 4), end_of_record - start);
    if (range > max_range)
      throw BackendError(str("[", l.shader, "] binding of ", range, " bytes exceeds maxStorageBufferRange ",
                             max_range, " (the kernel should have declined)"));
    bindings.push_back({rec->buffer, start, range, a.write, VK_FORMAT_UNDEFINED, rec});
  }
  std::string kinds;
  for (const BindingRange& b : bindings) kinds += b.texel == VK_FORMAT_UNDEFINED ? 's' : 't';
  const Pipeline& p = c.pipeline(l.shader + ":" + l.variant, kinds, l.local_size, l.spec);
  c.dispatch(p, bindings, l.push.data(), static_cast<uint32_t>(l.push.size() * 4), l.groups[0],
             l.groups[1], l.groups[2]);
}

std::string scalar_texels_ok(const KernelContext& ctx, const Tensor& t) {
  const DeviceCaps& caps = device_caps(ctx);
  if (t.dtype() != DType::f32 && t.dtype() != DType::f16) return str("no texel format for ", dtype_name(t.dtype()));
  if ((t.dtype() == DType::f32 && !caps.texel_r32f) || (t.dtype() == DType::f16 && !caps.texel_r16f))
    return str("the device has no ", t.dtype() == DType::f32 ? "R32F" : "R16F", " uniform texel buffers");
  if (static_cast<uint64_t>(t.numel()) > caps.max_texels)
    return str("an operand of ", t.numel(), " elements exceeds the device's maxTexelBufferElements (", caps.max_texels,
               ") as one texel each");
  return "";
}

void Epilogue::add_to(Launch& l, const Tensor& stand_in) const {
  l.spec.push_back(act);
  l.spec.push_back(residual ? 1 : 0);
  l.push_f(alpha);
  l.push_f(beta);
  l.args.push_back(input(residual ? *residual : stand_in));
}

Epilogue epilogue_of(const KernelContext& ctx) {
  Epilogue e;
  if (ctx.attrs && ctx.attrs->has("porta_activation")) {
    opdef::FusedActivation f = opdef::parse_fused_activation(*ctx.attrs, ctx.op->name.c_str());
    e.act = static_cast<int32_t>(f.kind);
    e.alpha = f.alpha, e.beta = f.beta;
  }
  const std::vector<std::string>& names = ctx.op->inputs;
  for (size_t i = 0; i < names.size() && i < ctx.inputs.size(); ++i)
    if (names[i].rfind("porta_residual", 0) == 0 && ctx.inputs[i].defined()) e.residual = &ctx.inputs[i];
  return e;
}

std::vector<std::string> fused_activation_list() {
  std::vector<std::string> names;
  for (const std::string& n : opdef::fused_activation_names())
    if (!n.empty()) names.push_back(n);
  return names;
}

std::vector<std::string> conv_fused_activations() {
  std::vector<std::string> names = fused_activation_list();
  names.push_back("porta_residual");
  return names;
}

KernelDef kernel_applying(const char* op, DTypeSet dtypes, KernelFn fn, SupportsFn supports, KernelImpl impl,
                          std::vector<std::string> fused) {
  KernelDef k;
  k.op = op;
  k.backend = DeviceType::vulkan;
  k.dtypes = dtypes;
  k.fn = std::move(fn);
  k.supports = std::move(supports);
  k.impl = std::move(impl);
  k.fused_activations = std::move(fused);
  return k;
}

std::string cpu_like_ok(const KernelContext& ctx, const char* instead) {
  const DeviceCaps& caps = device_caps(ctx);
  if (caps.type == "cpu") return "";
  return str("a ", caps.type, " device: ", instead, " suits it (this kernel is for CPU-like devices)");
}

std::string float_texels_ok(const KernelContext& ctx, DType t, const char* instead) {
  if (auto why = cpu_like_ok(ctx, instead); !why.empty()) return why;
  return texel_formats_ok(ctx, t);
}

std::string texel_formats_ok(const KernelContext& ctx, DType t) {
  if (t != DType::f32 && t != DType::f16) return str("no texel format for ", dtype_name(t));
  if (auto why = fp16_ok(ctx, t); !why.empty()) return why;
  const DeviceCaps& caps = device_caps(ctx);
  if ((t == DType::f32 && !caps.texel_rgba32f) || (t == DType::f16 && !caps.texel_rgba16f))
    return str("the device has no ", t == DType::f32 ? "RGBA32F" : "RGBA16F", " uniform texel buffers");
  return "";
}

int64_t view_span(const Tensor& t) {
  if (t.numel() == 0) return 0;
  int64_t span = 1;
  for (size_t i = 0; i < t.shape().size(); ++i) span += (t.shape()[i] - 1) * t.strides()[i];
  return span;
}

void contiguous_inputs_unless(KernelContext& ctx, const std::function<bool(size_t, const Tensor&)>& keep) {
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    Tensor& t = ctx.inputs[i];
    if (!t.defined() || t.is_contiguous() || keep(i, t)) continue;
    t = t.contiguous();
    if (i < 64) ctx.constant_inputs &= ~(uint64_t{1} << i);
  }
}

std::string fits_bindings(const KernelContext& ctx) {
  const uint64_t limit = binding_limit(ctx);
  auto check_one = [&](const Tensor& t, const char* what, size_t i) -> std::string {
    if (!t.defined()) return "";
    if (t.nbytes() > limit)
      return str(what, " ", i, " has ", t.nbytes(), " bytes, more than the device's maxStorageBufferRange (",
                 limit, ")");
    if (t.numel() >= (int64_t{1} << 31)) return str(what, " ", i, " has more than 2^31 elements");
    return "";
  };
  for (size_t i = 0; i < ctx.inputs.size(); ++i)
    if (auto why = check_one(ctx.inputs[i], "input", i); !why.empty()) return why;
  for (size_t i = 0; i < ctx.outputs.size(); ++i)
    if (auto why = check_one(ctx.outputs[i], "output", i); !why.empty()) return why;
  if (ctx.outputs.empty() && ctx.op && ctx.op->infer) {
    // Eager calls ask before outputs exist: infer their sizes (an output may outgrow every
    // input, e.g. Expand or a broadcast). Errors are left to the call itself.
    InferContext infer;
    infer.op = ctx.op;
    infer.attrs = ctx.attrs;
    std::vector<Tensor> host(ctx.inputs.size());
    for (size_t i = 0; i < ctx.inputs.size(); ++i) {
      ValueInfo v;
      v.present = ctx.inputs[i].defined();
      if (v.present) {
        v.shape = ctx.inputs[i].shape();
        v.dtype = ctx.inputs[i].dtype();
        for (int h : ctx.op->host_inputs)
          if (h == static_cast<int>(i)) {
            host[i] = ctx.inputs[i].to(Device::cpu());
            v.value = &host[i];
          }
      }
      infer.inputs.push_back(v);
    }
    int n = ctx.op->max_outputs() >= 0 ? ctx.op->max_outputs() : std::max(1, ctx.op->min_outputs());
    infer.outputs.resize(static_cast<size_t>(n));
    try {
      ctx.op->infer(infer);
    } catch (const Error&) {
      return "";
    }
    for (size_t i = 0; i < infer.outputs.size(); ++i) {
      const ValueInfo& o = infer.outputs[i];
      size_t bytes = static_cast<size_t>(shape_numel(o.shape)) * dtype_size(o.dtype);
      if (bytes > limit)
        return str("output ", i, " would have ", bytes, " bytes, more than the device's maxStorageBufferRange (",
                   limit, ")");
    }
  }
  return "";
}

int32_t reduction_strategy(const KernelContext& ctx) {
  return device_caps(ctx).subgroup_arithmetic && subgroup_reductions_enabled() ? 1 : 0;
}

std::string reductions_ok(const KernelContext& ctx) {
  const DeviceCaps& caps = device_caps(ctx);
  if (!caps.subgroup_basic || !caps.subgroup_arithmetic)
    return "the device has no subgroup arithmetic in compute shaders (reduction shaders declare it)";
  return "";
}

uint64_t loop_limit(const KernelContext& ctx) {
  if (uint64_t forced = loop_limit_override()) return forced;
  uint64_t cap = device_context(ctx).loop_limit();
  return cap ? cap - cap / 8 : UINT64_MAX;
}

std::string loop_budget_ok(const KernelContext& ctx, uint64_t iterations, const std::string& what) {
  uint64_t limit = loop_limit(ctx);
  if (iterations <= limit) return "";
  return str(what, " needs up to ", iterations, " loop iterations in one invocation; the driver ends loops after ",
             limit);
}

std::string grid_ok(const KernelContext& ctx, uint64_t groups, const std::string& what) {
  const DeviceCaps& caps = device_caps(ctx);
  const uint64_t cells = uint64_t{caps.max_groups[0]} * caps.max_groups[1];
  if (groups <= cells) return "";
  return str(what, " need ", groups, " workgroups; the device's grid holds ", cells);
}

std::string fp16_ok(const KernelContext& ctx, DType dtype) {
  if (dtype == DType::f16 && !device_caps(ctx).fp16_storage) return "the device has no 16-bit storage";
  return "";
}

BroadcastMap broadcast_map(const Shape& out, const std::vector<Shape>& inputs) {
  std::vector<std::vector<int64_t>> strides;
  strides.reserve(inputs.size());
  for (const Shape& s : inputs) strides.push_back(opdef::broadcast_strides(s, out));
  opdef::MergedDims merged = opdef::merge_dims(out, strides);
  BroadcastMap m{std::move(merged.sizes), std::move(merged.strides)};
  if (m.shape.empty()) {
    m.shape.push_back(1);
    m.strides.assign(inputs.size(), {0});
  }
  return m;
}

}  // namespace porta::vk
