// porta runtime — C ABI: kernel, inference and composite callbacks and their accessors.
#include "runtime/c_api_callbacks.hpp"

#include <algorithm>

#include "porta/porta.hpp"

using namespace porta;
using namespace porta::capi;

namespace porta::capi {
namespace {

thread_local std::vector<const void*> t_active;

// Turns a callback's non-OK status into the matching porta error.
[[noreturn]] void callback_failed(porta_status s, const std::string& op, const std::string& what) {
  std::string m = last_error();
  if (m.empty()) m = str("[", op, "] ", what, " returned ", porta_status_name(s), " without a message");
  else if (m[0] != '[') m = str("[", op, "] ", m);
  if (s == PORTA_OK) s = PORTA_ERROR_INTERNAL;
  throw_status(s, m);
}

}  // namespace

ActiveContext::ActiveContext(const void* ctx) : ctx_(ctx) { t_active.push_back(ctx); }
ActiveContext::~ActiveContext() {
  auto it = std::find(t_active.rbegin(), t_active.rend(), ctx_);
  if (it != t_active.rend()) t_active.erase(std::next(it).base());
}

void check_active(const void* ctx, const char* fn, const char* what) {
  if (!ctx)
    throw StatusError(PORTA_ERROR_INVALID_HANDLE, str("[", fn, "] ", what, " should not be NULL"));
  if (std::find(t_active.begin(), t_active.end(), ctx) == t_active.end())
    throw StatusError(PORTA_ERROR_INVALID_HANDLE,
                      str("[", fn, "] ", what, " is not the context of a callback running on this thread "
                               "(contexts are valid only during their callback)"));
}

porta_attrs lend_attrs(const Attributes& attrs) {
  porta_attrs h = make_handle<porta_attrs_s>();
  h->lent = true;
  h->view = &attrs;
  return h;
}

porta_tensor lend_tensor(const Tensor& t) {
  porta_tensor h = make_handle<porta_tensor_s>();
  h->lent = true;
  h->tensor = t;
  return h;
}

KernelFn adapt_kernel(porta_kernel_fn fn, void* user_data, std::string op, std::string source) {
  return [fn, user_data, op, source](KernelContext& kc) {
    porta_kernel_context_s c;
    c.kernel = &kc;
    c.lent_inputs.assign(kc.inputs.size(), nullptr);
    c.lent_outputs.assign(kc.outputs.size(), nullptr);
    porta_status s;
    {
      ActiveContext active(&c);
      set_error(PORTA_OK, "");
      s = fn(&c, user_data);
    }
    for (porta_tensor h : c.lent_inputs) if (h) destroy_handle(h);
    for (porta_tensor h : c.lent_outputs) if (h) destroy_handle(h);
    if (c.lent_attrs) destroy_handle(c.lent_attrs);
    if (s != PORTA_OK) callback_failed(s, op, str("the ", device_type_name(kc.device.type), " kernel from ", source));
  };
}

SupportsFn adapt_supports(porta_supports_fn fn, void* user_data, std::string op, std::string source) {
  return [fn, user_data, op, source](const KernelContext& kc) -> std::string {
    porta_kernel_context_s c;
    // Read-only use: the accessors of a supports context only read the call.
    c.kernel = const_cast<KernelContext*>(&kc);
    c.supports_call = true;
    c.lent_inputs.assign(kc.inputs.size(), nullptr);
    char reason[512] = {0};
    int takes;
    {
      ActiveContext active(&c);
      takes = fn(&c, user_data, reason, sizeof reason);
    }
    for (porta_tensor h : c.lent_inputs) if (h) destroy_handle(h);
    if (c.lent_attrs) destroy_handle(c.lent_attrs);
    if (takes) return "";
    reason[sizeof reason - 1] = 0;
    return reason[0] ? std::string(reason) : str("its supports callback declined without a reason (", source, ")");
  };
}

InferFn adapt_infer(porta_infer_fn fn, void* user_data, std::string op) {
  return [fn, user_data, op](InferContext& ic) {
    porta_infer_context_s c;
    c.infer = &ic;
    for (auto& o : ic.outputs) o.present = false;  // to see which outputs the callback set
    porta_status s;
    {
      ActiveContext active(&c);
      set_error(PORTA_OK, "");
      s = fn(&c, user_data);
    }
    if (c.lent_attrs) destroy_handle(c.lent_attrs);
    if (s != PORTA_OK) callback_failed(s, op, "shape inference");
    for (size_t i = 0; i < ic.outputs.size(); ++i)
      if (!ic.outputs[i].present)
        throw InvalidArgument(str("[", op, "] shape inference did not set output ", i));
  };
}

CompositeFn adapt_composite(porta_composite_fn fn, void* user_data, std::string op, size_t num_outputs) {
  return [fn, user_data, op, num_outputs](GraphBuilder& b, std::span<const ValueId> in,
                                          const Attributes& a) {
    porta_builder_s c{&b};
    std::vector<int32_t> ins(in.begin(), in.end());
    std::vector<int32_t> outs(num_outputs, -1);
    porta_attrs attrs = lend_attrs(a);
    porta_status s;
    {
      ActiveContext active(&c);
      set_error(PORTA_OK, "");
      s = fn(&c, ins.data(), ins.size(), attrs, outs.data(), outs.size(), user_data);
    }
    destroy_handle(attrs);
    if (s != PORTA_OK) callback_failed(s, op, "composite");
    if (!outs.empty() && outs[0] < 0)
      throw InvalidArgument(str("[", op, "] composite did not set output 0"));
    return std::vector<ValueId>(outs.begin(), outs.end());
  };
}

}  // namespace porta::capi

