#include "src/device/amdsmi/hip_visible_devices.h"

#include <cctype>
#include <string_view>

namespace zeus::amdsmi {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

StatusOr<std::vector<unsigned int>> ResolveHipVisibleDevices(
    const std::optional<std::string>& hip_visible_devices,
    const std::optional<std::string>& cuda_visible_devices, unsigned int device_count) {
  std::vector<unsigned int> order;
  const char* variable = hip_visible_devices ? "HIP_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES";
  const std::optional<std::string>& value =
      hip_visible_devices ? hip_visible_devices : cuda_visible_devices;
  if (!value) {
    for (unsigned int i = 0; i < device_count; ++i) order.push_back(i);
    return order;
  }
  const std::string context = std::string(variable) + "=\"" + *value + "\"";
  if (Trim(*value).empty()) {
    return InvalidArgumentError(context +
                                ": set but empty; unset it or list AMD GPU indices, e.g. \"0,1\"");
  }
  std::string_view rest = *value;
  for (size_t position = 1;; ++position) {
    const size_t comma = rest.find(',');
    const std::string_view entry = Trim(rest.substr(0, comma));
    const std::string where =
        context + ": entry " + std::to_string(position) + " \"" + std::string(entry) + "\"";
    if (entry.empty()) return InvalidArgumentError(where + " is empty");
    unsigned long long index = 0;  // NOLINT(runtime/int)
    for (char c : entry) {
      if (!std::isdigit(static_cast<unsigned char>(c)) || index > 1'000'000) {
        return InvalidArgumentError(where +
                                    " is not a GPU index (AMD GPUs are named by index only)");
      }
      index = index * 10 + static_cast<unsigned>(c - '0');
    }
    if (index >= device_count) {
      return InvalidArgumentError(where + ": no such AMD GPU (AMD SMI found " +
                                  std::to_string(device_count) + ")");
    }
    for (unsigned int seen : order) {
      if (seen == index) return InvalidArgumentError(where + " is listed twice");
    }
    order.push_back(static_cast<unsigned int>(index));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return order;
}

}  // namespace zeus::amdsmi
