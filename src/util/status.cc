#include "zeus/status.h"

#include <cstdio>
#include <cstdlib>

namespace zeus {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kNotSupported:
      return "not_supported";
    case StatusCode::kPermissionDenied:
      return "permission_denied";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kFailedPrecondition:
      return "failed_precondition";
    case StatusCode::kIoError:
      return "io_error";
    case StatusCode::kInternal:
      return "internal";
    case StatusCode::kAlreadyExists:
      return "already_exists";
    case StatusCode::kAborted:
      return "aborted";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(StatusCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string message(context);
  message += ": ";
  message += message_;
  return Status(code_, std::move(message));
}

std::ostream& operator<<(std::ostream& os, const Status& status) { return os << status.ToString(); }

Status InvalidArgumentError(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}
Status NotFoundError(std::string message) {
  return Status(StatusCode::kNotFound, std::move(message));
}
Status NotSupportedError(std::string message) {
  return Status(StatusCode::kNotSupported, std::move(message));
}
Status PermissionDeniedError(std::string message) {
  return Status(StatusCode::kPermissionDenied, std::move(message));
}
Status UnavailableError(std::string message) {
  return Status(StatusCode::kUnavailable, std::move(message));
}
Status FailedPreconditionError(std::string message) {
  return Status(StatusCode::kFailedPrecondition, std::move(message));
}
Status IoError(std::string message) { return Status(StatusCode::kIoError, std::move(message)); }
Status InternalError(std::string message) {
  return Status(StatusCode::kInternal, std::move(message));
}
Status AlreadyExistsError(std::string message) {
  return Status(StatusCode::kAlreadyExists, std::move(message));
}
Status AbortedError(std::string message) {
  return Status(StatusCode::kAborted, std::move(message));
}

namespace internal {

void AbortWithStatus(const Status& status) {
  std::fprintf(stderr, "zeus: accessed the value of a StatusOr holding an error: %s\n",
               status.ToString().c_str());
  std::abort();
}

void CheckFailed(const char* file, int line, const char* condition) {
  std::fprintf(stderr, "zeus: %s:%d: check failed: %s\n", file, line, condition);
  std::abort();
}

}  // namespace internal
}  // namespace zeus
