// A fake libamd_smi for the tests of the AMD SMI backend. It exports
// AMD SMI-named C functions whose behaviour the environment variables of
// fake_amdsmi_config.h drive; compile definitions choose which symbols exist:
//   FAKE_AMDSMI_FULL        export every optional function Zeus uses.
//   FAKE_AMDSMI_POWER_INFO  export amdsmi_get_power_info (required).
// Struct layouts are those of AMD SMI of ROCm 6.2+, written from the
// documented API. Not AMD code.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tests/device/fake_amdsmi/fake_amdsmi_config.h"

namespace {

namespace cfg = zeus::testing::fake_amdsmi;

typedef uint32_t amdsmi_status_t;
constexpr amdsmi_status_t kSuccess = 0;
constexpr amdsmi_status_t kInval = 1;
constexpr amdsmi_status_t kInputOutOfBounds = 17;
constexpr amdsmi_status_t kNotInit = 32;
constexpr amdsmi_status_t kDriverNotLoaded = 34;
constexpr uint32_t kUnsupported = 0xFFFFFFFFu;

// amdsmi_power_cap_info_t.
struct PowerCapInfo {
  uint64_t power_cap, default_power_cap, dpm_cap, min_power_cap, max_power_cap, reserved[3];
};
// amdsmi_power_info_t (ROCm 6.2+).
struct PowerInfo {
  uint64_t socket_power;
  uint32_t current_socket_power, average_socket_power;
  uint64_t gfx_voltage, soc_voltage, mem_voltage;
  uint32_t power_limit;
  uint64_t reserved[18];
};
// amdsmi_asic_info_t (ROCm 6.2+): market_name first.
struct AsicInfo {
  char market_name[256];
  uint32_t vendor_id;
  char vendor_name[64];
  uint32_t subvendor_id;
  uint64_t device_id;
  uint32_t rev_id;
  char asic_serial[32];
  uint32_t oam_id;
  uint32_t reserved[18];
};
// amdsmi_driver_info_t (ROCm 6.2+).
struct DriverInfo {
  char driver_version[256], driver_date[256], driver_name[256];
};
// amdsmi_version_t (ROCm 6.2+).
struct Version {
  uint32_t year, major, minor, release;
  const char* build;
};

// amdsmi_frequencies_t (ROCm 6.2+).
struct Frequencies {
  bool has_deep_sleep;
  uint32_t num_supported;
  uint32_t current;
  uint64_t frequency[33];
};

struct FakeDevice {
  std::string name;
  std::string uuid;
  uint64_t cap_uw = uint64_t{cfg::kDefaultLimitMw} * 1000;
  // Energy in uJ (the counter reports it in kCounterResolutionUj ticks).
  double energy_uj = 1e9;
};

// The fake's state: a test double, so process-global by nature.
struct State {
  std::mutex mu;
  int init_count = 0;
  std::vector<FakeDevice> devices;
  amdsmi_status_t energy_rc = kSuccess;
  amdsmi_status_t set_rc = kSuccess;
  long long lost_after_reads = -1;  // NOLINT(runtime/int)
  long long reads = 0;              // NOLINT(runtime/int)
  unsigned int power_mw = 150'000;
  unsigned int average_power_mw = 150'000;
  std::string power_field = "current";
  unsigned long long energy_step_mj = 1000;                            // NOLINT(runtime/int)
  std::map<unsigned int, unsigned long long> energy_step_mj_by_limit;  // NOLINT(runtime/int)
  bool energy_from_power = false;
  double energy_scale = 1.0;
  long long temperature_c = 55;  // NOLINT(runtime/int)
  std::vector<std::string> graphics_clocks_mhz;
  std::vector<std::string> memory_clocks_mhz;
  amdsmi_status_t clk_freq_rc = kSuccess;
  amdsmi_status_t set_clk_rc = kSuccess;
  std::chrono::steady_clock::time_point configured_at;
};

// A static object rather than a leaked heap one: dlclose destroys it.
State g_state;

State& S() { return g_state; }

long long EnvInt(const char* name, long long fallback) {  // NOLINT(runtime/int)
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoll(value) : fallback;
}

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> items;
  size_t start = 0;
  while (true) {
    size_t comma = s.find(',', start);
    items.push_back(
        s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

std::vector<std::string> EnvList(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return {};
  return SplitList(value);
}

void Log(const std::string& line) {
  const char* path = std::getenv(cfg::kLog);
  if (path == nullptr) return;
  if (FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "%s\n", line.c_str());
    std::fclose(f);
  }
}

// REQUIRES: S().mu held.
void LoadSharedState() {
  const char* path = std::getenv(cfg::kStateFile);
  if (path == nullptr) return;
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return;
  for (FakeDevice& d : S().devices) {
    unsigned long long cap_mw = 0;  // NOLINT(runtime/int)
    if (std::fscanf(f, "%llu", &cap_mw) != 1) break;
    d.cap_uw = cap_mw * 1000;
  }
  std::fclose(f);
}

// REQUIRES: S().mu held.
[[maybe_unused]] void SaveSharedState() {
  const char* path = std::getenv(cfg::kStateFile);
  if (path == nullptr) return;
  const std::string tmp = std::string(path) + ".tmp" + std::to_string(getpid());
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return;
  for (const FakeDevice& d : S().devices) {
    std::fprintf(f, "%llu\n", static_cast<unsigned long long>(d.cap_uw / 1000));  // NOLINT
  }
  std::fclose(f);
  std::rename(tmp.c_str(), path);
}

// REQUIRES: S().mu held.
void Configure() {
  State& s = S();
  s.devices.clear();
  long long count = EnvInt(cfg::kGpus, 2);  // NOLINT(runtime/int)
  std::vector<std::string> names = EnvList(cfg::kNames);
  std::vector<std::string> limits = EnvList(cfg::kPowerLimitsMw);
  for (long long i = 0; i < count; ++i) {  // NOLINT(runtime/int)
    FakeDevice d;
    size_t k = static_cast<size_t>(i);
    d.name = k < names.size() ? names[k] : "Fake MI300X " + std::to_string(i);
    char uuid[64];
    std::snprintf(uuid, sizeof(uuid), "%s%012llx", cfg::kUuidPrefix,
                  static_cast<unsigned long long>(i));  // NOLINT(runtime/int)
    d.uuid = uuid;
    if (k < limits.size() && !limits[k].empty()) {
      d.cap_uw = static_cast<uint64_t>(std::atoll(limits[k].c_str())) * 1000;
    }
    s.devices.push_back(d);
  }
  s.energy_rc = static_cast<amdsmi_status_t>(EnvInt(cfg::kEnergyRc, kSuccess));
  s.set_rc = static_cast<amdsmi_status_t>(EnvInt(cfg::kSetRc, kSuccess));
  s.lost_after_reads = EnvInt(cfg::kLostAfterReads, -1);
  s.reads = 0;
  s.power_mw = static_cast<unsigned int>(EnvInt(cfg::kPowerMw, 150'000));
  s.average_power_mw = static_cast<unsigned int>(EnvInt(cfg::kAveragePowerMw, s.power_mw));
  const char* field = std::getenv(cfg::kPowerField);
  s.power_field = field != nullptr && *field != '\0' ? field : "current";
  s.energy_step_mj = static_cast<unsigned long long>(  // NOLINT(runtime/int)
      EnvInt(cfg::kEnergyStepMj, 1000));
  s.energy_from_power = EnvInt(cfg::kEnergyFromPower, 0) == 1;
  const char* scale = std::getenv(cfg::kEnergyScale);
  s.energy_scale = scale != nullptr && *scale != '\0' ? std::atof(scale) : 1.0;
  s.temperature_c = EnvInt(cfg::kTemperatureC, 55);
  const char* clocks = std::getenv(cfg::kGraphicsClocksMhz);
  s.graphics_clocks_mhz = SplitList(clocks != nullptr ? clocks : cfg::kDefaultGraphicsClocksMhz);
  if (s.graphics_clocks_mhz == std::vector<std::string>{""}) s.graphics_clocks_mhz.clear();
  const char* memory_clocks = std::getenv(cfg::kMemoryClocksMhz);
  s.memory_clocks_mhz =
      SplitList(memory_clocks != nullptr ? memory_clocks : cfg::kDefaultMemoryClocksMhz);
  if (s.memory_clocks_mhz == std::vector<std::string>{""}) s.memory_clocks_mhz.clear();
  s.clk_freq_rc = static_cast<amdsmi_status_t>(EnvInt(cfg::kClkFreqRc, kSuccess));
  s.set_clk_rc = static_cast<amdsmi_status_t>(EnvInt(cfg::kSetClkRc, kSuccess));
  s.configured_at = std::chrono::steady_clock::now();
  s.energy_step_mj_by_limit.clear();
  for (const std::string& item : EnvList(cfg::kEnergyStepMjByLimit)) {
    size_t colon = item.find(':');
    if (colon == std::string::npos) continue;
    s.energy_step_mj_by_limit[static_cast<unsigned int>(std::atoll(item.c_str()))] =
        static_cast<unsigned long long>(  // NOLINT(runtime/int)
            std::atoll(item.c_str() + colon + 1));
  }
}

// Socket handles are 0x1000 plus the GPU index plus one; processor handles
// the GPU index plus one.
constexpr uintptr_t kSocketBase = 0x1000;

// REQUIRES: S().mu held.
amdsmi_status_t Device(void* handle, FakeDevice** out) {
  State& s = S();
  if (s.init_count == 0) return kNotInit;
  uintptr_t index = reinterpret_cast<uintptr_t>(handle);
  if (index == 0 || index > s.devices.size()) return kInval;
  if (s.lost_after_reads >= 0 && s.reads >= s.lost_after_reads) return kDriverNotLoaded;
  LoadSharedState();
  *out = &s.devices[index - 1];
  return kSuccess;
}

[[maybe_unused]] size_t GpuOf(void* handle) { return reinterpret_cast<uintptr_t>(handle) - 1; }

[[maybe_unused]] void CopyString(const std::string& value, char* buffer, size_t size) {
  std::snprintf(buffer, size, "%s", value.c_str());
}

}  // namespace

extern "C" {

#define FAKE_AMDSMI_EXPORT __attribute__((visibility("default")))

FAKE_AMDSMI_EXPORT amdsmi_status_t amdsmi_init(uint64_t /*flags*/) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  amdsmi_status_t rc = static_cast<amdsmi_status_t>(EnvInt(cfg::kInitRc, kSuccess));
  if (rc != kSuccess) return rc;
  if (s.init_count++ == 0) Configure();
  Log("init");
  return kSuccess;
}

FAKE_AMDSMI_EXPORT amdsmi_status_t amdsmi_shut_down() {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.init_count == 0) return kNotInit;
  --s.init_count;
  Log("shutdown");
  return kSuccess;
}

FAKE_AMDSMI_EXPORT amdsmi_status_t amdsmi_get_socket_handles(uint32_t* count, void** handles) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.init_count == 0) return kNotInit;
  if (count == nullptr) return kInval;
  const uint32_t n = static_cast<uint32_t>(s.devices.size());
  if (handles == nullptr) {
    *count = n;
    return kSuccess;
  }
  if (*count < n) return kInval;
  for (uint32_t i = 0; i < n; ++i) handles[i] = reinterpret_cast<void*>(kSocketBase + i + 1);
  *count = n;
  return kSuccess;
}

