// The GPU abstraction. Monitors and optimizers receive Gpu*, never a concrete
// backend, so everything above the device layer is testable without a GPU.
//
// Thread-safety: every method of every implementation may be called
// concurrently from several threads (NVML itself is thread-safe; fakes lock).

#ifndef ZEUS_DEVICE_GPU_H_
#define ZEUS_DEVICE_GPU_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "zeus/status.h"

namespace zeus {

// Which power a reading holds. NVML: kDeviceInstant is the field
// NVML_FI_DEV_POWER_INSTANT, kDeviceAverage NVML_FI_DEV_POWER_AVERAGE (a ~1 s
// moving average; what nvmlDeviceGetPowerUsage returns on GA100 and newer),
// kMemoryAverage the average field with the memory scope (Hopper and newer).
enum class PowerDomain { kDeviceInstant, kDeviceAverage, kMemoryAverage };

// Every domain, in the order above.
inline constexpr PowerDomain kAllPowerDomains[] = {
    PowerDomain::kDeviceInstant, PowerDomain::kDeviceAverage, PowerDomain::kMemoryAverage};

// "device_instant", "device_average", "memory_average" (the original Zeus's
// names, also used on the wire and the command line).
const char* PowerDomainName(PowerDomain domain);
// The domain named `name`; kInvalidArgument naming the accepted names.
StatusOr<PowerDomain> ParsePowerDomain(std::string_view name);

// A workload power profile the driver offers (a preset of clocks and power
// behaviour for a kind of work). NVML: nvmlPowerProfileType_t.
struct WorkloadPowerProfile {
  // The driver's id of the profile.
  uint32_t id = 0;
  // NVML's name without the prefix, e.g. "MAX_P", "COMPUTE", "LLM_TRAINING";
  // "PROFILE_<id>" for an id this build does not know.
  std::string name;
  // The driver's priority among profiles requested together.
  uint32_t priority = 0;
};

struct PowerLimitConstraints {
  uint32_t min_mw = 0;
  uint32_t max_mw = 0;
};

class Gpu {
 public:
  Gpu() = default;
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;
  virtual ~Gpu() = default;

  // This process's index of the GPU: its position among the GPUs OpenGpus
  // returns (for NVIDIA, the CUDA device index after CUDA_VISIBLE_DEVICES).
  virtual int index() const = 0;

  // Product name, e.g. "NVIDIA H100 80GB HBM3".
  virtual StatusOr<std::string> Name() = 0;
  // Architecture name, e.g. "Volta", "Ampere", "Hopper"; "Unknown" when the
  // driver reports a code we do not know.
  virtual StatusOr<std::string> Architecture() = 0;
  // The backend's stable identifier, e.g. NVML's "GPU-<uuid>".
  virtual StatusOr<std::string> Uuid() = 0;
  // The PCI address "domain:bus:device.function" in lower-case hex, the
  // domain in 4 digits, as `lspci -D` prints it: "0000:3b:00.0" (NVML's
  // "00000000:3B:00.0" normalised). Default: kNotSupported.
  virtual StatusOr<std::string> PciBusId();

  // NVML: the range accepted by SetPowerLimitMw, in mW.
  virtual StatusOr<PowerLimitConstraints> PowerLimitConstraintsMw() = 0;
  // NVML: the limit the board ships with, in mW.
  virtual StatusOr<uint32_t> DefaultPowerLimitMw() = 0;
  // NVML: the management limit currently set, in mW.
  virtual StatusOr<uint32_t> PowerLimitMw() = 0;
  // NVML: the limit actually enforced (min of all limiters), in mW.
  virtual StatusOr<uint32_t> EnforcedPowerLimitMw() = 0;

  // Sets the power limit of this GPU. Lost when the driver unloads.
  // REQUIRES: min_mw <= power_limit_mw <= max_mw from PowerLimitConstraintsMw().
  // Returns kPermissionDenied without CAP_SYS_ADMIN; with ZEUS_DRY_RUN set,
  // logs the change and leaves the device untouched.
  virtual Status SetPowerLimitMw(uint32_t power_limit_mw) = 0;

