// The one place where units are converted. Names carry units everywhere else
// (power_limit_mw, energy_mj, energy_uj, time_s); joules, watts and seconds
// are doubles at the reporting edge.

#ifndef ZEUS_UTIL_UNITS_H_
#define ZEUS_UTIL_UNITS_H_

#include <chrono>
#include <cstdint>

namespace zeus {

constexpr double MjToJ(double energy_mj) { return energy_mj / 1e3; }
constexpr double UjToJ(double energy_uj) { return energy_uj / 1e6; }
constexpr double MwToW(double power_mw) { return power_mw / 1e3; }
constexpr uint32_t WToMw(uint32_t power_w) { return power_w * 1000u; }
constexpr double NsToS(int64_t time_ns) { return static_cast<double>(time_ns) / 1e9; }

inline double ToSeconds(std::chrono::nanoseconds d) { return NsToS(d.count()); }
inline std::chrono::nanoseconds FromSeconds(double time_s) {
  return std::chrono::nanoseconds(static_cast<int64_t>(time_s * 1e9));
}

}  // namespace zeus

#endif  // ZEUS_UTIL_UNITS_H_
