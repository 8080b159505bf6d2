// CLI11 validators whose failures read "OPTION: expected WHAT, got 'VALUE'"
// (CLI11 adds the option's name), so every flag error names the option and
// the value. Parse errors are usage errors: main() exits 2.

#ifndef ZEUS_TOOLS_FLAG_CHECKS_H_
#define ZEUS_TOOLS_FLAG_CHECKS_H_

#include <cmath>
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "zeus/util/strings.h"

namespace zeus::cli {

// A finite number in [min, max].
inline CLI::Validator NumberIn(double min, double max) {
  const std::string what = fmt::format("a number in [{}, {}]", min, max);
  return CLI::Validator(
      [min, max, what](std::string& value) -> std::string {
        StatusOr<double> x = ParseDouble(value);
        if (x.ok() && std::isfinite(*x) && *x >= min && *x <= max) return "";
        return "expected " + what + ", got '" + value + "'";
      },
      what);
}

// A whole number >= min (`what` says what it counts, e.g. "groups").
inline CLI::Validator WholeNumberAtLeast(int64_t min, const std::string& what) {
  const std::string description = fmt::format("a whole number of {} >= {}", what, min);
  return CLI::Validator(
      [min, description](std::string& value) -> std::string {
        StatusOr<int64_t> n = ParseInt64(value);
        if (n.ok() && *n >= min && *n <= 1'000'000'000) return "";
        return "expected " + description + ", got '" + value + "'";
      },
      description);
}

}  // namespace zeus::cli

#endif  // ZEUS_TOOLS_FLAG_CHECKS_H_
