// The C ABI's shared helpers (choosing the GPUs and CPU sockets a handle
// works on) and its GPU calls (zeus_gpus_*: reads, power-limit and
// persistence setters through the device layer, restore). Clock lists and
// locks are zeus_c_clocks.cc, RAPL CPUs zeus_c_cpus.cc.

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "zeus/device/clock.h"
#include "zeus/device/devices.h"
#include "zeus/optimizer/power_limit/power_limit_restorer.h"
#include "zeus/util/env.h"
#include "zeus/util/units.h"

#include "python/zeus_c_gpus.h"
#include "python/zeus_c_internal.h"
#include "src/device/gpu_backend.h"

namespace zeus::c_api {

Status CopyOut(const char* fn, const std::string& text, char* buffer, size_t buffer_size,
               size_t* length) {
  if (length != nullptr) *length = text.size();
  if (buffer == nullptr || buffer_size < text.size() + 1) {
    return InvalidArgumentError(std::string(fn) + ": buffer of " + std::to_string(buffer_size) +
                                " bytes, need " + std::to_string(text.size() + 1));
  }
  std::memcpy(buffer, text.c_str(), text.size() + 1);
  return Status::Ok();
}

StatusOr<nlohmann::json> ParseObject(const char* fn, const char* options_json,
                                     const std::vector<std::string>& known) {
  std::string text = options_json == nullptr ? "{}" : options_json;
  ZEUS_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(text, std::string(fn) + ": options"));
  if (!j.is_object()) {
    return InvalidArgumentError(std::string(fn) + ": options must be a JSON object, got " +
                                DescribeJson(j));
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
      return InvalidArgumentError(std::string(fn) + ": unknown option '" + it.key() + "'");
    }
  }
  return j;
}

Status CheckGpuPosition(const char* fn, const zeus_gpus* gpus, int32_t position) {
  if (gpus == nullptr) return NullHandle(fn);
  if (position < 0 || static_cast<size_t>(position) >= gpus->gpus.size()) {
    return InvalidArgumentError(std::string(fn) + ": no GPU at position " +
                                std::to_string(position) + " of " +
                                std::to_string(gpus->gpus.size()));
  }
  return Status::Ok();
}

namespace {

// gpu_indices / cpu_indices: null = every device, else a list of integers
// from 0 to INT32_MAX (never narrowed: 2**32 is refused, not GPU 0).
StatusOr<std::optional<std::vector<int>>> ParseIndices(const char* fn, const char* what,
                                                       const nlohmann::json& indices) {
  if (indices.is_null()) return std::optional<std::vector<int>>();
  std::vector<int> out;
  bool integers = indices.is_array();
  for (const nlohmann::json& v : indices) {
    if (!integers || !v.is_number_integer()) break;
    const bool in_range = v.is_number_unsigned()
                              ? v.get<uint64_t>() <= static_cast<uint64_t>(INT32_MAX)
                              : v.get<int64_t>() >= 0 && v.get<int64_t>() <= INT32_MAX;
    if (!in_range) {
      return InvalidArgumentError(std::string(fn) + ": " + what + ": index " + v.dump() +
                                  " is out of range (0 to " + std::to_string(INT32_MAX) + ")");
    }
    out.push_back(static_cast<int>(v.get<int64_t>()));
  }
  if (!integers || out.size() != indices.size()) {
    return InvalidArgumentError(std::string(fn) + ": " + what +
                                " must be a list of integers from 0 to " +
                                std::to_string(INT32_MAX) + ", got " + indices.dump());
  }
  return std::optional<std::vector<int>>(std::move(out));
}

// Opens the chosen devices through the device layer (the one place that
// turns a choice of indices into devices); `gpus` or `cpus` is nullopt for
// every device of that kind and empty for none.
StatusOr<SelectedDevices> Open(const char* fn, std::optional<std::vector<int>> gpus,
                               std::optional<std::vector<int>> cpus,
                               const std::string& powercap_root = kDefaultPowercapRoot) {
  DeviceSelection selection;
  selection.powercap_root = powercap_root;
  selection.gpu_indices = std::move(gpus);
  selection.cpu_indices = std::move(cpus);
  selection.gpus_name = std::string(fn) + ": gpu_indices";
  selection.cpus_name = std::string(fn) + ": cpu_indices";
  selection.require_device = false;
  ZEUS_ASSIGN_OR_RETURN(SelectedDevices devices, OpenSelectedDevices(selection));
  if (!devices.gpus_status.ok()) {
    spdlog::info("{}: no GPUs measured ({})", fn, devices.gpus_status.message());
  }
  if (!devices.cpus_status.ok()) {
    spdlog::info("{}: no CPUs measured ({})", fn, devices.cpus_status.message());
  }
  return devices;
}

}  // namespace

