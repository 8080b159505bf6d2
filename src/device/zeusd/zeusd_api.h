// The zeusd wire protocol, spelled once: the routes and parameters that the
// daemon (src/daemon/routes.cc) serves and the relays (ZeusdGpu, ZeusdCpu)
// send. Compatible with the original zeusd (ml-energy/zeus): query
// parameters, GPUs and CPUs named by the daemon's indices (NVML order).
//
// Thread-safety: constants and pure functions.

#ifndef ZEUS_SRC_DEVICE_ZEUSD_ZEUSD_API_H_
#define ZEUS_SRC_DEVICE_ZEUSD_ZEUSD_API_H_

#include <cstdint>
#include <string>

namespace zeus::zeusd {

// Server routes.
inline constexpr char kDiscoverPath[] = "/discover";
inline constexpr char kTimePath[] = "/time";
// GPU routes are kGpuPrefix + operation; CPU routes kCpuPrefix + operation.
inline constexpr char kGpuPrefix[] = "/gpu/";
inline constexpr char kCpuPrefix[] = "/cpu/";

// GPU control operations (POST).
inline constexpr char kSetPowerLimit[] = "set_power_limit";
inline constexpr char kSetPersistenceMode[] = "set_persistence_mode";
inline constexpr char kSetGpuLockedClocks[] = "set_gpu_locked_clocks";
inline constexpr char kResetGpuLockedClocks[] = "reset_gpu_locked_clocks";
inline constexpr char kSetMemLockedClocks[] = "set_mem_locked_clocks";
inline constexpr char kResetMemLockedClocks[] = "reset_mem_locked_clocks";
inline constexpr char kResetLockedClocks[] = "reset_locked_clocks";  // Both domains.
// GPU reads (GET).
inline constexpr char kGetPowerLimit[] = "get_power_limit";
inline constexpr char kGetPowerLimitConstraints[] = "get_power_limit_constraints";
inline constexpr char kGetPersistenceMode[] = "get_persistence_mode";
inline constexpr char kGetPower[] = "get_power";
inline constexpr char kGetCumulativeEnergy[] = "get_cumulative_energy";  // GPU and CPU.

// Parameters.
inline constexpr char kGpuIds[] = "gpu_ids";  // Comma-separated indices.
inline constexpr char kCpuIds[] = "cpu_ids";
inline constexpr char kPowerLimitMw[] = "power_limit_mw";
inline constexpr char kEnabled[] = "enabled";  // true / false.
inline constexpr char kMinClockMhz[] = "min_clock_mhz";
inline constexpr char kMaxClockMhz[] = "max_clock_mhz";
inline constexpr char kBlock[] = "block";  // true / false.
inline constexpr char kCpu[] = "cpu";      // CPU energy: the package counter.
inline constexpr char kDram[] = "dram";    // CPU energy: the DRAM counter.

// Answer fields the relays read.
inline constexpr char kCpuEnergyUj[] = "cpu_energy_uj";
inline constexpr char kDramEnergyUj[] = "dram_energy_uj";

// The request targets the relays send (path and query, block=true: the
// daemon answers once the change is made).
inline std::string SetPowerLimitTarget(unsigned int gpu, uint32_t power_limit_mw) {
  return std::string(kGpuPrefix) + kSetPowerLimit + "?" + kGpuIds + "=" + std::to_string(gpu) +
         "&" + kPowerLimitMw + "=" + std::to_string(power_limit_mw) + "&" + kBlock + "=true";
}

inline std::string SetPersistenceModeTarget(unsigned int gpu, bool enabled) {
  return std::string(kGpuPrefix) + kSetPersistenceMode + "?" + kGpuIds + "=" + std::to_string(gpu) +
         "&" + kEnabled + "=" + (enabled ? "true" : "false") + "&" + kBlock + "=true";
}

// Locks the graphics (`memory` false) or memory clocks to [min, max] MHz, or
// unlocks them (`lock` false; min and max unused).
inline std::string LockedClocksTarget(unsigned int gpu, bool memory, bool lock, uint32_t min_mhz,
                                      uint32_t max_mhz) {
  std::string target = std::string(kGpuPrefix) +
                       (lock ? (memory ? kSetMemLockedClocks : kSetGpuLockedClocks)
                             : (memory ? kResetMemLockedClocks : kResetGpuLockedClocks)) +
                       "?" + kGpuIds + "=" + std::to_string(gpu) + "&" + kBlock + "=true";
  if (lock) {
    target += std::string("&") + kMinClockMhz + "=" + std::to_string(min_mhz) + "&" + kMaxClockMhz +
              "=" + std::to_string(max_mhz);
  }
  return target;
}

// One counter (`dram` or the package) of one CPU.
inline std::string CpuEnergyTarget(int cpu, bool dram) {
  return std::string(kCpuPrefix) + kGetCumulativeEnergy + "?" + kCpuIds + "=" +
         std::to_string(cpu) + "&" + kCpu + "=" + (dram ? "false" : "true") + "&" + kDram + "=" +
         (dram ? "true" : "false");
}

}  // namespace zeus::zeusd

#endif  // ZEUS_SRC_DEVICE_ZEUSD_ZEUSD_API_H_
