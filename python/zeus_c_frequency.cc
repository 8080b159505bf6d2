// The C ABI of the frequency optimizer (zeus_fo_*, python/zeus_c_api.h): a
// thin, exception-free shell over FrequencyOptimizer on a zeus_monitor; what
// every knob shares is in zeus_c_jit.h.

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/core/frequency_profile.h"
#include "zeus/device/clock.h"
#include "zeus/optimizer/frequency/frequency_optimizer.h"
#include "zeus/util/json.h"

#include "python/zeus_c_api.h"
#include "python/zeus_c_internal.h"
#include "python/zeus_c_jit.h"

struct zeus_fo : zeus::c_api::KnobHandle<zeus::FrequencyOptimizer> {};

namespace {

using zeus::SetIfPresent;
using zeus::Status;
using zeus::StatusOr;
using zeus::c_api::Guard;
using zeus::c_api::HandleText;
using zeus::c_api::NullHandle;

constexpr const char* kFoCreate = "zeus_fo_create_on_monitor";

std::vector<std::string> FoKeys() {
  std::vector<std::string> keys = zeus::c_api::JitOptionKeys();
  keys.insert(keys.end(), {"clock_step_mhz", "min_clock_mhz"});
  return keys;
}

StatusOr<zeus::FrequencyOptimizerOptions> ParseFoOptions(const nlohmann::json& j) {
  ZEUS_ASSIGN_OR_RETURN(zeus::JsonFields f, zeus::c_api::OptionFields(kFoCreate, j));
  zeus::FrequencyOptimizerOptions o;
  ZEUS_RETURN_IF_ERROR(zeus::c_api::ParseJitOptions(f, &o));
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalInt("clock_step_mhz", 1, 100'000), &o.clock_step_mhz));
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalInt("min_clock_mhz", 0, 100'000), &o.min_clock_mhz));
  return o;
}

Status CreateFo(zeus_monitor* monitor, const char* options_json, zeus_all_reduce_fn all_reduce,
                void* user, zeus_fo** out) {
  if (out == nullptr) return zeus::InvalidArgumentError(std::string(kFoCreate) + ": out is NULL");
  *out = nullptr;
  if (monitor == nullptr) return NullHandle(kFoCreate);
  ZEUS_ASSIGN_OR_RETURN(nlohmann::json j,
                        zeus::c_api::ParseObject(kFoCreate, options_json, FoKeys()));
  ZEUS_RETURN_IF_ERROR(zeus::c_api::RequireGpus(*monitor->state, kFoCreate, "locks GPU clocks"));
  ZEUS_ASSIGN_OR_RETURN(zeus::FrequencyOptimizerOptions options, ParseFoOptions(j));
  options.all_reduce = zeus::c_api::AllReduceOf(all_reduce, user);
  auto fo = std::make_unique<zeus_fo>();
  fo->monitor = monitor->state;
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

ZEUS_C_KNOB_LOOP_CALLS(zeus_fo)

int32_t zeus_fo_profile_json(const zeus_fo* fo, char* buffer, size_t buffer_size, size_t* length) {
  return HandleText(
      fo, "zeus_fo_profile_json",
      [](const zeus::FrequencyOptimizer& o) { return zeus::FrequencyProfileToJson(o.profile()); },
      buffer, buffer_size, length);
}

int32_t zeus_fo_state_json(const zeus_fo* fo, char* buffer, size_t buffer_size, size_t* length) {
  return HandleText(
      fo, "zeus_fo_state_json",
      [](const zeus::FrequencyOptimizer& o) {
        return zeus::c_api::JitStateJson(o.profiler(), {"phase_clock_mhz", "current_clock_mhz",
                                                        "optimum_mhz", "clocks_mhz"})
            .dump();
      },
      buffer, buffer_size, length);
}

void zeus_fo_destroy(zeus_fo* fo) { zeus::c_api::DestroyHandle(fo, "a frequency optimizer"); }

}  // extern "C"