StatusOr<GpuSelection> SelectGpus(const char* fn, const nlohmann::json& indices) {
  ZEUS_ASSIGN_OR_RETURN(std::optional<std::vector<int>> wanted,
                        ParseIndices(fn, "gpu_indices", indices));
  ZEUS_ASSIGN_OR_RETURN(SelectedDevices devices, Open(fn, std::move(wanted), std::vector<int>{}));
  GpuSelection selection;
  selection.picked = devices.GpuPointers();
  selection.all = std::move(devices.gpus);
  return selection;
}

StatusOr<CpuSelection> SelectCpus(const char* fn, const nlohmann::json& indices,
                                  const std::string& powercap_root) {
  ZEUS_ASSIGN_OR_RETURN(std::optional<std::vector<int>> wanted,
                        ParseIndices(fn, "cpu_indices", indices));
  ZEUS_ASSIGN_OR_RETURN(SelectedDevices devices,
                        Open(fn, std::vector<int>{}, std::move(wanted), powercap_root));
  CpuSelection selection;
  selection.picked = devices.CpuPointers();
  selection.all = std::move(devices.cpus);
  return selection;
}

}  // namespace zeus::c_api

zeus::Status zeus_gpus::Restore() {
  zeus::Status first;
  auto keep = [&first](const zeus::Status& s) {
    if (!s.ok() && first.ok()) first = s;
  };
  if (restorer != nullptr) {
    keep(restorer->Restore());
    restorer.reset();  // A later change records the limits afresh.
  }
  for (size_t i = 0; i < gpus.size(); ++i) {
    keep(zeus::c_api::RestoreLockedClocks(this, i));
    if (i < original_persistence.size() && original_persistence[i]) {
      keep(gpus[i]
               ->SetPersistenceMode(*original_persistence[i])
               .WithContext("zeus.device: restoring persistence mode"));
      original_persistence[i].reset();
    }
  }
  return first;
}

zeus_gpus::~zeus_gpus() {
  if (getpid() != owner_pid) {
    // A forked child: the restorer would set the parent's limits back.
    static_cast<void>(restorer.release());
    return;
  }
  zeus::Status s;
  {
    std::lock_guard<std::mutex> lock(mu);
    s = Restore();
  }
  if (!s.ok()) spdlog::error("{}", s.ToString());
}

