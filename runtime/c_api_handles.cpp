// porta runtime — C ABI basics: live-handle registry, error capture, version, argument readers.
#include "runtime/c_api_handles.hpp"

#include <mutex>
#include <new>
#include <unordered_map>

#include "porta/porta.hpp"

namespace porta::capi {
namespace {

// A plain mutex: lookups are a few nanoseconds, shorter than a shared lock's bookkeeping.
struct LiveHandles {
  std::mutex mutex;
  std::unordered_map<const void*, HandleKind> kinds;
  LiveHandles() { kinds.reserve(1024); }
};
LiveHandles& live() {
  static auto* l = new LiveHandles();  // never destroyed: handles may be freed during exit
  return *l;
}

thread_local std::string t_last_error;

}  // namespace

void register_handle(const void* h, HandleKind kind) {
  std::lock_guard lock(live().mutex);
  live().kinds[h] = kind;
}

void unregister_handle(const void* h) {
  std::lock_guard lock(live().mutex);
  live().kinds.erase(h);
}

Tensor& data_tensor(porta_tensor h, const char* fn) {
  porta_tensor_s& t = get(h, fn, "tensor");
  if (t.shape_only)
    bad_argument(str("[", fn, "] this tensor is lent to a kernel's supports callback, which sees shapes and dtypes "
                          "only: a kernel decides from them, and reads data when it runs"));
  return t.tensor;
}

const char* kind_name(HandleKind k) {
  switch (k) {
    case HandleKind::tensor: return "tensor";
    case HandleKind::attrs: return "attributes";
    case HandleKind::model: return "model";
    case HandleKind::session: return "session";
  }
  return "unknown";
}

bool handle_ok(const void* h, HandleKind kind, std::string* why) {
  if (!h) {
    *why = "NULL";
    return false;
  }
  std::lock_guard lock(live().mutex);
  auto it = live().kinds.find(h);
  if (it == live().kinds.end()) {
    *why = "a handle that is not live (freed, or never created by porta)";
    return false;
  }
  if (it->second != kind) {
    *why = str("a ", kind_name(it->second), " handle");
    return false;
  }
  return true;
}

porta_status set_error(porta_status s, const std::string& message) noexcept {
  try {
    t_last_error = message;
  } catch (...) {
  }
  return s;
}

const std::string& last_error() noexcept { return t_last_error; }

porta_status status_from_current_exception() noexcept {
  try {
    throw;
  } catch (const StatusError& e) {
    return set_error(e.status, e.what());
  } catch (const InvalidModel& e) {
    return set_error(PORTA_ERROR_INVALID_MODEL, e.what());
  } catch (const ShapeError& e) {
    return set_error(PORTA_ERROR_SHAPE, e.what());
  } catch (const DTypeError& e) {
    return set_error(PORTA_ERROR_DTYPE, e.what());
  } catch (const DeviceMismatch& e) {
    return set_error(PORTA_ERROR_DEVICE_MISMATCH, e.what());
  } catch (const Unsupported& e) {
    return set_error(PORTA_ERROR_UNSUPPORTED, e.what());
  } catch (const OutOfMemory& e) {
    return set_error(PORTA_ERROR_OUT_OF_MEMORY, e.what());
  } catch (const BackendUnavailable& e) {
    return set_error(PORTA_ERROR_BACKEND_UNAVAILABLE, e.what());
  } catch (const BackendError& e) {
    return set_error(PORTA_ERROR_BACKEND, e.what());
  } catch (const InvalidArgument& e) {
    return set_error(PORTA_ERROR_INVALID_ARGUMENT, e.what());
  } catch (const std::bad_alloc&) {
    return set_error(PORTA_ERROR_OUT_OF_MEMORY, "[porta] host memory exhausted");
  } catch (const std::exception& e) {
    return set_error(PORTA_ERROR_INTERNAL, str("[porta] internal error: ", e.what()));
  } catch (...) {
    return set_error(PORTA_ERROR_INTERNAL, "[porta] internal error: unknown exception");
  }
}

void throw_status(porta_status s, const std::string& m) {
  switch (s) {
    case PORTA_ERROR_SHAPE: throw ShapeError(m);
    case PORTA_ERROR_DTYPE: throw DTypeError(m);
    case PORTA_ERROR_DEVICE_MISMATCH: throw DeviceMismatch(m);
    case PORTA_ERROR_UNSUPPORTED: throw Unsupported(m);
    case PORTA_ERROR_OUT_OF_MEMORY: throw OutOfMemory(m);
    case PORTA_ERROR_BACKEND_UNAVAILABLE: throw BackendUnavailable(m);
    case PORTA_ERROR_BACKEND: throw BackendError(m);
    case PORTA_ERROR_INVALID_MODEL: throw InvalidModel(m);
    default: throw StatusError(s, m);
  }
}

Shape read_shape(const int64_t* dims, size_t rank, const char* fn) {
  if (rank > 0 && !dims) bad_argument(str("[", fn, "] shape should not be NULL for rank ", rank));
  if (rank > 64) bad_argument(str("[", fn, "] rank should be at most 64, got ", rank));
  Shape s(dims, dims + rank);
  for (size_t i = 0; i < rank; ++i)
    if (s[i] < 0) bad_argument(str("[", fn, "] dimension ", i, " should be >= 0, got ", s[i]));
  shape_numel(s);  // overflow check
  return s;
}

DType read_dtype(int value, const char* fn) {
  if (value < 0 || value >= kNumDTypes)
    bad_argument(str("[", fn, "] dtype should be a porta_dtype (0..", kNumDTypes - 1, "), got ", value));
  return static_cast<DType>(value);
}

Device read_device(porta_device d, const char* fn) {
  int kinds = static_cast<int>(device_types().size());
  if (d.type < 0 || d.type >= kinds)
    bad_argument(str("[", fn, "] device type should be a porta_device_type or a registered kind id (0..",
                     kinds - 1, "), got ", d.type));
  if (d.index < 0) bad_argument(str("[", fn, "] device index should be >= 0, got ", d.index));
  return Device{DeviceType(static_cast<uint8_t>(d.type)), d.index};
}

}  // namespace porta::capi