FAKE_AMDSMI_EXPORT amdsmi_status_t amdsmi_get_processor_handles(void* socket, uint32_t* count,
                                                                void** handles) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.init_count == 0) return kNotInit;
  const uintptr_t index = reinterpret_cast<uintptr_t>(socket) - kSocketBase;
  if (count == nullptr || index == 0 || index > s.devices.size()) return kInval;
  if (handles == nullptr) {
    *count = 1;
    return kSuccess;
  }
  if (*count < 1) return kInval;
  handles[0] = reinterpret_cast<void*>(index);
  *count = 1;
  return kSuccess;
}

#ifdef FAKE_AMDSMI_POWER_INFO
FAKE_AMDSMI_EXPORT amdsmi_status_t amdsmi_get_power_info(void* handle, PowerInfo* info) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  FakeDevice* d = nullptr;
  if (amdsmi_status_t rc = Device(handle, &d); rc != kSuccess) return rc;
  if (info == nullptr) return kInval;
  ++s.reads;
  std::memset(info, 0, sizeof(*info));
  const uint32_t power_w = s.power_mw / 1000;
  info->socket_power = power_w;
  info->current_socket_power =
      s.power_field == "current" || s.power_field == "current_only" ? power_w : kUnsupported;
  info->average_socket_power = s.power_field == "current" || s.power_field == "average"
                                   ? s.average_power_mw / 1000
                                   : kUnsupported;
  if (s.power_field == "none") info->socket_power = kUnsupported;
  info->power_limit = static_cast<uint32_t>(d->cap_uw / 1'000'000);
  return kSuccess;
}
#endif

