// AmdsmiGpu: a Gpu backed by one AMD SMI processor handle (an AMD Instinct
// GPU, or one die of an MI250).
//
// Thread-safety: every method may be called concurrently (AMD SMI locks
// internally; the only mutable member is set before the GPU is shared).

#ifndef ZEUS_SRC_DEVICE_AMDSMI_AMDSMI_GPU_H_
#define ZEUS_SRC_DEVICE_AMDSMI_AMDSMI_GPU_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zeus/device/gpu.h"
#include "zeus/status.h"

#include "src/device/amdsmi/amdsmi_api.h"
#include "src/device/amdsmi/amdsmi_library.h"

namespace zeus::amdsmi {

// uW (AMD SMI's power cap unit) to mW, rounding down. kInternal naming
// `what` when the result does not fit in uint32_t.
StatusOr<uint32_t> UwToMw(uint64_t power_uw, std::string_view what);
// W (AMD SMI's power reading unit) to mW. kInternal naming `what` when the
// result does not fit in uint32_t.
StatusOr<uint32_t> WToMw(uint64_t power_w, std::string_view what);
// An energy counter reading in mJ: `counter` ticks of `resolution_uj` uJ,
// rounded down. kInternal when the resolution is not a finite positive number
// or the result does not fit in uint64_t.
StatusOr<uint64_t> EnergyCounterToMj(uint64_t counter, float resolution_uj);

class AmdsmiGpu final : public Gpu {
 public:
  // `index` is this process's index (after HIP_VISIBLE_DEVICES), `amdsmi_index`
  // the GPU's position in AMD SMI's order. The GPU keeps `library` loaded and
  // initialised.
  AmdsmiGpu(std::shared_ptr<const AmdsmiLibrary> library, amdsmi_processor_handle handle, int index,
            unsigned int amdsmi_index);

  int index() const override { return index_; }
  unsigned int amdsmi_index() const { return amdsmi_index_; }

  // amdsmi_get_gpu_asic_info's market name, e.g. "AMD Instinct MI300X".
  StatusOr<std::string> Name() override;
  // kNotSupported: AMD SMI names no architecture.
  StatusOr<std::string> Architecture() override;
  // amdsmi_get_gpu_device_uuid, e.g. "e4ff74a1-0000-1000-80c8-a3b9d1b2c3d4".
  StatusOr<std::string> Uuid() override;
  // amdsmi_get_power_cap_info (sensor 0), uW rounded down to mW.
  StatusOr<PowerLimitConstraints> PowerLimitConstraintsMw() override;
  StatusOr<uint32_t> DefaultPowerLimitMw() override;
  StatusOr<uint32_t> PowerLimitMw() override;
  // AMD SMI has one power cap: the same value as PowerLimitMw.
  StatusOr<uint32_t> EnforcedPowerLimitMw() override;
  // amdsmi_set_power_cap (sensor 0) in uW. kInvalidArgument outside
  // PowerLimitConstraintsMw(). ZEUS_DRY_RUN is the backend's DryRunGpu
  // around this GPU.
  Status SetPowerLimitMw(uint32_t power_limit_mw) override;
  // kNotSupported: AMD GPUs have no persistence mode (the amdgpu driver stays
  // loaded). SetPersistenceMode is kNotSupported even in dry run.
  StatusOr<bool> PersistenceMode() override;
  Status SetPersistenceMode(bool enabled) override;
  // amdsmi_get_energy_count: accumulator x resolution (uJ) in mJ since the
  // driver loaded. kNotSupported, saying why, when the check at open
  // disabled the counter (see DisableEnergyCounter).
  StatusOr<uint64_t> TotalEnergyMj() override;
  // The counter without the check at open's verdict.
  StatusOr<uint64_t> ReadEnergyCounterMj();
  // AMD documents no refresh period for the energy accumulator; we assume
  // NVML's 100 ms (conservative: windows shorter than this integrate power).
  // Not measured on AMD hardware.
  std::chrono::nanoseconds EnergyCounterUpdatePeriod() const override {
    return std::chrono::milliseconds(100);
  }
  // amdsmi_get_power_info: current_socket_power (MI300 and newer), else
  // average_socket_power (MI200 and older), in W (AMD SMI's resolution) as
  // mW. kNotSupported when the GPU reports neither (the odd die of an MI250).
  StatusOr<uint32_t> PowerMw() override;
  // kDeviceInstant: PowerMw(). kDeviceAverage: amdsmi_get_power_info's
  // average_socket_power (the driver's average, in W, as mW); kNotSupported
  // when the GPU does not report it (MI300 and newer report only the current
  // socket power). kMemoryAverage: kNotSupported (AMD SMI reads no memory
  // power).
  StatusOr<uint32_t> DomainPowerMw(PowerDomain domain) override;

