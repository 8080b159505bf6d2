#include "src/device/nvml/nvml_library.h"

#include <dlfcn.h>

#include <utility>

#include <spdlog/spdlog.h>

#include "src/device/nvml/nvml_error.h"

namespace zeus::nvml {
namespace {

// One table entry: the names tried in order, whether the symbol is required,
// and how to store its address in NvmlFunctions::field with the right type.
#define ZEUS_NVML_SYMBOL(field, required, ...)                                              \
  NvmlSymbolSpec {                                                                          \
    nullptr, {__VA_ARGS__}, required,                                                       \
        [](NvmlFunctions& f, void* p) { f.field = reinterpret_cast<decltype(f.field)>(p); } \
  }

std::vector<NvmlSymbolSpec> BuildSymbolTable() {
  std::vector<NvmlSymbolSpec> table = {
      ZEUS_NVML_SYMBOL(init, true, "nvmlInit_v2", "nvmlInit"),
      ZEUS_NVML_SYMBOL(shutdown, true, "nvmlShutdown"),
      ZEUS_NVML_SYMBOL(device_get_count, true, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"),
      ZEUS_NVML_SYMBOL(device_get_handle_by_index, true, "nvmlDeviceGetHandleByIndex_v2",
                       "nvmlDeviceGetHandleByIndex"),
      ZEUS_NVML_SYMBOL(device_get_name, true, "nvmlDeviceGetName"),
      ZEUS_NVML_SYMBOL(device_get_uuid, true, "nvmlDeviceGetUUID"),
      ZEUS_NVML_SYMBOL(device_get_power_usage, true, "nvmlDeviceGetPowerUsage"),
      ZEUS_NVML_SYMBOL(error_string, false, "nvmlErrorString"),
      ZEUS_NVML_SYMBOL(system_get_driver_version, false, "nvmlSystemGetDriverVersion"),
      ZEUS_NVML_SYMBOL(system_get_nvml_version, false, "nvmlSystemGetNVMLVersion"),
      ZEUS_NVML_SYMBOL(device_get_architecture, false, "nvmlDeviceGetArchitecture"),
      ZEUS_NVML_SYMBOL(device_get_power_management_limit_constraints, false,
                       "nvmlDeviceGetPowerManagementLimitConstraints"),
      ZEUS_NVML_SYMBOL(device_get_power_management_default_limit, false,
                       "nvmlDeviceGetPowerManagementDefaultLimit"),
      ZEUS_NVML_SYMBOL(device_get_power_management_limit, false,
                       "nvmlDeviceGetPowerManagementLimit"),
      ZEUS_NVML_SYMBOL(device_get_enforced_power_limit, false, "nvmlDeviceGetEnforcedPowerLimit"),
      ZEUS_NVML_SYMBOL(device_set_power_management_limit, false,
                       "nvmlDeviceSetPowerManagementLimit"),
      ZEUS_NVML_SYMBOL(device_get_persistence_mode, false, "nvmlDeviceGetPersistenceMode"),
      ZEUS_NVML_SYMBOL(device_set_persistence_mode, false, "nvmlDeviceSetPersistenceMode"),
      ZEUS_NVML_SYMBOL(device_set_gpu_locked_clocks, false, "nvmlDeviceSetGpuLockedClocks"),
      ZEUS_NVML_SYMBOL(device_reset_gpu_locked_clocks, false, "nvmlDeviceResetGpuLockedClocks"),
      ZEUS_NVML_SYMBOL(device_set_memory_locked_clocks, false, "nvmlDeviceSetMemoryLockedClocks"),
      ZEUS_NVML_SYMBOL(device_reset_memory_locked_clocks, false,
                       "nvmlDeviceResetMemoryLockedClocks"),
      ZEUS_NVML_SYMBOL(device_get_clock_info, false, "nvmlDeviceGetClockInfo"),
      ZEUS_NVML_SYMBOL(device_get_supported_memory_clocks, false,
                       "nvmlDeviceGetSupportedMemoryClocks"),
      ZEUS_NVML_SYMBOL(device_get_supported_graphics_clocks, false,
                       "nvmlDeviceGetSupportedGraphicsClocks"),
      ZEUS_NVML_SYMBOL(device_workload_power_profile_get_profiles_info, false,
                       "nvmlDeviceWorkloadPowerProfileGetProfilesInfo"),
      ZEUS_NVML_SYMBOL(device_get_total_energy_consumption, false,
                       "nvmlDeviceGetTotalEnergyConsumption"),
      ZEUS_NVML_SYMBOL(device_get_field_values, false, "nvmlDeviceGetFieldValues"),
      ZEUS_NVML_SYMBOL(device_get_temperature, false, "nvmlDeviceGetTemperature"),
      // PCI address (zeusd /discover).
      ZEUS_NVML_SYMBOL(device_get_pci_info, false, "nvmlDeviceGetPciInfo_v3",
                       "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"),
  };
  // The base name is the last candidate (the unversioned one).
  for (NvmlSymbolSpec& spec : table) spec.base_name = spec.candidates.back();
  return table;
}

#undef ZEUS_NVML_SYMBOL

std::vector<std::string> CandidatePaths(const NvmlLibraryOptions& options) {
  if (!options.library_path.empty()) return {options.library_path};
  return {"libnvidia-ml.so.1", "libnvidia-ml.so"};
}

}  // namespace

const std::vector<NvmlSymbolSpec>& NvmlSymbolTable() {
  static const std::vector<NvmlSymbolSpec>* const table =
      new std::vector<NvmlSymbolSpec>(BuildSymbolTable());
  return *table;
}

void NvmlLibrary::DlHandleCloser::operator()(void* handle) const {
  if (handle != nullptr && dlclose(handle) != 0) {
    const char* error = dlerror();
    spdlog::warn("dlclose of NVML failed: {}", error != nullptr ? error : "unknown error");
  }
}

StatusOr<std::shared_ptr<const NvmlLibrary>> NvmlLibrary::Open(const NvmlLibraryOptions& options) {
  std::vector<std::string> paths = CandidatePaths(options);
  DlHandle handle;
  std::string loaded_path;
  std::string failures;
  for (const std::string& path : paths) {
    dlerror();  // Clears any stale error.
    handle.reset(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL));
    if (handle) {
      loaded_path = path;
      break;
    }
    const char* error = dlerror();
    if (!failures.empty()) failures += "; ";
    failures += path + " (" + (error != nullptr ? error : "unknown dlopen error") + ")";
  }
  if (!handle) {
    return UnavailableError(
        "cannot load the NVML library (is the NVIDIA driver installed?): tried " + failures);
  }

