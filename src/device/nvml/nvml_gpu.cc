#include "src/device/nvml/nvml_gpu.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

namespace zeus::nvml {

std::string ArchitectureName(nvmlDeviceArchitecture_t code) {
  switch (code) {
    case 2:
      return "Kepler";
    case 3:
      return "Maxwell";
    case 4:
      return "Pascal";
    case 5:
      return "Volta";
    case 6:
      return "Turing";
    case 7:
      return "Ampere";
    case 8:
      return "Ada";
    case 9:
      return "Hopper";
    case 10:
      return "Blackwell";
    default:
      return "Unknown";
  }
}

std::string FormatPciBusId(const nvmlPciInfo_t& pci) {
  // The function is only in the string: the digit after its last '.'.
  const std::string legacy(pci.bus_id_legacy,
                           strnlen(pci.bus_id_legacy, sizeof(pci.bus_id_legacy)));
  const size_t dot = legacy.rfind('.');
  unsigned int function = 0;
  if (dot != std::string::npos && dot + 1 < legacy.size()) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(legacy[dot + 1])));
    if (c >= '0' && c <= '7') function = static_cast<unsigned int>(c - '0');
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%04x:%02x:%02x.%x", pci.domain, pci.bus, pci.device, function);
  return text;
}

std::string NvmlGpuContext(int index, unsigned int nvml_index) {
  if (static_cast<unsigned int>(index) == nvml_index) return "GPU " + std::to_string(index);
  return "GPU " + std::to_string(index) + " (NVML index " + std::to_string(nvml_index) + ")";
}

NvmlGpu::NvmlGpu(std::shared_ptr<const NvmlLibrary> library, nvmlDevice_t device, int index,
                 unsigned int nvml_index)
    : library_(std::move(library)), device_(device), index_(index), nvml_index_(nvml_index) {}

std::string NvmlGpu::Context() const { return NvmlGpuContext(index_, nvml_index_); }

Status NvmlGpu::Error(std::string_view call, nvmlReturn_t rc) const {
  return library_->Error(call, rc).WithContext(Context());
}

Status NvmlGpu::Missing(std::string_view base_name) const {
  return library_->MissingFunction(base_name).WithContext(Context());
}

StatusOr<uint32_t> NvmlGpu::GetUint(nvmlDeviceGetUint_fn fn, const char* base_name) {
  if (fn == nullptr) return Missing(base_name);
  unsigned int value = 0;
  nvmlReturn_t rc = fn(device_, &value);
  if (rc != kSuccess) return Error(base_name, rc);
  return static_cast<uint32_t>(value);
}

StatusOr<std::string> NvmlGpu::Name() {
  char buffer[kDeviceNameBufferSize] = {};
  nvmlReturn_t rc = library_->functions().device_get_name(device_, buffer, sizeof(buffer));
  if (rc != kSuccess) return Error("nvmlDeviceGetName", rc);
  return std::string(buffer);
}

StatusOr<std::string> NvmlGpu::Architecture() {
  const auto fn = library_->functions().device_get_architecture;
  if (fn == nullptr) return Missing("nvmlDeviceGetArchitecture");
  nvmlDeviceArchitecture_t code = 0;
  nvmlReturn_t rc = fn(device_, &code);
  if (rc != kSuccess) return Error("nvmlDeviceGetArchitecture", rc);
  return ArchitectureName(code);
}

StatusOr<std::string> NvmlGpu::Uuid() {
  char buffer[kDeviceUuidBufferSize] = {};
  nvmlReturn_t rc = library_->functions().device_get_uuid(device_, buffer, sizeof(buffer));
  if (rc != kSuccess) return Error("nvmlDeviceGetUUID", rc);
  return std::string(buffer);
}

StatusOr<std::string> NvmlGpu::PciBusId() {
  const auto fn = library_->functions().device_get_pci_info;
  if (fn == nullptr) return Missing("nvmlDeviceGetPciInfo");
  nvmlPciInfo_t pci{};
  nvmlReturn_t rc = fn(device_, &pci);
  if (rc != kSuccess) return Error("nvmlDeviceGetPciInfo", rc);
  return FormatPciBusId(pci);
}

StatusOr<PowerLimitConstraints> NvmlGpu::PowerLimitConstraintsMw() {
  const auto fn = library_->functions().device_get_power_management_limit_constraints;
  if (fn == nullptr) return Missing("nvmlDeviceGetPowerManagementLimitConstraints");
  unsigned int min_mw = 0;
  unsigned int max_mw = 0;
  nvmlReturn_t rc = fn(device_, &min_mw, &max_mw);
  if (rc != kSuccess) return Error("nvmlDeviceGetPowerManagementLimitConstraints", rc);
  return PowerLimitConstraints{min_mw, max_mw};
}

