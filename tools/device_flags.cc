#include "tools/device_flags.h"

#include <spdlog/spdlog.h>

namespace zeus::cli {

StatusOr<SelectedDevices> OpenFlagDevices(const std::string& command, const std::string& what_not,
                                          const std::string& gpus, const std::string& cpus,
                                          const std::string& powercap_root) {
  DeviceSelection selection;
  selection.gpus_name = "--gpus";
  selection.cpus_name = "--cpus";
  selection.powercap_root = powercap_root;
  if (!gpus.empty()) {
    ZEUS_ASSIGN_OR_RETURN(selection.gpu_indices, ParseDeviceIndexList("--gpus", gpus));
  }
  if (!cpus.empty()) {
    ZEUS_ASSIGN_OR_RETURN(selection.cpu_indices, ParseDeviceIndexList("--cpus", cpus));
  }
  ZEUS_ASSIGN_OR_RETURN(SelectedDevices d, OpenSelectedDevices(selection));
  if (d.gpus.empty() && !d.gpus_status.ok()) {
    spdlog::warn("zeus {}: {} GPUs: {}", command, what_not, d.gpus_status.message());
  }
  if (d.cpus.empty() && !d.cpus_status.ok()) {
    spdlog::warn("zeus {}: {} CPUs: {}", command, what_not, d.cpus_status.message());
  }
  return d;
}

}  // namespace zeus::cli
