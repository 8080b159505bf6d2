// The one place that maps a BatchSizePolicyKind to its class.

#ifndef ZEUS_SRC_OPTIMIZER_BATCH_SIZE_POLICY_REGISTRY_H_
#define ZEUS_SRC_OPTIMIZER_BATCH_SIZE_POLICY_REGISTRY_H_

#include <memory>

#include "src/optimizer/batch_size/walk_bandit_policy.h"

namespace zeus::batch_size_internal {

// The policy config.policy names, constructed but not started (its state
// is about to be loaded, or StartIfWalked follows). REQUIRES: `config`
// passes Validate().
std::unique_ptr<WalkBanditPolicy> NewPolicy(BatchSizeOptimizerConfig config);

}  // namespace zeus::batch_size_internal

#endif  // ZEUS_SRC_OPTIMIZER_BATCH_SIZE_POLICY_REGISTRY_H_
