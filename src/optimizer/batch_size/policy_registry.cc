// The policies by kind, and BatchSizeOptimizer's factories.

#include "src/optimizer/batch_size/policy_registry.h"

#include "zeus/optimizer/batch_size/batch_size_optimizer.h"

#include "src/optimizer/batch_size/frugal_policy.h"
#include "src/optimizer/batch_size/swarm_policy.h"
#include "src/optimizer/batch_size/zeus_policy.h"

namespace zeus {
namespace batch_size_internal {

std::unique_ptr<WalkBanditPolicy> NewPolicy(BatchSizeOptimizerConfig config) {
  switch (config.policy) {
    case BatchSizePolicyKind::kFrugal:
      return std::make_unique<FrugalPolicy>(std::move(config));
    case BatchSizePolicyKind::kSwarm:
      return std::make_unique<SwarmPolicy>(std::move(config));
    case BatchSizePolicyKind::kZeus:
      break;
  }
  return std::make_unique<ZeusPolicy>(std::move(config));
}

}  // namespace batch_size_internal

StatusOr<std::unique_ptr<BatchSizePolicy>> MakeBatchSizePolicy(BatchSizeOptimizerConfig config) {
  ZEUS_RETURN_IF_ERROR(config.Validate());
  std::unique_ptr<WalkBanditPolicy> policy = batch_size_internal::NewPolicy(std::move(config));
  policy->StartIfWalked();
  return std::unique_ptr<BatchSizePolicy>(std::move(policy));
}

StatusOr<BatchSizeOptimizer> BatchSizeOptimizer::Create(BatchSizeOptimizerConfig config) {
  ZEUS_ASSIGN_OR_RETURN(std::unique_ptr<BatchSizePolicy> policy,
                        MakeBatchSizePolicy(std::move(config)));
  return BatchSizeOptimizer(std::move(policy));
}

StatusOr<BatchSizeOptimizer> BatchSizeOptimizer::FromJson(const nlohmann::json& json) {
  ZEUS_ASSIGN_OR_RETURN(std::unique_ptr<BatchSizePolicy> policy, LoadBatchSizePolicy(json));
  return BatchSizeOptimizer(std::move(policy));
}

}  // namespace zeus