FAKE_AMDSMI_EXPORT amdsmi_status_t amdsmi_get_power_cap_info(void* handle, uint32_t sensor,
                                                             PowerCapInfo* info) {
  std::lock_guard<std::mutex> lock(S().mu);
  FakeDevice* d = nullptr;
  if (amdsmi_status_t rc = Device(handle, &d); rc != kSuccess) return rc;
  if (info == nullptr || sensor != 0) return kInval;
  std::memset(info, 0, sizeof(*info));
  info->power_cap = d->cap_uw;
  info->default_power_cap = uint64_t{cfg::kDefaultLimitMw} * 1000;
  info->dpm_cap = 2100;
  info->min_power_cap = uint64_t{cfg::kMinLimitMw} * 1000;
  info->max_power_cap = uint64_t{cfg::kMaxLimitMw} * 1000;
  return kSuccess;
}

#ifdef FAKE_AMDSMI_FULL
FAKE_AMDSMI_EXPORT amdsmi_status_t amdsmi_status_code_to_string(amdsmi_status_t status,
                                                                const char** text) {
  if (text == nullptr) return kInval;
  switch (status) {
    case 0:
      *text = "AMDSMI_STATUS_SUCCESS: Call succeeded";
      break;
    case 2:
      *text = "AMDSMI_STATUS_NOT_SUPPORTED: Feature not supported";
      break;
    case 10:
      *text = "AMDSMI_STATUS_NO_PERM: Permission denied";
      break;
    case 34:
      *text = "AMDSMI_STATUS_DRIVER_NOT_LOADED: Driver not loaded";
      break;
    default:
      *text = "An unknown error occurred";
      break;
  }
  return kSuccess;
}