  virtual StatusOr<bool> PersistenceMode() = 0;
  // Same permission and ZEUS_DRY_RUN contract as SetPowerLimitMw.
  virtual Status SetPersistenceMode(bool enabled) = 0;

  // Locks the graphics (memory) clock to [min_mhz, max_mhz] until reset or
  // the driver unloads. NVML: nvmlDeviceSetGpuLockedClocks /
  // nvmlDeviceSetMemoryLockedClocks (Volta and newer); NVML cannot report the
  // locked range, so "unlocked" is the only value to come back to. AMD SMI:
  // amdsmi_set_gpu_clk_range (AMDSMI_CLK_TYPE_SYS / AMDSMI_CLK_TYPE_MEM).
  // Same permission and ZEUS_DRY_RUN contract as SetPowerLimitMw. Default:
  // kNotSupported.
  virtual Status SetGpuLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz);
  virtual Status SetMemoryLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz);
  // Unlocks one domain. kNotSupported where the backend can only reset every
  // clock domain at once (AMD SMI).
  virtual Status ResetGpuLockedClocks();
  virtual Status ResetMemoryLockedClocks();
  // Whether the resets above can unlock one domain alone: false for AMD SMI.
  // A constant of the backend; cheap, never fails. Default: true.
  virtual bool CanResetOneClockDomain() const { return true; }

  // The memory clocks this GPU supports (the values SetMemoryLockedClocksMhz
  // and SupportedGraphicsClocksMhz(memory_clock_mhz) accept), in MHz,
  // distinct, highest first. NVML: nvmlDeviceGetSupportedMemoryClocks; AMD
  // SMI: the memory clock's DPM levels (amdsmi_get_clk_freq,
  // AMDSMI_CLK_TYPE_MEM). A read: no privilege needed. Default:
  // kNotSupported naming the backend.
  virtual StatusOr<std::vector<uint32_t>> SupportedMemoryClocksMhz();

  // The graphics (SM) clocks this GPU can be locked to at the memory clock
  // `memory_clock_mhz`, in MHz, distinct, highest first. 0: at the supported
  // memory clock nearest the current one. kNotFound naming it when
  // `memory_clock_mhz` is not one of SupportedMemoryClocksMhz(). NVML:
  // nvmlDeviceGetSupportedGraphicsClocks (the current memory clock:
  // nvmlDeviceGetClockInfo(NVML_CLOCK_MEM)); AMD SMI: the graphics clock's
  // DPM levels, which do not depend on the memory clock. A read: no
  // privilege needed. Default: kNotSupported naming the backend.
  // Overriders add `using Gpu::SupportedGraphicsClocksMhz;` so the
  // argument-less form stays visible.
  virtual StatusOr<std::vector<uint32_t>> SupportedGraphicsClocksMhz(uint32_t memory_clock_mhz);
  // SupportedGraphicsClocksMhz(0): at the current memory clock.
  StatusOr<std::vector<uint32_t>> SupportedGraphicsClocksMhz() {
    return SupportedGraphicsClocksMhz(0);
  }

  // The workload power profiles the driver offers for this GPU, by id. NVML:
  // nvmlDeviceWorkloadPowerProfileGetProfilesInfo (recent drivers, some
  // data-centre GPUs). A read: nothing here sets a profile. Default:
  // kNotSupported.
  virtual StatusOr<std::vector<WorkloadPowerProfile>> WorkloadPowerProfiles();

  // Energy in mJ consumed since an arbitrary origin (NVML: since the driver
  // was loaded; Volta and newer). kNotSupported on GPUs without an energy
  // counter (callers integrate PowerMw() instead). The counter moves only
  // every EnergyCounterUpdatePeriod(), and one read may take milliseconds.
  virtual StatusOr<uint64_t> TotalEnergyMj() = 0;
  // How often TotalEnergyMj() moves: windows shorter than this cannot be
  // measured by counter differences alone. Zero for a continuous counter.
  // NVML: about 100 ms. A constant of the backend; cheap, never fails.
  virtual std::chrono::nanoseconds EnergyCounterUpdatePeriod() const = 0;
  // NVML: board power in mW from nvmlDeviceGetPowerUsage (instant before
  // GA100, the ~1 s average on GA100 and newer). Cheap (sub-microsecond on
  // H100).
  virtual StatusOr<uint32_t> PowerMw() = 0;

  // Power of `domain` in mW. kNotSupported where the GPU (or its driver)
  // lacks that domain. Default: kDeviceInstant is PowerMw(), the other
  // domains kNotSupported.
  virtual StatusOr<uint32_t> DomainPowerMw(PowerDomain domain);

  // GPU die temperature in degrees Celsius (NVML: nvmlDeviceGetTemperature,
  // sensor NVML_TEMPERATURE_GPU). Default: kNotSupported.
  virtual StatusOr<int32_t> TemperatureC();
};

