// DryRunGpu: ZEUS_DRY_RUN for any Gpu, in one place. While ZEUS_DRY_RUN is
// set (read at every call), the setters check what they can (a power limit
// against the GPU's constraints when it reports them, a locked range's order),
// log the change they would make and leave the device, and any daemon the
// inner Gpu relays to, untouched. Otherwise every call goes to the inner Gpu.
//
// Thread-safety: as the inner Gpu.

#ifndef ZEUS_SRC_DEVICE_DRY_RUN_GPU_H_
#define ZEUS_SRC_DEVICE_DRY_RUN_GPU_H_

#include <cstdint>
#include <memory>
#include <string>

#include "zeus/device/gpu.h"
#include "zeus/status.h"

#include "src/device/gpu_decorator.h"

namespace zeus {

class DryRunGpu final : public GpuDecorator {
 public:
  // `context` names the GPU in logs and errors, e.g. "GPU 0 (NVML index 2)".
  DryRunGpu(std::unique_ptr<Gpu> inner, std::string context);

  Status SetPowerLimitMw(uint32_t power_limit_mw) override;
  Status SetPersistenceMode(bool enabled) override;
  Status SetGpuLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz) override;
  Status ResetGpuLockedClocks() override;
  Status SetMemoryLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz) override;
  Status ResetMemoryLockedClocks() override;

 private:
  // Logs locking (or unlocking) the graphics or memory clocks.
  Status LogLockedClocks(bool memory, bool lock, uint32_t min_mhz, uint32_t max_mhz);

  const std::string context_;
};

}  // namespace zeus

#endif  // ZEUS_SRC_DEVICE_DRY_RUN_GPU_H_
