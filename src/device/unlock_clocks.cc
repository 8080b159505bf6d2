#include <cstdint>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "zeus/device/gpu.h"

namespace zeus {

Status UnlockClocks(Gpu& gpu, bool memory) {
  if (gpu.CanResetOneClockDomain()) {
    return memory ? gpu.ResetMemoryLockedClocks() : gpu.ResetGpuLockedClocks();
  }
  const char* domain = memory ? "memory" : "graphics";
  StatusOr<std::vector<uint32_t>> levels =
      memory ? gpu.SupportedMemoryClocksMhz() : gpu.SupportedGraphicsClocksMhz();
  if (!levels.ok()) {
    return levels.status().WithContext("GPU " + std::to_string(gpu.index()) + ": unlocking the " +
                                       domain +
                                       " clocks (this backend resets no single clock domain, so "
                                       "they are unlocked by locking them to their whole range)");
  }
  const uint32_t lowest = levels->back();
  const uint32_t highest = levels->front();
  spdlog::info(
      "GPU {}: unlocking the {} clocks by locking them to their whole range {}-{} MHz (the "
      "backend resets no single clock domain)",
      gpu.index(), domain, lowest, highest);
  return memory ? gpu.SetMemoryLockedClocksMhz(lowest, highest)
                : gpu.SetGpuLockedClocksMhz(lowest, highest);
}

}  // namespace zeus