  NvmlFunctions functions;
  std::vector<std::pair<std::string, std::string>> resolved;
  for (const NvmlSymbolSpec& spec : NvmlSymbolTable()) {
    void* address = nullptr;
    for (const char* name : spec.candidates) {
      address = dlsym(handle.get(), name);
      if (address != nullptr) {
        resolved.emplace_back(spec.base_name, name);
        break;
      }
    }
    if (address == nullptr && spec.required) {
      std::string tried;
      for (const char* name : spec.candidates)
        tried += (tried.empty() ? "" : ", ") + std::string(name);
      return UnavailableError("NVML library " + loaded_path + ": required symbol " +
                              spec.base_name + " not found (tried " + tried + ")");
    }
    if (address != nullptr) spec.assign(functions, address);
  }

  std::string init_name;
  for (const auto& [base, name] : resolved) {
    if (base == "nvmlInit") init_name = name;
  }
  nvmlReturn_t rc = functions.init();
  if (rc != kSuccess) {
    return NvmlError(init_name, rc, functions.error_string)
        .WithContext("NVML library " + loaded_path);
  }
  return std::shared_ptr<const NvmlLibrary>(
      new NvmlLibrary(loaded_path, std::move(handle), functions, std::move(resolved)));
}

NvmlLibrary::NvmlLibrary(std::string path, DlHandle handle, NvmlFunctions functions,
                         std::vector<std::pair<std::string, std::string>> resolved)
    : path_(std::move(path)),
      handle_(std::move(handle)),
      functions_(functions),
      resolved_(std::move(resolved)) {}

NvmlLibrary::~NvmlLibrary() {
  nvmlReturn_t rc = functions_.shutdown();
  if (rc != kSuccess) spdlog::warn("{}", Error("nvmlShutdown", rc).message());
}

std::string_view NvmlLibrary::ResolvedName(std::string_view base_name) const {
  for (const auto& [base, name] : resolved_) {
    if (base == base_name) return name;
  }
  return {};
}

Status NvmlLibrary::Error(std::string_view call, nvmlReturn_t rc) const {
  return NvmlError(call, rc, functions_.error_string);
}

Status NvmlLibrary::MissingFunction(std::string_view base_name) const {
  return NotSupportedError("NVML library " + path_ + " lacks " + std::string(base_name) +
                           " (driver too old?)");
}

}  // namespace zeus::nvml
