// The C ABI of the power-limit optimizer (zeus_plo_*, python/zeus_c_api.h): a
// thin, exception-free shell over PowerLimitOptimizer on a zeus_monitor.

#include "python/zeus_c_api.h"

#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "zeus/device/clock.h"
#include "zeus/monitor/energy_monitor.h"
#include "zeus/optimizer/power_limit/power_limit_optimizer.h"
#include "zeus/util/json.h"
#include "zeus/util/units.h"

#include "python/zeus_c_internal.h"

struct zeus_plo {
  // Shared with the zeus_monitor handle, so either may be freed first.
  std::shared_ptr<zeus::c_api::MonitorState> monitor;
  std::unique_ptr<zeus::PowerLimitOptimizer> optimizer;
};

namespace {

using zeus::SetIfPresent;
using zeus::Status;
using zeus::StatusOr;
using zeus::c_api::Guard;
using zeus::c_api::NullHandle;
using zeus::c_api::Report;

constexpr const char* kCreate = "zeus_plo_create";

StatusOr<zeus::PowerLimitOptimizerOptions> ParseOptimizerOptions(const nlohmann::json& j) {
  ZEUS_ASSIGN_OR_RETURN(zeus::JsonFields f, zeus::c_api::OptionFields(kCreate, j));
  zeus::PowerLimitOptimizerOptions o;
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalInt("wait_steps", 0), &o.wait_steps));
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalInt("warmup_steps", 0), &o.warmup_steps));
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalInt("measure_steps", 1), &o.measure_steps));
  double min_time_s = zeus::ToSeconds(o.min_measure_time);
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalDouble("min_measure_time_s", 0.0, 1e9), &min_time_s));
  o.min_measure_time = zeus::FromSeconds(min_time_s);
  double step_w = zeus::MwToW(o.power_limit_step_mw);
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalDouble("power_limit_step_w", 1.0, 4e6), &step_w));
  o.power_limit_step_mw = static_cast<uint32_t>(step_w * 1000.0);
  std::string selector = "cost";
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalString("selector"), &selector));
  ZEUS_ASSIGN_OR_RETURN(o.selector.kind, zeus::ParseOptimumKind(selector));
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalDouble("eta", 0.0, 1.0), &o.selector.eta));
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalDouble("max_slowdown", 1.0), &o.selector.max_slowdown));
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalString("profile_path"), &o.profile_path));
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalBool("restore_on_signal"), &o.restore_on_signal));
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalBool("skip_nonbinding_limits"), &o.skip_nonbinding_limits));
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalDouble("nonbinding_margin", 0.0, 1e6), &o.nonbinding_margin));
  return o;
}

const std::vector<std::string> kOptimizerKeys = {"wait_steps",
                                                 "warmup_steps",
                                                 "measure_steps",
                                                 "min_measure_time_s",
                                                 "power_limit_step_w",
                                                 "selector",
                                                 "eta",
                                                 "max_slowdown",
                                                 "profile_path",
                                                 "restore_on_signal",
                                                 "skip_nonbinding_limits",
                                                 "nonbinding_margin"};

