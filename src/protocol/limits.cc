#include "zeus/protocol/limits.h"

#include <cmath>

#include <fmt/format.h>

namespace zeus::wire_limits {

std::string Printable(std::string_view value) {
  std::string shown;
  for (size_t i = 0; i < value.size() && i < 64; ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c == 0x7f) {
      shown += fmt::format("\\x{:02x}", c);
    } else {
      shown += static_cast<char>(c);
    }
  }
  if (value.size() > 64) shown += "...";
  return shown;
}

Status ValidateIdentifier(std::string_view field, std::string_view value) {
  if (value.empty()) {
    return InvalidArgumentError(fmt::format("field '{}': must not be empty", field));
  }
  if (value.size() > kMaxIdentifierBytes) {
    return InvalidArgumentError(fmt::format("field '{}': \"{}\" is {} bytes long, more than {}",
                                            field, Printable(value), value.size(),
                                            kMaxIdentifierBytes));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c == 0x7f) {
      return InvalidArgumentError(
          fmt::format("field '{}': \"{}\" holds control character 0x{:02x} at byte {}; "
                      "identifiers are printable text",
                      field, Printable(value), c, i));
    }
  }
  return Status::Ok();
}

Status CheckRange(std::string_view field, double value, double min, double max,
                  std::string_view unit) {
  if (std::isfinite(value) && value >= min && value <= max) return Status::Ok();
  return InvalidArgumentError(fmt::format("field '{}': {} is outside [{}, {}]{}", field, value, min,
                                          max, unit.empty() ? "" : " " + std::string(unit)));
}

Status CheckIntRange(std::string_view field, int64_t value, int64_t min, int64_t max) {
  if (value >= min && value <= max) return Status::Ok();
  return InvalidArgumentError(
      fmt::format("field '{}': {} is outside [{}, {}]", field, value, min, max));
}

}  // namespace zeus::wire_limits