namespace {

porta_kernel_context_s& kctx(porta_kernel_context* ctx, const char* fn) {
  check_active(ctx, fn, "ctx");
  return *ctx;
}
porta_infer_context_s& ictx(porta_infer_context* ctx, const char* fn) {
  check_active(ctx, fn, "ctx");
  return *ctx;
}
porta_builder_s& bctx(porta_builder* b, const char* fn) {
  check_active(b, fn, "builder");
  return *b;
}

void check_index(size_t i, size_t n, const char* fn, const char* what) {
  if (i >= n) bad_argument(str("[", fn, "] ", what, " index should be below ", n, ", got ", i));
}

}  // namespace

extern "C" {

porta_status porta_kernel_num_inputs(porta_kernel_context* ctx, size_t* count) {
  PORTA_C_GUARD({
    auto& c = kctx(ctx, "porta_kernel_num_inputs");
    need(count, "porta_kernel_num_inputs", "count");
    *count = c.kernel->inputs.size();
  })
}

porta_status porta_kernel_num_outputs(porta_kernel_context* ctx, size_t* count) {
  PORTA_C_GUARD({
    auto& c = kctx(ctx, "porta_kernel_num_outputs");
    need(count, "porta_kernel_num_outputs", "count");
    *count = c.supports_call ? 0 : c.kernel->outputs.size();
  })
}

porta_status porta_kernel_input(porta_kernel_context* ctx, size_t index, porta_tensor* tensor) {
  PORTA_C_GUARD({
    const char* fn = "porta_kernel_input";
    auto& c = kctx(ctx, fn);
    need(tensor, fn, "tensor");
    check_index(index, c.kernel->inputs.size(), fn, "input");
    const Tensor& t = c.kernel->inputs[index];
    if (!t.defined()) {
      *tensor = nullptr;
      return PORTA_OK;
    }
    if (!c.lent_inputs[index]) {
      c.lent_inputs[index] = lend_tensor(t);
      c.lent_inputs[index]->shape_only = c.supports_call;
    }
    *tensor = c.lent_inputs[index];
  })
}

porta_status porta_kernel_output(porta_kernel_context* ctx, size_t index, porta_tensor* tensor) {
  PORTA_C_GUARD({
    const char* fn = "porta_kernel_output";
    auto& c = kctx(ctx, fn);
    need(tensor, fn, "tensor");
    if (c.supports_call)
      bad_argument(str("[", fn, "] a supports callback sees no outputs (it decides from inputs and attributes)"));
    check_index(index, c.kernel->outputs.size(), fn, "output");
    if (!c.lent_outputs[index]) c.lent_outputs[index] = lend_tensor(c.kernel->outputs[index]);
    *tensor = c.lent_outputs[index];
  })
}

porta_status porta_kernel_attrs(porta_kernel_context* ctx, porta_attrs* attrs) {
  PORTA_C_GUARD({
    auto& c = kctx(ctx, "porta_kernel_attrs");
    need(attrs, "porta_kernel_attrs", "attrs");
    static const Attributes kNone;
    if (!c.lent_attrs) c.lent_attrs = lend_attrs(c.kernel->attrs ? *c.kernel->attrs : kNone);
    *attrs = c.lent_attrs;
  })
}

porta_status porta_kernel_device(porta_kernel_context* ctx, porta_device* device) {
  PORTA_C_GUARD({
    auto& c = kctx(ctx, "porta_kernel_device");
    need(device, "porta_kernel_device", "device");
    *device = to_c(c.kernel->device);
  })
}

porta_status porta_infer_num_inputs(porta_infer_context* ctx, size_t* count) {
  PORTA_C_GUARD({
    auto& c = ictx(ctx, "porta_infer_num_inputs");
    need(count, "porta_infer_num_inputs", "count");
    *count = c.infer->inputs.size();
  })
}

porta_status porta_infer_input(porta_infer_context* ctx, size_t index, int* present, porta_dtype* dtype,
                               int64_t* dims, size_t capacity, size_t* rank) {
  PORTA_C_GUARD({
    const char* fn = "porta_infer_input";
    auto& c = ictx(ctx, fn);
    check_index(index, c.infer->inputs.size(), fn, "input");
    need(present, fn, "present");
    const ValueInfo& v = c.infer->inputs[index];
    *present = v.present ? 1 : 0;
    if (dtype) *dtype = static_cast<porta_dtype>(v.dtype);
    if (rank) *rank = v.shape.size();
    if (dims) std::copy_n(v.shape.begin(), std::min(capacity, v.shape.size()), dims);
    else if (capacity) bad_argument(str("[", fn, "] dims should not be NULL with capacity ", capacity));
  })
}

porta_status porta_infer_attrs(porta_infer_context* ctx, porta_attrs* attrs) {
  PORTA_C_GUARD({
    auto& c = ictx(ctx, "porta_infer_attrs");
    need(attrs, "porta_infer_attrs", "attrs");
    static const Attributes kNone;
    if (!c.lent_attrs) c.lent_attrs = lend_attrs(c.infer->attrs ? *c.infer->attrs : kNone);
    *attrs = c.lent_attrs;
  })
}

porta_status porta_infer_set_output(porta_infer_context* ctx, size_t index, porta_dtype dtype,
                                    const int64_t* dims, size_t rank) {
  PORTA_C_GUARD({
    const char* fn = "porta_infer_set_output";
    auto& c = ictx(ctx, fn);
    check_index(index, c.infer->outputs.size(), fn, "output");
    c.infer->set_output(index, read_shape(dims, rank, fn), read_dtype(dtype, fn));
  })
}

porta_status porta_builder_add(porta_builder* builder, const char* op, const int32_t* inputs,
                               size_t num_inputs, porta_attrs attrs, int32_t* outputs, size_t num_outputs) {
  PORTA_C_GUARD({
    const char* fn = "porta_builder_add";
    auto& b = bctx(builder, fn);
    need(op, fn, "op");
    if (num_inputs) need(inputs, fn, "inputs");
    if (!num_outputs) bad_argument(str("[", fn, "] num_outputs should be at least 1"));
    need(outputs, fn, "outputs");
    Attributes a = attrs ? get(attrs, fn, "attrs").get() : Attributes();
    std::vector<ValueId> outs = b.builder->add(op, std::vector<ValueId>(inputs, inputs + num_inputs),
                                               std::move(a), static_cast<int>(num_outputs));
    if (outs.size() < num_outputs)
      throw Unsupported(str("[", fn, "] ", op, " gave ", outs.size(), " outputs, ", num_outputs, " were asked for"));
    std::copy_n(outs.begin(), num_outputs, outputs);
  })
}

porta_status porta_builder_constant(porta_builder* builder, porta_tensor value, int32_t* id) {
  PORTA_C_GUARD({
    auto& b = bctx(builder, "porta_builder_constant");
    Tensor& t = get(value, "porta_builder_constant", "value").tensor;
    need(id, "porta_builder_constant", "id");
    *id = b.builder->constant(t);
  })
}

porta_status porta_builder_value(porta_builder* builder, int32_t id, porta_dtype* dtype, int64_t* dims,
                                 size_t capacity, size_t* rank) {
  PORTA_C_GUARD({
    const char* fn = "porta_builder_value";
    auto& b = bctx(builder, fn);
    if (id < 0) bad_argument(str("[", fn, "] value id should be >= 0, got ", id));
    const Shape& s = b.builder->shape(id);
    if (dtype) *dtype = static_cast<porta_dtype>(b.builder->dtype(id));
    if (rank) *rank = s.size();
    if (dims) std::copy_n(s.begin(), std::min(capacity, s.size()), dims);
  })
}

}  // extern "C"
