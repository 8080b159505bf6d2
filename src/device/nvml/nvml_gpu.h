// NvmlGpu: a Gpu backed by one NVML device handle.
//
// Thread-safety: every method may be called concurrently (NVML is
// thread-safe; the only mutable state is an atomic cache of the power scope).

#ifndef ZEUS_SRC_DEVICE_NVML_NVML_GPU_H_
#define ZEUS_SRC_DEVICE_NVML_NVML_GPU_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "zeus/device/gpu.h"
#include "zeus/status.h"

#include "src/device/nvml/nvml_api.h"
#include "src/device/nvml/nvml_library.h"

namespace zeus::nvml {

// The architecture name of an nvmlDeviceGetArchitecture code (NVML: 2 Kepler,
// 3 Maxwell, 4 Pascal, 5 Volta, 6 Turing, 7 Ampere, 8 Ada, 9 Hopper,
// 10 Blackwell); "Unknown" for anything else.
std::string ArchitectureName(nvmlDeviceArchitecture_t code);

// `pci` as "domain:bus:device.function" in lower-case hex, the domain in 4
// digits (lspci -D): {domain 0, bus 0x3B, device 0, "0000:3B:00.0"} is
// "0000:3b:00.0".
std::string FormatPciBusId(const nvmlPciInfo_t& pci);

// How errors and logs name GPU `index` of this process, NVML's `nvml_index`:
// "GPU 0", or "GPU 0 (NVML index 2)" when they differ.
std::string NvmlGpuContext(int index, unsigned int nvml_index);

class NvmlGpu final : public Gpu {
 public:
  // `index` is this process's index (after CUDA_VISIBLE_DEVICES), `nvml_index`
  // NVML's. The GPU keeps `library` loaded and initialised. It calls NVML
  // only: the backend wraps it in zeusd::ZeusdGpu (ZEUSD_SOCK_PATH) and
  // DryRunGpu (ZEUS_DRY_RUN).
  NvmlGpu(std::shared_ptr<const NvmlLibrary> library, nvmlDevice_t device, int index,
          unsigned int nvml_index);

  int index() const override { return index_; }
  unsigned int nvml_index() const { return nvml_index_; }

  StatusOr<std::string> Name() override;
  StatusOr<std::string> Architecture() override;
  StatusOr<std::string> Uuid() override;
  // nvmlDeviceGetPciInfo (v3, v2, v1): domain, bus and device from its
  // numeric fields, the function from its "dddd:bb:dd.f" string.
  StatusOr<std::string> PciBusId() override;
  StatusOr<PowerLimitConstraints> PowerLimitConstraintsMw() override;
  StatusOr<uint32_t> DefaultPowerLimitMw() override;
  StatusOr<uint32_t> PowerLimitMw() override;
  StatusOr<uint32_t> EnforcedPowerLimitMw() override;
  // kPermissionDenied without CAP_SYS_ADMIN, naming ZEUS_DRY_RUN.
  Status SetPowerLimitMw(uint32_t power_limit_mw) override;
  StatusOr<bool> PersistenceMode() override;
  Status SetPersistenceMode(bool enabled) override;
  Status SetGpuLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz) override;
  Status ResetGpuLockedClocks() override;
  Status SetMemoryLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz) override;
  Status ResetMemoryLockedClocks() override;
  StatusOr<std::vector<uint32_t>> SupportedMemoryClocksMhz() override;
  using Gpu::SupportedGraphicsClocksMhz;
  StatusOr<std::vector<uint32_t>> SupportedGraphicsClocksMhz(uint32_t memory_clock_mhz) override;
  StatusOr<std::vector<WorkloadPowerProfile>> WorkloadPowerProfiles() override;
  StatusOr<uint64_t> TotalEnergyMj() override;
  // NVML: the energy counter moves about every 100 ms.
  std::chrono::nanoseconds EnergyCounterUpdatePeriod() const override {
    return std::chrono::milliseconds(100);
  }
  StatusOr<uint32_t> PowerMw() override;
  // NVML field values: kDeviceInstant NVML_FI_DEV_POWER_INSTANT and
  // kDeviceAverage NVML_FI_DEV_POWER_AVERAGE with the GPU scope, or with the
  // module scope where the GPU scope is not supported (Grace Hopper-class
  // modules); kMemoryAverage the average field with the memory scope.
  // Without nvmlDeviceGetFieldValues (drivers before field values), or for
  // kDeviceInstant on a GPU older than Ampere whose field read is not
  // supported, kDeviceInstant falls back to nvmlDeviceGetPowerUsage (instant
  // power before GA100).
  StatusOr<uint32_t> DomainPowerMw(PowerDomain domain) override;
  StatusOr<int32_t> TemperatureC() override;

 private:
  // One power field (mW) with `scope`: NVML's per-field return code as
  // the error.
  StatusOr<uint32_t> ReadPowerField(unsigned int field_id, unsigned int scope);
  // The library's error for `call`, prefixed with this GPU's identity.
  Status Error(std::string_view call, nvmlReturn_t rc) const;
  Status Missing(std::string_view base_name) const;
  std::string Context() const;
  StatusOr<uint32_t> GetUint(nvmlDeviceGetUint_fn fn, const char* base_name);
  // Locks (`lock`) or resets a clock domain (graphics or memory) through NVML.
  Status LockedClocks(bool memory, bool lock, uint32_t min_mhz, uint32_t max_mhz);

  const std::shared_ptr<const NvmlLibrary> library_;
  const nvmlDevice_t device_;
  const int index_;
  const unsigned int nvml_index_;
  // The scope that answered the device power fields (GPU, else module).
  std::atomic<unsigned int> device_power_scope_{kPowerScopeGpu};
};

}  // namespace zeus::nvml

#endif  // ZEUS_SRC_DEVICE_NVML_NVML_GPU_H_
