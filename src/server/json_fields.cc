#include "src/server/json_fields.h"

#include <cmath>
#include <limits>

namespace zeus::server_internal {

using nlohmann::json;

std::string Describe(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 64) text = text.substr(0, 61) + "...";
  return text;
}

Status CheckObjectFields(const json& body, std::initializer_list<std::string_view> allowed) {
  if (!body.is_object()) {
    return InvalidArgumentError("request body: expected a JSON object, got " + Describe(body));
  }
  for (const auto& item : body.items()) {
    bool known = false;
    for (std::string_view name : allowed) known = known || item.key() == name;
    if (!known) {
      std::string key = item.key().size() > 64 ? item.key().substr(0, 61) + "..." : item.key();
      return InvalidArgumentError("field '" + key + "': unknown field");
    }
  }
  return Status::Ok();
}

namespace {

Status TypeError(const char* field, const char* expected, const json& value) {
  return InvalidArgumentError(std::string("field '") + field + "': expected " + expected +
                              ", got " + Describe(value));
}

const json* Find(const json& body, const char* field) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

Status Missing(const char* field) {
  return InvalidArgumentError(std::string("field '") + field + "': required");
}

}  // namespace

StatusOr<std::optional<int64_t>> OptionalInt(const json& body, const char* field) {
  const json* value = Find(body, field);
  if (value == nullptr) return std::optional<int64_t>();
  if (value->is_number_unsigned()) {
    uint64_t v = value->get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return TypeError(field, "an integer within int64", *value);
    }
    return std::optional<int64_t>(static_cast<int64_t>(v));
  }
  if (value->is_number_integer()) return std::optional<int64_t>(value->get<int64_t>());
  return TypeError(field, "an integer", *value);
}

StatusOr<std::optional<double>> OptionalDouble(const json& body, const char* field) {
  const json* value = Find(body, field);
  if (value == nullptr) return std::optional<double>();
  if (!value->is_number()) return TypeError(field, "a number", *value);
  double v = value->get<double>();
  if (!std::isfinite(v)) return TypeError(field, "a finite number", *value);
  return std::optional<double>(v);
}

StatusOr<std::optional<bool>> OptionalBool(const json& body, const char* field) {
  const json* value = Find(body, field);
  if (value == nullptr) return std::optional<bool>();
  if (!value->is_boolean()) return TypeError(field, "a boolean", *value);
  return std::optional<bool>(value->get<bool>());
}

StatusOr<std::optional<std::string>> OptionalString(const json& body, const char* field) {
  const json* value = Find(body, field);
  if (value == nullptr) return std::optional<std::string>();
  if (!value->is_string()) return TypeError(field, "a string", *value);
  return std::optional<std::string>(value->get<std::string>());
}

StatusOr<int64_t> RequiredInt(const json& body, const char* field) {
  ZEUS_ASSIGN_OR_RETURN(std::optional<int64_t> v, OptionalInt(body, field));
  if (!v) return Missing(field);
  return *v;
}

StatusOr<double> RequiredDouble(const json& body, const char* field) {
  ZEUS_ASSIGN_OR_RETURN(std::optional<double> v, OptionalDouble(body, field));
  if (!v) return Missing(field);
  return *v;
}

StatusOr<std::string> RequiredString(const json& body, const char* field) {
  ZEUS_ASSIGN_OR_RETURN(std::optional<std::string> v, OptionalString(body, field));
  if (!v) return Missing(field);
  return *v;
}

}  // namespace zeus::server_internal