// Lifts a lock of `gpu`'s graphics clocks (`memory` false) or memory clocks
// (`memory` true): ResetGpuLockedClocks / ResetMemoryLockedClocks, or, where
// the backend cannot unlock one domain alone (!CanResetOneClockDomain(): AMD
// SMI), a lock to the domain's whole supported range (lowest to highest of
// SupportedGraphicsClocksMhz() / SupportedMemoryClocksMhz()), which lets the
// clock roam as unlocked. What every restore of locked clocks calls. Errors
// name the GPU and what failed.
Status UnlockClocks(Gpu& gpu, bool memory);

inline StatusOr<uint32_t> Gpu::DomainPowerMw(PowerDomain domain) {
  if (domain == PowerDomain::kDeviceInstant) return PowerMw();
  return NotSupportedError("GPU " + std::to_string(index()) + ": power domain " +
                           PowerDomainName(domain) + " not supported");
}
inline StatusOr<int32_t> Gpu::TemperatureC() {
  return NotSupportedError("GPU " + std::to_string(index()) + ": temperature not supported");
}

inline StatusOr<std::string> Gpu::PciBusId() {
  return NotSupportedError("GPU " + std::to_string(index()) + ": PCI address not known");
}
inline Status Gpu::SetGpuLockedClocksMhz(uint32_t, uint32_t) {
  return NotSupportedError("GPU " + std::to_string(index()) + ": locked clocks not supported");
}
inline Status Gpu::ResetGpuLockedClocks() { return Gpu::SetGpuLockedClocksMhz(0, 0); }
inline Status Gpu::SetMemoryLockedClocksMhz(uint32_t, uint32_t) {
  return Gpu::SetGpuLockedClocksMhz(0, 0);
}
inline Status Gpu::ResetMemoryLockedClocks() { return Gpu::SetGpuLockedClocksMhz(0, 0); }
inline StatusOr<std::vector<WorkloadPowerProfile>> Gpu::WorkloadPowerProfiles() {
  return NotSupportedError("GPU " + std::to_string(index()) +
                           ": workload power profiles are not offered by this backend");
}
inline StatusOr<std::vector<uint32_t>> Gpu::SupportedMemoryClocksMhz() {
  return NotSupportedError("GPU " + std::to_string(index()) +
                           ": the list of supported memory clocks is not available from this "
                           "backend");
}
inline StatusOr<std::vector<uint32_t>> Gpu::SupportedGraphicsClocksMhz(uint32_t) {
  return NotSupportedError("GPU " + std::to_string(index()) +
                           ": the list of supported graphics clocks is not available from this "
                           "backend");
}

}  // namespace zeus

#endif  // ZEUS_DEVICE_GPU_H_
