// zeus: the paper's algorithm, faithfully (the original v0.16's
// BatchSizeOptimizer). `num_pruning_rounds` rounds of the pruning walk from
// the default batch size under early stopping at beta x the lowest cost,
// then Gaussian Thompson sampling over the survivors, each tried
// `num_explorations` times first. Concurrent submissions go to the best size
// known while a walk step is out. These are WalkBanditPolicy's rules as they
// stand: zeus overrides none.
//
// Internal to the optimizer layer. Thread-safety: not thread-safe.

#ifndef ZEUS_SRC_OPTIMIZER_BATCH_SIZE_ZEUS_POLICY_H_
#define ZEUS_SRC_OPTIMIZER_BATCH_SIZE_ZEUS_POLICY_H_

#include <memory>

#include "src/optimizer/batch_size/walk_bandit_policy.h"

namespace zeus {

class ZeusPolicy : public WalkBanditPolicy {
 public:
  // REQUIRES: `config` passes Validate().
  explicit ZeusPolicy(BatchSizeOptimizerConfig config)
      : WalkBanditPolicy(config, WalkKnobs{config.num_pruning_rounds}) {}
  std::unique_ptr<BatchSizePolicy> Clone() const override {
    return std::make_unique<ZeusPolicy>(*this);
  }
};

}  // namespace zeus

#endif  // ZEUS_SRC_OPTIMIZER_BATCH_SIZE_ZEUS_POLICY_H_
