// GpuBackend: one vendor's GPU management library behind OpenGpus and
// DescribeGpuBackends. A new vendor adds a directory beside nvml/ and amdsmi/
// with a function returning its GpuBackend, and one line in GpuBackends().
//
// Thread-safety: backends are stateless; everything they open is owned by
// the Gpus they return.

#ifndef ZEUS_SRC_DEVICE_GPU_BACKEND_H_
#define ZEUS_SRC_DEVICE_GPU_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "zeus/device/devices.h"
#include "zeus/device/gpu.h"
#include "zeus/status.h"

namespace zeus {

struct GpuBackend {
  // Short name, e.g. "nvml".
  const char* name;
  // The name for people, e.g. "NVML".
  const char* display_name;
  // Opens this vendor's GPUs visible to this process, in its runtime's order,
  // numbering them (Gpu::index()) from `first_index`. kUnavailable when the
  // vendor's library is not present.
  StatusOr<std::vector<std::unique_ptr<Gpu>>> (*open)(const GpuOptions& options, int first_index);
  // Loads the library and reads its versions; never fails as a whole.
  GpuBackendDescription (*describe)(const GpuOptions& options);
  // How many GPUs `open` would return, without opening them (for
  // DescribeGpuBackends when opening is costly); kUnavailable like `open`.
  // Null: DescribeGpuBackends calls `open` instead. Default: null.
  StatusOr<int> (*count)(const GpuOptions& options) = nullptr;
};

// The backends compiled in, in the order OpenGpus tries them (registered
// explicitly here, not by static constructors): NVML, then AMD SMI. OpenGpus
// uses the first that finds GPUs and no other (one vendor per process).
// While ZEUS_FAKE_GPUS is set, OpenGpus and DescribeGpuBackends use the
// simulated backend (simulated/simulated_backend.h) instead of these.
const std::vector<GpuBackend>& GpuBackends();

// OpenGpus, also naming in `*backend` (when not null) the backend whose GPUs
// it returns ("nvml", "amdsmi"); "" when it returns no GPU or fails. For
// callers that must tell vendors apart (the C ABI's zeus_gpus_json).
StatusOr<std::vector<std::unique_ptr<Gpu>>> OpenGpusFrom(const GpuOptions& options,
                                                         std::string* backend);

}  // namespace zeus

#endif  // ZEUS_SRC_DEVICE_GPU_BACKEND_H_