  // The PCI address as "dddd:bb:dd.f" in lower-case hex
  // (amdsmi_get_gpu_device_bdf).
  StatusOr<std::string> PciBusId() override;
  // The hotspot (junction) temperature in degrees Celsius
  // (amdsmi_get_temp_metric).
  StatusOr<int32_t> TemperatureC() override;

  // The memory clock's DPM levels (amdsmi_get_clk_freq, AMDSMI_CLK_TYPE_MEM)
  // in MHz (AMD SMI reports Hz; rounded to the nearest MHz), distinct,
  // highest first. kNotSupported when the library lacks the function or
  // lists no level; kInternal when it claims more levels than its struct
  // holds.
  StatusOr<std::vector<uint32_t>> SupportedMemoryClocksMhz() override;
  // The graphics clock's DPM levels (AMDSMI_CLK_TYPE_SYS), as above. They do
  // not depend on the memory clock: a nonzero `memory_clock_mhz` is only
  // checked to be one of SupportedMemoryClocksMhz() (kNotFound otherwise).
  using Gpu::SupportedGraphicsClocksMhz;
  StatusOr<std::vector<uint32_t>> SupportedGraphicsClocksMhz(uint32_t memory_clock_mhz) override;

  // amdsmi_set_gpu_clk_range with AMDSMI_CLK_TYPE_SYS (graphics) or
  // AMDSMI_CLK_TYPE_MEM (memory), in MHz. kInvalidArgument when min is above
  // max; kPermissionDenied without root; kNotSupported naming the function
  // when the library lacks it. ZEUS_DRY_RUN is the backend's DryRunGpu.
  Status SetGpuLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz) override;
  Status SetMemoryLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz) override;
  // kNotSupported: AMD SMI resets the clocks of every domain at once, never
  // one domain alone.
  Status ResetGpuLockedClocks() override;
  Status ResetMemoryLockedClocks() override;
  bool CanResetOneClockDomain() const override { return false; }

  // Makes TotalEnergyMj return `why` (a kNotSupported status) from now on.
  // REQUIRES: called before the GPU is shared between threads (the backend
  // does it while opening).
  void DisableEnergyCounter(Status why) { energy_counter_disabled_ = std::move(why); }

  // Names the GPU in logs and errors, e.g. "GPU 0 (AMD SMI index 2)".
  std::string Context() const;

 private:
  Status Error(std::string_view call, amdsmi_status_t rc) const;
  Status Missing(std::string_view name) const;
  StatusOr<PowerCapInfo> ReadPowerCapInfo();
  StatusOr<PowerInfoHead> ReadPowerInfo();
  // The DPM levels of clock domain `clk_type` (named `type_name` in errors)
  // in MHz, distinct, highest first.
  StatusOr<std::vector<uint32_t>> DpmLevelsMhz(uint32_t clk_type, const char* type_name);
  Status SetClockRange(uint32_t clk_type, const char* type_name, uint32_t min_mhz,
                       uint32_t max_mhz);
  Status NoSingleDomainReset(const char* domain) const;

  const std::shared_ptr<const AmdsmiLibrary> library_;
  const amdsmi_processor_handle handle_;
  const int index_;
  const unsigned int amdsmi_index_;
  // OK while the energy counter is trusted.
  Status energy_counter_disabled_;
};

}  // namespace zeus::amdsmi

#endif  // ZEUS_SRC_DEVICE_AMDSMI_AMDSMI_GPU_H_
