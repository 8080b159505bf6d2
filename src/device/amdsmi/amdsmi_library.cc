#include "src/device/amdsmi/amdsmi_library.h"

#include <dlfcn.h>

#include <utility>

#include <spdlog/spdlog.h>

#include "src/device/amdsmi/amdsmi_error.h"

namespace zeus::amdsmi {
namespace {

#define ZEUS_AMDSMI_SYMBOL(field, required)                                                   \
  AmdsmiSymbolSpec {                                                                          \
    "amdsmi_" #field, required,                                                               \
        [](AmdsmiFunctions& f, void* p) { f.field = reinterpret_cast<decltype(f.field)>(p); } \
  }

std::vector<AmdsmiSymbolSpec> BuildSymbolTable() {
  return {
      ZEUS_AMDSMI_SYMBOL(init, true),
      ZEUS_AMDSMI_SYMBOL(shut_down, true),
      ZEUS_AMDSMI_SYMBOL(get_socket_handles, true),
      ZEUS_AMDSMI_SYMBOL(get_processor_handles, true),
      ZEUS_AMDSMI_SYMBOL(get_power_info, true),
      ZEUS_AMDSMI_SYMBOL(get_power_cap_info, true),
      ZEUS_AMDSMI_SYMBOL(status_code_to_string, false),
      ZEUS_AMDSMI_SYMBOL(get_processor_type, false),
      ZEUS_AMDSMI_SYMBOL(get_lib_version, false),
      ZEUS_AMDSMI_SYMBOL(get_gpu_driver_info, false),
      ZEUS_AMDSMI_SYMBOL(get_gpu_asic_info, false),
      ZEUS_AMDSMI_SYMBOL(get_gpu_device_uuid, false),
      ZEUS_AMDSMI_SYMBOL(get_gpu_device_bdf, false),
      ZEUS_AMDSMI_SYMBOL(set_power_cap, false),
      ZEUS_AMDSMI_SYMBOL(get_energy_count, false),
      ZEUS_AMDSMI_SYMBOL(get_temp_metric, false),
      ZEUS_AMDSMI_SYMBOL(get_clk_freq, false),
      ZEUS_AMDSMI_SYMBOL(set_gpu_clk_range, false),
  };
}

#undef ZEUS_AMDSMI_SYMBOL

std::vector<std::string> CandidatePaths(const AmdsmiLibraryOptions& options) {
  if (!options.library_path.empty()) return {options.library_path};
  std::vector<std::string> paths = {"libamd_smi.so"};
  if (!options.rocm_path.empty()) paths.push_back(options.rocm_path + "/lib/libamd_smi.so");
  return paths;
}

}  // namespace

const std::vector<AmdsmiSymbolSpec>& AmdsmiSymbolTable() {
  static const std::vector<AmdsmiSymbolSpec>* const table =
      new std::vector<AmdsmiSymbolSpec>(BuildSymbolTable());
  return *table;
}

void AmdsmiLibrary::DlHandleCloser::operator()(void* handle) const {
  if (handle != nullptr && dlclose(handle) != 0) {
    const char* error = dlerror();
    spdlog::warn("dlclose of AMD SMI failed: {}", error != nullptr ? error : "unknown error");
  }
}

StatusOr<std::shared_ptr<const AmdsmiLibrary>> AmdsmiLibrary::Open(
    const AmdsmiLibraryOptions& options) {
  DlHandle handle;
  std::string loaded_path;
  std::string failures;
  for (const std::string& path : CandidatePaths(options)) {
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
    return UnavailableError("cannot load the AMD SMI library (is ROCm installed?): tried " +
                            failures);
  }

  AmdsmiFunctions functions;
  for (const AmdsmiSymbolSpec& spec : AmdsmiSymbolTable()) {
    void* address = dlsym(handle.get(), spec.name);
    if (address == nullptr && spec.required) {
      return UnavailableError("AMD SMI library " + loaded_path + ": required symbol " + spec.name +
                              " not found");
    }
    if (address != nullptr) spec.assign(functions, address);
  }

  amdsmi_status_t rc = functions.init(kInitAmdGpus);
  if (rc != kSuccess) {
    return AmdsmiError("amdsmi_init(AMDSMI_INIT_AMD_GPUS)", rc, functions.status_code_to_string)
        .WithContext("AMD SMI library " + loaded_path);
  }
  return std::shared_ptr<const AmdsmiLibrary>(
      new AmdsmiLibrary(loaded_path, std::move(handle), functions));
}

AmdsmiLibrary::AmdsmiLibrary(std::string path, DlHandle handle, AmdsmiFunctions functions)
    : path_(std::move(path)), handle_(std::move(handle)), functions_(functions) {}

AmdsmiLibrary::~AmdsmiLibrary() {
  amdsmi_status_t rc = functions_.shut_down();
  if (rc != kSuccess) spdlog::warn("{}", Error("amdsmi_shut_down", rc).message());
}

StatusOr<std::vector<amdsmi_processor_handle>> AmdsmiLibrary::GpuHandles() const {
  uint32_t socket_count = 0;
  amdsmi_status_t rc = functions_.get_socket_handles(&socket_count, nullptr);
  if (rc != kSuccess) return Error("amdsmi_get_socket_handles(count)", rc);
  std::vector<amdsmi_socket_handle> sockets(socket_count, nullptr);
  if (socket_count > 0) {
    rc = functions_.get_socket_handles(&socket_count, sockets.data());
    if (rc != kSuccess) return Error("amdsmi_get_socket_handles", rc);
    sockets.resize(socket_count);
  }
  std::vector<amdsmi_processor_handle> gpus;
  for (size_t s = 0; s < sockets.size(); ++s) {
    const std::string where = "(socket " + std::to_string(s) + ")";
    uint32_t count = 0;
    rc = functions_.get_processor_handles(sockets[s], &count, nullptr);
    if (rc != kSuccess) return Error("amdsmi_get_processor_handles" + where, rc);
    std::vector<amdsmi_processor_handle> processors(count, nullptr);
    if (count > 0) {
      rc = functions_.get_processor_handles(sockets[s], &count, processors.data());
      if (rc != kSuccess) return Error("amdsmi_get_processor_handles" + where, rc);
      processors.resize(count);
    }
    for (amdsmi_processor_handle processor : processors) {
      if (functions_.get_processor_type != nullptr) {
        uint32_t type = 0;
        rc = functions_.get_processor_type(processor, &type);
        if (rc != kSuccess) return Error("amdsmi_get_processor_type" + where, rc);
        if (type != kProcessorTypeAmdGpu) continue;
      }
      gpus.push_back(processor);
    }
  }
  return gpus;
}

Status AmdsmiLibrary::Error(std::string_view call, amdsmi_status_t rc) const {
  return AmdsmiError(call, rc, functions_.status_code_to_string);
}

Status AmdsmiLibrary::MissingFunction(std::string_view name) const {
  return NotSupportedError("AMD SMI library " + path_ + " lacks " + std::string(name) +
                           " (ROCm too old?)");
}

}  // namespace zeus::amdsmi
