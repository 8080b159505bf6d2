// The AMD SMI GpuBackend: AMD Instinct GPUs through libamd_smi, in HIP order.

#ifndef ZEUS_SRC_DEVICE_AMDSMI_AMDSMI_BACKEND_H_
#define ZEUS_SRC_DEVICE_AMDSMI_AMDSMI_BACKEND_H_

#include <chrono>
#include <vector>

#include "src/device/amdsmi/amdsmi_gpu.h"
#include "src/device/gpu_backend.h"

namespace zeus::amdsmi {

// The variable overriding the library to dlopen (as ZEUS_NVML_LIBRARY).
inline constexpr char kLibraryEnv[] = "ZEUS_AMDSMI_LIBRARY";
// The length of the energy counter check at open, in ms; "0" skips the check
// and trusts every counter. Default: 500 (the original Zeus's interval).
inline constexpr char kEnergyCheckMsEnv[] = "ZEUS_AMDSMI_ENERGY_CHECK_MS";

// The original Zeus's check of AMD energy counters, over all `gpus` at once:
// reads each GPU's power and counter, waits `interval`, reads the counter
// again, and compares the counter's energy with power x elapsed time. A GPU
// whose counter cannot be read, whose power reads as zero (nothing to compare
// with), or whose two energies differ by a factor of 10 or more gets its
// counter disabled (TotalEnergyMj then answers kNotSupported saying why;
// callers integrate PowerMw instead), with a warning in the log. Known AMD SMI
// issue: some GPUs' counters run at the wrong rate.
void CheckEnergyCounters(const std::vector<AmdsmiGpu*>& gpus, std::chrono::milliseconds interval);

// Reads ZEUS_AMDSMI_LIBRARY, ROCM_PATH, HIP_VISIBLE_DEVICES,
// CUDA_VISIBLE_DEVICES and ZEUS_AMDSMI_ENERGY_CHECK_MS through
// GpuOptions::GetEnv (see devices.h). kUnavailable from open when the library
// cannot be loaded or lacks a required symbol; kInvalidArgument for a
// malformed visible-devices list or check interval.
GpuBackend AmdsmiBackend();

}  // namespace zeus::amdsmi

#endif  // ZEUS_SRC_DEVICE_AMDSMI_AMDSMI_BACKEND_H_
