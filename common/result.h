// Error values for kern libraries (style.md §3): an Error carries its message
// and context; Result<T> is a small std::expected stand-in (C++23 has it).
// No exception crosses the kern-load API; functions return these instead.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace kern {

/// Who must act on an error (style.md §3: grouped by who fixes it).
enum class ErrorKind {
  kUsage,     ///< command-line or caller mistake (bad flag, symbol out of bounds)
  kIo,        ///< file system: open, read, write, rename
  kManifest,  ///< manifest or plan content
  kKernel,    ///< kernel artifact (cubin, sha256, ABI)
  kWeight,    ///< weight artifact (safetensors content, binding)
  kDevice,    ///< device / driver (CUDA, cublasLt)
};

/// An error message in lower case, subject first ("weights.safetensors: ...").
struct Error {
  ErrorKind kind = ErrorKind::kUsage;
  std::string message;

  /// Returns a copy with `context: ` prepended, for adding context on the way up.
  Error with_context(const std::string& context) const {
    return Error{kind, context + ": " + message};
  }
};

/// Either a value or an Error. Check `ok()` before `value()`.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  T& operator*() & { return value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

/// Result of an operation with no value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), failed_(true) {}
  static Status ok_status() { return Status(); }
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool failed_ = false;
};

/// Builds an Error of kind `kind`.
inline Error make_error(ErrorKind kind, std::string message) {
  return Error{kind, std::move(message)};
}

}  // namespace kern

/// Returns the Status/Result error from the enclosing function if `expr` failed.
#define KERN_RETURN_IF_ERROR(expr)              \
  do {                                          \
    auto kern_status_ = (expr);                 \
    if (!kern_status_.ok()) return kern_status_.error(); \
  } while (0)
