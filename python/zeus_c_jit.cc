// What the C ABI of every knob optimizer shares (python/zeus_c_jit.h).

#include "python/zeus_c_jit.h"

#include <cstdint>
#include <optional>

namespace zeus::c_api {

std::vector<std::string> JitOptionKeys() {
  return {"wait_steps", "warmup_steps", "measure_steps", "min_measure_time_s", "selector",
          "eta",        "max_slowdown", "profile_path",  "restore_on_signal"};
}

AllReduceFn AllReduceOf(zeus_all_reduce_fn all_reduce, void* user) {
  if (all_reduce == nullptr) return {};
  return [all_reduce, user](const StretchTotals& local) -> StatusOr<StretchTotals> {
    StretchTotals t = local;
    int32_t num_gpus = t.num_gpus;
    if (all_reduce(&t.energy_j, &t.time_s, &num_gpus, user) != 0) {
      return AbortedError("zeus C API: the all_reduce callback failed");
    }
    t.num_gpus = num_gpus;
    return t;
  };
}

Status RequireGpus(const MonitorState& monitor, const char* fn, const char* what) {
  if (monitor.gpus.picked.empty() || monitor.monitor == nullptr) {
    return InvalidArgumentError(std::string(fn) + ": the monitor measures no GPU (the optimizer " +
                                what + ")");
  }
  return Status::Ok();
}

nlohmann::json JitStateJson(const JitProfiler& profiler, const KnobStateKeys& keys) {
  static constexpr const char* kPhases[] = {"waiting", "warmup", "profiling", "done"};
  nlohmann::json j;
  j["phase"] = kPhases[static_cast<int>(profiler.phase())];
  std::optional<int64_t> steps_left = profiler.steps_left();
  j["steps_left"] = steps_left ? nlohmann::json(*steps_left) : nlohmann::json(nullptr);
  j[keys.phase_setting] = profiler.phase_setting();
  j[keys.current] = profiler.current_setting();
  std::optional<uint32_t> optimum = profiler.optimum();
  j[keys.optimum] = optimum ? nlohmann::json(*optimum) : nlohmann::json(nullptr);
  j[keys.settings] = profiler.settings();
  return j;
}

}  // namespace zeus::c_api
