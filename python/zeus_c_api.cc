// The C ABI of python/zeus_c_api.h: a thin, exception-free shell over
// PowerLimitOptimizer, EnergyMonitor and OpenGpus.

#include "python/zeus_c_api.h"

#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "zeus/device/clock.h"
#include "zeus/device/devices.h"
#include "zeus/monitor/energy_monitor.h"
#include "zeus/optimizer/power_limit/power_limit_optimizer.h"
#include "zeus/util/json.h"
#include "zeus/util/units.h"

struct zeus_plo {
  zeus::SelectedDevices devices;
  std::vector<zeus::Gpu*> gpus;
  std::unique_ptr<zeus::EnergyMonitor> monitor;
  std::unique_ptr<zeus::PowerLimitOptimizer> optimizer;
};

namespace {

using zeus::Status;
using zeus::StatusOr;

int32_t Report(const Status& status, char* message, size_t message_size) {
  if (message != nullptr && message_size > 0) {
    size_t n = std::min(status.message().size(), message_size - 1);
    std::memcpy(message, status.message().data(), n);
    message[n] = '\0';
  }
  return static_cast<int32_t>(status.code());
}

// Runs `body` (returning Status), turning any escaping exception into
// kInternal.
template <typename Body>
int32_t Guard(Body body, char* message, size_t message_size) {
  try {
    return Report(body(), message, message_size);
  } catch (const std::exception& e) {
    return Report(zeus::InternalError(std::string("zeus C API: ") + e.what()), message,
                  message_size);
  } catch (...) {
    return Report(zeus::InternalError("zeus C API: unknown exception"), message, message_size);
  }
}

struct ParsedOptions {
  zeus::PowerLimitOptimizerOptions optimizer;
  zeus::EnergyMonitorMode mode = zeus::EnergyMonitorMode::kExact;
  std::vector<int> gpu_indices;
  bool all_gpus = true;
};

StatusOr<ParsedOptions> ParseOptions(const char* options_json) {
  constexpr char kContext[] = "zeus_plo_create: options";
  ParsedOptions parsed;
  ZEUS_ASSIGN_OR_RETURN(nlohmann::json j,
                        zeus::ParseJson(options_json == nullptr ? "{}" : options_json, kContext));
  ZEUS_ASSIGN_OR_RETURN(
      zeus::JsonFields f,
      zeus::JsonFields::Of(j, kContext,
                           {"gpu_indices", "wait_steps", "warmup_steps", "measure_steps",
                            "min_measure_time_s", "power_limit_step_w", "selector", "eta",
                            "max_slowdown", "profile_path", "restore_on_signal", "monitor_mode"}));
  zeus::PowerLimitOptimizerOptions& o = parsed.optimizer;
  ZEUS_RETURN_IF_ERROR(zeus::SetIfPresent(f.OptionalInt("wait_steps", 0), &o.wait_steps));
  ZEUS_RETURN_IF_ERROR(zeus::SetIfPresent(f.OptionalInt("warmup_steps", 0), &o.warmup_steps));
  ZEUS_RETURN_IF_ERROR(zeus::SetIfPresent(f.OptionalInt("measure_steps", 1), &o.measure_steps));
  double min_time_s = zeus::ToSeconds(o.min_measure_time);
  ZEUS_RETURN_IF_ERROR(
      zeus::SetIfPresent(f.OptionalDouble("min_measure_time_s", 0.0, 1e9), &min_time_s));
  o.min_measure_time = zeus::FromSeconds(min_time_s);
  double step_w = zeus::MwToW(o.power_limit_step_mw);
  ZEUS_RETURN_IF_ERROR(
      zeus::SetIfPresent(f.OptionalDouble("power_limit_step_w", 1.0, 4e6), &step_w));
  o.power_limit_step_mw = static_cast<uint32_t>(step_w * 1000.0);
  std::string selector = "cost";
  ZEUS_RETURN_IF_ERROR(zeus::SetIfPresent(f.OptionalString("selector"), &selector));
  ZEUS_ASSIGN_OR_RETURN(o.selector.kind, zeus::ParseOptimumKind(selector));
  ZEUS_RETURN_IF_ERROR(zeus::SetIfPresent(f.OptionalDouble("eta", 0.0, 1.0), &o.selector.eta));
  ZEUS_RETURN_IF_ERROR(
      zeus::SetIfPresent(f.OptionalDouble("max_slowdown", 1.0), &o.selector.max_slowdown));
  ZEUS_RETURN_IF_ERROR(zeus::SetIfPresent(f.OptionalString("profile_path"), &o.profile_path));
  ZEUS_RETURN_IF_ERROR(
      zeus::SetIfPresent(f.OptionalBool("restore_on_signal"), &o.restore_on_signal));
  std::string mode = "exact";
  ZEUS_RETURN_IF_ERROR(zeus::SetIfPresent(f.OptionalString("monitor_mode"), &mode));
  if (mode == "low_overhead") {
    parsed.mode = zeus::EnergyMonitorMode::kLowOverhead;
  } else if (mode != "exact") {
    return f.Error("monitor_mode", "must be \"exact\" or \"low_overhead\", got \"" + mode + "\"");
  }
  if (f.Has("gpu_indices")) {
    parsed.all_gpus = false;
    ZEUS_ASSIGN_OR_RETURN(std::vector<int64_t> indices,
                          f.IntArray("gpu_indices", 0, std::numeric_limits<int>::max()));
    parsed.gpu_indices.assign(indices.begin(), indices.end());
  }
  return parsed;
}

Status Create(const char* options_json, zeus_sync_fn sync, zeus_all_reduce_fn all_reduce,
              void* user, zeus_plo** out) {
  if (out == nullptr) return zeus::InvalidArgumentError("zeus_plo_create: out is NULL");
  *out = nullptr;
  ZEUS_ASSIGN_OR_RETURN(ParsedOptions parsed, ParseOptions(options_json));
  auto plo = std::make_unique<zeus_plo>();
  zeus::DeviceSelection selection;
  selection.gpus_name = "zeus_plo_create: gpu_indices";
  if (!parsed.all_gpus) selection.gpu_indices = parsed.gpu_indices;
  selection.cpu_indices = std::vector<int>{};  // The optimizer measures GPUs only.
  ZEUS_ASSIGN_OR_RETURN(plo->devices, zeus::OpenSelectedDevices(selection));
  plo->gpus = plo->devices.GpuPointers();
  zeus::EnergyMonitorOptions monitor_options;
  monitor_options.mode = parsed.mode;
  if (sync != nullptr) {
    monitor_options.sync = [sync, user] {
      if (sync(user) != 0) spdlog::warn("zeus C API: the sync callback failed");
    };
  }
  ZEUS_ASSIGN_OR_RETURN(
      plo->monitor, zeus::EnergyMonitor::Create(plo->gpus, {}, zeus::RealClock(), monitor_options));
  if (all_reduce != nullptr) {
    parsed.optimizer.all_reduce =
        [all_reduce, user](const zeus::StretchTotals& local) -> StatusOr<zeus::StretchTotals> {
      zeus::StretchTotals t = local;
      int32_t num_gpus = t.num_gpus;
      if (all_reduce(&t.energy_j, &t.time_s, &num_gpus, user) != 0) {
        return zeus::AbortedError("zeus C API: the all_reduce callback failed");
      }
      t.num_gpus = num_gpus;
      return t;
    };
  }
  ZEUS_ASSIGN_OR_RETURN(plo->optimizer,
                        zeus::PowerLimitOptimizer::Create(plo->gpus, plo->monitor.get(),
                                                          zeus::RealClock(), parsed.optimizer));
  *out = plo.release();
  return Status::Ok();
}

Status NullHandle(const char* fn) {
  return zeus::InvalidArgumentError(std::string(fn) + ": NULL handle");
}

}  // namespace

extern "C" {

int32_t zeus_c_api_version(void) { return 1; }

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
        std::string json = zeus::ProfileToJson(plo->optimizer->profile());
        if (length != nullptr) *length = json.size();
        if (buffer == nullptr || buffer_size < json.size() + 1) {
          return zeus::InvalidArgumentError("zeus_plo_profile_json: buffer of " +
                                            std::to_string(buffer_size) + " bytes, need " +
                                            std::to_string(json.size() + 1));
        }
        std::memcpy(buffer, json.c_str(), json.size() + 1);
        return Status::Ok();
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