StatusOr<uint32_t> NvmlGpu::DefaultPowerLimitMw() {
  return GetUint(library_->functions().device_get_power_management_default_limit,
                 "nvmlDeviceGetPowerManagementDefaultLimit");
}

StatusOr<uint32_t> NvmlGpu::PowerLimitMw() {
  return GetUint(library_->functions().device_get_power_management_limit,
                 "nvmlDeviceGetPowerManagementLimit");
}

StatusOr<uint32_t> NvmlGpu::EnforcedPowerLimitMw() {
  return GetUint(library_->functions().device_get_enforced_power_limit,
                 "nvmlDeviceGetEnforcedPowerLimit");
}

Status NvmlGpu::SetPowerLimitMw(uint32_t power_limit_mw) {
  const std::string call =
      "nvmlDeviceSetPowerManagementLimit(" + std::to_string(power_limit_mw) + " mW)";
  const auto fn = library_->functions().device_set_power_management_limit;
  if (fn == nullptr) return Missing("nvmlDeviceSetPowerManagementLimit");
  nvmlReturn_t rc = fn(device_, power_limit_mw);
  if (rc == kErrorNoPermission) {
    return Status(StatusCode::kPermissionDenied,
                  Error(call, rc).message() +
                      "; setting a power limit needs root (CAP_SYS_ADMIN); set ZEUS_DRY_RUN=1 to "
                      "only log the change");
  }
  if (rc != kSuccess) return Error(call, rc);
  return Status::Ok();
}

StatusOr<bool> NvmlGpu::PersistenceMode() {
  const auto fn = library_->functions().device_get_persistence_mode;
  if (fn == nullptr) return Missing("nvmlDeviceGetPersistenceMode");
  nvmlEnableState_t mode = kFeatureDisabled;
  nvmlReturn_t rc = fn(device_, &mode);
  if (rc != kSuccess) return Error("nvmlDeviceGetPersistenceMode", rc);
  return mode == kFeatureEnabled;
}

Status NvmlGpu::SetPersistenceMode(bool enabled) {
  const std::string call =
      std::string("nvmlDeviceSetPersistenceMode(") + (enabled ? "enabled" : "disabled") + ")";
  const auto fn = library_->functions().device_set_persistence_mode;
  if (fn == nullptr) return Missing("nvmlDeviceSetPersistenceMode");
  nvmlReturn_t rc = fn(device_, enabled ? kFeatureEnabled : kFeatureDisabled);
  if (rc != kSuccess) return Error(call, rc);
  return Status::Ok();
}

Status NvmlGpu::LockedClocks(bool memory, bool lock, uint32_t min_mhz, uint32_t max_mhz) {
  const std::string domain = memory ? "memory" : "graphics";
  const std::string range = std::to_string(min_mhz) + "-" + std::to_string(max_mhz) + " MHz";
  if (lock && min_mhz > max_mhz) {
    return InvalidArgumentError(Context() + ": locked " + domain + " clocks " + range +
                                ": min above max");
  }
  const NvmlFunctions& f = library_->functions();
  const char* name =
      memory ? (lock ? "nvmlDeviceSetMemoryLockedClocks" : "nvmlDeviceResetMemoryLockedClocks")
             : (lock ? "nvmlDeviceSetGpuLockedClocks" : "nvmlDeviceResetGpuLockedClocks");
  nvmlReturn_t rc = kSuccess;
  if (lock) {
    const auto fn = memory ? f.device_set_memory_locked_clocks : f.device_set_gpu_locked_clocks;
    if (fn == nullptr) return Missing(name);
    rc = fn(device_, min_mhz, max_mhz);
  } else {
    const auto fn = memory ? f.device_reset_memory_locked_clocks : f.device_reset_gpu_locked_clocks;
    if (fn == nullptr) return Missing(name);
    rc = fn(device_);
  }
  if (rc != kSuccess) return Error(lock ? std::string(name) + "(" + range + ")" : name, rc);
  return Status::Ok();
}

Status NvmlGpu::SetGpuLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz) {
  return LockedClocks(false, true, min_mhz, max_mhz);
}
Status NvmlGpu::ResetGpuLockedClocks() { return LockedClocks(false, false, 0, 0); }
Status NvmlGpu::SetMemoryLockedClocksMhz(uint32_t min_mhz, uint32_t max_mhz) {
  return LockedClocks(true, true, min_mhz, max_mhz);
}
Status NvmlGpu::ResetMemoryLockedClocks() { return LockedClocks(true, false, 0, 0); }

