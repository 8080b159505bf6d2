// The NVML half of devices.h: OpenGpus and GetNvmlVersions.

#include <memory>
#include <string>
#include <vector>

#include "zeus/device/devices.h"
#include "zeus/util/env.h"

#include "src/device/cuda_visible_devices.h"
#include "src/device/nvml/nvml_gpu.h"
#include "src/device/nvml/nvml_library.h"

namespace zeus {

StatusOr<std::vector<std::unique_ptr<Gpu>>> OpenGpus() { return OpenGpus(GpuOptions()); }

StatusOr<std::vector<std::unique_ptr<Gpu>>> OpenGpus(const GpuOptions& options) {
  ZEUS_ASSIGN_OR_RETURN(std::shared_ptr<const nvml::NvmlLibrary> library,
                        nvml::NvmlLibrary::Open({options.nvml_library}));
  const nvml::NvmlFunctions& fns = library->functions();

  unsigned int count = 0;
  nvmlReturn_t rc = fns.device_get_count(&count);
  if (rc != nvml::kSuccess) {
    return library->Error(library->ResolvedName("nvmlDeviceGetCount"), rc);
  }
  std::vector<nvmlDevice_t> handles(count, nullptr);
  std::vector<std::string> uuids(count);
  for (unsigned int j = 0; j < count; ++j) {
    rc = fns.device_get_handle_by_index(j, &handles[j]);
    if (rc != nvml::kSuccess) {
      return library->Error(std::string(library->ResolvedName("nvmlDeviceGetHandleByIndex")) + "(" +
                                std::to_string(j) + ")",
                            rc);
    }
    char uuid[nvml::kDeviceUuidBufferSize] = {};
    rc = fns.device_get_uuid(handles[j], uuid, sizeof(uuid));
    if (rc != nvml::kSuccess) {
      return library->Error("nvmlDeviceGetUUID(NVML index " + std::to_string(j) + ")", rc);
    }
    uuids[j] = uuid;
  }

  std::optional<std::string> visible = options.cuda_visible_devices;
  if (!visible) visible = GetEnv("CUDA_VISIBLE_DEVICES");
  ZEUS_ASSIGN_OR_RETURN(std::vector<unsigned int> order, ResolveCudaVisibleDevices(visible, uuids));

  std::vector<std::unique_ptr<Gpu>> gpus;
  gpus.reserve(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    gpus.push_back(
        std::make_unique<nvml::NvmlGpu>(library, handles[order[i]], static_cast<int>(i), order[i]));
  }
  return gpus;
}

StatusOr<NvmlVersions> GetNvmlVersions() { return GetNvmlVersions(GpuOptions()); }

StatusOr<NvmlVersions> GetNvmlVersions(const GpuOptions& options) {
  ZEUS_ASSIGN_OR_RETURN(std::shared_ptr<const nvml::NvmlLibrary> library,
                        nvml::NvmlLibrary::Open({options.nvml_library}));
  const nvml::NvmlFunctions& fns = library->functions();
  NvmlVersions versions;
  struct Query {
    nvmlSystemGetVersion_fn fn;
    const char* name;
    std::string* out;
  };
  for (const Query& query :
       {Query{fns.system_get_driver_version, "nvmlSystemGetDriverVersion", &versions.driver},
        Query{fns.system_get_nvml_version, "nvmlSystemGetNVMLVersion", &versions.nvml}}) {
    if (query.fn == nullptr) return library->MissingFunction(query.name);
    char buffer[nvml::kSystemVersionBufferSize] = {};
    nvmlReturn_t rc = query.fn(buffer, sizeof(buffer));
    if (rc != nvml::kSuccess) return library->Error(query.name, rc);
    *query.out = buffer;
  }
  return versions;
}

}  // namespace zeus
