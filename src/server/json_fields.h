// Strict readers for fields of a JSON request body. Every error is
// kInvalidArgument and names the field and the offending value.

#ifndef ZEUS_SRC_SERVER_JSON_FIELDS_H_
#define ZEUS_SRC_SERVER_JSON_FIELDS_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "zeus/status.h"

namespace zeus::server_internal {

// OK when `body` is an object holding only fields from `allowed`.
Status CheckObjectFields(const nlohmann::json& body,
                         std::initializer_list<std::string_view> allowed);

// Missing or null fields read as nullopt; a present value of the wrong type
// is an error. Integers must be JSON integers fitting int64; doubles accept
// any finite JSON number.
StatusOr<std::optional<int64_t>> OptionalInt(const nlohmann::json& body, const char* field);
StatusOr<std::optional<double>> OptionalDouble(const nlohmann::json& body, const char* field);
StatusOr<std::optional<bool>> OptionalBool(const nlohmann::json& body, const char* field);
StatusOr<std::optional<std::string>> OptionalString(const nlohmann::json& body, const char* field);

// As above, but a missing or null field is an error.
StatusOr<int64_t> RequiredInt(const nlohmann::json& body, const char* field);
StatusOr<double> RequiredDouble(const nlohmann::json& body, const char* field);
StatusOr<std::string> RequiredString(const nlohmann::json& body, const char* field);

// The value for an error message, shortened to at most 64 characters.
std::string Describe(const nlohmann::json& value);

}  // namespace zeus::server_internal

#endif  // ZEUS_SRC_SERVER_JSON_FIELDS_H_
