// Policy `default`: the job's default batch size at its maximum power limit.

#include "src/sim/policies/fixed_policy.h"
#include "src/sim/policies/policies.h"

namespace zeus::sim_policies {

StatusOr<std::unique_ptr<Policy>> MakeDefault(const PolicyContext& context) {
  const Workload& workload = *context.workload;
  const int power_limit_w = workload.Find(workload.default_batch_size)->max_power_limit_w();
  return std::unique_ptr<Policy>(
      std::make_unique<FixedPolicy>(workload.default_batch_size, power_limit_w));
}

}  // namespace zeus::sim_policies
