// A fake libnvml for the tests of the real loader. It exports NVML-named C
// functions whose behaviour the environment variables of fake_nvml_config.h
// drive; compile definitions choose which symbols exist:
//   FAKE_NVML_V2          export the _v2 entry points.
//   FAKE_NVML_MODERN      export nvmlErrorString, nvmlDeviceGetArchitecture,
//                         nvmlDeviceGetTotalEnergyConsumption, versions,
//                         nvmlDeviceGetFieldValues and nvmlDeviceGetTemperature.
//   FAKE_NVML_POWER_USAGE export nvmlDeviceGetPowerUsage.
// Not NVIDIA code: written from the documented API.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tests/device/fake_nvml/fake_nvml_config.h"

namespace {

namespace cfg = zeus::testing::fake_nvml;

typedef int nvmlReturn_t;
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kUninitialized = 1;
constexpr nvmlReturn_t kInvalidArgument = 2;
constexpr nvmlReturn_t kNotSupported = 3;
[[maybe_unused]] constexpr nvmlReturn_t kNotFound = 6;
constexpr nvmlReturn_t kInsufficientSize = 7;
constexpr nvmlReturn_t kGpuIsLost = 15;

struct FakeDevice {
  std::string name;
  std::string uuid;
  unsigned int architecture = 9;
  unsigned int limit_mw = cfg::kDefaultLimitMw;
  int persistence = 0;
  // Locked clock ranges in MHz; 0-0: unlocked.
  unsigned int gpu_clocks[2] = {0, 0};
  unsigned int mem_clocks[2] = {0, 0};
  unsigned long long energy_mj = 1'000'000;  // NOLINT(runtime/int): NVML's type.
  unsigned int temperature_c = 45;
};

// The fake's state: a test double, so process-global by nature.
struct State {
  std::mutex mu;
  int init_count = 0;
  std::vector<FakeDevice> devices;
  nvmlReturn_t energy_rc = kSuccess;
  nvmlReturn_t set_rc = kSuccess;
  long long lost_after_reads = -1;  // NOLINT(runtime/int)
  long long reads = 0;              // NOLINT(runtime/int)
  unsigned int power_mw = 150'000;
  unsigned long long energy_step_mj = 1000;  // NOLINT(runtime/int)
  // Power limit in W -> energy step in mJ (kEnergyStepMjByLimit).
  std::map<unsigned int, unsigned long long> energy_step_mj_by_limit;  // NOLINT(runtime/int)
  // kEnergyFromPower: the counter integrates power_mw over real time from
  // `configured_at`.
  bool energy_from_power = false;
  std::chrono::steady_clock::time_point configured_at;
  // kBurst: period (s), high power (mW), duty fraction; period 0: no bursts.
  double burst_period_s = 0.0;
  double burst_high_mw = 0.0;
  double burst_duty = 0.5;
  double energy_update_s = 0.0;
  bool module_scope_only = false;
  // kMemoryClocksMhzList, the first the current one.
  std::vector<unsigned int> memory_clocks_mhz;
};

// A static object rather than a leaked heap one: dlclose destroys it, so
// LeakSanitizer stays quiet and each load starts afresh.
State g_state;

State& S() { return g_state; }

long long EnvInt(const char* name, long long fallback) {  // NOLINT(runtime/int)
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoll(value) : fallback;
}

std::vector<std::string> EnvList(const char* name) {
  std::vector<std::string> items;
  const char* value = std::getenv(name);
  if (value == nullptr) return items;
  std::string s(value);
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

void Log(const char* line) {
  const char* path = std::getenv(cfg::kLog);
  if (path == nullptr) return;
  if (FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "%s\n", line);
    std::fclose(f);
  }
}

void Log(const std::string& line) { Log(line.c_str()); }

// Loads limits and persistence modes from the kStateFile, when set.
// REQUIRES: S().mu held.
void LoadSharedState() {
  const char* path = std::getenv(cfg::kStateFile);
  if (path == nullptr) return;
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return;
  char line[256];
  for (FakeDevice& d : S().devices) {
    if (std::fgets(line, sizeof(line), f) == nullptr) break;
    unsigned int limit_mw = 0;
    int persistence = 0;
    unsigned int clocks[4] = {0, 0, 0, 0};
    if (std::sscanf(line, "%u %d %u %u %u %u", &limit_mw, &persistence, &clocks[0], &clocks[1],
                    &clocks[2], &clocks[3]) < 2) {
      break;
    }
    d.limit_mw = limit_mw;
    d.persistence = persistence;
    d.gpu_clocks[0] = clocks[0];
    d.gpu_clocks[1] = clocks[1];
    d.mem_clocks[0] = clocks[2];
    d.mem_clocks[1] = clocks[3];
  }
  std::fclose(f);
}

// Writes limits and persistence modes to the kStateFile, when set.
// REQUIRES: S().mu held.
void SaveSharedState() {
  const char* path = std::getenv(cfg::kStateFile);
  if (path == nullptr) return;
  const std::string tmp = std::string(path) + ".tmp" + std::to_string(getpid());
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return;
  for (const FakeDevice& d : S().devices) {
    std::fprintf(f, "%u %d %u %u %u %u\n", d.limit_mw, d.persistence, d.gpu_clocks[0],
                 d.gpu_clocks[1], d.mem_clocks[0], d.mem_clocks[1]);
  }
  std::fclose(f);
  std::rename(tmp.c_str(), path);
}

// Seconds since initialisation.
double ElapsedS(const State& s) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - s.configured_at).count();
}

