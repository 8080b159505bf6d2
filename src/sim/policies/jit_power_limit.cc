#include "src/sim/policies/jit_power_limit.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "zeus/core/optimum_selector.h"
#include "zeus/core/power_limit_profile.h"
#include "zeus/util/units.h"

namespace zeus::sim_policies {

int JitPowerLimit::For(int batch_size, bool* profile) {
  auto it = chosen_w_.find(batch_size);
  if (it != chosen_w_.end()) {
    *profile = false;
    return it->second;
  }
  const BatchSizeTrace* trace = workload_->Find(batch_size);
  ZEUS_CHECK(trace != nullptr);
  // One epoch at each limit on one GPU; a limit skipped as one that cannot
  // bind is recorded with the highest limit's measurement, as the
  // power-limit optimizer records it (the same decision as profiling it).
  PowerLimitProfile epoch_profile;
  epoch_profile.num_gpus = 1;
  const std::vector<const PowerPoint*> profiled = trace->ProfiledPoints(nonbinding_margin_);
  for (const PowerPoint& limit : trace->power) {
    const bool ran = std::find(profiled.begin(), profiled.end(), &limit) != profiled.end();
    const PowerPoint& point = ran ? limit : trace->power.back();
    PowerLimitMeasurement m;
    // ValidateWorkload bounds limits to kMaxTracePowerLimitW, far below
    // kMaxWattsAsMw, so the conversion cannot wrap.
    const std::optional<uint32_t> limit_mw = CheckedWToMw(limit.power_limit_w);
    ZEUS_CHECK(limit_mw.has_value());
    m.power_limit_mw = *limit_mw;
    m.energy_j = point.energy_per_epoch_j();
    m.time_s = point.time_per_epoch_s;
    m.steps = 1;
    epoch_profile.measurements.push_back(m);
  }
  // A validated Workload (ValidateWorkload, checked by the simulator before
  // any policy runs) has distinct limits and bounded, positive times and
  // powers, so the profile is valid and finite; a failure here is a bug.
  StatusOr<uint32_t> chosen_mw = SelectOptimumMw(epoch_profile, OptimumSelector::LeastCost(eta_));
  ZEUS_CHECK(chosen_mw.ok());
  const int chosen_w = static_cast<int>(*chosen_mw / 1000u);
  chosen_w_[batch_size] = chosen_w;
  *profile = true;
  return chosen_w;
}

}  // namespace zeus::sim_policies
