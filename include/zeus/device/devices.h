// Factories for the devices this machine has. What a machine lacks is not an
// error of the whole call: a machine without NVIDIA's driver yields kUnavailable
// from OpenGpus (naming the library that could not be loaded), and callers
// degrade to "no GPUs".

#ifndef ZEUS_DEVICE_DEVICES_H_
#define ZEUS_DEVICE_DEVICES_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zeus/device/cpu.h"
#include "zeus/device/gpu.h"
#include "zeus/status.h"

namespace zeus {

// The GPUs visible to this process through NVML, in CUDA order: with
// CUDA_VISIBLE_DEVICES set, our index i is its i-th entry. The library path
// is $ZEUS_NVML_LIBRARY, else libnvidia-ml.so.1, else libnvidia-ml.so.
// The returned GPUs keep the NVML library loaded and initialised while any of
// them lives. kUnavailable when NVML cannot be loaded or a required symbol is
// missing; kInvalidArgument for a malformed or MIG CUDA_VISIBLE_DEVICES.
StatusOr<std::vector<std::unique_ptr<Gpu>>> OpenGpus();

// Where OpenGpus looks; the defaults read the process environment.
struct GpuOptions {
  // The NVML library to dlopen. Default (empty): $ZEUS_NVML_LIBRARY, else
  // libnvidia-ml.so.1, else libnvidia-ml.so.
  std::string nvml_library;
  // Replaces the CUDA_VISIBLE_DEVICES value. Default (nullopt): read the
  // environment; unset there means every GPU in NVML order.
  std::optional<std::string> cuda_visible_devices;
};
StatusOr<std::vector<std::unique_ptr<Gpu>>> OpenGpus(const GpuOptions& options);

// NVML's driver and library versions, e.g. {"580.159.04", "12.580.159.04"}.
struct NvmlVersions {
  std::string driver;
  std::string nvml;
};
StatusOr<NvmlVersions> GetNvmlVersions();
// The same for the library `options` names (cuda_visible_devices is unused).
StatusOr<NvmlVersions> GetNvmlVersions(const GpuOptions& options);

// One Cpu per RAPL package zone under `powercap_root` (intel-rapl:N), with its
// DRAM subzone when present. Empty when the tree has no RAPL zones;
// kPermissionDenied (explaining that energy_uj is root-only since Linux 5.10)
// when the zones exist but cannot be read.
StatusOr<std::vector<std::unique_ptr<Cpu>>> OpenCpus(
    const std::string& powercap_root = "/sys/class/powercap");

}  // namespace zeus

#endif  // ZEUS_DEVICE_DEVICES_H_
