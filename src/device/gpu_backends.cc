// OpenGpus and DescribeGpuBackends over every backend compiled in.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "zeus/device/devices.h"
#include "zeus/util/env.h"

#include "src/device/gpu_backend.h"
#include "src/device/nvml/nvml_backend.h"

namespace zeus {

const std::vector<GpuBackend>& GpuBackends() {
  static const std::vector<GpuBackend>* const backends =
      new std::vector<GpuBackend>{nvml::NvmlBackend()};
  return *backends;
}

std::optional<std::string> GpuOptions::GetEnv(const std::string& name) const {
  auto it = environment.find(name);
  if (it != environment.end()) return it->second;
  return zeus::GetEnv(name.c_str());
}

StatusOr<std::vector<std::unique_ptr<Gpu>>> OpenGpus(const GpuOptions& options) {
  std::vector<std::unique_ptr<Gpu>> gpus;
  std::vector<Status> absent;
  for (const GpuBackend& backend : GpuBackends()) {
    StatusOr<std::vector<std::unique_ptr<Gpu>>> opened =
        backend.open(options, static_cast<int>(gpus.size()));
    if (!opened.ok()) {
      if (opened.status().code() != StatusCode::kUnavailable) return opened.status();
      absent.push_back(opened.status());
      continue;
    }
    for (std::unique_ptr<Gpu>& gpu : *opened) gpus.push_back(std::move(gpu));
  }
  if (absent.size() < GpuBackends().size()) return gpus;
  if (absent.size() == 1) return absent[0];
  std::string reasons;
  for (size_t i = 0; i < absent.size(); ++i) {
    reasons += (i == 0 ? "" : "; ") + std::string(GpuBackends()[i].display_name) + ": " +
               std::string(absent[i].message());
  }
  return UnavailableError("no GPU library found: " + reasons);
}

std::vector<GpuBackendDescription> DescribeGpuBackends(const GpuOptions& options) {
  std::vector<GpuBackendDescription> out;
  for (const GpuBackend& backend : GpuBackends()) out.push_back(backend.describe(options));
  return out;
}

}  // namespace zeus
