// NvmlLibrary: libnvidia-ml loaded with dlopen, its symbols resolved into a
// table, and NVML initialised; nvmlShutdown and dlclose happen when the last
// owner lets go (RAII, no global state).
//
// Thread-safety: immutable after Open; NVML itself is thread-safe, so the
// functions may be called from any thread.

#ifndef ZEUS_SRC_DEVICE_NVML_NVML_LIBRARY_H_
#define ZEUS_SRC_DEVICE_NVML_NVML_LIBRARY_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "zeus/status.h"

#include "src/device/nvml/nvml_api.h"

namespace zeus::nvml {

// The NVML functions Zeus calls. Required ones are never null after Open;
// optional ones are null when the library lacks them (older drivers).
struct NvmlFunctions {
  nvmlInit_fn init = nullptr;                                          // Required.
  nvmlShutdown_fn shutdown = nullptr;                                  // Required.
  nvmlDeviceGetCount_fn device_get_count = nullptr;                    // Required.
  nvmlDeviceGetHandleByIndex_fn device_get_handle_by_index = nullptr;  // Required.
  nvmlDeviceGetString_fn device_get_name = nullptr;                    // Required.
  nvmlDeviceGetString_fn device_get_uuid = nullptr;                    // Required.
  nvmlDeviceGetUint_fn device_get_power_usage = nullptr;               // Required.
  nvmlErrorString_fn error_string = nullptr;
  nvmlSystemGetVersion_fn system_get_driver_version = nullptr;
  nvmlSystemGetVersion_fn system_get_nvml_version = nullptr;
  nvmlDeviceGetArchitecture_fn device_get_architecture = nullptr;
  nvmlDeviceGetUint2_fn device_get_power_management_limit_constraints = nullptr;
  nvmlDeviceGetUint_fn device_get_power_management_default_limit = nullptr;
  nvmlDeviceGetUint_fn device_get_power_management_limit = nullptr;
  nvmlDeviceGetUint_fn device_get_enforced_power_limit = nullptr;
  nvmlDeviceSetUint_fn device_set_power_management_limit = nullptr;
  nvmlDeviceGetEnableState_fn device_get_persistence_mode = nullptr;
  nvmlDeviceSetEnableState_fn device_set_persistence_mode = nullptr;
  nvmlDeviceSetUint2_fn device_set_gpu_locked_clocks = nullptr;
  nvmlDeviceReset_fn device_reset_gpu_locked_clocks = nullptr;
  nvmlDeviceSetUint2_fn device_set_memory_locked_clocks = nullptr;
  nvmlDeviceReset_fn device_reset_memory_locked_clocks = nullptr;
  // Supported clocks (the frequency optimizer's grid).
  nvmlDeviceGetClockInfo_fn device_get_clock_info = nullptr;
  nvmlDeviceGetSupportedMemoryClocks_fn device_get_supported_memory_clocks = nullptr;
  nvmlDeviceGetSupportedGraphicsClocks_fn device_get_supported_graphics_clocks = nullptr;
  // Workload power profiles (zeus show-env).
  nvmlDeviceWorkloadPowerProfileGetProfilesInfo_fn device_workload_power_profile_get_profiles_info =
      nullptr;
  nvmlDeviceGetUint64_fn device_get_total_energy_consumption = nullptr;
  nvmlDeviceGetFieldValues_fn device_get_field_values = nullptr;
  nvmlDeviceGetTemperature_fn device_get_temperature = nullptr;
  // PCI address (zeusd /discover).
  nvmlDeviceGetPciInfo_fn device_get_pci_info = nullptr;
};

// One entry of the symbol table: the NVML function's base name, the names
// tried in order (versioned first), and whether a library without it is
// unusable.
struct NvmlSymbolSpec {
  const char* base_name;
  std::vector<const char*> candidates;
  bool required;
  void (*assign)(NvmlFunctions& functions, void* address);
};

// The table Open resolves, in declaration order of NvmlFunctions.
const std::vector<NvmlSymbolSpec>& NvmlSymbolTable();

struct NvmlLibraryOptions {
  // What to dlopen (a path or a soname). Default (empty): libnvidia-ml.so.1,
  // else libnvidia-ml.so. ($ZEUS_NVML_LIBRARY is read by the backend, which
  // passes it here.)
  std::string library_path;
};

class NvmlLibrary {
 public:
  // Loads the library, resolves the symbol table and calls nvmlInit.
  // kUnavailable naming every path tried (with dlerror) when none loads, or
  // naming the missing required symbol and the names tried; NvmlError of the
  // init call when NVML refuses to initialise (e.g. driver not loaded).
  static StatusOr<std::shared_ptr<const NvmlLibrary>> Open(const NvmlLibraryOptions& options = {});

  // Calls nvmlShutdown, then dlclose.
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  // The path or soname that loaded.
  const std::string& path() const { return path_; }
  const NvmlFunctions& functions() const { return functions_; }

  // The symbol that resolved for `base_name` (e.g. "nvmlInit_v2" for
  // "nvmlInit"), or "" when the library lacks it.
  std::string_view ResolvedName(std::string_view base_name) const;

  // NvmlError with this library's nvmlErrorString (when it has one).
  Status Error(std::string_view call, nvmlReturn_t rc) const;

  // kNotSupported naming the optional function `base_name` this library
  // lacks.
  Status MissingFunction(std::string_view base_name) const;

 private:
  struct DlHandleCloser {
    void operator()(void* handle) const;
  };
  using DlHandle = std::unique_ptr<void, DlHandleCloser>;

  NvmlLibrary(std::string path, DlHandle handle, NvmlFunctions functions,
              std::vector<std::pair<std::string, std::string>> resolved);

  const std::string path_;
  // Declared before nothing that needs it at destruction: the destructor
  // body shuts NVML down, then this member's destructor calls dlclose.
  DlHandle handle_;
  const NvmlFunctions functions_;
  // (base name, resolved name) for every symbol found.
  const std::vector<std::pair<std::string, std::string>> resolved_;
};

}  // namespace zeus::nvml

#endif  // ZEUS_SRC_DEVICE_NVML_NVML_LIBRARY_H_
