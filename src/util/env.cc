#include "zeus/util/env.h"

#include <cstdlib>

#include "zeus/util/strings.h"

namespace zeus {

std::optional<std::string> GetEnv(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

bool IsDryRun() {
  std::optional<std::string> value = GetEnv("ZEUS_DRY_RUN");
  if (!value) return false;
  std::string v = ToLower(Trim(*value));
  return !(v.empty() || v == "0" || v == "false" || v == "no");
}

}  // namespace zeus
