// The C ABI of the frequency optimizer (zeus_fo_*, python/zeus_c_api.h): a
// thin, exception-free shell over FrequencyOptimizer on a zeus_monitor.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "zeus/core/frequency_profile.h"
#include "zeus/device/clock.h"
#include "zeus/optimizer/frequency/frequency_optimizer.h"
#include "zeus/util/json.h"
#include "zeus/util/units.h"

#include "python/zeus_c_api.h"
#include "python/zeus_c_internal.h"

struct zeus_fo {
  // Shared with the zeus_monitor handle, so either may be freed first.
  std::shared_ptr<zeus::c_api::MonitorState> monitor;
  std::unique_ptr<zeus::FrequencyOptimizer> optimizer;
};

namespace {

using zeus::SetIfPresent;
using zeus::Status;
using zeus::StatusOr;
using zeus::c_api::Guard;
using zeus::c_api::NullHandle;
using zeus::c_api::Report;

constexpr const char* kFoCreate = "zeus_fo_create_on_monitor";

const std::vector<std::string> kFoKeys = {
    "wait_steps",     "warmup_steps",  "measure_steps",    "min_measure_time_s",
    "clock_step_mhz", "min_clock_mhz", "selector",         "eta",
    "max_slowdown",   "profile_path",  "restore_on_signal"};

StatusOr<zeus::FrequencyOptimizerOptions> ParseFoOptions(const nlohmann::json& j) {
  ZEUS_ASSIGN_OR_RETURN(zeus::JsonFields f, zeus::c_api::OptionFields(kFoCreate, j));
  zeus::FrequencyOptimizerOptions o;
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalInt("wait_steps", 0), &o.wait_steps));
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalInt("warmup_steps", 0), &o.warmup_steps));
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalInt("measure_steps", 1), &o.measure_steps));
  double min_time_s = zeus::ToSeconds(o.min_measure_time);
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalDouble("min_measure_time_s", 0.0, 1e9), &min_time_s));
  o.min_measure_time = zeus::FromSeconds(min_time_s);
  int64_t step = o.clock_step_mhz;
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalInt("clock_step_mhz", 1, 100'000), &step));
  o.clock_step_mhz = static_cast<uint32_t>(step);
  int64_t min_mhz = o.min_clock_mhz;
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalInt("min_clock_mhz", 0, 100'000), &min_mhz));
  o.min_clock_mhz = static_cast<uint32_t>(min_mhz);
  std::string selector = "cost";
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalString("selector"), &selector));
  ZEUS_ASSIGN_OR_RETURN(o.selector.kind, zeus::ParseOptimumKind(selector));
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalDouble("eta", 0.0, 1.0), &o.selector.eta));
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalDouble("max_slowdown", 1.0), &o.selector.max_slowdown));
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalString("profile_path"), &o.profile_path));
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalBool("restore_on_signal"), &o.restore_on_signal));
  return o;
}

Status CreateFo(zeus_monitor* monitor, const char* options_json, zeus_all_reduce_fn all_reduce,
                void* user, zeus_fo** out) {
  if (out == nullptr) return zeus::InvalidArgumentError(std::string(kFoCreate) + ": out is NULL");
  *out = nullptr;
  if (monitor == nullptr) return NullHandle(kFoCreate);
  ZEUS_ASSIGN_OR_RETURN(nlohmann::json j,
                        zeus::c_api::ParseObject(kFoCreate, options_json, kFoKeys));
  std::shared_ptr<zeus::c_api::MonitorState> state = monitor->state;
  if (state->gpus.picked.empty() || state->monitor == nullptr) {
    return zeus::InvalidArgumentError(std::string(kFoCreate) +
                                      ": the monitor measures no GPU (the optimizer locks GPU "
                                      "clocks)");
  }
  ZEUS_ASSIGN_OR_RETURN(zeus::FrequencyOptimizerOptions options, ParseFoOptions(j));
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
  auto fo = std::make_unique<zeus_fo>();
  fo->monitor = std::move(state);
  ZEUS_ASSIGN_OR_RETURN(fo->optimizer, zeus::FrequencyOptimizer::Create(
                                           fo->monitor->gpus.picked, fo->monitor->monitor.get(),
                                           zeus::RealClock(), options));
  *out = fo.release();
  return Status::Ok();
}

}  // namespace

extern "C" {

int32_t zeus_fo_create_on_monitor(zeus_monitor* monitor, const char* options_json,
                                  zeus_all_reduce_fn all_reduce, void* user, zeus_fo** out,
                                  char* message, size_t message_size) {
  return Guard([&] { return CreateFo(monitor, options_json, all_reduce, user, out); }, message,
               message_size);
}

int32_t zeus_fo_on_step_begin(zeus_fo* fo, char* message, size_t message_size) {
  if (fo == nullptr) return Report(NullHandle("zeus_fo_on_step_begin"), message, message_size);
  return Guard([fo] { return fo->optimizer->OnStepBegin(); }, message, message_size);
}

int32_t zeus_fo_on_epoch_end(zeus_fo* fo, char* message, size_t message_size) {
  if (fo == nullptr) return Report(NullHandle("zeus_fo_on_epoch_end"), message, message_size);
  return Guard([fo] { return fo->optimizer->OnEpochEnd(); }, message, message_size);
}

int32_t zeus_fo_restore(zeus_fo* fo, char* message, size_t message_size) {
  if (fo == nullptr) return Report(NullHandle("zeus_fo_restore"), message, message_size);
  return Guard([fo] { return fo->optimizer->Restore(); }, message, message_size);
}

int32_t zeus_fo_profile_json(const zeus_fo* fo, char* buffer, size_t buffer_size, size_t* length) {
  return Guard(
      [&]() -> Status {
        if (fo == nullptr) return NullHandle("zeus_fo_profile_json");
        return zeus::c_api::CopyOut("zeus_fo_profile_json",
                                    zeus::FrequencyProfileToJson(fo->optimizer->profile()), buffer,
                                    buffer_size, length);
      },
      nullptr, 0);
}

int32_t zeus_fo_state_json(const zeus_fo* fo, char* buffer, size_t buffer_size, size_t* length) {
  return Guard(
      [&]() -> Status {
        if (fo == nullptr) return NullHandle("zeus_fo_state_json");
        const zeus::FrequencyOptimizer& o = *fo->optimizer;
        static constexpr const char* kPhases[] = {"waiting", "warmup", "profiling", "done"};
        nlohmann::json j;
        j["phase"] = kPhases[static_cast<int>(o.phase())];
        std::optional<int64_t> steps_left = o.steps_left();
        j["steps_left"] = steps_left ? nlohmann::json(*steps_left) : nlohmann::json(nullptr);
        j["phase_clock_mhz"] = o.phase_clock_mhz();
        j["current_clock_mhz"] = o.current_clock_mhz();
        std::optional<uint32_t> optimum = o.optimum_mhz();
        j["optimum_mhz"] = optimum ? nlohmann::json(*optimum) : nlohmann::json(nullptr);
        j["clocks_mhz"] = o.clocks_mhz();
        return zeus::c_api::CopyOut("zeus_fo_state_json", j.dump(), buffer, buffer_size, length);
      },
      nullptr, 0);
}

void zeus_fo_destroy(zeus_fo* fo) {
  try {
    delete fo;
  } catch (...) {
    spdlog::error("zeus C API: exception while destroying a frequency optimizer");
  }
}

}  // extern "C"