using namespace porta;
using namespace porta::capi;

extern "C" {

uint32_t porta_abi_version(void) { return PORTA_ABI_VERSION; }
const char* porta_version(void) { return porta::version(); }
const char* porta_last_error(void) { return t_last_error.c_str(); }

porta_status porta_set_error(porta_status status, const char* message) {
  return capi::set_error(status, message ? message : "");
}

const char* porta_status_name(porta_status s) {
  switch (s) {
    case PORTA_OK: return "PORTA_OK";
    case PORTA_ERROR_INVALID_ARGUMENT: return "PORTA_ERROR_INVALID_ARGUMENT";
    case PORTA_ERROR_INVALID_HANDLE: return "PORTA_ERROR_INVALID_HANDLE";
    case PORTA_ERROR_SHAPE: return "PORTA_ERROR_SHAPE";
    case PORTA_ERROR_DTYPE: return "PORTA_ERROR_DTYPE";
    case PORTA_ERROR_DEVICE_MISMATCH: return "PORTA_ERROR_DEVICE_MISMATCH";
    case PORTA_ERROR_UNSUPPORTED: return "PORTA_ERROR_UNSUPPORTED";
    case PORTA_ERROR_OUT_OF_MEMORY: return "PORTA_ERROR_OUT_OF_MEMORY";
    case PORTA_ERROR_BACKEND_UNAVAILABLE: return "PORTA_ERROR_BACKEND_UNAVAILABLE";
    case PORTA_ERROR_BACKEND: return "PORTA_ERROR_BACKEND";
    case PORTA_ERROR_INVALID_MODEL: return "PORTA_ERROR_INVALID_MODEL";
    case PORTA_ERROR_ABI_MISMATCH: return "PORTA_ERROR_ABI_MISMATCH";
    case PORTA_ERROR_ALREADY_EXISTS: return "PORTA_ERROR_ALREADY_EXISTS";
    case PORTA_ERROR_INTERNAL: return "PORTA_ERROR_INTERNAL";
  }
  return "PORTA_ERROR_UNKNOWN_STATUS";
}

}  // extern "C"
