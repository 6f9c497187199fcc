// porta runtime — what the C ABI's opaque handles are, the registry of live handles, and the
// guard that turns every C++ exception into a status and a thread-local message.
//
// Contracts:
// - Every handle object starts with a HandleKind and is entered in the live registry when
//   created and removed before it is deleted, so `get<T>(h)` can refuse NULL, stale and
//   wrong-kind handles by a registry lookup, never by reading *h first.
// - Lent handles (kernel inputs/outputs, attributes given to callbacks) are live only during
//   the callback and refuse to be freed by the callee.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "porta/error.hpp"
#include "porta/op.hpp"
#include "porta/porta.h"
#include "porta/session.hpp"
#include "porta/util.hpp"

enum class HandleKind : uint32_t { tensor = 0x7e5011, attrs, model, session };

struct porta_tensor_s {
  HandleKind kind = HandleKind::tensor;
  bool lent = false;
  bool shape_only = false;  ///< lent to a kernel's `supports`: shape and dtype, no data
  porta::Tensor tensor;
};

struct porta_attrs_s {
  HandleKind kind = HandleKind::attrs;
  bool lent = false;
  porta::Attributes owned;
  const porta::Attributes* view = nullptr;  ///< lent: the callee reads these
  const porta::Attributes& get() const { return view ? *view : owned; }
};

struct porta_model_s {
  HandleKind kind = HandleKind::model;
  bool lent = false;
  std::shared_ptr<porta::Model> model;
};

struct porta_session_s {
  HandleKind kind = HandleKind::session;
  bool lent = false;
  std::unique_ptr<porta::Session> session;
};

namespace porta::capi {

/// Error raised inside the C layer with an explicit status (bad handle, bad size, ...).
class StatusError : public Error {
 public:
  StatusError(porta_status s, const std::string& m) : Error(m), status(s) {}
  porta_status status;
};

void register_handle(const void* h, HandleKind kind);
void unregister_handle(const void* h);
/// True when `h` is live and of `kind`; fills `why` otherwise.
bool handle_ok(const void* h, HandleKind kind, std::string* why);

const char* kind_name(HandleKind k);
template <typename T> constexpr HandleKind kind_of();
template <> constexpr HandleKind kind_of<porta_tensor_s>() { return HandleKind::tensor; }
template <> constexpr HandleKind kind_of<porta_attrs_s>() { return HandleKind::attrs; }
template <> constexpr HandleKind kind_of<porta_model_s>() { return HandleKind::model; }
template <> constexpr HandleKind kind_of<porta_session_s>() { return HandleKind::session; }

/// The object behind a handle, or StatusError(INVALID_HANDLE) naming `fn` and `what`.
template <typename T>
T& get(T* h, const char* fn, const char* what) {
  std::string why;
  if (!handle_ok(h, kind_of<T>(), &why))
    throw StatusError(PORTA_ERROR_INVALID_HANDLE,
                      str("[", fn, "] ", what, " should be a live ", kind_name(kind_of<T>()),
                          " handle, got ", why));
  return *h;
}

/// A tensor handle's tensor for a call that reads or writes its data: refuses the shape-only
/// handles a kernel's `supports` callback is lent.
porta::Tensor& data_tensor(porta_tensor h, const char* fn);

/// Creates a handle object and enters it in the registry.
template <typename T>
T* make_handle() {
  auto* h = new T();
  register_handle(h, kind_of<T>());
  return h;
}
template <typename T>
void destroy_handle(T* h) {
  unregister_handle(h);
  delete h;
}

/// Throws StatusError(INVALID_ARGUMENT) when `p` is NULL.
inline void need(const void* p, const char* fn, const char* what) {
  if (!p)
    throw StatusError(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", what, " should not be NULL"));
}
[[noreturn]] inline void bad_argument(const std::string& message) {
  throw StatusError(PORTA_ERROR_INVALID_ARGUMENT, message);
}

/// Records the message of the exception being handled and returns its status.
porta_status status_from_current_exception() noexcept;
/// Sets the thread's message and returns `s`.
porta_status set_error(porta_status s, const std::string& message) noexcept;
/// The thread's last message (so kernel wrappers can rethrow a callback's error).
const std::string& last_error() noexcept;
/// Throws the porta::Error that matches status `s` with `message`.
[[noreturn]] void throw_status(porta_status s, const std::string& message);

/// Validates a C shape (rank dims, none negative; NULL allowed only for rank 0).
Shape read_shape(const int64_t* dims, size_t rank, const char* fn);
DType read_dtype(int value, const char* fn);
Device read_device(porta_device d, const char* fn);
inline porta_device to_c(Device d) { return {static_cast<int32_t>(d.type.id), d.index}; }

}  // namespace porta::capi

/// Body of every C entry point: runs `body`, returns PORTA_OK or the caught error's status.
#define PORTA_C_GUARD(...)                                       \
  try {                                                          \
    __VA_ARGS__;                                                 \
    return PORTA_OK;                                             \
  } catch (...) {                                                \
    return ::porta::capi::status_from_current_exception();       \
  }