namespace {

// NVML lists at most a few hundred clocks per memory clock.
constexpr unsigned int kClockListCapacity = 1024;

// `clocks` distinct, highest first.
std::vector<uint32_t> DistinctHighestFirst(std::vector<uint32_t> clocks) {
  std::sort(clocks.begin(), clocks.end(), std::greater<uint32_t>());
  clocks.erase(std::unique(clocks.begin(), clocks.end()), clocks.end());
  return clocks;
}

std::string JoinMhz(const std::vector<uint32_t>& clocks) {
  std::string out;
  for (uint32_t mhz : clocks) out += (out.empty() ? "" : ", ") + std::to_string(mhz);
  return out + " MHz";
}

}  // namespace

StatusOr<std::vector<uint32_t>> NvmlGpu::SupportedMemoryClocksMhz() {
  const auto fn = library_->functions().device_get_supported_memory_clocks;
  if (fn == nullptr) return Missing("nvmlDeviceGetSupportedMemoryClocks");
  std::vector<unsigned int> memory(kClockListCapacity);
  unsigned int count = kClockListCapacity;
  nvmlReturn_t rc = fn(device_, &count, memory.data());
  if (rc != kSuccess) return Error("nvmlDeviceGetSupportedMemoryClocks", rc);
  std::vector<uint32_t> out =
      DistinctHighestFirst(std::vector<uint32_t>(memory.begin(), memory.begin() + count));
  if (out.empty()) {
    return NotSupportedError(Context() + ": nvmlDeviceGetSupportedMemoryClocks lists no clock");
  }
  return out;
}

StatusOr<std::vector<uint32_t>> NvmlGpu::SupportedGraphicsClocksMhz(uint32_t memory_clock_mhz) {
  const NvmlFunctions& f = library_->functions();
  if (f.device_get_supported_graphics_clocks == nullptr) {
    return Missing("nvmlDeviceGetSupportedGraphicsClocks");
  }
  ZEUS_ASSIGN_OR_RETURN(const std::vector<uint32_t> memory, SupportedMemoryClocksMhz());
  uint32_t memory_mhz = memory_clock_mhz;
  if (memory_mhz == 0) {
    // The supported memory clock nearest the current one (the highest when
    // the current one cannot be read).
    memory_mhz = memory.front();
    unsigned int current_mhz = 0;
    if (f.device_get_clock_info != nullptr &&
        f.device_get_clock_info(device_, kClockMem, &current_mhz) == kSuccess && current_mhz > 0) {
      auto distance = [current_mhz](uint32_t mhz) {
        return mhz > current_mhz ? mhz - current_mhz : current_mhz - mhz;
      };
      memory_mhz = *std::min_element(memory.begin(), memory.end(), [&](uint32_t a, uint32_t b) {
        return distance(a) < distance(b);
      });
    }
  } else if (std::find(memory.begin(), memory.end(), memory_mhz) == memory.end()) {
    return NotFoundError(Context() + ": memory clock " + std::to_string(memory_mhz) +
                         " MHz is not a supported memory clock (supported: " + JoinMhz(memory) +
                         ")");
  }
  std::vector<unsigned int> graphics(kClockListCapacity);
  unsigned int count = kClockListCapacity;
  nvmlReturn_t rc =
      f.device_get_supported_graphics_clocks(device_, memory_mhz, &count, graphics.data());
  if (rc != kSuccess) {
    return Error("nvmlDeviceGetSupportedGraphicsClocks(" + std::to_string(memory_mhz) + " MHz)",
                 rc);
  }
  std::vector<uint32_t> out =
      DistinctHighestFirst(std::vector<uint32_t>(graphics.begin(), graphics.begin() + count));
  if (out.empty()) {
    return NotSupportedError(Context() + ": nvmlDeviceGetSupportedGraphicsClocks(" +
                             std::to_string(memory_mhz) + " MHz) lists no clock");
  }
  return out;
}

StatusOr<std::vector<WorkloadPowerProfile>> NvmlGpu::WorkloadPowerProfiles() {
  const auto fn = library_->functions().device_workload_power_profile_get_profiles_info;
  if (fn == nullptr) return Missing("nvmlDeviceWorkloadPowerProfileGetProfilesInfo");
  // 11 KB: on the heap, not the caller's stack.
  auto info = std::make_unique<nvmlWorkloadPowerProfileProfilesInfo_t>();
  *info = {};
  info->version = WorkloadPowerProfilesInfoVersion();
  nvmlReturn_t rc = fn(device_, info.get());
  if (rc != kSuccess) return Error("nvmlDeviceWorkloadPowerProfileGetProfilesInfo", rc);
  std::vector<WorkloadPowerProfile> out;
  for (unsigned int id = 0; id < 255; ++id) {
    if (((info->perf_profiles_mask.mask[id / 32] >> (id % 32)) & 1u) == 0) continue;
    WorkloadPowerProfile p;
    p.id = id;
    p.name = id < std::size(kWorkloadPowerProfileNames) ? kWorkloadPowerProfileNames[id]
                                                        : "PROFILE_" + std::to_string(id);
    p.priority = info->perf_profile[id].priority;
    out.push_back(std::move(p));
  }
  return out;
}

