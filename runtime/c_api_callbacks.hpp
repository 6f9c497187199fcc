// porta runtime — C ABI: what kernel, inference and composite callbacks receive, and the
// adapters that turn C function pointers into porta's KernelFn / InferFn / CompositeFn.
//
// Contracts:
// - A context is valid only on the thread running the callback and only while it runs: each
//   one is entered in a thread-local list of active contexts for that time, and every accessor
//   checks membership before reading it (stale or foreign contexts are refused).
// - Tensor and attribute handles lent to a callback are destroyed when it returns.
// - A callback that returns non-OK becomes the porta::Error matching its status, carrying the
//   message it set with porta_set_error (prefixed with "[Op]" when it has no tag).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "porta/op.hpp"
#include "runtime/c_api_handles.hpp"

struct porta_kernel_context_s {
  porta::KernelContext* kernel = nullptr;
  std::vector<porta_tensor> lent_inputs, lent_outputs;
  porta_attrs lent_attrs = nullptr;
  bool supports_call = false;  ///< asked by `supports`: inputs are shape-only, no outputs
  /// porta_kernel_scratch's allocations: freed when the callback returns.
  std::vector<std::shared_ptr<porta::Storage>> scratch;
  size_t scratch_bytes = 0;
};

struct porta_infer_context_s {
  porta::InferContext* infer = nullptr;
  porta_attrs lent_attrs = nullptr;
};

struct porta_builder_s {
  porta::GraphBuilder* builder = nullptr;
};

namespace porta::capi {

/// Marks `ctx` active on this thread for the scope's lifetime.
class ActiveContext {
 public:
  explicit ActiveContext(const void* ctx);
  ~ActiveContext();
  ActiveContext(const ActiveContext&) = delete;
  ActiveContext& operator=(const ActiveContext&) = delete;

 private:
  const void* ctx_;
};
/// Throws INVALID_HANDLE unless `ctx` is a context active on this thread.
void check_active(const void* ctx, const char* fn, const char* what);

/// A lent, read-only attribute handle over `attrs` (destroy with destroy_handle).
porta_attrs lend_attrs(const Attributes& attrs);
/// A lent tensor handle (destroy with destroy_handle).
porta_tensor lend_tensor(const Tensor& t);

KernelFn adapt_kernel(porta_kernel_fn fn, void* user_data, std::string op, std::string source);
/// A C `supports` as porta's SupportsFn: "" when it takes the call, else its reason.
SupportsFn adapt_supports(porta_supports_fn fn, void* user_data, std::string op, std::string source);
InferFn adapt_infer(porta_infer_fn fn, void* user_data, std::string op);
CompositeFn adapt_composite(porta_composite_fn fn, void* user_data, std::string op, size_t num_outputs);

}  // namespace porta::capi