// Instant power (mW) at `t` s after initialisation (kPowerMw before it).
[[maybe_unused]] double InstantMwAt(const State& s, double t) {
  if (s.burst_period_s <= 0 || t < 0) return s.power_mw;
  double phase = std::fmod(t, s.burst_period_s);
  return phase < s.burst_duty * s.burst_period_s ? s.burst_high_mw : s.power_mw;
}

// The exact integral of InstantMwAt from 0 to `t`, in mJ (negative before 0).
double EnergyMjAt(const State& s, double t) {
  const double low = s.power_mw;
  if (s.burst_period_s <= 0 || t <= 0) return low * t;
  const double on_s = s.burst_duty * s.burst_period_s;
  const double periods = std::floor(t / s.burst_period_s);
  const double rest_s = t - periods * s.burst_period_s;
  return low * t + (s.burst_high_mw - low) * (periods * on_s + std::min(rest_s, on_s));
}

// Mean instant power over the second before `t`, in mW (NVML's average).
double AverageMwAt(const State& s, double t) { return EnergyMjAt(s, t) - EnergyMjAt(s, t - 1.0); }

// REQUIRES: S().mu held.
void Configure() {
  State& s = S();
  s.devices.clear();
  long long count = EnvInt(cfg::kGpus, 2);  // NOLINT(runtime/int)
  std::vector<std::string> names = EnvList(cfg::kNames);
  std::vector<std::string> archs = EnvList(cfg::kArchitectures);
  std::vector<std::string> limits = EnvList(cfg::kPowerLimitsMw);
  for (long long i = 0; i < count; ++i) {  // NOLINT(runtime/int)
    FakeDevice d;
    size_t k = static_cast<size_t>(i);
    d.name = k < names.size() ? names[k] : "Fake H100 " + std::to_string(i);
    char uuid[96];
    std::snprintf(uuid, sizeof(uuid), "%s%012llx", cfg::kUuidPrefix,
                  static_cast<unsigned long long>(i));  // NOLINT(runtime/int)
    d.uuid = uuid;
    d.architecture = k < archs.size() ? static_cast<unsigned int>(std::atoi(archs[k].c_str())) : 9;
    if (k < limits.size() && !limits[k].empty()) {
      d.limit_mw = static_cast<unsigned int>(std::atoll(limits[k].c_str()));
    }
    s.devices.push_back(d);
  }
  s.energy_rc = static_cast<nvmlReturn_t>(EnvInt(cfg::kEnergyRc, kSuccess));
  s.set_rc = static_cast<nvmlReturn_t>(EnvInt(cfg::kSetRc, kSuccess));
  s.lost_after_reads = EnvInt(cfg::kLostAfterReads, -1);
  s.reads = 0;
  s.power_mw = static_cast<unsigned int>(EnvInt(cfg::kPowerMw, 150'000));
  s.energy_step_mj = static_cast<unsigned long long>(  // NOLINT(runtime/int)
      EnvInt(cfg::kEnergyStepMj, 1000));
  s.energy_from_power = EnvInt(cfg::kEnergyFromPower, 0) == 1;
  s.configured_at = std::chrono::steady_clock::now();
  s.burst_period_s = 0.0;
  std::vector<std::string> burst = EnvList(cfg::kBurst);
  if (burst.size() >= 2) {
    s.burst_period_s = std::atof(burst[0].c_str()) / 1e3;
    s.burst_high_mw = std::atof(burst[1].c_str());
    s.burst_duty = burst.size() >= 3 ? std::atof(burst[2].c_str()) : 0.5;
    s.energy_from_power = true;
  }
  s.energy_update_s = static_cast<double>(EnvInt(cfg::kEnergyUpdateMs, 0)) / 1e3;
  s.module_scope_only = EnvInt(cfg::kModuleScopeOnly, 0) == 1;
  s.memory_clocks_mhz.assign(std::begin(cfg::kMemoryClocksMhz), std::end(cfg::kMemoryClocksMhz));
  if (std::getenv(cfg::kMemoryClocksMhzList) != nullptr) {
    s.memory_clocks_mhz.clear();
    for (const std::string& item : EnvList(cfg::kMemoryClocksMhzList)) {
      if (!item.empty())
        s.memory_clocks_mhz.push_back(static_cast<unsigned int>(std::atoi(item.c_str())));
    }
  }
  std::vector<std::string> temperatures = EnvList(cfg::kTemperaturesC);
  for (size_t k = 0; k < s.devices.size() && k < temperatures.size(); ++k) {
    s.devices[k].temperature_c = static_cast<unsigned int>(std::atoi(temperatures[k].c_str()));
  }
  s.energy_step_mj_by_limit.clear();
  for (const std::string& item : EnvList(cfg::kEnergyStepMjByLimit)) {
    size_t colon = item.find(':');
    if (colon == std::string::npos) continue;
    s.energy_step_mj_by_limit[static_cast<unsigned int>(std::atoll(item.c_str()))] =
        static_cast<unsigned long long>(  // NOLINT(runtime/int)
            std::atoll(item.c_str() + colon + 1));
  }
}

// Looks up a handle; the handle is the device index plus one.
// REQUIRES: S().mu held.
nvmlReturn_t Device(void* handle, FakeDevice** out) {
  State& s = S();
  if (s.init_count == 0) return kUninitialized;
  size_t index = reinterpret_cast<size_t>(handle);
  if (index == 0 || index > s.devices.size()) return kInvalidArgument;
  if (s.lost_after_reads >= 0 && s.reads >= s.lost_after_reads) return kGpuIsLost;
  LoadSharedState();
  *out = &s.devices[index - 1];
  return kSuccess;
}

nvmlReturn_t CopyString(const std::string& value, char* buffer, unsigned int length) {
  if (buffer == nullptr) return kInvalidArgument;
  if (value.size() + 1 > length) return kInsufficientSize;
  std::memcpy(buffer, value.c_str(), value.size() + 1);
  return kSuccess;
}

nvmlReturn_t Init() {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  nvmlReturn_t rc = static_cast<nvmlReturn_t>(EnvInt(cfg::kInitRc, kSuccess));
  if (rc != kSuccess) return rc;
  if (s.init_count++ == 0) Configure();
  Log("init");
  return kSuccess;
}

nvmlReturn_t GetCount(unsigned int* count) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.init_count == 0) return kUninitialized;
  if (count == nullptr) return kInvalidArgument;
  *count = static_cast<unsigned int>(s.devices.size());
  return kSuccess;
}

