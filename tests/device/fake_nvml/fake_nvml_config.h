// The knobs of the fake libnvml built by the tests (fake_nvml.cc). Each is an
// environment variable read when NVML is initialised (nvmlInit with no other
// initialisation outstanding), so a test sets them before OpenGpus.
//
// Variants (CMake targets, paths passed to tests as compile definitions):
//   fake_nvml_full     every symbol Zeus uses, versioned ones included.
//   fake_nvml_v1       nvmlInit/nvmlDeviceGetCount/nvmlDeviceGetHandleByIndex
//                      only (no _v2), and no nvmlErrorString,
//                      nvmlDeviceGetArchitecture, energy counter, versions,
//                      field values or temperature.
//   fake_nvml_no_power like full but without nvmlDeviceGetPowerUsage
//                      (a required symbol).

#ifndef ZEUS_TESTS_DEVICE_FAKE_NVML_FAKE_NVML_CONFIG_H_
#define ZEUS_TESTS_DEVICE_FAKE_NVML_FAKE_NVML_CONFIG_H_

namespace zeus::testing::fake_nvml {

// Number of GPUs. Default: 2.
inline constexpr char kGpus[] = "FAKE_NVML_GPUS";
// Comma-separated names, one per GPU. Default: "Fake H100 <i>".
inline constexpr char kNames[] = "FAKE_NVML_NAMES";
// Comma-separated nvmlDeviceGetArchitecture codes. Default: 9 (Hopper).
inline constexpr char kArchitectures[] = "FAKE_NVML_ARCHITECTURES";
// nvmlReturn_t of nvmlInit. Default: 0.
inline constexpr char kInitRc[] = "FAKE_NVML_INIT_RC";
// nvmlReturn_t of every nvmlDeviceGetTotalEnergyConsumption. Default: 0.
inline constexpr char kEnergyRc[] = "FAKE_NVML_ENERGY_RC";
// nvmlReturn_t of every set call (power limit, persistence). Default: 0.
inline constexpr char kSetRc[] = "FAKE_NVML_SET_RC";
// After this many successful energy/power reads (all GPUs together), every
// device call returns NVML_ERROR_GPU_IS_LOST. Default: never.
inline constexpr char kLostAfterReads[] = "FAKE_NVML_LOST_AFTER_READS";
// Instant power in mW. Default: 150000.
inline constexpr char kPowerMw[] = "FAKE_NVML_POWER_MW";
// Energy counter increment per read, in mJ. Default: 1000 (from 1e6 mJ).
inline constexpr char kEnergyStepMj[] = "FAKE_NVML_ENERGY_STEP_MJ";
// Per-limit energy model: "limit_w:step_mj,..."; a GPU whose power limit is
// listed advances its counter by that step per read instead. Default: none.
inline constexpr char kEnergyStepMjByLimit[] = "FAKE_NVML_ENERGY_STEP_MJ_BY_LIMIT";
// Comma-separated initial power management limits in mW, one per GPU (a
// missing entry: kDefaultLimitMw). Default: kDefaultLimitMw for every GPU.
inline constexpr char kPowerLimitsMw[] = "FAKE_NVML_POWER_LIMITS_MW";
// When "1", the energy counter follows the wall clock instead of stepping per
// read: 1e6 mJ at initialisation plus the instant power (kPowerMw) times the
// real time elapsed since then, so its rate equals the reported power.
// Default: unset (steps per read).
inline constexpr char kEnergyFromPower[] = "FAKE_NVML_ENERGY_FROM_POWER";
// A burst pattern of the instant power: "<period_ms>,<high_mW>[,<duty>]": the
// first <duty> (default 0.5) of every period the instant power is <high_mW>,
// the rest kPowerMw, from initialisation on. Setting it also makes the energy
// counter follow the signal (as kEnergyFromPower does). The average power
// (field NVML_FI_DEV_POWER_AVERAGE and nvmlDeviceGetPowerUsage, as on GA100
// and newer) is the mean of the instant signal over the last second, so the
// two differ under bursts. Default: unset (constant kPowerMw).
inline constexpr char kBurst[] = "FAKE_NVML_BURST";
// With a counter following the power: it moves only every this many ms, as
// NVML's does (~100 ms), holding the energy at the last multiple. Default: 0
// (continuous).
inline constexpr char kEnergyUpdateMs[] = "FAKE_NVML_ENERGY_UPDATE_MS";
// When "1", the device power fields answer NVML_ERROR_NOT_SUPPORTED with the
// GPU scope and answer with the module scope (Grace Hopper-class modules).
inline constexpr char kModuleScopeOnly[] = "FAKE_NVML_MODULE_SCOPE_ONLY";
// Comma-separated GPU temperatures in C (nvmlDeviceGetTemperature). Default: 45.
inline constexpr char kTemperaturesC[] = "FAKE_NVML_TEMPERATURES_C";
// Memory power (field NVML_FI_DEV_POWER_AVERAGE, scope NVML_POWER_SCOPE_MEMORY)
// is the average device power divided by this; only GPUs whose architecture
// code is >= 9 (Hopper) have it.
inline constexpr unsigned int kMemoryPowerDivisor = 10;

// When set, "init" and "shutdown" lines are appended to this file, and every
// successful set call appends "set_power_limit <gpu> <mW>",
// "set_persistence_mode <gpu> <0|1>", "set_gpu_locked_clocks <gpu> <min> <max>",
// "reset_gpu_locked_clocks <gpu>" (and the same with mem_).
inline constexpr char kLog[] = "FAKE_NVML_LOG";
// When set, the devices' power limits and persistence modes live in this file
// (one line per GPU: "<limit_mW> <persistence 0|1> <gpu clocks min> <max>
// <mem clocks min> <max>", 0 0: unlocked), shared by every process
// that loads the fake: read before each call, rewritten (temp + rename) by
// each successful set. A missing file reads as the defaults.
inline constexpr char kStateFile[] = "FAKE_NVML_STATE";

// Fixed values the fake reports.
inline constexpr unsigned int kMinLimitMw = 100'000;
inline constexpr unsigned int kMaxLimitMw = 700'000;
inline constexpr unsigned int kDefaultLimitMw = 700'000;
inline constexpr char kDriverVersion[] = "999.88.77";
inline constexpr char kNvmlVersion[] = "12.999.88.77";
// The UUID of fake GPU i is kUuidPrefix followed by i in 12 hex digits.
inline constexpr char kUuidPrefix[] = "GPU-fa4e0000-1111-2222-3333-";

// Supported clocks in MHz (full variant; nvmlDeviceGetClockInfo reports the
// first memory clock as the current one).
inline constexpr unsigned int kMemoryClocksMhz[] = {2619, 1593};
// Comma-separated memory clocks in MHz that nvmlDeviceGetSupportedMemoryClocks
// lists, in that order (the first is the current one); empty: none. Default:
// kMemoryClocksMhz. The graphics clocks at memory clock m run from
// GraphicsClockTopMhz(m) down to kGraphicsClockMinMhz; a memory clock not
// listed answers NVML_ERROR_NOT_FOUND.
inline constexpr char kMemoryClocksMhzList[] = "FAKE_NVML_MEMORY_CLOCKS_MHZ";
inline constexpr unsigned int kGraphicsClockMinMhz = 345;
inline constexpr unsigned int kGraphicsClockStepMhz = 15;
inline constexpr unsigned int GraphicsClockTopMhz(unsigned int memory_mhz) {
  return memory_mhz == 2619 ? 1980 : 1500;
}

// Comma-separated ids of the workload power profiles every GPU offers
// (nvmlDeviceWorkloadPowerProfileGetProfilesInfo, full variant); unset or
// empty: NVML_ERROR_NOT_SUPPORTED.
inline constexpr char kWorkloadPowerProfiles[] = "FAKE_NVML_WORKLOAD_POWER_PROFILES";
inline constexpr unsigned int WorkloadPowerProfilePriority(unsigned int id) { return 10 + id; }

// PCI address of fake GPU i (full variant, nvmlDeviceGetPciInfo_v3): domain
// 0, device 0, function 0, bus PciBus(i) (0x1b, 0x3b, ...: hex letters, so
// "0000:1b:00.0" shows the normalisation of NVML's "00000000:1B:00.0").
inline constexpr unsigned int PciBus(unsigned int gpu) { return 0x1b + 0x20 * gpu; }

}  // namespace zeus::testing::fake_nvml

#endif  // ZEUS_TESTS_DEVICE_FAKE_NVML_FAKE_NVML_CONFIG_H_
