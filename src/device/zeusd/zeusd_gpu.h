// ZeusdGpu: a GPU whose settings the Zeus daemon changes (ZEUSD_SOCK_PATH),
// beside ZeusdCpu. Reads go to the local backend (they need no privilege);
// the setters become requests to the daemon for its GPU `daemon_index` (the
// NVML index: CUDA_VISIBLE_DEVICES is honoured), which leases each change to
// this process and puts it back when the process ends.
//
// Thread-safety: as the local Gpu; each request uses its own connection.

#ifndef ZEUS_SRC_DEVICE_ZEUSD_ZEUSD_GPU_H_
#define ZEUS_SRC_DEVICE_ZEUSD_ZEUSD_GPU_H_

#include <cstdint>
#include <memory>
#include <string>

#include "zeus/device/gpu.h"
#include "zeus/status.h"

#include "src/device/gpu_decorator.h"

namespace zeus::zeusd {

class ZeusdGpu final : public GpuDecorator {
 public:
  // `context` names the GPU in errors, e.g. "GPU 0 (NVML index 2)".
  ZeusdGpu(std::unique_ptr<Gpu> local, std::string socket_path, unsigned int daemon_index,
           std::string context);

  // The daemon's error as a Status (see Request in zeusd_client.h): a GPU
  // another process holds is kFailedPrecondition naming the holder, a limit
  // outside the range kInvalidArgument naming it.
  Status SetPowerLimitMw(uint32_t power_limit_mw) override;
  Status SetPersistenceMode(bool enabled) override;
  Status SetGpuLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz) override;
  Status ResetGpuLockedClocks() override;
  Status SetMemoryLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz) override;
  Status ResetMemoryLockedClocks() override;

 private:
  Status Post(const std::string& target);
  Status LockedClocks(bool memory, bool lock, uint32_t min_mhz, uint32_t max_mhz);

  const std::string socket_path_;
  const unsigned int daemon_index_;
  const std::string context_;
};

}  // namespace zeus::zeusd

#endif  // ZEUS_SRC_DEVICE_ZEUSD_ZEUSD_GPU_H_
