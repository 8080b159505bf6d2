// The --gpus/--cpus flags shared by commands that measure devices.

#ifndef ZEUS_TOOLS_DEVICE_FLAGS_H_
#define ZEUS_TOOLS_DEVICE_FLAGS_H_

#include <string>

#include "zeus/device/devices.h"
#include "zeus/status.h"

namespace zeus::cli {

// Opens the devices that `gpus` and `cpus` (index lists as given to --gpus
// and --cpus; empty: every one) select, with RAPL under `powercap_root`.
// When one kind cannot be opened but the other can, logs a warning such as
// "zeus monitor: not measuring GPUs: WHY" (`command`, `what_not` = "not
// measuring"). kInvalidArgument naming the flag for a bad list; the error of
// OpenSelectedDevices when nothing can be opened.
StatusOr<SelectedDevices> OpenFlagDevices(const std::string& command, const std::string& what_not,
                                          const std::string& gpus, const std::string& cpus,
                                          const std::string& powercap_root);

}  // namespace zeus::cli

#endif  // ZEUS_TOOLS_DEVICE_FLAGS_H_
