// Error values for kern libraries (style.md §3): an Error carries its message
// and context; Result<T> is a small std::expected stand-in (C++23 has it).
// No exception crosses the kern-load API; functions return these instead.
#pragma once

#include <cstdint>
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

/// Joins a later failure (typically a cleanup) into `first` instead of
/// dropping it (iree_status_join): the first error keeps its kind and leads,
/// the second is appended after "; then: ". Either may be ok.
inline Status join(Status first, const Status& second) {
  if (second.ok()) return first;
  if (first.ok()) return second;
  return Error{first.error().kind, first.error().message + "; then: " + second.error().message};
}

/// Joins the failures of a cleanup loop (every allocation freed, every
/// module unloaded) into one Status without letting a sticky device error
/// repeated a thousand times make a thousand-part message: the first
/// kShown failures are joined in order, the rest counted ("; and 12 more").
class StatusJoin {
 public:
  static constexpr int kShown = 4;
  /// Keeps `s` if it failed.
  void add(const Status& s) {
    if (s.ok()) return;
    if (shown_ < kShown) {
      status_ = join(std::move(status_), s);
      ++shown_;
    } else {
      ++more_;
    }
  }
  /// Every failure added so far, joined; ok when there was none.
  Status status() const {
    if (more_ == 0) return status_;
    return Error{status_.error().kind, status_.error().message + "; and " + std::to_string(more_) + " more"};
  }

 private:
  Status status_;
  int shown_ = 0;
  uint64_t more_ = 0;
};

namespace detail {
/// The error a KERN_RETURN_IF_ERROR / KERN_ASSIGN_OR_RETURN returns.
inline Error error_in(const Error& e) { return e; }
inline Error error_in(const Error& e, const std::string& context) { return e.with_context(context); }
}  // namespace detail

}  // namespace kern

/// Returns the Status/Result error of `expr` from the enclosing function if it
/// failed, with `context` (a std::string expression, evaluated only on failure)
/// prepended when given: KERN_RETURN_IF_ERROR(load(f), "loading " + f).
#define KERN_RETURN_IF_ERROR(expr, ...)                                                 \
  do {                                                                                  \
    auto&& kern_status_ = (expr);                                                       \
    if (!kern_status_.ok()) [[unlikely]]                                                \
      return ::kern::detail::error_in(kern_status_.error() __VA_OPT__(, ) __VA_ARGS__); \
  } while (0)

/// Evaluates the Result `expr`; on failure returns its error (with `context`
/// prepended when given) from the enclosing function, else moves the value
/// into `lhs` (copied when `expr` names an lvalue), which may declare a
/// variable: KERN_ASSIGN_OR_RETURN(auto f, open(p)).
#define KERN_ASSIGN_OR_RETURN(lhs, expr, ...) \
  KERN_ASSIGN_OR_RETURN_IMPL_(KERN_CONCAT_(kern_result_, __LINE__), lhs, expr __VA_OPT__(, ) __VA_ARGS__)

#define KERN_CONCAT_INNER_(a, b) a##b
#define KERN_CONCAT_(a, b) KERN_CONCAT_INNER_(a, b)
#define KERN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr, ...)                     \
  auto&& tmp = (expr);                                                       \
  if (!tmp.ok()) [[unlikely]]                                                \
    return ::kern::detail::error_in(tmp.error() __VA_OPT__(, ) __VA_ARGS__); \
  lhs = std::forward<decltype(tmp)>(tmp).value()
