#include "zeus/optimizer/power_limit/power_limit_optimizer.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "zeus/util/units.h"

#include "src/optimizer/power_limit/power_limit_knob.h"

namespace zeus {
namespace {

constexpr char kLog[] = "power-limit optimizer";

Status ValidateOptions(const PowerLimitOptimizerOptions& o) {
  auto bad = [](const std::string& what) {
    return InvalidArgumentError(std::string(kLog) + ": " + what);
  };
  JitProfilerOptions jit;
  jit.wait_steps = o.wait_steps;
  jit.warmup_steps = o.warmup_steps;
  jit.measure_steps = o.measure_steps;
  jit.min_measure_time = o.min_measure_time;
  ZEUS_RETURN_IF_ERROR(JitProfiler::ValidateOptions(jit, kLog));
  if (!(o.nonbinding_margin >= 0.0 && o.nonbinding_margin < 1e6)) {
    return bad("nonbinding_margin must be a finite fraction >= 0, got " +
               std::to_string(o.nonbinding_margin));
  }
  if (o.power_limit_step_mw == 0) return bad("power_limit_step_mw must be > 0");
  Status s = ValidateSelector(o.selector);
  if (!s.ok()) return s.WithContext(kLog);
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<uint32_t>> PowerLimitsToProfileMw(PowerLimitConstraints constraints,
                                                       uint32_t step_mw) {
  if (step_mw == 0) return InvalidArgumentError("power limits: step must be > 0 mW");
  if (constraints.min_mw > constraints.max_mw || constraints.max_mw == 0) {
    return InvalidArgumentError("power limits: bad constraints [" +
                                std::to_string(constraints.min_mw) + ", " +
                                std::to_string(constraints.max_mw) + "] mW");
  }
  std::vector<uint32_t> limits;
  for (uint64_t mw = constraints.max_mw; mw > constraints.min_mw; mw -= step_mw) {
    limits.push_back(static_cast<uint32_t>(mw));
    if (mw < step_mw) break;
  }
  limits.push_back(constraints.min_mw);
  return limits;
}

const PowerLimitProfile& PowerLimitOptimizer::profile() const {
  const KnobProfile& now = profiler_->profile();
  // Measurements are only appended (a loaded profile replaces none).
  if (profile_.measurements.size() != now.measurements.size() ||
      profile_.num_gpus != now.num_gpus || profile_.min_stretch_time_s != now.min_stretch_time_s) {
    profile_ = PowerLimitProfileOf(now);
  }
  return profile_;
}

StatusOr<std::unique_ptr<PowerLimitOptimizer>> PowerLimitOptimizer::Create(
    std::vector<Gpu*> gpus, EnergyMonitor* monitor, Clock* clock,
    PowerLimitOptimizerOptions options) {
  ZEUS_RETURN_IF_ERROR(ValidateOptions(options));
  if (gpus.empty()) return InvalidArgumentError(std::string(kLog) + ": no GPUs to drive");
  if (monitor == nullptr || clock == nullptr) {
    return InvalidArgumentError(std::string(kLog) + ": null monitor or clock");
  }
  for (Gpu* gpu : gpus) {
    if (gpu == nullptr) return InvalidArgumentError(std::string(kLog) + ": null GPU");
  }
  size_t monitored = monitor->GpusIntegratingPower().size();
  if (monitored != gpus.size()) {
    return InvalidArgumentError(fmt::format(
        "{}: the energy monitor measures {} GPUs but the optimizer drives {}; give both the "
        "same GPUs",
        kLog, monitored, gpus.size()));
  }
  StatusOr<PowerLimitConstraints> first = gpus[0]->PowerLimitConstraintsMw();
  if (!first.ok()) {
    return first.status().WithContext(fmt::format("{}: GPU {}", kLog, gpus[0]->index()));
  }
  for (size_t i = 1; i < gpus.size(); ++i) {
    StatusOr<PowerLimitConstraints> c = gpus[i]->PowerLimitConstraintsMw();
    if (!c.ok()) return c.status().WithContext(fmt::format("{}: GPU {}", kLog, gpus[i]->index()));
    if (c->min_mw != first->min_mw || c->max_mw != first->max_mw) {
      return InvalidArgumentError(fmt::format(
          "{}: GPU {} accepts limits [{}, {}] mW but GPU {} accepts [{}, {}] mW; all GPUs one "
          "optimizer drives must share the same power-limit constraints",
          kLog, gpus[i]->index(), c->min_mw, c->max_mw, gpus[0]->index(), first->min_mw,
          first->max_mw));
    }
  }
  StatusOr<std::vector<uint32_t>> limits =
      PowerLimitsToProfileMw(*first, options.power_limit_step_mw);
  if (!limits.ok()) return limits.status().WithContext(kLog);
  if (!options.profile_path.empty()) {
    // A saved profile that cannot be used is reported before any GPU is
    // touched (the restorer reads every limit).
    StatusOr<PowerLimitProfile> loaded = LoadProfile(options.profile_path);
    if (!loaded.ok() && loaded.status().code() != StatusCode::kNotFound) {
      return loaded.status().WithContext(fmt::format(
          "{}: saved profile {} (delete it to profile again)", kLog, options.profile_path));
    }
  }

  const int num_gpus = static_cast<int>(gpus.size());
  ZEUS_ASSIGN_OR_RETURN(std::unique_ptr<PowerLimitRestorer> restorer,
                        PowerLimitRestorer::Create(gpus, options.restore_on_signal));
  auto knob =
      std::make_unique<PowerLimitKnob>(std::move(gpus), std::move(restorer), *first, options);
  JitProfilerOptions jit;
  jit.wait_steps = options.wait_steps;
  jit.warmup_steps = options.warmup_steps;
  jit.measure_steps = options.measure_steps;
  jit.min_measure_time = options.min_measure_time;
  jit.profile_path = options.profile_path;
  jit.all_reduce = std::move(options.all_reduce);
  ZEUS_ASSIGN_OR_RETURN(std::unique_ptr<JitProfiler> profiler,
                        JitProfiler::Create(std::move(knob), std::move(limits).value(), num_gpus,
                                            monitor, clock, std::move(jit)));
  return std::unique_ptr<PowerLimitOptimizer>(new PowerLimitOptimizer(std::move(profiler)));
}

}  // namespace zeus
