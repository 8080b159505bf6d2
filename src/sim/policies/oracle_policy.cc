// Policy `oracle`: the configuration with the least expected cost over the
// trace's seed runs, known in hindsight.

#include "zeus/sim/simulator.h"

#include "src/sim/policies/fixed_policy.h"
#include "src/sim/policies/policies.h"

namespace zeus::sim_policies {

StatusOr<std::unique_ptr<Policy>> MakeOracle(const PolicyContext& context) {
  ZEUS_ASSIGN_OR_RETURN(ExpectedRun oracle, OracleRun(*context.workload, context.eta));
  return std::unique_ptr<Policy>(
      std::make_unique<FixedPolicy>(oracle.batch_size, oracle.power_limit_w));
}

}  // namespace zeus::sim_policies
