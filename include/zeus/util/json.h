// The one way Zeus reads JSON that comes from outside the process (HTTP
// bodies, profiles, optimizer state loaded from the store, C ABI options).
//
// ParseJson is bounded and strict: the size is checked before parsing, the
// nesting depth while the document is built (so a hostile input can neither
// exhaust the stack nor build a document that later code would recurse
// through), duplicate object keys and numbers outside a double's range are
// refused. JsonFields then reads typed, range-checked fields with errors that
// name the field and the offending value.
//
// Thread-safety: free functions are reentrant; a JsonFields is a read-only
// view and may be shared across threads while its document is not modified.

#ifndef ZEUS_UTIL_JSON_H_
#define ZEUS_UTIL_JSON_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/status.h"

namespace zeus {

struct JsonLimits {
  // Longest accepted text in bytes, checked before parsing. Default: 16 MiB.
  size_t max_bytes = size_t{16} << 20;
  // Deepest accepted nesting of arrays and objects: a scalar has depth 0,
  // `[]` depth 1, `{"a": [1]}` depth 2. Default: 64 (Zeus's own documents
  // nest at most 4 deep).
  int max_depth = 64;
};

// Parses `text` as one JSON document. `source` names it in errors ("request
// body", a file path). Every error is kInvalidArgument and reads
// "<source>: <problem>":
//   "<source>: 20000 bytes exceeds the limit of 16384 bytes"
//   "<source>: nesting deeper than 64 levels at $[0][0]..."
//   "<source>: not valid JSON: syntax error at line 1, column 12 (byte 11): ..."
//   "<source>: duplicate key 'x' at $.a"
//   "<source>: number 1e400 at $.a is outside the range of a double"
// NaN and Infinity are not JSON and are syntax errors.
StatusOr<nlohmann::json> ParseJson(std::string_view text, std::string_view source,
                                   const JsonLimits& limits = JsonLimits());

// A JSON value for an error message: compact, at most 64 characters.
std::string DescribeJson(const nlohmann::json& value);

// `value` as JSON, or null when it is empty.
template <typename T>
nlohmann::json JsonOrNull(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

// Typed, range-checked readers for the fields of one JSON object. A missing
// field and an explicit null both read as absent: Optional* returns nullopt,
// the required readers fail with "required". A present value of the wrong
// type, outside the range, or non-finite is an error. Errors are
// kInvalidArgument and read "<context>: field '<name>': <detail>" for a
// top-level object and "<context>: <path>.<name>: <detail>" for a nested one,
// e.g. "p.json: measurements[0].time_s: expected a number, got \"slow\"".
class JsonFields {
 public:
  static constexpr int64_t kMinInt = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();
  static constexpr double kMaxDouble = std::numeric_limits<double>::max();

  // A reader for `value`, which must be an object. `context` prefixes every
  // error (a source such as "request body" or "batch size optimizer state";
  // empty for none). When `allowed` is non-empty, a field not in it is an
  // error naming the field.
  // REQUIRES: `value` outlives the reader and every reader derived from it.
  static StatusOr<JsonFields> Of(const nlohmann::json& value, std::string context,
                                 std::initializer_list<std::string_view> allowed = {});

  const nlohmann::json& object() const { return *object_; }
  bool Has(std::string_view field) const;

  // Integers must be JSON integers (1.0 is refused) within [min, max].
  StatusOr<int64_t> Int(std::string_view field, int64_t min = kMinInt, int64_t max = kMaxInt) const;
  StatusOr<std::optional<int64_t>> OptionalInt(std::string_view field, int64_t min = kMinInt,
                                               int64_t max = kMaxInt) const;
  // The full unsigned 64-bit range (seeds).
  StatusOr<std::optional<uint64_t>> OptionalUint64(std::string_view field) const;
  // Any finite JSON number within [min, max] (integers included).
  StatusOr<double> Double(std::string_view field, double min = -kMaxDouble,
                          double max = kMaxDouble) const;
  StatusOr<std::optional<double>> OptionalDouble(std::string_view field, double min = -kMaxDouble,
                                                 double max = kMaxDouble) const;
  StatusOr<bool> Bool(std::string_view field) const;
  StatusOr<std::optional<bool>> OptionalBool(std::string_view field) const;
  StatusOr<std::string> String(std::string_view field) const;
  StatusOr<std::optional<std::string>> OptionalString(std::string_view field) const;

  // Arrays whose every element passes the scalar rule above.
  StatusOr<std::vector<int64_t>> IntArray(std::string_view field, int64_t min = kMinInt,
                                          int64_t max = kMaxInt) const;
  StatusOr<std::vector<double>> DoubleArray(std::string_view field, double min = -kMaxDouble,
                                            double max = kMaxDouble) const;
  StatusOr<std::vector<bool>> BoolArray(std::string_view field) const;
  // A required array, for callers that read its elements themselves.
  StatusOr<const nlohmann::json*> Array(std::string_view field) const;
  // A reader for the required object in `field`; its errors carry the path.
  StatusOr<JsonFields> Object(std::string_view field) const;
  // A reader for element `index` of the array in `field`, which must be an
  // object. REQUIRES: index < size of that array (from Array()).
  StatusOr<JsonFields> Element(std::string_view field, size_t index) const;

  // An error about `field` in this object's vocabulary, for checks done by
  // callers: Error("eta", "must be in [0, 1], got 2").
  Status Error(std::string_view field, std::string_view detail) const;

 private:
  JsonFields(const nlohmann::json* object, std::string context, std::string path)
      : object_(object), context_(std::move(context)), path_(std::move(path)) {}

  // The value of `field`, or nullptr when it is missing or null.
  const nlohmann::json* Find(std::string_view field) const;
  Status Expected(std::string_view field, std::string_view what, const nlohmann::json& value) const;
  StatusOr<int64_t> CheckInt(std::string_view field, const nlohmann::json& value, int64_t min,
                             int64_t max) const;
  StatusOr<double> CheckDouble(std::string_view field, const nlohmann::json& value, double min,
                               double max) const;

  const nlohmann::json* object_;
  std::string context_;
  std::string path_;  // Empty for a top-level object, else "a.b[3]".
};

// For optional settings with a default: stores the value read by an
// Optional* reader into `*out` when present, leaves `*out` untouched when the
// field is absent, and returns the reader's error otherwise.
//   ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalInt("max_epochs", 1), &spec.max_epochs));
template <typename T, typename U>
Status SetIfPresent(StatusOr<std::optional<U>> value, T* out) {
  if (!value.ok()) return value.status();
  if (value->has_value()) *out = static_cast<T>(**value);
  return Status::Ok();
}

}  // namespace zeus

#endif  // ZEUS_UTIL_JSON_H_