nvmlReturn_t GetHandleByIndex(unsigned int index, void** device) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.init_count == 0) return kUninitialized;
  if (device == nullptr || index >= s.devices.size()) return kInvalidArgument;
  *device = reinterpret_cast<void*>(static_cast<size_t>(index) + 1);
  return kSuccess;
}

}  // namespace

extern "C" {

#define FAKE_NVML_EXPORT __attribute__((visibility("default")))

FAKE_NVML_EXPORT nvmlReturn_t nvmlInit() { return Init(); }
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) { return GetCount(count); }
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, void** device) {
  return GetHandleByIndex(index, device);
}
#ifdef FAKE_NVML_V2
FAKE_NVML_EXPORT nvmlReturn_t nvmlInit_v2() { return Init(); }
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) { return GetCount(count); }
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  return GetHandleByIndex(index, device);
}
#endif

FAKE_NVML_EXPORT nvmlReturn_t nvmlShutdown() {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.init_count == 0) return kUninitialized;
  --s.init_count;
  Log("shutdown");
  return kSuccess;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(void* handle, char* buffer, unsigned int length) {
  std::lock_guard<std::mutex> lock(S().mu);
  FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = Device(handle, &d); rc != kSuccess) return rc;
  return CopyString(d->name, buffer, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(void* handle, char* buffer, unsigned int length) {
  std::lock_guard<std::mutex> lock(S().mu);
  FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = Device(handle, &d); rc != kSuccess) return rc;
  return CopyString(d->uuid, buffer, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(void* handle,
                                                                           unsigned int* min_mw,
                                                                           unsigned int* max_mw) {
  std::lock_guard<std::mutex> lock(S().mu);
  FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = Device(handle, &d); rc != kSuccess) return rc;
  *min_mw = cfg::kMinLimitMw;
  *max_mw = cfg::kMaxLimitMw;
  return kSuccess;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(void* handle,
                                                                       unsigned int* limit_mw) {
  std::lock_guard<std::mutex> lock(S().mu);
  FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = Device(handle, &d); rc != kSuccess) return rc;
  *limit_mw = cfg::kDefaultLimitMw;
  return kSuccess;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(void* handle,
                                                                unsigned int* limit_mw) {
  std::lock_guard<std::mutex> lock(S().mu);
  FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = Device(handle, &d); rc != kSuccess) return rc;
  *limit_mw = d->limit_mw;
  return kSuccess;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(void* handle,
                                                              unsigned int* limit_mw) {
  return nvmlDeviceGetPowerManagementLimit(handle, limit_mw);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceSetPowerManagementLimit(void* handle,
                                                                unsigned int limit_mw) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = Device(handle, &d); rc != kSuccess) return rc;
  if (s.set_rc != kSuccess) return s.set_rc;
  if (limit_mw < cfg::kMinLimitMw || limit_mw > cfg::kMaxLimitMw) return kInvalidArgument;
  d->limit_mw = limit_mw;
  // Logged first: a reader that sees the new state also sees the line.
  Log("set_power_limit " + std::to_string(reinterpret_cast<size_t>(handle) - 1) + " " +
      std::to_string(limit_mw));
  SaveSharedState();
  return kSuccess;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(void* handle, int* mode) {
  std::lock_guard<std::mutex> lock(S().mu);
  FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = Device(handle, &d); rc != kSuccess) return rc;
  *mode = d->persistence;
  return kSuccess;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceSetPersistenceMode(void* handle, int mode) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = Device(handle, &d); rc != kSuccess) return rc;
  if (s.set_rc != kSuccess) return s.set_rc;
  d->persistence = mode;
  // Logged first: a reader that sees the new state also sees the line.
  Log("set_persistence_mode " + std::to_string(reinterpret_cast<size_t>(handle) - 1) + " " +
      std::to_string(mode));
  SaveSharedState();
  return kSuccess;
}

