// The NVML GpuBackend: NVIDIA GPUs through libnvidia-ml, in CUDA order.

#ifndef ZEUS_SRC_DEVICE_NVML_NVML_BACKEND_H_
#define ZEUS_SRC_DEVICE_NVML_NVML_BACKEND_H_

#include "src/device/gpu_backend.h"

namespace zeus::nvml {

// Reads ZEUS_NVML_LIBRARY and CUDA_VISIBLE_DEVICES through GpuOptions::GetEnv
// (see devices.h). kUnavailable from open when the library cannot be loaded
// or lacks a required symbol.
GpuBackend NvmlBackend();

}  // namespace zeus::nvml

#endif  // ZEUS_SRC_DEVICE_NVML_NVML_BACKEND_H_
