#include <cstdint>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "zeus/device/gpu.h"

namespace zeus {

Status UnlockClocks(Gpu& gpu, bool memory) {
  const char* domain = memory ? "memory" : "graphics";
  Status reset = memory ? gpu.ResetMemoryLockedClocks() : gpu.ResetGpuLockedClocks();
  if (reset.ok() || reset.code() != StatusCode::kNotSupported) return reset;
  StatusOr<std::vector<uint32_t>> levels =
      memory ? gpu.SupportedMemoryClocksMhz() : gpu.SupportedGraphicsClocksMhz();
  if (!levels.ok()) {
    return Status(reset.code(),
                  reset.message() + "; and the " + domain +
                      " clocks cannot be unlocked by range either: " + levels.status().message());
  }
  const uint32_t lowest = levels->back();
  const uint32_t highest = levels->front();
  spdlog::info(
      "GPU {}: unlocking the {} clocks by locking them to their whole range {}-{} MHz "
      "({})",
      gpu.index(), domain, lowest, highest, reset.message());
  return memory ? gpu.SetMemoryLockedClocksMhz(lowest, highest)
                : gpu.SetGpuLockedClocksMhz(lowest, highest);
}

}  // namespace zeus
