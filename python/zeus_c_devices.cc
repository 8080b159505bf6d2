// The C ABI's shared helpers and its GPU calls (zeus_gpus_*): choosing the
// GPUs and CPU sockets a handle works on.

#include <algorithm>
#include <optional>

#include <spdlog/spdlog.h>

#include "zeus/device/clock.h"
#include "zeus/device/devices.h"
#include "zeus/util/units.h"

#include "python/zeus_c_internal.h"

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

namespace {

// gpu_indices / cpu_indices: null = every device, else a list of integers.
StatusOr<std::optional<std::vector<int>>> ParseIndices(const char* fn, const char* what,
                                                       const nlohmann::json& indices) {
  if (indices.is_null()) return std::optional<std::vector<int>>();
  std::vector<int> out;
  bool integers = indices.is_array();
  for (const nlohmann::json& v : indices) {
    if (!integers || !v.is_number_integer()) break;
    out.push_back(v.get<int>());
  }
  if (!integers || out.size() != indices.size()) {
    return InvalidArgumentError(std::string(fn) + ": " + what +
                                " must be a list of integers, got " + indices.dump());
  }
  return std::optional<std::vector<int>>(std::move(out));
}

// Opens the chosen devices through the device layer (the one place that
// turns a choice of indices into devices); `gpus` or `cpus` is nullopt for
// every device of that kind and empty for none.
StatusOr<SelectedDevices> Open(const char* fn, std::optional<std::vector<int>> gpus,
                               std::optional<std::vector<int>> cpus) {
  DeviceSelection selection;
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

StatusOr<CpuSelection> SelectCpus(const char* fn, const nlohmann::json& indices) {
  ZEUS_ASSIGN_OR_RETURN(std::optional<std::vector<int>> wanted,
                        ParseIndices(fn, "cpu_indices", indices));
  ZEUS_ASSIGN_OR_RETURN(SelectedDevices devices, Open(fn, std::vector<int>{}, std::move(wanted)));
  CpuSelection selection;
  selection.picked = devices.CpuPointers();
  selection.all = std::move(devices.cpus);
  return selection;
}

}  // namespace zeus::c_api

struct zeus_gpus {
  std::vector<std::unique_ptr<zeus::Gpu>> gpus;
};

namespace {

using zeus::Status;
using zeus::c_api::Guard;
using zeus::c_api::NullHandle;
using zeus::c_api::Report;

Status Position(const char* fn, const zeus_gpus* gpus, int32_t position) {
  if (gpus == nullptr) return NullHandle(fn);
  if (position < 0 || static_cast<size_t>(position) >= gpus->gpus.size()) {
    return zeus::InvalidArgumentError(std::string(fn) + ": no GPU at position " +
                                      std::to_string(position) + " of " +
                                      std::to_string(gpus->gpus.size()));
  }
  return Status::Ok();
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
  return Guard(
      [&]() -> Status {
        if (out == nullptr) return zeus::InvalidArgumentError("zeus_gpus_open: out is NULL");
        *out = nullptr;
        auto handle = std::make_unique<zeus_gpus>();
        ZEUS_ASSIGN_OR_RETURN(handle->gpus, zeus::OpenGpus());
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
        ZEUS_RETURN_IF_ERROR(Position("zeus_gpus_power_mw", gpus, position));
        ZEUS_ASSIGN_OR_RETURN(*power_mw, gpus->gpus[position]->PowerMw());
        return Status::Ok();
      },
      message, message_size);
}

int32_t zeus_gpus_energy_mj(zeus_gpus* gpus, int32_t position, uint64_t* energy_mj, char* message,
                            size_t message_size) {
  return Guard(
      [&]() -> Status {
        ZEUS_RETURN_IF_ERROR(Position("zeus_gpus_energy_mj", gpus, position));
        ZEUS_ASSIGN_OR_RETURN(*energy_mj, gpus->gpus[position]->TotalEnergyMj());
        return Status::Ok();
      },
      message, message_size);
}

int32_t zeus_gpus_power_limit_mw(zeus_gpus* gpus, int32_t position, uint32_t* power_limit_mw,
                                 char* message, size_t message_size) {
  return Guard(
      [&]() -> Status {
        ZEUS_RETURN_IF_ERROR(Position("zeus_gpus_power_limit_mw", gpus, position));
        ZEUS_ASSIGN_OR_RETURN(*power_limit_mw, gpus->gpus[position]->PowerLimitMw());
        return Status::Ok();
      },
      message, message_size);
}

void zeus_gpus_destroy(zeus_gpus* gpus) { delete gpus; }

}  // extern "C"
