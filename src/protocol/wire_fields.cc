#include "src/protocol/wire_fields.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace zeus::server_internal {

namespace {

// A field name as it may appear in a log line.
std::string Printable(const std::string& name) {
  std::string shown;
  for (size_t i = 0; i < name.size() && i < 64; ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c == 0x7f || c == '\\') {
      shown += fmt::format("\\x{:02x}", c);
    } else {
      shown += static_cast<char>(c);
    }
  }
  if (name.size() > 64) shown += "...";
  return shown;
}

}  // namespace

StatusOr<JsonFields> WireFields(const nlohmann::json& body, std::string context,
                                std::initializer_list<std::string_view> known,
                                std::vector<std::string>* ignored_fields) {
  if (ignored_fields == nullptr) return JsonFields::Of(body, std::move(context), known);
  ZEUS_ASSIGN_OR_RETURN(JsonFields fields, JsonFields::Of(body, std::move(context)));
  for (const auto& item : body.items()) {
    if (std::find(known.begin(), known.end(), item.key()) == known.end()) {
      ignored_fields->push_back(Printable(item.key()));
    }
  }
  return fields;
}

}  // namespace zeus::server_internal
