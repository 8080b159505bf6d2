#include "src/device/zeusd/zeusd_gpu.h"

#include <utility>

#include "src/device/zeusd/zeusd_api.h"
#include "src/device/zeusd/zeusd_client.h"

namespace zeus::zeusd {

ZeusdGpu::ZeusdGpu(std::unique_ptr<Gpu> local, std::string socket_path, unsigned int daemon_index,
                   std::string context)
    : GpuDecorator(std::move(local)),
      socket_path_(std::move(socket_path)),
      daemon_index_(daemon_index),
      context_(std::move(context)) {}

Status ZeusdGpu::Post(const std::string& target) {
  return Request(socket_path_, "POST", target).status().WithContext(context_);
}

Status ZeusdGpu::SetPowerLimitMw(uint32_t power_limit_mw) {
  return Post(SetPowerLimitTarget(daemon_index_, power_limit_mw));
}

Status ZeusdGpu::SetPersistenceMode(bool enabled) {
  return Post(SetPersistenceModeTarget(daemon_index_, enabled));
}

Status ZeusdGpu::LockedClocks(bool memory, bool lock, uint32_t min_mhz, uint32_t max_mhz) {
  if (lock && min_mhz > max_mhz) {
    return InvalidArgumentError(context_ + ": locked " + (memory ? "memory" : "graphics") +
                                " clocks " + std::to_string(min_mhz) + "-" +
                                std::to_string(max_mhz) + " MHz: min above max");
  }
  if (!lock && !inner().CanResetOneClockDomain()) {
    // The daemon's backend would refuse it too (the same vendor's).
    return memory ? inner().ResetMemoryLockedClocks() : inner().ResetGpuLockedClocks();
  }
  return Post(LockedClocksTarget(daemon_index_, memory, lock, min_mhz, max_mhz));
}

Status ZeusdGpu::SetGpuLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz) {
  return LockedClocks(false, true, min_mhz, max_mhz);
}
Status ZeusdGpu::ResetGpuLockedClocks() { return LockedClocks(false, false, 0, 0); }
Status ZeusdGpu::SetMemoryLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz) {
  return LockedClocks(true, true, min_mhz, max_mhz);
}
Status ZeusdGpu::ResetMemoryLockedClocks() { return LockedClocks(true, false, 0, 0); }

}  // namespace zeus::zeusd