FAKE_AMDSMI_EXPORT amdsmi_status_t amdsmi_get_processor_type(void* handle, uint32_t* type) {
  std::lock_guard<std::mutex> lock(S().mu);
  FakeDevice* d = nullptr;
  if (amdsmi_status_t rc = Device(handle, &d); rc != kSuccess) return rc;
  *type = 1;  // AMDSMI_PROCESSOR_TYPE_AMD_GPU
  return kSuccess;
}

FAKE_AMDSMI_EXPORT amdsmi_status_t amdsmi_get_lib_version(Version* version) {
  if (version == nullptr) return kInval;
  *version = Version{25, 9, 9, 0, cfg::kLibraryVersion};
  return kSuccess;
}

FAKE_AMDSMI_EXPORT amdsmi_status_t amdsmi_get_gpu_driver_info(void* handle, DriverInfo* info) {
  std::lock_guard<std::mutex> lock(S().mu);
  FakeDevice* d = nullptr;
  if (amdsmi_status_t rc = Device(handle, &d); rc != kSuccess) return rc;
  std::memset(info, 0, sizeof(*info));
  CopyString(cfg::kDriverVersion, info->driver_version, sizeof(info->driver_version));
  CopyString("amdgpu", info->driver_name, sizeof(info->driver_name));
  return kSuccess;
}

