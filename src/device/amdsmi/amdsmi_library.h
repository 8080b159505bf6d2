// AmdsmiLibrary: libamd_smi loaded with dlopen, its symbols resolved into a
// table, and AMD SMI initialised for AMD GPUs; amdsmi_shut_down and dlclose
// happen when the last owner lets go (RAII, no global state).
//
// Thread-safety: immutable after Open; AMD SMI locks internally, so the
// functions may be called from any thread.

#ifndef ZEUS_SRC_DEVICE_AMDSMI_AMDSMI_LIBRARY_H_
#define ZEUS_SRC_DEVICE_AMDSMI_AMDSMI_LIBRARY_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "zeus/status.h"

#include "src/device/amdsmi/amdsmi_api.h"

namespace zeus::amdsmi {

// The AMD SMI functions Zeus calls. Required ones are never null after Open;
// optional ones are null when the library lacks them.
struct AmdsmiFunctions {
  amdsmi_init_fn init = nullptr;                                    // Required.
  amdsmi_shut_down_fn shut_down = nullptr;                          // Required.
  amdsmi_get_socket_handles_fn get_socket_handles = nullptr;        // Required.
  amdsmi_get_processor_handles_fn get_processor_handles = nullptr;  // Required.
  amdsmi_get_struct_fn get_power_info = nullptr;                    // Required.
  amdsmi_get_power_cap_info_fn get_power_cap_info = nullptr;        // Required.
  amdsmi_status_code_to_string_fn status_code_to_string = nullptr;
  amdsmi_get_processor_type_fn get_processor_type = nullptr;
  amdsmi_get_lib_version_fn get_lib_version = nullptr;
  amdsmi_get_struct_fn get_gpu_driver_info = nullptr;
  amdsmi_get_struct_fn get_gpu_asic_info = nullptr;
  amdsmi_get_gpu_device_uuid_fn get_gpu_device_uuid = nullptr;
  amdsmi_get_struct_fn get_gpu_device_bdf = nullptr;
  amdsmi_set_power_cap_fn set_power_cap = nullptr;
  amdsmi_get_energy_count_fn get_energy_count = nullptr;
  amdsmi_get_temp_metric_fn get_temp_metric = nullptr;
  amdsmi_get_clk_freq_fn get_clk_freq = nullptr;
  amdsmi_set_gpu_clk_range_fn set_gpu_clk_range = nullptr;
};

// One entry of the symbol table: the AMD SMI function's name and whether a
// library without it is unusable.
struct AmdsmiSymbolSpec {
  const char* name;
  bool required;
  void (*assign)(AmdsmiFunctions& functions, void* address);
};

// The table Open resolves, in declaration order of AmdsmiFunctions.
const std::vector<AmdsmiSymbolSpec>& AmdsmiSymbolTable();

struct AmdsmiLibraryOptions {
  // What to dlopen (a path or a soname). Default (empty): libamd_smi.so, then
  // <rocm_path>/lib/libamd_smi.so. ($ZEUS_AMDSMI_LIBRARY is read by the
  // backend, which passes it here.)
  std::string library_path;
  // ROCm's install prefix for the fallback path. Default: /opt/rocm (the
  // backend passes $ROCM_PATH when set).
  std::string rocm_path = "/opt/rocm";
};

class AmdsmiLibrary {
 public:
  // Loads the library, resolves the symbol table and calls
  // amdsmi_init(AMDSMI_INIT_AMD_GPUS). kUnavailable naming every path tried
  // (with dlerror) when none loads, or naming the missing required symbol;
  // AmdsmiError of amdsmi_init when AMD SMI refuses to initialise (e.g. the
  // amdgpu driver is not loaded).
  static StatusOr<std::shared_ptr<const AmdsmiLibrary>> Open(
      const AmdsmiLibraryOptions& options = {});

  // Calls amdsmi_shut_down, then dlclose.
  ~AmdsmiLibrary();
  AmdsmiLibrary(const AmdsmiLibrary&) = delete;
  AmdsmiLibrary& operator=(const AmdsmiLibrary&) = delete;

  // The path or soname that loaded.
  const std::string& path() const { return path_; }
  const AmdsmiFunctions& functions() const { return functions_; }

  // Every AMD GPU processor handle, socket by socket in AMD SMI's order (the
  // order amd-smi and HIP number GPUs). Processors that report another type
  // (CPUs of an APU) are skipped when amdsmi_get_processor_type exists.
  StatusOr<std::vector<amdsmi_processor_handle>> GpuHandles() const;

  // AmdsmiError with this library's amdsmi_status_code_to_string.
  Status Error(std::string_view call, amdsmi_status_t rc) const;

  // kNotSupported naming the optional function `name` this library lacks.
  Status MissingFunction(std::string_view name) const;

 private:
  struct DlHandleCloser {
    void operator()(void* handle) const;
  };
  using DlHandle = std::unique_ptr<void, DlHandleCloser>;

  AmdsmiLibrary(std::string path, DlHandle handle, AmdsmiFunctions functions);

  const std::string path_;
  // The destructor body shuts AMD SMI down, then this member's destructor
  // calls dlclose.
  DlHandle handle_;
  const AmdsmiFunctions functions_;
};

}  // namespace zeus::amdsmi

#endif  // ZEUS_SRC_DEVICE_AMDSMI_AMDSMI_LIBRARY_H_
