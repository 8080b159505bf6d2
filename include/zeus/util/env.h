// Process-environment settings that change Zeus's behaviour.

#ifndef ZEUS_UTIL_ENV_H_
#define ZEUS_UTIL_ENV_H_

#include <optional>
#include <string>

namespace zeus {

// The value of environment variable `name`, or nullopt when unset.
std::optional<std::string> GetEnv(const char* name);

// True when ZEUS_DRY_RUN is set to a value other than "", "0", "false" or
// "no" (case-insensitive). Every setter that changes a device must then log
// what it would do and change nothing. Read on every call (cheap), so tests
// may toggle it.
bool IsDryRun();

}  // namespace zeus

#endif  // ZEUS_UTIL_ENV_H_