namespace {

// Sets (or, with `reset`, clears) one device's locked clock range.
nvmlReturn_t LockClocks(void* handle, bool memory, bool reset, unsigned int min_mhz,
                        unsigned int max_mhz) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = Device(handle, &d); rc != kSuccess) return rc;
  if (s.set_rc != kSuccess) return s.set_rc;
  if (!reset && min_mhz > max_mhz) return kInvalidArgument;
  unsigned int* clocks = memory ? d->mem_clocks : d->gpu_clocks;
  clocks[0] = reset ? 0 : min_mhz;
  clocks[1] = reset ? 0 : max_mhz;
  const std::string gpu = std::to_string(reinterpret_cast<size_t>(handle) - 1);
  const std::string what = std::string(memory ? "mem" : "gpu") + "_locked_clocks " + gpu;
  Log(reset ? "reset_" + what
            : "set_" + what + " " + std::to_string(min_mhz) + " " + std::to_string(max_mhz));
  SaveSharedState();
  return kSuccess;
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceSetGpuLockedClocks(void* handle, unsigned int min_mhz,
                                                           unsigned int max_mhz) {
  return LockClocks(handle, false, false, min_mhz, max_mhz);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceResetGpuLockedClocks(void* handle) {
  return LockClocks(handle, false, true, 0, 0);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceSetMemoryLockedClocks(void* handle, unsigned int min_mhz,
                                                              unsigned int max_mhz) {
  return LockClocks(handle, true, false, min_mhz, max_mhz);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceResetMemoryLockedClocks(void* handle) {
  return LockClocks(handle, true, true, 0, 0);
}

#ifdef FAKE_NVML_POWER_USAGE
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(void* handle, unsigned int* power_mw) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = Device(handle, &d); rc != kSuccess) return rc;
  ++s.reads;
  // The one-second average, as on GA100 and newer.
  *power_mw = static_cast<unsigned int>(std::lround(AverageMwAt(s, ElapsedS(s))));
  return kSuccess;
}
#endif

#ifdef FAKE_NVML_MODERN
FAKE_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t rc) {
  switch (rc) {
    case 0:
      return "Success";
    case 3:
      return "Not Supported";
    case 4:
      return "Insufficient Permissions";
    case 9:
      return "Driver Not Loaded";
    case 15:
      return "GPU is lost";
    default:
      return "Unknown Error";
  }
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* buffer, unsigned int length) {
  return CopyString(cfg::kDriverVersion, buffer, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char* buffer, unsigned int length) {
  return CopyString(cfg::kNvmlVersion, buffer, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(void* handle, unsigned int* arch) {
  std::lock_guard<std::mutex> lock(S().mu);
  FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = Device(handle, &d); rc != kSuccess) return rc;
  *arch = d->architecture;
  return kSuccess;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(
    void* handle, unsigned long long* energy_mj) {  // NOLINT(runtime/int)
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = Device(handle, &d); rc != kSuccess) return rc;
  if (s.energy_rc != kSuccess) return s.energy_rc;
  ++s.reads;
  if (s.energy_from_power) {
    double elapsed_s = ElapsedS(s);
    if (s.energy_update_s > 0) {
      elapsed_s = std::floor(elapsed_s / s.energy_update_s) * s.energy_update_s;
    }
    *energy_mj = 1'000'000 + static_cast<unsigned long long>(  // NOLINT(runtime/int)
                                 EnergyMjAt(s, elapsed_s));
    return kSuccess;
  }
  auto by_limit = s.energy_step_mj_by_limit.find(d->limit_mw / 1000);
  d->energy_mj += by_limit == s.energy_step_mj_by_limit.end() ? s.energy_step_mj : by_limit->second;
  *energy_mj = d->energy_mj;
  return kSuccess;
}

// Our own layout of nvmlFieldValue_t (40 bytes).
struct FakeFieldValue {
  unsigned int field_id;
  unsigned int scope_id;
  long long timestamp;     // NOLINT(runtime/int)
  long long latency_usec;  // NOLINT(runtime/int)
  int value_type;
  nvmlReturn_t nvml_return;
  union {
    double d_val;
    unsigned int ui_val;
    unsigned long long ull_val;  // NOLINT(runtime/int)
  } value;
};
static_assert(sizeof(FakeFieldValue) == 40, "nvmlFieldValue_t is 40 bytes");

// Fields 185 (NVML_FI_DEV_POWER_AVERAGE) and 186 (NVML_FI_DEV_POWER_INSTANT),
// scopes 0 (GPU), 1 (module), 2 (memory, average only, Hopper and newer).
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(void* handle, int count,
                                                       FakeFieldValue* values) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = Device(handle, &d); rc != kSuccess) return rc;
  if (count < 0 || (count > 0 && values == nullptr)) return kInvalidArgument;
  ++s.reads;
  const double t = ElapsedS(s);
  for (int i = 0; i < count; ++i) {
    FakeFieldValue& v = values[i];
    v.timestamp = 0;
    v.latency_usec = 0;
    v.value_type = 1;  // NVML_VALUE_TYPE_UNSIGNED_INT.
    v.nvml_return = kSuccess;
    double mw = 0.0;
    const bool memory = v.scope_id == 2;
    if (v.field_id != 185 && v.field_id != 186) {
      v.nvml_return = kNotSupported;
    } else if (v.scope_id > 2 || (v.scope_id == 0 && s.module_scope_only)) {
      v.nvml_return = kNotSupported;
    } else if (memory && (v.field_id != 185 || d->architecture < 9)) {
      v.nvml_return = kNotSupported;
    } else if (v.field_id == 186) {
      mw = InstantMwAt(s, t);
    } else {
      mw = AverageMwAt(s, t) / (memory ? cfg::kMemoryPowerDivisor : 1);
    }
    v.value.ull_val = 0;
    v.value.ui_val = static_cast<unsigned int>(std::lround(mw));
  }
  return kSuccess;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(void* handle, int sensor,
                                                       unsigned int* temperature_c) {
  std::lock_guard<std::mutex> lock(S().mu);
  FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = Device(handle, &d); rc != kSuccess) return rc;
  if (sensor != 0 || temperature_c == nullptr) return kInvalidArgument;
  *temperature_c = d->temperature_c;
  return kSuccess;
}
#endif

