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
#include "python/zeus_c_jit.h"

struct zeus_plo : zeus::c_api::KnobHandle<zeus::PowerLimitOptimizer> {};

namespace {

using zeus::SetIfPresent;
using zeus::Status;
using zeus::StatusOr;
using zeus::c_api::Guard;
using zeus::c_api::HandleText;
using zeus::c_api::NullHandle;

constexpr const char* kCreate = "zeus_plo_create";

StatusOr<zeus::PowerLimitOptimizerOptions> ParseOptimizerOptions(const nlohmann::json& j) {
  ZEUS_ASSIGN_OR_RETURN(zeus::JsonFields f, zeus::c_api::OptionFields(kCreate, j));
  zeus::PowerLimitOptimizerOptions o;
  ZEUS_RETURN_IF_ERROR(zeus::c_api::ParseJitOptions(f, &o));
  double step_w = zeus::MwToW(o.power_limit_step_mw);
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalDouble("power_limit_step_w", 1.0, 4e6), &step_w));
  o.power_limit_step_mw = static_cast<uint32_t>(step_w * 1000.0);
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalBool("skip_nonbinding_limits"), &o.skip_nonbinding_limits));
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalDouble("nonbinding_margin", 0.0, 1e6), &o.nonbinding_margin));
  return o;
}

std::vector<std::string> OptimizerKeys() {
  std::vector<std::string> keys = zeus::c_api::JitOptionKeys();
  keys.insert(keys.end(), {"power_limit_step_w", "skip_nonbinding_limits", "nonbinding_margin"});
  return keys;
}

Status CreateOnMonitor(std::shared_ptr<zeus::c_api::MonitorState> monitor, const nlohmann::json& j,
                       zeus_all_reduce_fn all_reduce, zeus_select_fn select, void* user,
                       zeus_plo** out) {
  ZEUS_RETURN_IF_ERROR(zeus::c_api::RequireGpus(*monitor, kCreate, "sets GPU power limits"));
  ZEUS_ASSIGN_OR_RETURN(zeus::PowerLimitOptimizerOptions options, ParseOptimizerOptions(j));
  options.all_reduce = zeus::c_api::AllReduceOf(all_reduce, user);
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
  std::vector<std::string> keys = OptimizerKeys();
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
                              zeus::c_api::ParseObject(kCreate, options_json, OptimizerKeys()));
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
                              zeus::c_api::ParseObject(kCreate, options_json, OptimizerKeys()));
        return CreateOnMonitor(monitor->state, j, all_reduce, select, user, out);
      },
      message, message_size);
}

int32_t zeus_plo_create(const char* options_json, zeus_sync_fn sync, zeus_all_reduce_fn all_reduce,
                        void* user, zeus_plo** out, char* message, size_t message_size) {
  return Guard([&] { return Create(options_json, sync, all_reduce, user, out); }, message,
               message_size);
}

ZEUS_C_KNOB_LOOP_CALLS(zeus_plo)

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
  return HandleText(
      plo, "zeus_plo_profile_json",
      [](const zeus::PowerLimitOptimizer& o) { return zeus::ProfileToJson(o.profile()); }, buffer,
      buffer_size, length);
}

int32_t zeus_plo_state_json(const zeus_plo* plo, char* buffer, size_t buffer_size, size_t* length) {
  return HandleText(
      plo, "zeus_plo_state_json",
      [](const zeus::PowerLimitOptimizer& o) {
        nlohmann::json j = zeus::c_api::JitStateJson(
            o.profiler(),
            {"phase_limit_mw", "current_power_limit_mw", "optimum_mw", "power_limits_mw"});
        j["skipped_power_limits_mw"] = o.skipped_power_limits_mw();
        return j.dump();
      },
      buffer, buffer_size, length);
}

void zeus_plo_destroy(zeus_plo* plo) { zeus::c_api::DestroyHandle(plo, "an optimizer"); }

}  // extern "C"
