#include "zeus/core/knob_profile.h"

#include <string>

#include <fmt/format.h>

#include "zeus/core/power_limit_profile.h"

namespace zeus {

Status ValidateKnobProfile(const KnobProfile& profile, const KnobNames& names) {
  if (profile.measurements.empty()) {
    return InvalidArgumentError(fmt::format("{}: no measurements", names.profile));
  }
  if (profile.num_gpus < 1) {
    return InvalidArgumentError(
        fmt::format("{}: num_gpus must be >= 1, got {}", names.profile, profile.num_gpus));
  }
  for (size_t i = 0; i < profile.measurements.size(); ++i) {
    const KnobMeasurement& m = profile.measurements[i];
    const std::string what =
        fmt::format("{}: measurement {} ({} {})", names.profile, i, names.field, m.setting);
    if (m.setting == 0) {
      return InvalidArgumentError(fmt::format("{}: {} must be > 0", what, names.noun));
    }
    if (!(m.energy_j >= 0 && m.energy_j <= kMaxProfileEnergyJ)) {
      return InvalidArgumentError(fmt::format("{}: energy_j must be in [0, {:g}], got {:g}", what,
                                              kMaxProfileEnergyJ, m.energy_j));
    }
    if (!(m.time_s > 0 && m.time_s <= kMaxProfileTimeS)) {
      return InvalidArgumentError(fmt::format("{}: time_s must be in (0, {:g}], got {:g}", what,
                                              kMaxProfileTimeS, m.time_s));
    }
    if (m.steps < 1 || m.steps > kMaxProfileSteps) {
      return InvalidArgumentError(
          fmt::format("{}: steps must be in [1, {}], got {}", what, kMaxProfileSteps, m.steps));
    }
    for (size_t j = 0; j < i; ++j) {
      if (profile.measurements[j].setting == m.setting) {
        return InvalidArgumentError(
            fmt::format("{}: same {} as measurement {}", what, names.noun, j));
      }
    }
  }
  return Status::Ok();
}

}  // namespace zeus
