#include "src/sim/policies/jit_power_limit.h"

#include <cstdint>

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
  // One epoch at each limit on one GPU.
  PowerLimitProfile epoch_profile;
  epoch_profile.num_gpus = 1;
  for (const PowerPoint& point : trace->power) {
    PowerLimitMeasurement m;
    m.power_limit_mw = WToMw(static_cast<uint32_t>(point.power_limit_w));
    m.energy_j = point.energy_per_epoch_j();
    m.time_s = point.time_per_epoch_s;
    m.steps = 1;
    epoch_profile.measurements.push_back(m);
  }
  // Loaded traces have distinct, positive limits, times and powers, so the
  // profile is valid; a failure here is a broken Workload.
  StatusOr<uint32_t> chosen_mw = SelectOptimumMw(epoch_profile, OptimumSelector::LeastCost(eta_));
  ZEUS_CHECK(chosen_mw.ok());
  const int chosen_w = static_cast<int>(*chosen_mw / 1000u);
  chosen_w_[batch_size] = chosen_w;
  *profile = true;
  return chosen_w;
}

}  // namespace zeus::sim_policies
