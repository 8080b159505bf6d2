// Choosing the setting to pin (a power limit, a locked SM clock) from a
// measured profile.
//
// Energy and time are compared per training step (a profile's stretches may
// differ in length). Ties go to the higher limit.
//
// Thread-safety: plain values and pure functions.

#ifndef ZEUS_CORE_OPTIMUM_SELECTOR_H_
#define ZEUS_CORE_OPTIMUM_SELECTOR_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "zeus/core/knob_profile.h"
#include "zeus/core/power_limit_profile.h"
#include "zeus/status.h"

namespace zeus {

enum class OptimumKind {
  // Least energy per step.
  kEnergy,
  // Least time per step.
  kTime,
  // Least Zeus cost per step (ZeusCost), with MaxPower = MaxPowerW(the highest
  // limit in the profile, the profile's num_gpus).
  kCost,
  // The lowest limit whose time per step is at most max_slowdown x the time
  // per step at the highest limit in the profile.
  kSlowdown,
};

struct OptimumSelector {
  OptimumKind kind = OptimumKind::kCost;
  // Weight of energy in kCost, in [0, 1]. Default: 0.5.
  double eta = 0.5;
  // Allowed slowdown factor for kSlowdown, >= 1. Default: 1.1.
  double max_slowdown = 1.1;

  static OptimumSelector LeastEnergy() { return {OptimumKind::kEnergy, 0.5, 1.1}; }
  static OptimumSelector LeastTime() { return {OptimumKind::kTime, 0.5, 1.1}; }
  static OptimumSelector LeastCost(double eta) { return {OptimumKind::kCost, eta, 1.1}; }
  static OptimumSelector MaxSlowdown(double factor) {
    return {OptimumKind::kSlowdown, 0.5, factor};
  }

  // "energy", "time", "cost(eta=0.5)", "slowdown(1.1)".
  std::string ToString() const;
};

// "energy", "time", "cost" or "slowdown"; kInvalidArgument naming the text
// and the accepted names otherwise.
StatusOr<OptimumKind> ParseOptimumKind(std::string_view name);

// kInvalidArgument for eta outside [0, 1] or max_slowdown < 1 (or not finite).
Status ValidateSelector(const OptimumSelector& selector);

// The limit (mW) `selector` chooses from `profile`. Errors: an invalid
// selector or profile (ValidateProfile).
// The setting `selector` chooses from `measurements`, whatever the knob (a
// power limit, an SM clock): the rules above with "limit" read as "setting";
// kCost converts time with `max_power_w` (MaxPowerW()). REQUIRES: the
// selector and measurements are valid (ValidateSelector, ValidateKnobProfile).
uint32_t SelectOptimumSetting(const std::vector<KnobMeasurement>& measurements, double max_power_w,
                              const OptimumSelector& selector);

StatusOr<uint32_t> SelectOptimumMw(const PowerLimitProfile& profile,
                                   const OptimumSelector& selector);

}  // namespace zeus

#endif  // ZEUS_CORE_OPTIMUM_SELECTOR_H_