Status CreateOnMonitor(std::shared_ptr<zeus::c_api::MonitorState> monitor, const nlohmann::json& j,
                       zeus_all_reduce_fn all_reduce, zeus_select_fn select, void* user,
                       zeus_plo** out) {
  if (monitor->gpus.picked.empty() || monitor->monitor == nullptr) {
    return zeus::InvalidArgumentError(
        "zeus_plo_create: the monitor measures no GPU (the optimizer sets GPU power limits)");
  }
  ZEUS_ASSIGN_OR_RETURN(zeus::PowerLimitOptimizerOptions options, ParseOptimizerOptions(j));
  if (all_reduce != nullptr) {
    options.all_reduce = [all_reduce,
                          user](const zeus::StretchTotals& local) -> StatusOr<zeus::StretchTotals> {
      zeus::StretchTotals t = local;
      int32_t num_gpus = t.num_gpus;
      if (all_reduce(&t.energy_j, &t.time_s, &num_gpus, user) != 0) {
        return zeus::AbortedError("zeus C API: the all_reduce callback failed");
      }
      t.num_gpus = num_gpus;
      return t;
    };
  }
  if (select != nullptr) {
    for (const char* key : {"selector", "eta", "max_slowdown"}) {
      if (j.contains(key)) {
        return zeus::InvalidArgumentError(std::string("zeus_plo_create_with_selector: option '") +
                                          key + "' is not used with a custom selector");
      }
    }
    options.custom_selector = [select,
                               user](const zeus::PowerLimitProfile& p) -> StatusOr<uint32_t> {
      uint32_t chosen_mw = 0;
      const std::string text = zeus::ProfileToJson(p);
      const int code = select(text.c_str(), &chosen_mw, user);
      if (code != 0) {
        return zeus::AbortedError("zeus C API: the custom optimum selector failed (returned " +
                                  std::to_string(code) + ")");
      }
      return chosen_mw;
    };
  }
  auto plo = std::make_unique<zeus_plo>();
  plo->monitor = std::move(monitor);
  ZEUS_ASSIGN_OR_RETURN(plo->optimizer, zeus::PowerLimitOptimizer::Create(
                                            plo->monitor->gpus.picked, plo->monitor->monitor.get(),
                                            zeus::RealClock(), options));
  *out = plo.release();
  return Status::Ok();
}

Status Create(const char* options_json, zeus_sync_fn sync, zeus_all_reduce_fn all_reduce,
              void* user, zeus_plo** out) {
  if (out == nullptr) return zeus::InvalidArgumentError("zeus_plo_create: out is NULL");
  *out = nullptr;
  std::vector<std::string> keys = kOptimizerKeys;
  keys.push_back("gpu_indices");
  keys.push_back("monitor_mode");
  ZEUS_ASSIGN_OR_RETURN(nlohmann::json j, zeus::c_api::ParseObject(kCreate, options_json, keys));
  nlohmann::json monitor_options = nlohmann::json::object();
  monitor_options["cpu_indices"] = nlohmann::json::array();
  if (j.contains("gpu_indices")) monitor_options["gpu_indices"] = j["gpu_indices"];
  if (j.contains("monitor_mode")) monitor_options["mode"] = j["monitor_mode"];
  j.erase("gpu_indices");
  j.erase("monitor_mode");
  zeus_monitor* monitor = nullptr;
  char message[1024];
  int32_t code = zeus_monitor_create(monitor_options.dump().c_str(), sync, user, &monitor, message,
                                     sizeof(message));
  if (code != 0) {
    return Status(static_cast<zeus::StatusCode>(code), message);
  }
  std::unique_ptr<zeus_monitor> owner(monitor);
  if (owner->state->gpus.picked.empty()) {
    return zeus::UnavailableError("zeus_plo_create: no GPUs found");
  }
  return CreateOnMonitor(owner->state, j, all_reduce, nullptr, user, out);
}

}  // namespace

