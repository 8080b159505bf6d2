#include "zeus/core/optimum_selector.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "zeus/core/cost.h"
#include "zeus/util/units.h"

namespace zeus {

std::string OptimumSelector::ToString() const {
  switch (kind) {
    case OptimumKind::kEnergy:
      return "energy";
    case OptimumKind::kTime:
      return "time";
    case OptimumKind::kCost:
      return fmt::format("cost(eta={})", eta);
    case OptimumKind::kSlowdown:
      return fmt::format("slowdown({})", max_slowdown);
  }
  return "unknown";
}

StatusOr<OptimumKind> ParseOptimumKind(std::string_view name) {
  if (name == "energy") return OptimumKind::kEnergy;
  if (name == "time") return OptimumKind::kTime;
  if (name == "cost") return OptimumKind::kCost;
  if (name == "slowdown") return OptimumKind::kSlowdown;
  return InvalidArgumentError("optimum selector: unknown name '" + std::string(name) +
                              "' (expected energy, time, cost or slowdown)");
}

Status ValidateSelector(const OptimumSelector& selector) {
  if (selector.kind == OptimumKind::kCost && !(selector.eta >= 0.0 && selector.eta <= 1.0)) {
    return InvalidArgumentError(
        fmt::format("optimum selector: eta must be in [0, 1], got {}", selector.eta));
  }
  if (selector.kind == OptimumKind::kSlowdown &&
      !(std::isfinite(selector.max_slowdown) && selector.max_slowdown >= 1.0)) {
    return InvalidArgumentError(
        fmt::format("optimum selector: max_slowdown must be a finite factor >= 1, got {}",
                    selector.max_slowdown));
  }
  return Status::Ok();
}

uint32_t SelectOptimumSetting(const std::vector<KnobMeasurement>& measurements, double max_power_w,
                              const OptimumSelector& selector) {
  // Highest setting first, so that a strict '<' keeps the higher one on ties.
  std::vector<KnobMeasurement> by_setting = measurements;
  std::sort(
      by_setting.begin(), by_setting.end(),
      [](const KnobMeasurement& a, const KnobMeasurement& b) { return a.setting > b.setting; });
  const KnobMeasurement& at_max = by_setting.front();

  if (selector.kind == OptimumKind::kSlowdown) {
    double budget_s = selector.max_slowdown * at_max.time_per_step_s();
    uint32_t chosen = at_max.setting;
    for (const KnobMeasurement& m : by_setting) {
      if (m.time_per_step_s() <= budget_s) chosen = m.setting;
    }
    return chosen;
  }
  auto cost = [&](const KnobMeasurement& m) {
    switch (selector.kind) {
      case OptimumKind::kEnergy:
        return m.energy_per_step_j();
      case OptimumKind::kTime:
        return m.time_per_step_s();
      case OptimumKind::kCost:
      case OptimumKind::kSlowdown:
        break;
    }
    return ZeusCost(m.energy_per_step_j(), m.time_per_step_s(), selector.eta, max_power_w);
  };
  const KnobMeasurement* best = &at_max;
  double best_cost = cost(at_max);
  for (const KnobMeasurement& m : by_setting) {
    double c = cost(m);
    if (c < best_cost) {
      best = &m;
      best_cost = c;
    }
  }
  return best->setting;
}

StatusOr<uint32_t> SelectOptimumMw(const PowerLimitProfile& profile,
                                   const OptimumSelector& selector) {
  ZEUS_RETURN_IF_ERROR(ValidateSelector(selector));
  ZEUS_RETURN_IF_ERROR(ValidateProfile(profile));
  uint32_t highest_mw = 0;
  for (const PowerLimitMeasurement& m : profile.measurements) {
    highest_mw = std::max(highest_mw, m.power_limit_mw);
  }
  return SelectOptimumSetting(ToKnobProfile(profile).measurements,
                              MaxPowerW(MwToW(highest_mw), profile.num_gpus), selector);
}

}  // namespace zeus