namespace {

using zeus::Status;
using zeus::c_api::CheckGpuPosition;
using zeus::c_api::Guard;
using zeus::c_api::NullHandle;
using zeus::c_api::Report;

// Sets `gpu`'s power limit; with restore_on_exit, first records every GPU's
// limit (once per handle) so that the handle's restore puts it back.
Status SetLimit(zeus_gpus* gpus, zeus::Gpu* gpu, uint32_t power_limit_mw) {
  if (gpus->restore_on_exit && gpus->restorer == nullptr) {
    std::vector<zeus::Gpu*> all;
    for (auto& g : gpus->gpus) all.push_back(g.get());
    ZEUS_ASSIGN_OR_RETURN(gpus->restorer,
                          zeus::PowerLimitRestorer::Create(std::move(all),
                                                           /*restore_on_signal=*/true));
  }
  return gpu->SetPowerLimitMw(power_limit_mw);
}

// Gpu::DomainPowerMw of `domain` as the C ABI numbers it: PowerDomain's
// declared order (device_instant 0, device_average 1, memory_average 2).
zeus::StatusOr<uint32_t> ReadDomainPowerMw(zeus::Gpu* gpu, int32_t domain) {
  if (domain < 0 || domain > 2) {
    return zeus::InvalidArgumentError("power domain " + std::to_string(domain) +
                                      ": expected 0 (device_instant), 1 (device_average) or 2 "
                                      "(memory_average)");
  }
  return gpu->DomainPowerMw(static_cast<zeus::PowerDomain>(domain));
}

template <typename T>
nlohmann::json OrNull(const zeus::StatusOr<T>& value) {
  return value.ok() ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace

extern "C" {

int32_t zeus_c_api_version(void) { return 2; }

double zeus_now_s(void) { return zeus::ToSeconds(zeus::RealClock()->Now()); }

int32_t zeus_gpus_open(zeus_gpus** out, char* message, size_t message_size) {
  return zeus_gpus_open_with(nullptr, out, message, message_size);
}

int32_t zeus_gpus_open_with(const char* options_json, zeus_gpus** out, char* message,
                            size_t message_size) {
  return Guard(
      [&]() -> Status {
        const char* fn = "zeus_gpus_open_with";
        if (out == nullptr) return zeus::InvalidArgumentError(std::string(fn) + ": out is NULL");
        *out = nullptr;
        ZEUS_ASSIGN_OR_RETURN(nlohmann::json options,
                              zeus::c_api::ParseObject(fn, options_json, {"restore_on_exit"}));
        auto handle = std::make_unique<zeus_gpus>();
        if (options.contains("restore_on_exit")) {
          const nlohmann::json& v = options["restore_on_exit"];
          if (!v.is_boolean()) {
            return zeus::InvalidArgumentError(
                std::string(fn) + ": restore_on_exit must be a boolean, got " + v.dump());
          }
          handle->restore_on_exit = v.get<bool>();
        }
        ZEUS_ASSIGN_OR_RETURN(handle->gpus, zeus::OpenGpusFrom({}, &handle->backend));
        handle->original_persistence.resize(handle->gpus.size());
        handle->gpu_clocks_locked.resize(handle->gpus.size(), false);
        handle->mem_clocks_locked.resize(handle->gpus.size(), false);
        *out = handle.release();
        return Status::Ok();
      },
      message, message_size);
}

int32_t zeus_gpus_count(const zeus_gpus* gpus) {
  return gpus == nullptr ? 0 : static_cast<int32_t>(gpus->gpus.size());
}

int32_t zeus_gpus_json(zeus_gpus* gpus, char* buffer, size_t buffer_size, size_t* length,
                       char* message, size_t message_size) {
  return Guard(
      [&]() -> Status {
        if (gpus == nullptr) return NullHandle("zeus_gpus_json");
        nlohmann::json list = nlohmann::json::array();
        for (auto& g : gpus->gpus) {
          nlohmann::json o;
          o["index"] = g->index();
          o["backend"] = gpus->backend;
          o["name"] = OrNull(g->Name());
          o["uuid"] = OrNull(g->Uuid());
          o["architecture"] = OrNull(g->Architecture());
          auto constraints = g->PowerLimitConstraintsMw();
          o["min_power_limit_mw"] =
              constraints.ok() ? nlohmann::json(constraints->min_mw) : nlohmann::json(nullptr);
          o["max_power_limit_mw"] =
              constraints.ok() ? nlohmann::json(constraints->max_mw) : nlohmann::json(nullptr);
          o["default_power_limit_mw"] = OrNull(g->DefaultPowerLimitMw());
          o["power_limit_mw"] = OrNull(g->PowerLimitMw());
          o["has_energy_counter"] = g->TotalEnergyMj().ok();
          list.push_back(std::move(o));
        }
        return zeus::c_api::CopyOut("zeus_gpus_json", list.dump(), buffer, buffer_size, length);
      },
      message, message_size);
}

int32_t zeus_gpus_power_mw(zeus_gpus* gpus, int32_t position, uint32_t* power_mw, char* message,
                           size_t message_size) {
  return Guard(
      [&]() -> Status {
        ZEUS_RETURN_IF_ERROR(CheckGpuPosition("zeus_gpus_power_mw", gpus, position));
        ZEUS_ASSIGN_OR_RETURN(*power_mw, gpus->gpus[position]->PowerMw());
        return Status::Ok();
      },
      message, message_size);
}

int32_t zeus_gpus_energy_mj(zeus_gpus* gpus, int32_t position, uint64_t* energy_mj, char* message,
                            size_t message_size) {
  return Guard(
      [&]() -> Status {
        ZEUS_RETURN_IF_ERROR(CheckGpuPosition("zeus_gpus_energy_mj", gpus, position));
        ZEUS_ASSIGN_OR_RETURN(*energy_mj, gpus->gpus[position]->TotalEnergyMj());
        return Status::Ok();
      },
      message, message_size);
}

int32_t zeus_gpus_power_limit_mw(zeus_gpus* gpus, int32_t position, uint32_t* power_limit_mw,
                                 char* message, size_t message_size) {
  return Guard(
      [&]() -> Status {
        ZEUS_RETURN_IF_ERROR(CheckGpuPosition("zeus_gpus_power_limit_mw", gpus, position));
        ZEUS_ASSIGN_OR_RETURN(*power_limit_mw, gpus->gpus[position]->PowerLimitMw());
        return Status::Ok();
      },
      message, message_size);
}

int32_t zeus_gpus_default_power_limit_mw(zeus_gpus* gpus, int32_t position,
                                         uint32_t* power_limit_mw, char* message,
                                         size_t message_size) {
  return Guard(
      [&]() -> Status {
        ZEUS_RETURN_IF_ERROR(CheckGpuPosition("zeus_gpus_default_power_limit_mw", gpus, position));
        ZEUS_ASSIGN_OR_RETURN(*power_limit_mw, gpus->gpus[position]->DefaultPowerLimitMw());
        return Status::Ok();
      },
      message, message_size);
}

int32_t zeus_gpus_set_power_limit_mw(zeus_gpus* gpus, int32_t position, uint32_t power_limit_mw,
                                     char* message, size_t message_size) {
  return Guard(
      [&]() -> Status {
        ZEUS_RETURN_IF_ERROR(CheckGpuPosition("zeus_gpus_set_power_limit_mw", gpus, position));
        std::lock_guard<std::mutex> lock(gpus->mu);
        zeus::Gpu* gpu = gpus->gpus[position].get();
        // Out-of-range limits are refused before anything is recorded or set.
        ZEUS_ASSIGN_OR_RETURN(zeus::PowerLimitConstraints range, gpu->PowerLimitConstraintsMw());
        if (power_limit_mw < range.min_mw || power_limit_mw > range.max_mw) {
          return zeus::InvalidArgumentError(
              "GPU " + std::to_string(gpu->index()) + ": power limit " +
              std::to_string(power_limit_mw) + " mW is outside the allowed range [" +
              std::to_string(range.min_mw) + ", " + std::to_string(range.max_mw) + "] mW");
        }
        return SetLimit(gpus, gpu, power_limit_mw);
      },
      message, message_size);
}

int32_t zeus_gpus_reset_power_limit(zeus_gpus* gpus, int32_t position, char* message,
                                    size_t message_size) {
  return Guard(
      [&]() -> Status {
        ZEUS_RETURN_IF_ERROR(CheckGpuPosition("zeus_gpus_reset_power_limit", gpus, position));
        std::lock_guard<std::mutex> lock(gpus->mu);
        zeus::Gpu* gpu = gpus->gpus[position].get();
        ZEUS_ASSIGN_OR_RETURN(uint32_t default_mw, gpu->DefaultPowerLimitMw());
        return SetLimit(gpus, gpu, default_mw);
      },
      message, message_size);
}

int32_t zeus_gpus_persistence_mode(zeus_gpus* gpus, int32_t position, int32_t* enabled,
                                   char* message, size_t message_size) {
  return Guard(
      [&]() -> Status {
        ZEUS_RETURN_IF_ERROR(CheckGpuPosition("zeus_gpus_persistence_mode", gpus, position));
        ZEUS_ASSIGN_OR_RETURN(bool mode, gpus->gpus[position]->PersistenceMode());
        *enabled = mode ? 1 : 0;
        return Status::Ok();
      },
      message, message_size);
}

int32_t zeus_gpus_set_persistence_mode(zeus_gpus* gpus, int32_t position, int32_t enabled,
                                       char* message, size_t message_size) {
  return Guard(
      [&]() -> Status {
        ZEUS_RETURN_IF_ERROR(CheckGpuPosition("zeus_gpus_set_persistence_mode", gpus, position));
        std::lock_guard<std::mutex> lock(gpus->mu);
        zeus::Gpu* gpu = gpus->gpus[position].get();
        std::optional<bool> before;
        if (gpus->restore_on_exit && !gpus->original_persistence[position]) {
          ZEUS_ASSIGN_OR_RETURN(bool mode, gpu->PersistenceMode());
          before = mode;
        }
        ZEUS_RETURN_IF_ERROR(gpu->SetPersistenceMode(enabled != 0));
        if (before && !zeus::IsDryRun()) gpus->original_persistence[position] = before;
        return Status::Ok();
      },
      message, message_size);
}

int32_t zeus_gpus_has_domain_reads(void) { return 1; }

int32_t zeus_gpus_temperature_c(zeus_gpus* gpus, int32_t position, int32_t* celsius, char* message,
                                size_t message_size) {
  return Guard(
      [&]() -> Status {
        ZEUS_RETURN_IF_ERROR(CheckGpuPosition("zeus_gpus_temperature_c", gpus, position));
        ZEUS_ASSIGN_OR_RETURN(*celsius, gpus->gpus[position]->TemperatureC());
        return Status::Ok();
      },
      message, message_size);
}

int32_t zeus_gpus_domain_power_mw(zeus_gpus* gpus, int32_t position, int32_t domain,
                                  uint32_t* power_mw, char* message, size_t message_size) {
  return Guard(
      [&]() -> Status {
        ZEUS_RETURN_IF_ERROR(CheckGpuPosition("zeus_gpus_domain_power_mw", gpus, position));
        ZEUS_ASSIGN_OR_RETURN(*power_mw, ReadDomainPowerMw(gpus->gpus[position].get(), domain));
        return Status::Ok();
      },
      message, message_size);
}

int32_t zeus_gpus_restore(zeus_gpus* gpus, char* message, size_t message_size) {
  return Guard(
      [&]() -> Status {
        if (gpus == nullptr) return NullHandle("zeus_gpus_restore");
        if (getpid() != gpus->owner_pid) {
          return zeus::FailedPreconditionError(
              "zeus_gpus_restore: called in a process forked from the one that opened the "
              "GPUs; only that process puts its changes back");
        }
        std::lock_guard<std::mutex> lock(gpus->mu);
        return gpus->Restore();
      },
      message, message_size);
}

void zeus_gpus_destroy(zeus_gpus* gpus) { delete gpus; }

int32_t zeus_gpu_backends_json(char* buffer, size_t buffer_size, size_t* length, char* message,
                               size_t message_size) {
  return Guard(
      [&]() -> Status {
        nlohmann::json list = nlohmann::json::array();
        for (const zeus::GpuBackendDescription& b : zeus::DescribeGpuBackends()) {
          nlohmann::json o;
          o["name"] = b.name;
          o["display_name"] = b.display_name;
          o["loaded"] = b.loaded;
          o["in_use"] = b.in_use;
          o["selection"] = b.selection;
          o["status"] = b.status.ok() ? std::string() : b.status.ToString();
          list.push_back(std::move(o));
        }
        return zeus::c_api::CopyOut("zeus_gpu_backends_json", list.dump(), buffer, buffer_size,
                                    length);
      },
      message, message_size);
}

}  // extern "C"
