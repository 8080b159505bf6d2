// Factories of the built-in simulation policies, one file each. Private to
// src/sim; registered by name in src/sim/policy_registry.cc.

#ifndef ZEUS_SRC_SIM_POLICIES_POLICIES_H_
#define ZEUS_SRC_SIM_POLICIES_POLICIES_H_

#include <memory>

#include "zeus/sim/policy.h"

namespace zeus::sim_policies {

// Pruning exploration + Gaussian Thompson sampling with JIT power limits and
// early stopping (the paper's Zeus).
StatusOr<std::unique_ptr<Policy>> MakeZeus(const PolicyContext& context);
// Zeus with cheaper exploration (BatchSizePolicyKind::kFrugal,
// docs/BATCH_SIZE_POLICY.md), with JIT power limits and early stopping.
StatusOr<std::unique_ptr<Policy>> MakeFrugal(const PolicyContext& context);
// frugal that explores on concurrent submissions too (speculative steps,
// BatchSizePolicyKind::kSwarm), with JIT power limits and early stopping.
StatusOr<std::unique_ptr<Policy>> MakeSwarm(const PolicyContext& context);
// The same bandit at each batch size's maximum power limit.
StatusOr<std::unique_ptr<Policy>> MakeBatchSizeOnly(const PolicyContext& context);
// JIT power limit at the default batch size.
StatusOr<std::unique_ptr<Policy>> MakePowerLimitOnly(const PolicyContext& context);
// Default batch size at its maximum power limit.
StatusOr<std::unique_ptr<Policy>> MakeDefault(const PolicyContext& context);
// The configuration with the least expected cost, known in hindsight.
StatusOr<std::unique_ptr<Policy>> MakeOracle(const PolicyContext& context);
// Every configuration once, then the cheapest that reached the target.
StatusOr<std::unique_ptr<Policy>> MakeGridSearch(const PolicyContext& context);
// The least exploration any policy that walks adjacent batch sizes from the
// default must pay, with the oracle's hindsight (floor_policy.cc).
StatusOr<std::unique_ptr<Policy>> MakeWalkFloor(const PolicyContext& context);
// The same for any policy that starts at the default, walking or not.
StatusOr<std::unique_ptr<Policy>> MakeJumpFloor(const PolicyContext& context);

}  // namespace zeus::sim_policies

#endif  // ZEUS_SRC_SIM_POLICIES_POLICIES_H_