extern "C" {

int32_t zeus_plo_create_on_monitor(zeus_monitor* monitor, const char* options_json,
                                   zeus_all_reduce_fn all_reduce, void* user, zeus_plo** out,
                                   char* message, size_t message_size) {
  return Guard(
      [&]() -> Status {
        if (out == nullptr) return zeus::InvalidArgumentError("zeus_plo_create: out is NULL");
        *out = nullptr;
        if (monitor == nullptr) return NullHandle("zeus_plo_create_on_monitor");
        ZEUS_ASSIGN_OR_RETURN(nlohmann::json j,
                              zeus::c_api::ParseObject(kCreate, options_json, kOptimizerKeys));
        return CreateOnMonitor(monitor->state, j, all_reduce, nullptr, user, out);
      },
      message, message_size);
}

int32_t zeus_plo_create_with_selector(zeus_monitor* monitor, const char* options_json,
                                      zeus_all_reduce_fn all_reduce, zeus_select_fn select,
                                      void* user, zeus_plo** out, char* message,
                                      size_t message_size) {
  return Guard(
      [&]() -> Status {
        if (out == nullptr) return zeus::InvalidArgumentError("zeus_plo_create: out is NULL");
        *out = nullptr;
        if (monitor == nullptr) return NullHandle("zeus_plo_create_with_selector");
        if (select == nullptr) {
          return zeus::InvalidArgumentError("zeus_plo_create_with_selector: select is NULL");
        }
        ZEUS_ASSIGN_OR_RETURN(nlohmann::json j,
                              zeus::c_api::ParseObject(kCreate, options_json, kOptimizerKeys));
        return CreateOnMonitor(monitor->state, j, all_reduce, select, user, out);
      },
      message, message_size);
}

int32_t zeus_plo_create(const char* options_json, zeus_sync_fn sync, zeus_all_reduce_fn all_reduce,
                        void* user, zeus_plo** out, char* message, size_t message_size) {
  return Guard([&] { return Create(options_json, sync, all_reduce, user, out); }, message,
               message_size);
}

int32_t zeus_plo_on_step_begin(zeus_plo* plo, char* message, size_t message_size) {
  if (plo == nullptr) return Report(NullHandle("zeus_plo_on_step_begin"), message, message_size);
  return Guard([plo] { return plo->optimizer->OnStepBegin(); }, message, message_size);
}

int32_t zeus_plo_on_epoch_end(zeus_plo* plo, char* message, size_t message_size) {
  if (plo == nullptr) return Report(NullHandle("zeus_plo_on_epoch_end"), message, message_size);
  return Guard([plo] { return plo->optimizer->OnEpochEnd(); }, message, message_size);
}

int32_t zeus_plo_restore(zeus_plo* plo, char* message, size_t message_size) {
  if (plo == nullptr) return Report(NullHandle("zeus_plo_restore"), message, message_size);
  return Guard([plo] { return plo->optimizer->Restore(); }, message, message_size);
}

int32_t zeus_plo_phase(const zeus_plo* plo) {
  return plo == nullptr ? -1 : static_cast<int32_t>(plo->optimizer->phase());
}

uint32_t zeus_plo_optimum_mw(const zeus_plo* plo) {
  return plo == nullptr ? 0 : plo->optimizer->optimum_mw().value_or(0);
}

uint32_t zeus_plo_current_limit_mw(const zeus_plo* plo) {
  return plo == nullptr ? 0 : plo->optimizer->current_power_limit_mw();
}

int32_t zeus_plo_profile_json(const zeus_plo* plo, char* buffer, size_t buffer_size,
                              size_t* length) {
  return Guard(
      [&]() -> Status {
        if (plo == nullptr) return NullHandle("zeus_plo_profile_json");
        return zeus::c_api::CopyOut("zeus_plo_profile_json",
                                    zeus::ProfileToJson(plo->optimizer->profile()), buffer,
                                    buffer_size, length);
      },
      nullptr, 0);
}

int32_t zeus_plo_state_json(const zeus_plo* plo, char* buffer, size_t buffer_size, size_t* length) {
  return Guard(
      [&]() -> Status {
        if (plo == nullptr) return NullHandle("zeus_plo_state_json");
        const zeus::PowerLimitOptimizer& o = *plo->optimizer;
        static constexpr const char* kPhases[] = {"waiting", "warmup", "profiling", "done"};
        nlohmann::json j;
        j["phase"] = kPhases[static_cast<int>(o.phase())];
        std::optional<int64_t> steps_left = o.steps_left();
        j["steps_left"] = steps_left ? nlohmann::json(*steps_left) : nlohmann::json(nullptr);
        j["phase_limit_mw"] = o.phase_limit_mw();
        j["current_power_limit_mw"] = o.current_power_limit_mw();
        std::optional<uint32_t> optimum = o.optimum_mw();
        j["optimum_mw"] = optimum ? nlohmann::json(*optimum) : nlohmann::json(nullptr);
        j["power_limits_mw"] = o.power_limits_mw();
        j["skipped_power_limits_mw"] = o.skipped_power_limits_mw();
        return zeus::c_api::CopyOut("zeus_plo_state_json", j.dump(), buffer, buffer_size, length);
      },
      nullptr, 0);
}

void zeus_plo_destroy(zeus_plo* plo) {
  try {
    delete plo;
  } catch (...) {
    spdlog::error("zeus C API: exception while destroying an optimizer");
  }
}

}  // extern "C"
