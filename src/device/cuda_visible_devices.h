// CUDA_VISIBLE_DEVICES: which NVML devices this process sees, in CUDA order.
// Pure functions, so every case is testable without a GPU.

#ifndef ZEUS_SRC_DEVICE_CUDA_VISIBLE_DEVICES_H_
#define ZEUS_SRC_DEVICE_CUDA_VISIBLE_DEVICES_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zeus/status.h"

namespace zeus {

// One entry of the list: an NVML index or a "GPU-<hex>" UUID prefix.
struct VisibleDeviceEntry {
  // Set for an integer entry.
  std::optional<unsigned int> nvml_index;
  // Set (lower-case, with its "GPU-" prefix) for a UUID entry.
  std::string uuid_prefix;
};

// Parses a comma-separated CUDA_VISIBLE_DEVICES value. Blanks around entries
// are ignored; "" (or only blanks) gives no devices. As in CUDA, a negative
// integer ends the list ("-1" hides every GPU). kInvalidArgument naming the
// entry and its 1-based position for: an empty entry ("0,,1"), a MIG entry
// ("MIG-..."), a non-integer that is not "GPU-<hex>", a duplicate.
StatusOr<std::vector<VisibleDeviceEntry>> ParseCudaVisibleDevices(std::string_view value);

// Integer entries are taken as NVML indices (PCI bus order). CUDA numbers
// devices the same way with CUDA_DEVICE_ORDER=PCI_BUS_ID, and on machines of
// identical GPUs also by default (fastest first, ties in PCI order); on mixed
// machines use UUIDs.
//
// Our index i -> NVML index, for NVML devices whose UUIDs are `nvml_uuids`
// (index j holds NVML device j's "GPU-..." UUID). `value` nullopt (variable
// unset) means every device in NVML order. UUID entries match the unique
// device whose UUID starts with them (case-insensitive). kInvalidArgument for
// parse errors, an index >= nvml_uuids.size(), a UUID prefix matching no
// device or several, or two entries naming the same device.
StatusOr<std::vector<unsigned int>> ResolveCudaVisibleDevices(
    const std::optional<std::string>& value, const std::vector<std::string>& nvml_uuids);

}  // namespace zeus

#endif  // ZEUS_SRC_DEVICE_CUDA_VISIBLE_DEVICES_H_
