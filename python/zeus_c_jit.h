// What the C ABI of every just-in-time knob optimizer shares (zeus_plo_* over
// PowerLimitOptimizer in zeus_c_api.cc, zeus_fo_* over FrequencyOptimizer in
// zeus_c_frequency.cc): the handle, the options every knob takes, the
// data-parallel hook, the state JSON and the exception-free calls on a handle.
// A knob's file adds only what is its own (its options, its create function,
// its names). Not installed; not part of the ABI.

#ifndef ZEUS_PYTHON_ZEUS_C_JIT_H_
#define ZEUS_PYTHON_ZEUS_C_JIT_H_

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "zeus/core/optimum_selector.h"
#include "zeus/optimizer/jit/jit_profiler.h"
#include "zeus/status.h"
#include "zeus/util/json.h"
#include "zeus/util/units.h"

#include "python/zeus_c_api.h"
#include "python/zeus_c_internal.h"

namespace zeus::c_api {

// The handle of a knob optimizer: the optimizer and the monitor it measures
// through, shared with the zeus_monitor handle so either may be freed first.
template <typename Optimizer>
struct KnobHandle {
  std::shared_ptr<MonitorState> monitor;
  std::unique_ptr<Optimizer> optimizer;
};

// The option keys every knob's create function accepts (a knob appends its
// own).
std::vector<std::string> JitOptionKeys();

// Reads the options every knob takes (wait_steps, warmup_steps,
// measure_steps, min_measure_time_s, selector, eta, max_slowdown,
// profile_path, restore_on_signal) into `o`, an options struct with those
// fields (PowerLimitOptimizerOptions, FrequencyOptimizerOptions); absent keys
// keep o's defaults. Errors name the create function and the option.
template <typename Options>
Status ParseJitOptions(const JsonFields& f, Options* o) {
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalInt("wait_steps", 0), &o->wait_steps));
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalInt("warmup_steps", 0), &o->warmup_steps));
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalInt("measure_steps", 1), &o->measure_steps));
  double min_time_s = ToSeconds(o->min_measure_time);
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalDouble("min_measure_time_s", 0.0, 1e9), &min_time_s));
  o->min_measure_time = FromSeconds(min_time_s);
  std::string selector = "cost";
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalString("selector"), &selector));
  ZEUS_ASSIGN_OR_RETURN(o->selector.kind, ParseOptimumKind(selector));
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalDouble("eta", 0.0, 1.0), &o->selector.eta));
  ZEUS_RETURN_IF_ERROR(
      SetIfPresent(f.OptionalDouble("max_slowdown", 1.0), &o->selector.max_slowdown));
  ZEUS_RETURN_IF_ERROR(SetIfPresent(f.OptionalString("profile_path"), &o->profile_path));
  return SetIfPresent(f.OptionalBool("restore_on_signal"), &o->restore_on_signal);
}

// The C hook as the profiler's AllReduceFn; empty when `all_reduce` is NULL.
AllReduceFn AllReduceOf(zeus_all_reduce_fn all_reduce, void* user);

// kInvalidArgument from `fn` when `monitor` measures no GPU; `what` says what
// the optimizer changes ("sets GPU power limits").
Status RequireGpus(const MonitorState& monitor, const char* fn, const char* what);

// A knob's names in its state JSON.
struct KnobStateKeys {
  // The setting the phase is about (waited for, warmed up at, measured; the
  // optimum once done), e.g. "phase_limit_mw".
  const char* phase_setting;
  // The setting last applied, e.g. "current_power_limit_mw".
  const char* current;
  // The pinned setting or null, e.g. "optimum_mw".
  const char* optimum;
  // The settings of the sweep, highest first, e.g. "power_limits_mw".
  const char* settings;
};

// {"phase", "steps_left" (null once done), and the four keys of `keys`}.
nlohmann::json JitStateJson(const JitProfiler& profiler, const KnobStateKeys& keys);

// Runs `body(optimizer)` (returning Status) on a handle, reporting the status;
// a NULL handle is kInvalidArgument naming `fn`.
template <typename Handle, typename Body>
int32_t OnHandle(Handle* handle, const char* fn, Body body, char* message, size_t message_size) {
  if (handle == nullptr) return Report(NullHandle(fn), message, message_size);
  return Guard([&] { return body(*handle->optimizer); }, message, message_size);
}

// Copies `text(optimizer)` out under the buffer convention of zeus_c_api.h.
template <typename Handle, typename Text>
int32_t HandleText(const Handle* handle, const char* fn, Text text, char* buffer,
                   size_t buffer_size, size_t* length) {
  return Guard(
      [&]() -> Status {
        if (handle == nullptr) return NullHandle(fn);
        return CopyOut(fn, text(*handle->optimizer), buffer, buffer_size, length);
      },
      nullptr, 0);
}

// Deletes `handle` (NULL is a no-op); the optimizer's destructor restores the
// GPUs. An exception is logged, naming `what`, never thrown.
template <typename Handle>
void DestroyHandle(Handle* handle, const char* what) {
  try {
    delete handle;
  } catch (...) {
    spdlog::error("zeus C API: exception while destroying {}", what);
  }
}

}  // namespace zeus::c_api

// Defines <prefix>_on_step_begin, <prefix>_on_epoch_end and <prefix>_restore
// of zeus_c_api.h over the handle type `prefix` (zeus_plo, zeus_fo), alike for
// every knob. Use inside extern "C".
#define ZEUS_C_KNOB_LOOP_CALLS(prefix)                                                           \
  int32_t prefix##_on_step_begin(prefix* handle, char* message, size_t message_size) {           \
    return zeus::c_api::OnHandle(                                                                \
        handle, #prefix "_on_step_begin", [](auto& o) { return o.OnStepBegin(); }, message,      \
        message_size);                                                                           \
  }                                                                                              \
  int32_t prefix##_on_epoch_end(prefix* handle, char* message, size_t message_size) {            \
    return zeus::c_api::OnHandle(                                                                \
        handle, #prefix "_on_epoch_end", [](auto& o) { return o.OnEpochEnd(); }, message,        \
        message_size);                                                                           \
  }                                                                                              \
  int32_t prefix##_restore(prefix* handle, char* message, size_t message_size) {                 \
    return zeus::c_api::OnHandle(                                                                \
        handle, #prefix "_restore", [](auto& o) { return o.Restore(); }, message, message_size); \
  }

#endif  // ZEUS_PYTHON_ZEUS_C_JIT_H_
