// The optimizer configuration the swarm and learning-curve tests share:
// batch sizes 8-128, default 64, seed 5.

#ifndef ZEUS_TESTS_OPTIMIZER_BATCH_SIZE_FIVE_SIZES_CONFIG_H_
#define ZEUS_TESTS_OPTIMIZER_BATCH_SIZE_FIVE_SIZES_CONFIG_H_

#include "zeus/optimizer/batch_size/batch_size_optimizer.h"

namespace zeus::testing {

inline BatchSizeOptimizerConfig FiveSizesConfig(BatchSizePolicyKind policy) {
  BatchSizeOptimizerConfig config;
  config.batch_sizes = {8, 16, 32, 64, 128};
  config.default_batch_size = 64;
  config.seed = 5;
  config.policy = policy;
  return config;
}

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_OPTIMIZER_BATCH_SIZE_FIVE_SIZES_CONFIG_H_
