#include "zeus/optimizer/frequency/frequency_optimizer.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "zeus/optimizer/frequency/locked_clock_restorer.h"

#include "src/optimizer/frequency/sm_clock_knob.h"

namespace zeus {
namespace {

constexpr char kLog[] = "frequency optimizer";

}  // namespace

StatusOr<std::vector<uint32_t>> SmClocksToProfileMhz(std::vector<uint32_t> supported_mhz,
                                                     uint32_t step_mhz, uint32_t min_mhz) {
  if (step_mhz == 0) return InvalidArgumentError("SM clocks: step must be > 0 MHz");
  std::sort(supported_mhz.begin(), supported_mhz.end(), std::greater<uint32_t>());
  supported_mhz.erase(std::unique(supported_mhz.begin(), supported_mhz.end()), supported_mhz.end());
  if (supported_mhz.empty() || supported_mhz.front() == 0) {
    return InvalidArgumentError("SM clocks: no supported clock to profile");
  }
  const uint32_t highest = supported_mhz.front();
  const uint32_t floor_mhz = min_mhz != 0 ? min_mhz : highest / 2;
  std::vector<uint32_t> grid = {highest};
  for (uint64_t k = 1;; ++k) {
    const uint64_t down = k * step_mhz;
    if (down > highest || highest - down < floor_mhz) break;
    const uint32_t target = static_cast<uint32_t>(highest - down);
    // The highest supported clock at or below the target.
    auto it = std::lower_bound(supported_mhz.begin(), supported_mhz.end(), target,
                               std::greater<uint32_t>());
    if (it == supported_mhz.end()) break;
    if (*it < floor_mhz) break;
    if (*it != grid.back()) grid.push_back(*it);
  }
  return grid;
}

StatusOr<std::unique_ptr<FrequencyOptimizer>> FrequencyOptimizer::Create(
    std::vector<Gpu*> gpus, EnergyMonitor* monitor, Clock* clock,
    FrequencyOptimizerOptions options) {
  JitProfilerOptions jit;
  jit.wait_steps = options.wait_steps;
  jit.warmup_steps = options.warmup_steps;
  jit.measure_steps = options.measure_steps;
  jit.min_measure_time = options.min_measure_time;
  jit.profile_path = options.profile_path;
  jit.all_reduce = std::move(options.all_reduce);
  ZEUS_RETURN_IF_ERROR(JitProfiler::ValidateOptions(jit, kLog));
  if (options.clock_step_mhz == 0) {
    return InvalidArgumentError(std::string(kLog) + ": clock_step_mhz must be > 0");
  }
  ZEUS_RETURN_IF_ERROR(ValidateSelector(options.selector).WithContext(kLog));
  if (gpus.empty()) return InvalidArgumentError(std::string(kLog) + ": no GPUs to drive");
  if (monitor == nullptr || clock == nullptr) {
    return InvalidArgumentError(std::string(kLog) + ": null monitor or clock");
  }
  for (Gpu* gpu : gpus) {
    if (gpu == nullptr) return InvalidArgumentError(std::string(kLog) + ": null GPU");
  }
  if (monitor->GpusIntegratingPower().size() != gpus.size()) {
    return InvalidArgumentError(fmt::format(
        "{}: the energy monitor measures {} GPUs but the optimizer drives {}; give both the "
        "same GPUs",
        kLog, monitor->GpusIntegratingPower().size(), gpus.size()));
  }
  StatusOr<std::vector<uint32_t>> supported = gpus[0]->SupportedGraphicsClocksMhz();
  if (!supported.ok()) {
    return supported.status().WithContext(
        fmt::format("{}: GPU {}: reading the supported graphics clocks", kLog, gpus[0]->index()));
  }
  for (size_t i = 1; i < gpus.size(); ++i) {
    StatusOr<std::vector<uint32_t>> other = gpus[i]->SupportedGraphicsClocksMhz();
    if (!other.ok()) {
      return other.status().WithContext(
          fmt::format("{}: GPU {}: reading the supported graphics clocks", kLog, gpus[i]->index()));
    }
    if (*other != *supported) {
      return InvalidArgumentError(fmt::format(
          "{}: GPU {} supports other graphics clocks than GPU {}; all GPUs one optimizer drives "
          "must support the same clocks",
          kLog, gpus[i]->index(), gpus[0]->index()));
    }
  }
  StatusOr<std::vector<uint32_t>> grid =
      SmClocksToProfileMhz(*supported, options.clock_step_mhz, options.min_clock_mhz);
  if (!grid.ok()) return grid.status().WithContext(kLog);
  const uint32_t lowest = *std::min_element(supported->begin(), supported->end());
  const uint32_t highest = grid->front();
  // MaxPower: the limit the GPUs run under (a clock does not change it).
  StatusOr<uint32_t> limit_mw = gpus[0]->PowerLimitMw();
  if (!limit_mw.ok()) {
    StatusOr<PowerLimitConstraints> c = gpus[0]->PowerLimitConstraintsMw();
    if (!c.ok()) {
      return limit_mw.status().WithContext(
          fmt::format("{}: GPU {}: reading the power limit (MaxPower)", kLog, gpus[0]->index()));
    }
    limit_mw = c->max_mw;
  }

  const int num_gpus = static_cast<int>(gpus.size());
  ZEUS_ASSIGN_OR_RETURN(std::unique_ptr<LockedClockRestorer> restorer,
                        LockedClockRestorer::Create(gpus, options.restore_on_signal));
  auto knob = std::make_unique<SmClockKnob>(std::move(gpus), std::move(restorer), lowest, highest,
                                            *limit_mw, options.selector);
  ZEUS_ASSIGN_OR_RETURN(std::unique_ptr<JitProfiler> profiler,
                        JitProfiler::Create(std::move(knob), std::move(grid).value(), num_gpus,
                                            monitor, clock, std::move(jit)));
  return std::unique_ptr<FrequencyOptimizer>(
      new FrequencyOptimizer(std::move(profiler), *limit_mw));
}

}  // namespace zeus
