// ParseDeviceIndexList and OpenSelectedDevices: the one implementation of
// --gpus/--cpus (and the C API's gpu_indices).

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "zeus/device/devices.h"
#include "zeus/util/strings.h"

namespace zeus {
namespace {

std::string JoinIndices(const std::vector<int>& indices) {
  std::string out;
  for (size_t i = 0; i < indices.size(); ++i)
    out += (i == 0 ? "" : ",") + std::to_string(indices[i]);
  return out;
}

// Keeps the devices of `all` whose index() is listed, in list order.
// `open_status` is why `all` could not be opened (OK when it was).
template <typename Device>
StatusOr<std::vector<std::unique_ptr<Device>>> Select(const std::string& list_name,
                                                      const char* what,
                                                      const std::vector<int>& indices,
                                                      std::vector<std::unique_ptr<Device>> all,
                                                      const Status& open_status) {
  for (size_t i = 0; i < indices.size(); ++i) {
    if (std::find(indices.begin(), indices.begin() + i, indices[i]) != indices.begin() + i) {
      return InvalidArgumentError(list_name + ": " + what + " " + std::to_string(indices[i]) +
                                  " is listed twice");
    }
  }
  if (!open_status.ok()) return open_status.WithContext(list_name + " " + JoinIndices(indices));
  std::vector<std::unique_ptr<Device>> out;
  for (int index : indices) {
    auto it = std::find_if(all.begin(), all.end(),
                           [index](const auto& d) { return d != nullptr && d->index() == index; });
    if (it == all.end()) {
      return InvalidArgumentError(list_name + ": no " + what + " " + std::to_string(index) +
                                  " (this machine has " + std::to_string(all.size()) + ")");
    }
    out.push_back(std::move(*it));
  }
  return out;
}

}  // namespace

StatusOr<std::vector<int>> ParseDeviceIndexList(std::string_view what, std::string_view list) {
  std::vector<int> out;
  for (const std::string& part : Split(list, ',')) {
    StatusOr<int64_t> n = ParseInt64(part);
    if (!n.ok() || *n < 0 || *n > 1'000'000) {
      return InvalidArgumentError(std::string(what) +
                                  ": expected a comma-separated list of indices, got '" +
                                  std::string(list) + "'");
    }
    out.push_back(static_cast<int>(*n));
  }
  return out;
}

std::vector<Gpu*> SelectedDevices::GpuPointers() const {
  std::vector<Gpu*> out;
  for (const auto& gpu : gpus) out.push_back(gpu.get());
  return out;
}

std::vector<Cpu*> SelectedDevices::CpuPointers() const {
  std::vector<Cpu*> out;
  for (const auto& cpu : cpus) out.push_back(cpu.get());
  return out;
}

std::vector<int> SelectedDevices::GpuIndices() const {
  std::vector<int> out;
  for (const auto& gpu : gpus) out.push_back(gpu->index());
  return out;
}

std::vector<int> SelectedDevices::CpuIndices() const {
  std::vector<int> out;
  for (const auto& cpu : cpus) out.push_back(cpu->index());
  return out;
}

StatusOr<SelectedDevices> OpenSelectedDevices(const DeviceSelection& selection) {
  SelectedDevices d;
  const bool want_gpus = !selection.gpu_indices || !selection.gpu_indices->empty();
  const bool want_cpus = !selection.cpu_indices || !selection.cpu_indices->empty();
  if (want_gpus) {
    StatusOr<std::vector<std::unique_ptr<Gpu>>> gpus = OpenGpus(selection.gpu_options);
    std::vector<std::unique_ptr<Gpu>> all;
    if (gpus.ok()) all = std::move(gpus).value();
    if (selection.gpu_indices) {
      ZEUS_ASSIGN_OR_RETURN(d.gpus, Select(selection.gpus_name, "GPU", *selection.gpu_indices,
                                           std::move(all), gpus.status()));
    } else {
      d.gpus = std::move(all);
      d.gpus_status = gpus.status();
    }
  }
  if (want_cpus) {
    StatusOr<std::vector<std::unique_ptr<Cpu>>> cpus = OpenCpus(selection.powercap_root);
    std::vector<std::unique_ptr<Cpu>> all;
    if (cpus.ok()) all = std::move(cpus).value();
    if (selection.cpu_indices) {
      ZEUS_ASSIGN_OR_RETURN(d.cpus, Select(selection.cpus_name, "CPU", *selection.cpu_indices,
                                           std::move(all), cpus.status()));
    } else {
      d.cpus = std::move(all);
      d.cpus_status = cpus.status();
    }
  }
  if (selection.require_device && d.gpus.empty() && d.cpus.empty()) {
    std::string message =
        "nothing to measure: no GPU (" +
        (d.gpus_status.ok() ? std::string("none visible") : d.gpus_status.ToString()) + ")";
    if (want_cpus) {
      message += " and no readable RAPL zone (" +
                 (d.cpus_status.ok() ? "no RAPL zone under " + selection.powercap_root
                                     : d.cpus_status.ToString()) +
                 ")";
    }
    return UnavailableError(message);
  }
  return d;
}

}  // namespace zeus