StatusOr<uint64_t> NvmlGpu::TotalEnergyMj() {
  const auto fn = library_->functions().device_get_total_energy_consumption;
  if (fn == nullptr) return Missing("nvmlDeviceGetTotalEnergyConsumption");
  unsigned long long energy_mj = 0;  // NOLINT(runtime/int): NVML's type.
  nvmlReturn_t rc = fn(device_, &energy_mj);
  if (rc != kSuccess) return Error("nvmlDeviceGetTotalEnergyConsumption", rc);
  return static_cast<uint64_t>(energy_mj);
}

StatusOr<uint32_t> NvmlGpu::PowerMw() {
  return GetUint(library_->functions().device_get_power_usage, "nvmlDeviceGetPowerUsage");
}

StatusOr<uint32_t> NvmlGpu::ReadPowerField(unsigned int field_id, unsigned int scope) {
  const auto fn = library_->functions().device_get_field_values;
  if (fn == nullptr) return Missing("nvmlDeviceGetFieldValues");
  nvmlFieldValue_t value = {};
  value.field_id = field_id;
  value.scope_id = scope;
  const std::string call = "nvmlDeviceGetFieldValues(field " + std::to_string(field_id) +
                           ", scope " + std::to_string(scope) + ")";
  nvmlReturn_t rc = fn(device_, 1, &value);
  if (rc == kSuccess) rc = value.nvml_return;
  if (rc != kSuccess) return Error(call, rc);
  switch (value.value_type) {
    case kValueTypeDouble:
      return static_cast<uint32_t>(value.value.d_val);
    case kValueTypeUnsignedInt:
      return static_cast<uint32_t>(value.value.ui_val);
    case kValueTypeUnsignedLong:
      return static_cast<uint32_t>(value.value.ul_val);
    case kValueTypeUnsignedLongLong:
      return static_cast<uint32_t>(value.value.ull_val);
    case kValueTypeSignedLongLong:
      return static_cast<uint32_t>(std::max<long long>(0, value.value.sll_val));  // NOLINT
    case kValueTypeSignedInt:
      return static_cast<uint32_t>(std::max(0, value.value.si_val));
    case kValueTypeUnsignedShort:
      return static_cast<uint32_t>(value.value.us_val);
    default:
      return InternalError(Context() + ": " + call + ": unknown value type " +
                           std::to_string(value.value_type));
  }
}

StatusOr<uint32_t> NvmlGpu::DomainPowerMw(PowerDomain domain) {
  if (domain == PowerDomain::kMemoryAverage) {
    return ReadPowerField(kFieldPowerAverage, kPowerScopeMemory);
  }
  const unsigned int field =
      domain == PowerDomain::kDeviceInstant ? kFieldPowerInstant : kFieldPowerAverage;
  const bool instant = domain == PowerDomain::kDeviceInstant;
  if (library_->functions().device_get_field_values == nullptr) {
    if (instant) return PowerMw();
    return Missing("nvmlDeviceGetFieldValues");
  }
  const unsigned int scope = device_power_scope_.load(std::memory_order_relaxed);
  StatusOr<uint32_t> power_mw = ReadPowerField(field, scope);
  if (power_mw.ok() || power_mw.status().code() != StatusCode::kNotSupported) return power_mw;
  if (scope == kPowerScopeGpu) {
    // Grace Hopper-class modules answer only with the module scope.
    StatusOr<uint32_t> module_mw = ReadPowerField(field, kPowerScopeModule);
    if (module_mw.ok()) {
      device_power_scope_.store(kPowerScopeModule, std::memory_order_relaxed);
      return module_mw;
    }
  }
  if (instant) {
    // Before Ampere, nvmlDeviceGetPowerUsage is the instant reading.
    const auto arch_fn = library_->functions().device_get_architecture;
    nvmlDeviceArchitecture_t code = 0;
    if (arch_fn != nullptr && arch_fn(device_, &code) == kSuccess && code >= 2 && code < 7) {
      return PowerMw();
    }
  }
  return power_mw;
}

StatusOr<int32_t> NvmlGpu::TemperatureC() {
  const auto fn = library_->functions().device_get_temperature;
  if (fn == nullptr) return Missing("nvmlDeviceGetTemperature");
  unsigned int temperature_c = 0;
  nvmlReturn_t rc = fn(device_, kTemperatureGpu, &temperature_c);
  if (rc != kSuccess) return Error("nvmlDeviceGetTemperature", rc);
  return static_cast<int32_t>(temperature_c);
}

}  // namespace zeus::nvml
