// HIP_VISIBLE_DEVICES (else CUDA_VISIBLE_DEVICES): which AMD SMI GPUs this
// process sees, in HIP order. Pure, so every case is testable without a GPU.

#ifndef ZEUS_SRC_DEVICE_AMDSMI_HIP_VISIBLE_DEVICES_H_
#define ZEUS_SRC_DEVICE_AMDSMI_HIP_VISIBLE_DEVICES_H_

#include <optional>
#include <string>
#include <vector>

#include "zeus/status.h"

namespace zeus::amdsmi {

// Our index i -> AMD SMI index, for `device_count` AMD SMI GPUs. As the
// original Zeus does, `hip_visible_devices` wins when set, else
// `cuda_visible_devices` (HIP honours both); both unset (nullopt) means every
// GPU in AMD SMI order. The value is a comma-separated list of indices
// (blanks around entries ignored). kInvalidArgument naming the variable and
// the entry for: a set but empty value, an entry that is not a non-negative
// integer (UUIDs are not supported for AMD GPUs), an index >= device_count,
// or an index listed twice.
StatusOr<std::vector<unsigned int>> ResolveHipVisibleDevices(
    const std::optional<std::string>& hip_visible_devices,
    const std::optional<std::string>& cuda_visible_devices, unsigned int device_count);

}  // namespace zeus::amdsmi

#endif  // ZEUS_SRC_DEVICE_AMDSMI_HIP_VISIBLE_DEVICES_H_
