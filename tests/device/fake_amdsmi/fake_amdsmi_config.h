// The knobs of the fake libamd_smi built by the tests (fake_amdsmi.cc). Each
// is an environment variable read when AMD SMI is initialised (amdsmi_init
// with no other initialisation outstanding), so a test sets them before
// OpenGpus. The names are those of the fake libnvml (fake_nvml_config.h) with
// FAKE_AMDSMI_ for FAKE_NVML_, and mean the same, so a test can drive either
// fake through one vendor-neutral helper (tests/device/fake_gpu_vendor.h).
//
// Variants (CMake targets, paths passed to tests as compile definitions):
//   fake_amdsmi_full      every symbol Zeus uses.
//   fake_amdsmi_minimal   the required symbols only: no status strings, energy
//                         counter, power cap setter, clock levels or ranges,
//                         names, UUIDs, versions.
//   fake_amdsmi_no_power  like full but without amdsmi_get_power_info (a
//                         required symbol).

#ifndef ZEUS_TESTS_DEVICE_FAKE_AMDSMI_FAKE_AMDSMI_CONFIG_H_
#define ZEUS_TESTS_DEVICE_FAKE_AMDSMI_FAKE_AMDSMI_CONFIG_H_

namespace zeus::testing::fake_amdsmi {

// Number of GPUs (one per socket, as AMD SMI reports Instinct GPUs).
// Default: 2.
inline constexpr char kGpus[] = "FAKE_AMDSMI_GPUS";
// Comma-separated market names, one per GPU. Default: "Fake MI300X <i>".
inline constexpr char kNames[] = "FAKE_AMDSMI_NAMES";
// amdsmi_status_t of amdsmi_init. Default: 0.
inline constexpr char kInitRc[] = "FAKE_AMDSMI_INIT_RC";
// amdsmi_status_t of every amdsmi_get_energy_count. Default: 0.
inline constexpr char kEnergyRc[] = "FAKE_AMDSMI_ENERGY_RC";
// amdsmi_status_t of every amdsmi_set_power_cap. Default: 0.
inline constexpr char kSetRc[] = "FAKE_AMDSMI_SET_RC";
// After this many successful energy/power reads (all GPUs together), every
// device call returns AMDSMI_STATUS_DRIVER_NOT_LOADED. Default: never.
inline constexpr char kLostAfterReads[] = "FAKE_AMDSMI_LOST_AFTER_READS";
// Socket power in mW, reported in whole W (AMD SMI's unit). Default: 150000.
inline constexpr char kPowerMw[] = "FAKE_AMDSMI_POWER_MW";
// Which amdsmi_power_info_t fields carry the power: "current" (both),
// "current_only" (MI300 and newer; average is UINT32_MAX), "average" (MI200;
// current is UINT32_MAX) or "none" (both UINT32_MAX, as the odd die of an
// MI250). Default: "current".
inline constexpr char kPowerField[] = "FAKE_AMDSMI_POWER_FIELD";
// average_socket_power in mW, reported in whole W, where the field above
// reports it. Default: kPowerMw's value.
inline constexpr char kAveragePowerMw[] = "FAKE_AMDSMI_AVERAGE_POWER_MW";
// Energy counter increment per read, in mJ. Default: 1000 (from 1e6 mJ).
inline constexpr char kEnergyStepMj[] = "FAKE_AMDSMI_ENERGY_STEP_MJ";
// Per-limit energy model: "limit_w:step_mj,..."; a GPU whose power cap is
// listed advances its counter by that step per read instead. Default: none.
inline constexpr char kEnergyStepMjByLimit[] = "FAKE_AMDSMI_ENERGY_STEP_MJ_BY_LIMIT";
// Comma-separated initial power caps in mW, one per GPU (a missing entry:
// kDefaultLimitMw). Default: kDefaultLimitMw for every GPU.
inline constexpr char kPowerLimitsMw[] = "FAKE_AMDSMI_POWER_LIMITS_MW";
// When "1", the counter follows the wall clock instead of stepping per read:
// 1e6 mJ at initialisation plus the power (kPowerMw) times the real time
// elapsed since then. Default: unset (steps per read).
inline constexpr char kEnergyFromPower[] = "FAKE_AMDSMI_ENERGY_FROM_POWER";
// Multiplies every counter advance (either model), so the counter can be
// made to disagree with power x time. Default: 1.
inline constexpr char kEnergyScale[] = "FAKE_AMDSMI_ENERGY_SCALE";
// Hotspot temperature in degrees Celsius. Default: 55.
inline constexpr char kTemperatureC[] = "FAKE_AMDSMI_TEMPERATURE_C";
// The graphics clock's DPM levels amdsmi_get_clk_freq reports, in MHz,
// comma-separated in the fake's order (AMD SMI lists them lowest first); the
// fake reports them in Hz, as AMD SMI does. More than 33 entries are reported
// as such (num_supported), with only the first 33 filled. Default:
// kGraphicsClocksMhz.
inline constexpr char kGraphicsClocksMhz[] = "FAKE_AMDSMI_GRAPHICS_CLOCKS_MHZ";
// amdsmi_status_t of every amdsmi_get_clk_freq. Default: 0.
inline constexpr char kClkFreqRc[] = "FAKE_AMDSMI_CLK_FREQ_RC";
// The memory clock's DPM levels (AMDSMI_CLK_TYPE_MEM), as kGraphicsClocksMhz.
// Default: kDefaultMemoryClocksMhz.
inline constexpr char kMemoryClocksMhz[] = "FAKE_AMDSMI_MEMORY_CLOCKS_MHZ";
// amdsmi_status_t of every amdsmi_set_gpu_clk_range. Default: 0 (a range of
// the graphics or memory clock within its levels is accepted; another clock
// type or min above max is AMDSMI_STATUS_INVAL, a range outside the levels
// AMDSMI_STATUS_INPUT_OUT_OF_BOUNDS).
inline constexpr char kSetClkRc[] = "FAKE_AMDSMI_SET_CLK_RC";
// When set, "init" and "shutdown" lines are appended to this file, and every
// successful amdsmi_set_power_cap appends "set_power_limit <gpu> <mW>", every
// successful amdsmi_set_gpu_clk_range "set_gpu_locked_clocks <gpu> <min>
// <max>" (AMDSMI_CLK_TYPE_SYS) or "set_mem_locked_clocks <gpu> <min> <max>"
// (AMDSMI_CLK_TYPE_MEM).
inline constexpr char kLog[] = "FAKE_AMDSMI_LOG";
// When set, the GPUs' power caps live in this file (one line per GPU,
// "<cap_mW>"), shared by every process that loads the fake: read before each
// call, rewritten (temp + rename) by each successful set.
inline constexpr char kStateFile[] = "FAKE_AMDSMI_STATE";

// Fixed values the fake reports.
inline constexpr unsigned int kMinLimitMw = 100'000;
inline constexpr unsigned int kMaxLimitMw = 700'000;
inline constexpr unsigned int kDefaultLimitMw = 700'000;
// The default graphics DPM levels (an MI300X's), lowest first.
inline constexpr char kDefaultGraphicsClocksMhz[] = "500,1300,2100";
// The default memory DPM levels, lowest first.
inline constexpr char kDefaultMemoryClocksMhz[] = "900,1300";
// The counter's resolution: 15.625 uJ (exact in binary, near real GPUs'
// 15.3 uJ), so every whole mJ is a whole number of ticks.
inline constexpr float kCounterResolutionUj = 15.625f;
inline constexpr char kDriverVersion[] = "6.99.88";
inline constexpr char kLibraryVersion[] = "25.9.9-fake";
// The UUID of fake GPU i is kUuidPrefix followed by i in 12 hex digits.
inline constexpr char kUuidPrefix[] = "fa4e0a3d-0000-1000-8000-";
// The PCI address of fake GPU i: domain 0, bus kPciBusBase + i, device 0,
// function 0.
inline constexpr unsigned int kPciBusBase = 0xc1;

}  // namespace zeus::testing::fake_amdsmi

#endif  // ZEUS_TESTS_DEVICE_FAKE_AMDSMI_FAKE_AMDSMI_CONFIG_H_
