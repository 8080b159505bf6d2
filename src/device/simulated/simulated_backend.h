// The simulated GpuBackend: ZEUS_FAKE_GPUS=N gives this process N
// SimulatedGpus (simulated_gpu.h) instead of its real GPUs, for trying Zeus
// on a machine without a GPU. Selected by that one setting: while it is set
// (non-empty), OpenGpus and DescribeGpuBackends use this backend and no
// other (gpu_backends.cc).
//
// Like a real backend, the GPUs honour CUDA_VISIBLE_DEVICES (indices or
// UUID prefixes of the N simulated devices), relay setters to the Zeus
// daemon when ZEUSD_SOCK_PATH is set, and are wrapped in DryRunGpu
// (ZEUS_DRY_RUN). Without either, setters change the simulated device held
// by this process: every handle of the process sees the new limit.

#ifndef ZEUS_SRC_DEVICE_SIMULATED_SIMULATED_BACKEND_H_
#define ZEUS_SRC_DEVICE_SIMULATED_SIMULATED_BACKEND_H_

#include <optional>
#include <string>

#include "src/device/gpu_backend.h"

namespace zeus::simulated {

inline constexpr char kFakeGpusEnv[] = "ZEUS_FAKE_GPUS";
// The most simulated GPUs ZEUS_FAKE_GPUS may ask for.
inline constexpr int kMaxFakeGpus = 64;

// Whether `options` select the simulated backend (ZEUS_FAKE_GPUS set and
// non-empty).
bool Selected(const GpuOptions& options);

// open: kInvalidArgument naming ZEUS_FAKE_GPUS when its value is not an
// integer in [0, kMaxFakeGpus]; kUnavailable when it is unset.
GpuBackend SimulatedBackend();

}  // namespace zeus::simulated

#endif  // ZEUS_SRC_DEVICE_SIMULATED_SIMULATED_BACKEND_H_
