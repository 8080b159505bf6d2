// The one place where units are converted. Names carry units everywhere else
// (power_limit_mw, energy_mj, energy_uj, time_s); joules, watts and seconds
// are doubles at the reporting edge.
//
// The plain conversions assume their argument is in range (REQUIRES); the
// Checked* ones refuse what would overflow, for values that come from input.

#ifndef ZEUS_UTIL_UNITS_H_
#define ZEUS_UTIL_UNITS_H_

#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>

namespace zeus {

constexpr double MjToJ(double energy_mj) { return energy_mj / 1e3; }
constexpr double UjToJ(double energy_uj) { return energy_uj / 1e6; }
constexpr double MwToW(double power_mw) { return power_mw / 1e3; }
// The most watts a uint32_t count of mW holds: 4294967 W.
constexpr int64_t kMaxWattsAsMw = UINT32_MAX / 1000u;
// REQUIRES: power_w <= kMaxWattsAsMw (above it the product wraps).
constexpr uint32_t WToMw(uint32_t power_w) { return power_w * 1000u; }
// nullopt unless 0 <= power_w <= kMaxWattsAsMw.
constexpr std::optional<uint32_t> CheckedWToMw(int64_t power_w) {
  if (power_w < 0 || power_w > kMaxWattsAsMw) return std::nullopt;
  return static_cast<uint32_t>(power_w) * 1000u;
}
constexpr double NsToS(int64_t time_ns) { return static_cast<double>(time_ns) / 1e9; }

inline double ToSeconds(std::chrono::nanoseconds d) { return NsToS(d.count()); }
// REQUIRES: time_s is finite and |time_s| < about 9.2e9 (292 years), else
// the int64_t count of ns overflows.
inline std::chrono::nanoseconds FromSeconds(double time_s) {
  return std::chrono::nanoseconds(static_cast<int64_t>(time_s * 1e9));
}
// nullopt when time_s is not finite or its ns do not fit an int64_t.
inline std::optional<std::chrono::nanoseconds> CheckedFromSeconds(double time_s) {
  const double ns = time_s * 1e9;
  // 2^63 is exactly representable; every double below it converts exactly.
  if (!std::isfinite(ns) || ns >= 9223372036854775808.0 || ns < -9223372036854775808.0) {
    return std::nullopt;
  }
  return std::chrono::nanoseconds(static_cast<int64_t>(ns));
}

}  // namespace zeus

#endif  // ZEUS_UTIL_UNITS_H_