FAKE_AMDSMI_EXPORT amdsmi_status_t amdsmi_get_gpu_asic_info(void* handle, AsicInfo* info) {
  std::lock_guard<std::mutex> lock(S().mu);
  FakeDevice* d = nullptr;
  if (amdsmi_status_t rc = Device(handle, &d); rc != kSuccess) return rc;
  std::memset(info, 0, sizeof(*info));
  CopyString(d->name, info->market_name, sizeof(info->market_name));
  info->vendor_id = 0x1002;
  CopyString("Advanced Micro Devices Inc. [AMD/ATI]", info->vendor_name, sizeof(info->vendor_name));
  info->device_id = 0x74a1;
  info->oam_id = 0xFFFF;
  return kSuccess;
}

FAKE_AMDSMI_EXPORT amdsmi_status_t amdsmi_get_gpu_device_uuid(void* handle, unsigned int* length,
                                                              char* uuid) {
  std::lock_guard<std::mutex> lock(S().mu);
  FakeDevice* d = nullptr;
  if (amdsmi_status_t rc = Device(handle, &d); rc != kSuccess) return rc;
  if (length == nullptr || uuid == nullptr) return kInval;
  if (*length < d->uuid.size() + 1) return kInval;
  std::memcpy(uuid, d->uuid.c_str(), d->uuid.size() + 1);
  *length = static_cast<unsigned int>(d->uuid.size());
  return kSuccess;
}

FAKE_AMDSMI_EXPORT amdsmi_status_t amdsmi_get_gpu_device_bdf(void* handle, uint64_t* bdf) {
  std::lock_guard<std::mutex> lock(S().mu);
  FakeDevice* d = nullptr;
  if (amdsmi_status_t rc = Device(handle, &d); rc != kSuccess) return rc;
  // function 0 (bits 0-2), device 0 (3-7), bus (8-15), domain 0 (16-63).
  *bdf = static_cast<uint64_t>(cfg::kPciBusBase + GpuOf(handle)) << 8;
  return kSuccess;
}

FAKE_AMDSMI_EXPORT amdsmi_status_t amdsmi_set_power_cap(void* handle, uint32_t sensor,
                                                        uint64_t cap_uw) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  FakeDevice* d = nullptr;
  if (amdsmi_status_t rc = Device(handle, &d); rc != kSuccess) return rc;
  if (s.set_rc != kSuccess) return s.set_rc;
  if (sensor != 0) return kInval;
  if (cap_uw < uint64_t{cfg::kMinLimitMw} * 1000 || cap_uw > uint64_t{cfg::kMaxLimitMw} * 1000) {
    return kInputOutOfBounds;
  }
  d->cap_uw = cap_uw;
  Log("set_power_limit " + std::to_string(GpuOf(handle)) + " " + std::to_string(cap_uw / 1000));
  SaveSharedState();
  return kSuccess;
}

