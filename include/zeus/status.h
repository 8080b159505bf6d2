// Status and StatusOr<T>: the error model of the whole library.
//
// Every fallible call returns a cheap Status or a StatusOr<T>. A hardware
// refusal (not supported, no permission, missing library) is routine and is
// reported through these, never thrown. Exceptions exist only at the edges
// (CLI, HTTP, Python), which translate a Status into their own vocabulary.
//
// Thread-safety: Status and StatusOr are values; distinct objects may be used
// from distinct threads, a single object needs external synchronisation.

#ifndef ZEUS_STATUS_H_
#define ZEUS_STATUS_H_

#include <cstdlib>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

namespace zeus {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kNotSupported,
  kPermissionDenied,
  kUnavailable,
  kFailedPrecondition,
  kIoError,
  kInternal,
  kAlreadyExists,
  kAborted,
};

// Returns the snake_case name of `code`, e.g. "permission_denied".
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  // An OK status.
  Status() = default;
  // REQUIRES: code != kOk (an OK status carries no message).
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  // The message reads "context: detail" and names the offending value.
  const std::string& message() const { return message_; }

  // "ok", or "<code name>: <message>".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>". OK stays OK.
  Status WithContext(std::string_view context) const;

  // Marks an error as deliberately ignored.
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

std::ostream& operator<<(std::ostream& os, const Status& status);

Status InvalidArgumentError(std::string message);
Status NotFoundError(std::string message);
Status NotSupportedError(std::string message);
Status PermissionDeniedError(std::string message);
Status UnavailableError(std::string message);
Status FailedPreconditionError(std::string message);
Status IoError(std::string message);
Status InternalError(std::string message);
Status AlreadyExistsError(std::string message);
Status AbortedError(std::string message);

// Either a value of type T or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  // REQUIRES: !status.ok().
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design.
    if (status_.ok()) status_ = InternalError("StatusOr constructed from an OK status");
  }
  StatusOr(const T& value) : value_(value) {}        // NOLINT: implicit by design.
  StatusOr(T&& value) : value_(std::move(value)) {}  // NOLINT: implicit by design.
  template <typename U, typename = std::enable_if_t<std::is_convertible_v<U&&, T> &&
                                                    !std::is_same_v<std::decay_t<U>, Status> &&
                                                    !std::is_same_v<std::decay_t<U>, T>>>
  StatusOr(U&& value) : value_(T(std::forward<U>(value))) {}  // NOLINT: implicit by design.

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  // REQUIRES: ok(). Aborts otherwise: reading a missing value is a bug.
  const T& value() const& {
    CheckOk();
    return *value_;
  }
  T& value() & {
    CheckOk();
    return *value_;
  }
  T&& value() && {
    CheckOk();
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  // The value, or `fallback` when this holds an error.
  T value_or(T fallback) const& { return ok() ? *value_ : std::move(fallback); }

 private:
  void CheckOk() const {
    if (!status_.ok()) AbortOnBadAccess(status_);
  }
  [[noreturn]] static void AbortOnBadAccess(const Status& status);

  Status status_;
  std::optional<T> value_;
};

namespace internal {
[[noreturn]] void AbortWithStatus(const Status& status);
}  // namespace internal

template <typename T>
void StatusOr<T>::AbortOnBadAccess(const Status& status) {
  internal::AbortWithStatus(status);
}

}  // namespace zeus

#define ZEUS_STATUS_CONCAT_INNER_(a, b) a##b
#define ZEUS_STATUS_CONCAT_(a, b) ZEUS_STATUS_CONCAT_INNER_(a, b)

// Returns from the current function when `expr` yields a non-OK Status.
#define ZEUS_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::zeus::Status zeus_status_ = (expr);        \
    if (!zeus_status_.ok()) return zeus_status_; \
  } while (false)

// `lhs = value of expr`, or returns its error. `lhs` may declare a variable.
#define ZEUS_ASSIGN_OR_RETURN(lhs, expr) \
  ZEUS_ASSIGN_OR_RETURN_IMPL_(ZEUS_STATUS_CONCAT_(zeus_statusor_, __LINE__), lhs, expr)
#define ZEUS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

// Aborts with a message when a broken invariant is detected. Not for errors
// a caller could cause: those return a Status.
#define ZEUS_CHECK(cond)                                                   \
  do {                                                                     \
    if (!(cond)) ::zeus::internal::CheckFailed(__FILE__, __LINE__, #cond); \
  } while (false)

namespace zeus::internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* condition);
}  // namespace zeus::internal

#endif  // ZEUS_STATUS_H_
