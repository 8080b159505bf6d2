#include "zeus/util/env.h"

#include <cstdlib>

#include "zeus/util/strings.h"

namespace zeus {

std::optional<std::string> GetEnv(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

StatusOr<bool> DryRunSetting() {
  std::optional<std::string> value = GetEnv("ZEUS_DRY_RUN");
  if (!value) return false;
  const std::string v = ToLower(Trim(*value));
  if (v.empty() || v == "0" || v == "false" || v == "no" || v == "off") return false;
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  return InvalidArgumentError("ZEUS_DRY_RUN=\"" + value->substr(0, 64) +
                              "\": expected true/false, 1/0, yes/no or on/off (any case)");
}

bool IsDryRun() { return DryRunSetting().value_or(true); }

}  // namespace zeus
