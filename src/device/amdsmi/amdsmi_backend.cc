#include "src/device/amdsmi/amdsmi_backend.h"

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "src/device/amdsmi/amdsmi_library.h"
#include "src/device/amdsmi/hip_visible_devices.h"
#include "src/device/dry_run_gpu.h"
#include "src/device/zeusd/zeusd_client.h"
#include "src/device/zeusd/zeusd_gpu.h"

namespace zeus::amdsmi {
namespace {

StatusOr<std::shared_ptr<const AmdsmiLibrary>> OpenLibrary(const GpuOptions& options) {
  AmdsmiLibraryOptions library_options;
  library_options.library_path = options.GetEnv(kLibraryEnv).value_or("");
  std::optional<std::string> rocm = options.GetEnv("ROCM_PATH");
  if (rocm && !rocm->empty()) library_options.rocm_path = *rocm;
  return AmdsmiLibrary::Open(library_options);
}

StatusOr<std::chrono::milliseconds> CheckInterval(const GpuOptions& options) {
  std::optional<std::string> value = options.GetEnv(kEnergyCheckMsEnv);
  if (!value || value->empty()) return std::chrono::milliseconds(500);
  unsigned long ms = 0;  // NOLINT(runtime/int)
  for (char c : *value) {
    if (c < '0' || c > '9' || ms > 600'000) {
      return InvalidArgumentError(std::string(kEnergyCheckMsEnv) + "=\"" + *value +
                                  "\": not a number of milliseconds in [0, 600000]");
    }
    ms = ms * 10 + static_cast<unsigned>(c - '0');
  }
  if (ms > 600'000) {
    return InvalidArgumentError(std::string(kEnergyCheckMsEnv) + "=\"" + *value +
                                "\": not a number of milliseconds in [0, 600000]");
  }
  return std::chrono::milliseconds(ms);
}

StatusOr<std::vector<std::unique_ptr<Gpu>>> OpenAmdsmiGpus(const GpuOptions& options,
                                                           int first_index) {
  // Bad settings are reported before anything is loaded.
  ZEUS_ASSIGN_OR_RETURN(std::chrono::milliseconds interval, CheckInterval(options));
  ZEUS_ASSIGN_OR_RETURN(std::shared_ptr<const AmdsmiLibrary> library, OpenLibrary(options));
  ZEUS_ASSIGN_OR_RETURN(std::vector<amdsmi_processor_handle> handles, library->GpuHandles());
  ZEUS_ASSIGN_OR_RETURN(std::vector<unsigned int> order,
                        ResolveHipVisibleDevices(options.GetEnv("HIP_VISIBLE_DEVICES"),
                                                 options.GetEnv("CUDA_VISIBLE_DEVICES"),
                                                 static_cast<unsigned int>(handles.size())));
  // ZEUSD_SOCK_PATH (set and non-empty): setters go through the Zeus daemon,
  // which names the GPU by its AMD SMI index.
  std::optional<std::string> zeusd_socket = options.GetEnv(zeusd::kSockPathEnv);
  if (zeusd_socket && zeusd_socket->empty()) zeusd_socket.reset();
  std::vector<std::unique_ptr<Gpu>> gpus;
  std::vector<AmdsmiGpu*> to_check;
  gpus.reserve(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    auto amd_gpu = std::make_unique<AmdsmiGpu>(library, handles[order[i]],
                                               first_index + static_cast<int>(i), order[i]);
    to_check.push_back(amd_gpu.get());
    const std::string context = amd_gpu->Context();
    std::unique_ptr<Gpu> gpu = std::move(amd_gpu);
    if (zeusd_socket) {
      gpu = std::make_unique<zeusd::ZeusdGpu>(std::move(gpu), *zeusd_socket, order[i], context);
    }
    // Outermost: a dry run touches neither the device nor the daemon.
    gpus.push_back(std::make_unique<DryRunGpu>(std::move(gpu), context));
  }
  if (interval.count() > 0) CheckEnergyCounters(to_check, interval);
  return gpus;
}

StatusOr<int> CountAmdsmiGpus(const GpuOptions& options) {
  ZEUS_ASSIGN_OR_RETURN(std::shared_ptr<const AmdsmiLibrary> library, OpenLibrary(options));
  ZEUS_ASSIGN_OR_RETURN(std::vector<amdsmi_processor_handle> handles, library->GpuHandles());
  ZEUS_ASSIGN_OR_RETURN(std::vector<unsigned int> order,
                        ResolveHipVisibleDevices(options.GetEnv("HIP_VISIBLE_DEVICES"),
                                                 options.GetEnv("CUDA_VISIBLE_DEVICES"),
                                                 static_cast<unsigned int>(handles.size())));
  return static_cast<int>(order.size());
}

GpuBackendDescription DescribeAmdsmi(const GpuOptions& options) {
  GpuBackendDescription d;
  d.name = "amdsmi";
  d.display_name = "AMD SMI";
  StatusOr<std::shared_ptr<const AmdsmiLibrary>> library = OpenLibrary(options);
  if (!library.ok()) {
    d.status = library.status();
    return d;
  }
  d.loaded = true;
  const AmdsmiFunctions& fns = (*library)->functions();
  std::vector<std::pair<std::string, std::string>> versions;
  // amdsmi_version_t: the build string's pointer is at offset 16 in every
  // release (after four, or three padded, uint32_t).
  if (fns.get_lib_version == nullptr) {
    d.status = (*library)->MissingFunction("amdsmi_get_lib_version");
    return d;
  }
  alignas(16) unsigned char version[kStructBufferSize] = {};
  amdsmi_status_t rc = fns.get_lib_version(version);
  if (rc != kSuccess) {
    d.status = (*library)->Error("amdsmi_get_lib_version", rc);
    return d;
  }
  const char* build = nullptr;
  std::memcpy(&build, version + 16, sizeof(build));
  if (build != nullptr && *build != '\0') versions.emplace_back("amdsmi", build);
  // The driver version, from the first GPU (AMD SMI has no system-wide query).
  StatusOr<std::vector<amdsmi_processor_handle>> handles = (*library)->GpuHandles();
  if (handles.ok() && !handles->empty()) {
    if (fns.get_gpu_driver_info == nullptr) {
      d.status = (*library)->MissingFunction("amdsmi_get_gpu_driver_info");
    } else {
      alignas(16) char driver[kStructBufferSize] = {};
      rc = fns.get_gpu_driver_info(handles->front(), driver);
      if (rc != kSuccess) {
        d.status = (*library)->Error("amdsmi_get_gpu_driver_info", rc);
      } else {
        versions.insert(versions.begin(),
                        {"driver", std::string(driver, strnlen(driver, kLeadingStringMax))});
      }
    }
  } else if (!handles.ok()) {
    d.status = handles.status();
  }
  d.versions = std::move(versions);
  return d;
}

}  // namespace

void CheckEnergyCounters(const std::vector<AmdsmiGpu*>& gpus, std::chrono::milliseconds interval) {
  struct Probe {
    uint32_t power_mw = 0;
    StatusOr<uint64_t> start_mj = uint64_t{0};
  };
  if (gpus.empty()) return;
  std::vector<Probe> probes(gpus.size());
  for (size_t i = 0; i < gpus.size(); ++i) {
    StatusOr<uint32_t> power = gpus[i]->PowerMw();
    probes[i].power_mw = power.ok() ? *power : 0;
    probes[i].start_mj = gpus[i]->ReadEnergyCounterMj();
  }
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(interval);
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (size_t i = 0; i < gpus.size(); ++i) {
    AmdsmiGpu& gpu = *gpus[i];
    const std::string who = "GPU " + std::to_string(gpu.index());
    const char* fallback = "; integrate PowerMw() instead";
    if (!probes[i].start_mj.ok()) {
      gpu.DisableEnergyCounter(NotSupportedError(
          who +
          ": energy counter unusable: " + std::string(probes[i].start_mj.status().message())));
      continue;
    }
    StatusOr<uint64_t> end_mj = gpu.ReadEnergyCounterMj();
    if (!end_mj.ok()) {
      gpu.DisableEnergyCounter(NotSupportedError(
          who + ": energy counter unusable: " + std::string(end_mj.status().message())));
      continue;
    }
    const double expected_mj = static_cast<double>(probes[i].power_mw) * elapsed_s;
    const double measured_mj =
        *end_mj >= *probes[i].start_mj ? static_cast<double>(*end_mj - *probes[i].start_mj) : -1.0;
    std::string why;
    if (expected_mj < 1.0) {
      why = fmt::format("power reads as {} mW, so the energy counter cannot be checked against it",
                        probes[i].power_mw);
    } else if (!(measured_mj / expected_mj > 0.1 && measured_mj / expected_mj < 10.0)) {
      why = fmt::format(
          "over {:.0f} ms the energy counter advanced {:.0f} mJ but power x time is {:.0f} mJ "
          "(more than 10x apart; a known AMD SMI counter problem on some GPUs)",
          elapsed_s * 1000, measured_mj, expected_mj);
    }
    if (why.empty()) continue;
    spdlog::warn("AMD SMI {}: energy counter disabled: {}{}", who, why, fallback);
    gpu.DisableEnergyCounter(
        NotSupportedError(who + ": energy counter disabled at open: " + why + fallback));
  }
}

GpuBackend AmdsmiBackend() {
  GpuBackend backend{"amdsmi", "AMD SMI", &OpenAmdsmiGpus, &DescribeAmdsmi};
  backend.count = &CountAmdsmiGpus;
  return backend;
}

}  // namespace zeus::amdsmi