FAKE_AMDSMI_EXPORT amdsmi_status_t amdsmi_get_energy_count(void* handle, uint64_t* counter,
                                                           float* resolution, uint64_t* timestamp) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  FakeDevice* d = nullptr;
  if (amdsmi_status_t rc = Device(handle, &d); rc != kSuccess) return rc;
  if (counter == nullptr || resolution == nullptr || timestamp == nullptr) return kInval;
  if (s.energy_rc != kSuccess) return s.energy_rc;
  ++s.reads;
  const auto elapsed = std::chrono::steady_clock::now() - s.configured_at;
  if (s.energy_from_power) {
    const double elapsed_s = std::chrono::duration<double>(elapsed).count();
    d->energy_uj = 1e9 + elapsed_s * static_cast<double>(s.power_mw) * 1000.0 * s.energy_scale;
  } else {
    auto by_limit =
        s.energy_step_mj_by_limit.find(static_cast<unsigned int>(d->cap_uw / 1'000'000));
    const double step_mj = static_cast<double>(
        by_limit == s.energy_step_mj_by_limit.end() ? s.energy_step_mj : by_limit->second);
    d->energy_uj += step_mj * 1000.0 * s.energy_scale;
  }
  *counter = static_cast<uint64_t>(d->energy_uj / static_cast<double>(cfg::kCounterResolutionUj));
  *resolution = cfg::kCounterResolutionUj;
  *timestamp =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
  return kSuccess;
}

FAKE_AMDSMI_EXPORT amdsmi_status_t amdsmi_get_temp_metric(void* handle, uint32_t sensor,
                                                          uint32_t metric, int64_t* value) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  FakeDevice* d = nullptr;
  if (amdsmi_status_t rc = Device(handle, &d); rc != kSuccess) return rc;
  if (value == nullptr || sensor != 1 || metric != 0) return kInval;  // HOTSPOT, CURRENT
  *value = s.temperature_c;
  return kSuccess;
}

FAKE_AMDSMI_EXPORT amdsmi_status_t amdsmi_get_clk_freq(void* handle, uint32_t clk_type,
                                                       Frequencies* out) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  FakeDevice* d = nullptr;
  if (amdsmi_status_t rc = Device(handle, &d); rc != kSuccess) return rc;
  // AMDSMI_CLK_TYPE_SYS (0) and AMDSMI_CLK_TYPE_MEM (4) only.
  if (out == nullptr || (clk_type != 0 && clk_type != 4)) return kInval;
  if (s.clk_freq_rc != kSuccess) return s.clk_freq_rc;
  const std::vector<std::string>& levels =
      clk_type == 0 ? s.graphics_clocks_mhz : s.memory_clocks_mhz;
  std::memset(out, 0, sizeof(*out));
  out->num_supported = static_cast<uint32_t>(levels.size());
  for (size_t i = 0; i < levels.size() && i < 33; ++i) {
    out->frequency[i] = static_cast<uint64_t>(std::atoll(levels[i].c_str())) * 1'000'000;
  }
  out->current = out->num_supported == 0 ? 0 : out->num_supported - 1;
  return kSuccess;
}

FAKE_AMDSMI_EXPORT amdsmi_status_t amdsmi_set_gpu_clk_range(void* handle, uint64_t min_mhz,
                                                            uint64_t max_mhz, uint32_t clk_type) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  FakeDevice* d = nullptr;
  if (amdsmi_status_t rc = Device(handle, &d); rc != kSuccess) return rc;
  if (s.set_clk_rc != kSuccess) return s.set_clk_rc;
  if ((clk_type != 0 && clk_type != 4) || min_mhz > max_mhz) return kInval;
  const std::vector<std::string>& levels =
      clk_type == 0 ? s.graphics_clocks_mhz : s.memory_clocks_mhz;
  uint64_t lowest = UINT64_MAX;
  uint64_t highest = 0;
  for (const std::string& level : levels) {
    const uint64_t mhz = static_cast<uint64_t>(std::atoll(level.c_str()));
    lowest = std::min(lowest, mhz);
    highest = std::max(highest, mhz);
  }
  if (levels.empty() || min_mhz < lowest || max_mhz > highest) return kInputOutOfBounds;
  Log(std::string(clk_type == 0 ? "set_gpu_locked_clocks " : "set_mem_locked_clocks ") +
      std::to_string(GpuOf(handle)) + " " + std::to_string(min_mhz) + " " +
      std::to_string(max_mhz));
  return kSuccess;
}
#endif  // FAKE_AMDSMI_FULL

}  // extern "C"
