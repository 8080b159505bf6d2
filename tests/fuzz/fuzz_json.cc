// Fuzzes the JSON reader every outside document goes through: ParseJson's
// limits and JsonFields' typed readers on every field and array element.
// Invariants beyond "no crash": a document ParseJson accepts is no deeper
// than the limit, and its dump parses back to the same document.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "zeus/util/json.h"

namespace {

using zeus::JsonFields;

int Depth(const nlohmann::json& value) {
  if (!value.is_structured()) return 0;
  int deepest = 0;
  for (const nlohmann::json& child : value) deepest = std::max(deepest, Depth(child));
  return deepest + 1;
}

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_json: invariant violated: %s\n", what);
    std::abort();
  }
}

// Every reader on every field; errors are expected, crashes are not.
void ReadAll(const JsonFields& f, int depth) {
  for (auto it = f.object().begin(); it != f.object().end(); ++it) {
    const std::string& key = it.key();
    (void)f.Has(key);
    (void)f.OptionalInt(key, -1000, 1000);
    (void)f.OptionalUint64(key);
    (void)f.OptionalDouble(key, 0.0, 1e100);
    (void)f.OptionalBool(key);
    (void)f.OptionalString(key);
    (void)f.IntArray(key, 1);
    (void)f.DoubleArray(key);
    (void)f.Error(key, "detail");
    zeus::StatusOr<const nlohmann::json*> array = f.Array(key);
    if (array.ok() && depth < 4) {
      for (size_t i = 0; i < (*array)->size() && i < 8; ++i) {
        zeus::StatusOr<JsonFields> element = f.Element(key, i);
        if (element.ok()) ReadAll(*element, depth + 1);
      }
    }
    zeus::StatusOr<JsonFields> object = f.Object(key);
    if (object.ok() && depth < 4) ReadAll(*object, depth + 1);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  zeus::JsonLimits limits;
  limits.max_bytes = 64 << 10;
  limits.max_depth = 16;
  zeus::StatusOr<nlohmann::json> parsed = zeus::ParseJson(text, "fuzz input", limits);
  if (!parsed.ok()) {
    Check(!parsed.status().message().empty(), "an error without a message");
    return 0;
  }
  Check(Depth(*parsed) <= limits.max_depth, "accepted a document deeper than the limit");
  (void)zeus::DescribeJson(*parsed);
  zeus::StatusOr<nlohmann::json> again = zeus::ParseJson(parsed->dump(), "dump", limits);
  Check(again.ok() && *again == *parsed, "a parsed document's dump does not parse back to it");
  zeus::StatusOr<JsonFields> fields = JsonFields::Of(*parsed, "fuzz", {"a", "b", "c"});
  if (!fields.ok()) fields = JsonFields::Of(*parsed, "fuzz");
  if (fields.ok()) ReadAll(*fields, 0);
  return 0;
}
