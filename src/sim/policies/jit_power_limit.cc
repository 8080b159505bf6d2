#include "src/sim/policies/jit_power_limit.h"

#include <limits>

namespace zeus::sim_policies {

int JitPowerLimit::For(int batch_size, bool* profile) {
  auto it = chosen_w_.find(batch_size);
  if (it != chosen_w_.end()) {
    *profile = false;
    return it->second;
  }
  const BatchSizeTrace* trace = workload_->Find(batch_size);
  ZEUS_CHECK(trace != nullptr);
  const double max_limit_w = trace->max_power_limit_w();
  int best_w = trace->max_power_limit_w();
  double best_cost = std::numeric_limits<double>::infinity();
  // From the highest limit down, so that ties keep the higher limit.
  for (auto point = trace->power.rbegin(); point != trace->power.rend(); ++point) {
    const double cost =
        (eta_ * point->average_power_w + (1.0 - eta_) * max_limit_w) * point->time_per_epoch_s;
    if (cost < best_cost) {
      best_cost = cost;
      best_w = point->power_limit_w;
    }
  }
  chosen_w_[batch_size] = best_w;
  *profile = true;
  return best_w;
}

}  // namespace zeus::sim_policies
