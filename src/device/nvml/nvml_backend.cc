#include "src/device/nvml/nvml_backend.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/device/cuda_visible_devices.h"
#include "src/device/dry_run_gpu.h"
#include "src/device/nvml/nvml_gpu.h"
#include "src/device/nvml/nvml_library.h"
#include "src/device/zeusd/zeusd_client.h"
#include "src/device/zeusd/zeusd_gpu.h"

namespace zeus::nvml {
namespace {

StatusOr<std::shared_ptr<const NvmlLibrary>> OpenLibrary(const GpuOptions& options) {
  return NvmlLibrary::Open({options.GetEnv("ZEUS_NVML_LIBRARY").value_or("")});
}

StatusOr<std::vector<std::unique_ptr<Gpu>>> OpenNvmlGpus(const GpuOptions& options,
                                                         int first_index) {
  ZEUS_ASSIGN_OR_RETURN(std::shared_ptr<const NvmlLibrary> library, OpenLibrary(options));
  const NvmlFunctions& fns = library->functions();

  unsigned int count = 0;
  nvmlReturn_t rc = fns.device_get_count(&count);
  if (rc != kSuccess) return library->Error(library->ResolvedName("nvmlDeviceGetCount"), rc);
  std::vector<nvmlDevice_t> handles(count, nullptr);
  std::vector<std::string> uuids(count);
  for (unsigned int j = 0; j < count; ++j) {
    rc = fns.device_get_handle_by_index(j, &handles[j]);
    if (rc != kSuccess) {
      return library->Error(std::string(library->ResolvedName("nvmlDeviceGetHandleByIndex")) + "(" +
                                std::to_string(j) + ")",
                            rc);
    }
    char uuid[kDeviceUuidBufferSize] = {};
    rc = fns.device_get_uuid(handles[j], uuid, sizeof(uuid));
    if (rc != kSuccess) {
      return library->Error("nvmlDeviceGetUUID(NVML index " + std::to_string(j) + ")", rc);
    }
    uuids[j] = uuid;
  }

  ZEUS_ASSIGN_OR_RETURN(std::vector<unsigned int> order,
                        ResolveCudaVisibleDevices(options.GetEnv("CUDA_VISIBLE_DEVICES"), uuids));
  // ZEUSD_SOCK_PATH (set and non-empty): setters go through the Zeus daemon.
  std::optional<std::string> zeusd_socket = options.GetEnv(zeusd::kSockPathEnv);
  if (zeusd_socket && zeusd_socket->empty()) zeusd_socket.reset();
  std::vector<std::unique_ptr<Gpu>> gpus;
  gpus.reserve(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const int index = first_index + static_cast<int>(i);
    const std::string context = NvmlGpuContext(index, order[i]);
    std::unique_ptr<Gpu> gpu =
        std::make_unique<NvmlGpu>(library, handles[order[i]], index, order[i]);
    if (zeusd_socket) {
      gpu = std::make_unique<zeusd::ZeusdGpu>(std::move(gpu), *zeusd_socket, order[i], context);
    }
    // Outermost: a dry run touches neither the device nor the daemon.
    gpus.push_back(std::make_unique<DryRunGpu>(std::move(gpu), context));
  }
  return gpus;
}

GpuBackendDescription DescribeNvml(const GpuOptions& options) {
  GpuBackendDescription d;
  d.name = "nvml";
  d.display_name = "NVML";
  StatusOr<std::shared_ptr<const NvmlLibrary>> library = OpenLibrary(options);
  if (!library.ok()) {
    d.status = library.status();
    return d;
  }
  d.loaded = true;
  const NvmlFunctions& fns = (*library)->functions();
  struct Query {
    nvmlSystemGetVersion_fn fn;
    const char* function;
    const char* component;
  };
  std::vector<std::pair<std::string, std::string>> versions;
  for (const Query& query :
       {Query{fns.system_get_driver_version, "nvmlSystemGetDriverVersion", "driver"},
        Query{fns.system_get_nvml_version, "nvmlSystemGetNVMLVersion", "nvml"}}) {
    if (query.fn == nullptr) {
      d.status = (*library)->MissingFunction(query.function);
      return d;
    }
    char buffer[kSystemVersionBufferSize] = {};
    nvmlReturn_t rc = query.fn(buffer, sizeof(buffer));
    if (rc != kSuccess) {
      d.status = (*library)->Error(query.function, rc);
      return d;
    }
    versions.emplace_back(query.component, buffer);
  }
  d.versions = std::move(versions);
  return d;
}

}  // namespace

GpuBackend NvmlBackend() { return GpuBackend{"nvml", "NVML", &OpenNvmlGpus, &DescribeNvml}; }

}  // namespace zeus::nvml
