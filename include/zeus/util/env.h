// Process-environment settings that change Zeus's behaviour.

#ifndef ZEUS_UTIL_ENV_H_
#define ZEUS_UTIL_ENV_H_

#include <optional>
#include <string>

#include "zeus/status.h"

namespace zeus {

// The value of environment variable `name`, or nullopt when unset.
std::optional<std::string> GetEnv(const char* name);

// ZEUS_DRY_RUN as a boolean, as zeus.utils.env parses one: unset or ""
// false; true/false, 1/0, yes/no, on/off (any case, spaces around ignored);
// kInvalidArgument naming the value for anything else.
StatusOr<bool> DryRunSetting();

// Whether setters that change a device must log what they would do and
// change nothing: DryRunSetting(), and true when ZEUS_DRY_RUN is neither
// true nor false (a typo never changes a device; OpenGpus refuses it with
// DryRunSetting's error). Read on every call (cheap), so tests may toggle
// it.
bool IsDryRun();

}  // namespace zeus

#endif  // ZEUS_UTIL_ENV_H_