// PCI address (zeusd /discover): nvmlPciInfo_t as NVML fills it, GPU i on
// bus kPciBus(i), with NVML's upper-case hex strings.
#ifdef FAKE_NVML_MODERN
struct FakePciInfo {
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_sub_system_id;
  char bus_id[32];
};

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(void* handle, FakePciInfo* pci) {
  std::lock_guard<std::mutex> lock(S().mu);
  FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = Device(handle, &d); rc != kSuccess) return rc;
  if (pci == nullptr) return kInvalidArgument;
  const unsigned int bus = cfg::PciBus(static_cast<unsigned int>(d - S().devices.data()));
  *pci = FakePciInfo{};
  pci->bus = bus;
  pci->pci_device_id = 0x233010de;
  std::snprintf(pci->bus_id_legacy, sizeof(pci->bus_id_legacy), "0000:%02X:00.0", bus);
  std::snprintf(pci->bus_id, sizeof(pci->bus_id), "00000000:%02X:00.0", bus);
  return kSuccess;
}
#endif

// Supported clocks (full variant): memory clocks kMemoryClocksMhzList (the
// current one is the first); graphics clocks at memory clock m run from
// GraphicsClockTopMhz(m) down to kGraphicsClockMinMhz in kGraphicsClockStepMhz
// steps, listed lowest first (NVML's order is not promised).
#ifdef FAKE_NVML_MODERN
namespace {
nvmlReturn_t FillClocks(const std::vector<unsigned int>& clocks, unsigned int* count,
                        unsigned int* out) {
  if (count == nullptr) return kInvalidArgument;
  if (*count < clocks.size()) {
    *count = static_cast<unsigned int>(clocks.size());
    return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  }
  *count = static_cast<unsigned int>(clocks.size());
  if (out != nullptr) std::copy(clocks.begin(), clocks.end(), out);
  return kSuccess;
}
}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(void* handle, int type,
                                                     unsigned int* clock_mhz) {
  std::lock_guard<std::mutex> lock(S().mu);
  FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = Device(handle, &d); rc != kSuccess) return rc;
  if (clock_mhz == nullptr || type < 0 || type > 3) return kInvalidArgument;
  const std::vector<unsigned int>& memory = S().memory_clocks_mhz;
  if (memory.empty()) return kNotSupported;
  *clock_mhz = type == 2 ? memory[0] : cfg::GraphicsClockTopMhz(memory[0]);
  return kSuccess;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSupportedMemoryClocks(void* handle, unsigned int* count,
                                                                 unsigned int* clocks_mhz) {
  std::lock_guard<std::mutex> lock(S().mu);
  FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = Device(handle, &d); rc != kSuccess) return rc;
  return FillClocks(S().memory_clocks_mhz, count, clocks_mhz);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSupportedGraphicsClocks(void* handle,
                                                                   unsigned int memory_mhz,
                                                                   unsigned int* count,
                                                                   unsigned int* clocks_mhz) {
  std::lock_guard<std::mutex> lock(S().mu);
  FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = Device(handle, &d); rc != kSuccess) return rc;
  const std::vector<unsigned int>& memory = S().memory_clocks_mhz;
  if (std::find(memory.begin(), memory.end(), memory_mhz) == memory.end()) return kNotFound;
  std::vector<unsigned int> clocks;
  for (unsigned int mhz = cfg::kGraphicsClockMinMhz; mhz <= cfg::GraphicsClockTopMhz(memory_mhz);
       mhz += cfg::kGraphicsClockStepMhz) {
    clocks.push_back(mhz);
  }
  return FillClocks(clocks, count, clocks_mhz);
}

