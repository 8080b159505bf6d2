// What this machine offers Zeus (GPU backends and their GPUs, CPU RAPL zones,
// dry-run state), gathered once and formatted by reporters, so that gathering never
// prints. `zeus show-env` is its front end.
//
// Thread-safety: DescribeEnvironment may run on any thread; the result is a
// plain value.

#ifndef ZEUS_DEVICE_ENVIRONMENT_H_
#define ZEUS_DEVICE_ENVIRONMENT_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "zeus/device/devices.h"
#include "zeus/device/gpu.h"
#include "zeus/status.h"

namespace zeus {

// One GPU; every reading is kept with its own error, so one unsupported query
// does not hide the others.
struct GpuDescription {
  int index = 0;
  StatusOr<std::string> name = UnavailableError("not read");
  StatusOr<std::string> architecture = UnavailableError("not read");
  StatusOr<std::string> uuid = UnavailableError("not read");
  StatusOr<PowerLimitConstraints> constraints_mw = UnavailableError("not read");
  StatusOr<uint32_t> default_power_limit_mw = UnavailableError("not read");
  StatusOr<uint32_t> power_limit_mw = UnavailableError("not read");
  StatusOr<uint32_t> enforced_power_limit_mw = UnavailableError("not read");
  StatusOr<bool> persistence_mode = UnavailableError("not read");
  // SupportedGraphicsClocksMhz(), highest first.
  StatusOr<std::vector<uint32_t>> graphics_clocks_mhz = UnavailableError("not read");
  // WorkloadPowerProfiles(): kNotSupported where the driver offers none.
  StatusOr<std::vector<WorkloadPowerProfile>> workload_power_profiles =
      UnavailableError("not read");
  // The result of one TotalEnergyMj() read: OK when the GPU has an energy
  // counter, kNotSupported before Volta, another error when the read failed.
  Status energy_counter;
};

// One RAPL zone (a socket's package or its DRAM).
struct CpuZoneDescription {
  int socket = 0;
  // "package" or "dram".
  std::string kind;
  // The zone directory.
  std::string path;
  // OK when energy_uj can be read; else why not (kPermissionDenied explains
  // the Linux 5.10 restriction).
  Status readable;
};

struct EnvironmentDescription {
  bool dry_run = false;
  // Every GPU backend compiled in (see DescribeGpuBackends).
  std::vector<GpuBackendDescription> gpu_backends;
  // Why OpenGpus failed (OK when it worked, even with zero GPUs).
  Status gpus_status;
  std::vector<GpuDescription> gpus;
  std::string powercap_root;
  // Why the RAPL zones could not be listed (OK otherwise, even with none).
  Status cpus_status;
  std::vector<CpuZoneDescription> cpu_zones;

  // True when at least one GPU backend's library loaded.
  bool AnyGpuBackendLoaded() const;
  // True when there is neither a GPU nor a RAPL zone.
  bool NothingToMeasure() const { return gpus.empty() && cpu_zones.empty(); }
};

struct EnvironmentOptions {
  // Where the GPU backends look and which GPUs are visible. Default: the
  // process environment.
  GpuOptions gpus;
  // The powercap sysfs root. Default: /sys/class/powercap.
  std::string powercap_root = "/sys/class/powercap";
};

// Reads everything; never fails as a whole (what is missing is recorded).
// Changes no device state.
EnvironmentDescription DescribeEnvironment(const EnvironmentOptions& options = {});

// Human-readable report, power in W. Ends with a clear statement when there
// is nothing to measure.
void WriteEnvironmentText(const EnvironmentDescription& env, std::ostream& out);

// The same as a JSON document (power in W, null for what could not be read,
// with the reason under "errors"): {"dry_run", "gpu_backends": [{"name",
// "available", "versions": {component: version}, "error"}], "gpus_error",
// "gpus": [...], "cpus": {...}, "nothing_to_measure"}. Each GPU has
// "graphics_clocks_mhz" (list, highest first, or null) and
// "workload_power_profiles" ([{"id", "name", "priority"}], or null where the
// driver offers none).
std::string EnvironmentToJson(const EnvironmentDescription& env);

}  // namespace zeus

#endif  // ZEUS_DEVICE_ENVIRONMENT_H_
