// OpenGpus and DescribeGpuBackends over every backend compiled in.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "zeus/device/devices.h"
#include "zeus/util/env.h"

#include "src/device/amdsmi/amdsmi_backend.h"
#include "src/device/gpu_backend.h"
#include "src/device/nvml/nvml_backend.h"
#include "src/device/simulated/simulated_backend.h"

namespace zeus {

const std::vector<GpuBackend>& GpuBackends() {
  static const std::vector<GpuBackend>* const backends =
      new std::vector<GpuBackend>{nvml::NvmlBackend(), amdsmi::AmdsmiBackend()};
  return *backends;
}

namespace {

// The backends OpenGpus and DescribeGpuBackends consult: the simulated one
// alone while ZEUS_FAKE_GPUS selects it, else the real ones.
const std::vector<GpuBackend>& ActiveBackends(const GpuOptions& options) {
  static const std::vector<GpuBackend>* const simulated =
      new std::vector<GpuBackend>{simulated::SimulatedBackend()};
  return simulated::Selected(options) ? *simulated : GpuBackends();
}

}  // namespace

std::optional<std::string> GpuOptions::GetEnv(const std::string& name) const {
  auto it = environment.find(name);
  if (it != environment.end()) return it->second;
  return zeus::GetEnv(name.c_str());
}

StatusOr<std::vector<std::unique_ptr<Gpu>>> OpenGpus(const GpuOptions& options) {
  return OpenGpusFrom(options, nullptr);
}

StatusOr<std::vector<std::unique_ptr<Gpu>>> OpenGpusFrom(const GpuOptions& options,
                                                         std::string* backend_name) {
  if (backend_name != nullptr) backend_name->clear();
  // A ZEUS_DRY_RUN that is neither true nor false is refused before any GPU
  // is opened (IsDryRun would take it as true).
  ZEUS_RETURN_IF_ERROR(DryRunSetting().status());
  std::vector<Status> absent;
  bool any_present = false;
  const std::vector<GpuBackend>& backends = ActiveBackends(options);
  for (const GpuBackend& backend : backends) {
    StatusOr<std::vector<std::unique_ptr<Gpu>>> opened = backend.open(options, 0);
    if (!opened.ok()) {
      if (opened.status().code() != StatusCode::kUnavailable) return opened.status();
      absent.push_back(opened.status());
      continue;
    }
    any_present = true;
    // One vendor per process: the first backend that finds GPUs is used.
    if (!opened->empty()) {
      if (backend_name != nullptr) *backend_name = backend.name;
      return opened;
    }
  }
  if (any_present) return std::vector<std::unique_ptr<Gpu>>{};
  if (absent.size() == 1) return absent[0];
  std::string reasons;
  for (size_t i = 0; i < absent.size(); ++i) {
    reasons += (i == 0 ? "" : "; ") + std::string(backends[i].display_name) + ": " +
               std::string(absent[i].message());
  }
  return UnavailableError("no GPU library found: " + reasons);
}

std::vector<GpuBackendDescription> DescribeGpuBackends(const GpuOptions& options) {
  std::vector<GpuBackendDescription> out;
  std::string used;  // "NVML found 2 GPUs" once a backend is chosen.
  for (const GpuBackend& backend : ActiveBackends(options)) {
    GpuBackendDescription d = backend.describe(options);
    if (d.loaded && !used.empty()) {
      d.selection = "not used: " + used + " first (one GPU vendor per process)";
    } else if (d.loaded) {
      StatusOr<int> count = 0;
      if (backend.count != nullptr) {
        count = backend.count(options);
      } else {
        StatusOr<std::vector<std::unique_ptr<Gpu>>> opened = backend.open(options, 0);
        count = opened.ok() ? StatusOr<int>(static_cast<int>(opened->size()))
                            : StatusOr<int>(opened.status());
      }
      if (!count.ok()) {
        d.selection = "not used: " + std::string(count.status().message());
      } else if (*count == 0) {
        d.selection = "no GPUs";
      } else {
        d.in_use = true;
        d.selection = "in use: " + std::to_string(*count) + " GPU" + (*count == 1 ? "" : "s");
        used = std::string(backend.display_name) + " found " + std::to_string(*count) + " GPU" +
               (*count == 1 ? "" : "s");
      }
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace zeus
