#include <cerrno>
#include <cstdlib>
#include <string>

#include "src/server/store/sql_connection.h"

namespace zeus::server_internal {

bool IsNull(const SqlValue& value) { return std::holds_alternative<std::monostate>(value); }

StatusOr<int64_t> AsInt(const SqlValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return *i;
  if (const auto* s = std::get_if<std::string>(&value)) {
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s->c_str(), &end, 10);
    if (errno == 0 && end != s->c_str() && *end == '\0') return static_cast<int64_t>(v);
    return InternalError("database: expected an integer, got \"" + *s + "\"");
  }
  return InternalError("database: expected an integer column");
}

StatusOr<double> AsDouble(const SqlValue& value) {
  if (const auto* d = std::get_if<double>(&value)) return *d;
  if (const auto* i = std::get_if<int64_t>(&value)) return static_cast<double>(*i);
  if (const auto* s = std::get_if<std::string>(&value)) {
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(s->c_str(), &end);
    if (errno == 0 && end != s->c_str() && *end == '\0') return v;
    return InternalError("database: expected a number, got \"" + *s + "\"");
  }
  return InternalError("database: expected a number column");
}

StatusOr<std::string> AsString(const SqlValue& value) {
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  return InternalError("database: expected a text column");
}

StatusOr<std::optional<double>> AsOptionalDouble(const SqlValue& value) {
  if (IsNull(value)) return std::optional<double>();
  ZEUS_ASSIGN_OR_RETURN(double v, AsDouble(value));
  return std::optional<double>(v);
}

StatusOr<std::optional<int64_t>> AsOptionalInt(const SqlValue& value) {
  if (IsNull(value)) return std::optional<int64_t>();
  ZEUS_ASSIGN_OR_RETURN(int64_t v, AsInt(value));
  return std::optional<int64_t>(v);
}

SqlValue FromOptional(const std::optional<double>& value) {
  return value ? SqlValue(*value) : SqlValue();
}
SqlValue FromOptional(const std::optional<int64_t>& value) {
  return value ? SqlValue(*value) : SqlValue();
}

}  // namespace zeus::server_internal
