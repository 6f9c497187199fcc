// porta — error hierarchy. Every failure porta reports is one of these; messages read
// "[component] what was expected, what was got".
#pragma once
#include <stdexcept>
#include <string>

namespace porta {

/// Base of every porta error.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
  /// Short name of the error kind ("ShapeError", ...), for CLIs and the C ABI.
  virtual const char* kind() const noexcept { return "Error"; }
  /// Throws an error of the same kind with another message (adding context on the way up).
  [[noreturn]] virtual void rethrow_with(const std::string& message) const { throw Error(message); }
};

#define PORTA_DEFINE_ERROR(Name)                                            \
  class Name : public Error {                                               \
   public:                                                                  \
    explicit Name(const std::string& message) : Error(message) {}          \
    const char* kind() const noexcept override { return #Name; }           \
    [[noreturn]] void rethrow_with(const std::string& message) const override { \
      throw Name(message);                                                  \
    }                                                                       \
  };

/// The model file is malformed, truncated, or refers to things that do not exist.
PORTA_DEFINE_ERROR(InvalidModel)
/// Shapes do not fit together (or an index is out of range).
PORTA_DEFINE_ERROR(ShapeError)
/// A dtype is not accepted where it was given.
PORTA_DEFINE_ERROR(DTypeError)
/// Tensors of one call live on different devices.
PORTA_DEFINE_ERROR(DeviceMismatch)
/// The op, attribute value or combination is not implemented anywhere.
PORTA_DEFINE_ERROR(Unsupported)
/// A device or host allocation failed (message gives requested and free bytes).
PORTA_DEFINE_ERROR(OutOfMemory)
/// The requested backend or device is not built or not present.
PORTA_DEFINE_ERROR(BackendUnavailable)
/// A device runtime call failed (names the call, device and location).
PORTA_DEFINE_ERROR(BackendError)
/// Bad argument to an API call (null, wrong name, malformed file other than a model).
PORTA_DEFINE_ERROR(InvalidArgument)

#undef PORTA_DEFINE_ERROR

}  // namespace porta