// nvmlWorkloadPowerProfileProfilesInfo_v1_t as NVML lays it out.
struct FakeProfileInfo {
  unsigned int version, profile_id, priority, conflicting_mask[8];
};
struct FakeProfilesInfo {
  unsigned int version;
  unsigned int mask[8];
  FakeProfileInfo profiles[255];
};

FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceWorkloadPowerProfileGetProfilesInfo(void* handle, FakeProfilesInfo* info) {
  std::lock_guard<std::mutex> lock(S().mu);
  FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = Device(handle, &d); rc != kSuccess) return rc;
  const std::vector<std::string> ids = EnvList(cfg::kWorkloadPowerProfiles);
  if (ids.empty()) return kNotSupported;
  constexpr unsigned int kVersion1 =
      static_cast<unsigned int>(sizeof(FakeProfilesInfo)) | (1u << 24);
  if (info == nullptr || info->version != kVersion1)
    return 25;  // NVML_ERROR_ARGUMENT_VERSION_MISMATCH
  for (const std::string& text : ids) {
    const unsigned int id = static_cast<unsigned int>(std::atoi(text.c_str()));
    if (id >= 255) continue;
    info->mask[id / 32] |= 1u << (id % 32);
    info->profiles[id].profile_id = id;
    info->profiles[id].priority = cfg::WorkloadPowerProfilePriority(id);
  }
  return kSuccess;
}
#endif

}  // extern "C"
