// Policies `zeus`, `frugal`, `swarm` and `batch-size-only`: the shared batch-size
// optimizer (pruning exploration + Gaussian Thompson sampling + early
// stopping), with JIT power limits (zeus, frugal) or at each batch size's
// maximum limit.

#include <memory>
#include <optional>
#include <vector>

#include "zeus/optimizer/batch_size/batch_size_optimizer.h"

#include "src/sim/policies/jit_power_limit.h"
#include "src/sim/policies/policies.h"

namespace zeus::sim_policies {
namespace {

class BanditPolicy final : public Policy {
 public:
  // `judged`: the optimizer judges each run at its reports and check-ins
  // (RunPlan::judged); otherwise a run is held to the bound it is handed
  // out with, stopped before the epoch that would pass it (the original
  // simulator's rule, which zeus's golden histories need).
  BanditPolicy(const PolicyContext& context, BatchSizeOptimizer optimizer, bool jit_power_limit,
               bool judged)
      : context_(context),
        optimizer_(std::move(optimizer)),
        jit_(*context.workload, context.eta, context.nonbinding_margin),
        jit_power_limit_(jit_power_limit),
        judged_(judged) {}

  RunPlan Next(int attempt) override {
    const Trial trial = optimizer_.NextTrial(attempt);
    RunPlan plan;
    plan.run_id = trial.trial_number;
    plan.batch_size = trial.batch_size;
    plan.kind = TrialKindName(trial.kind);
    plan.may_finish = trial.may_finish;
    if (jit_power_limit_) {
      plan.power_limit_w = jit_.For(trial.batch_size, &plan.profile_power);
    } else {
      plan.power_limit_w = context_.workload->Find(trial.batch_size)->max_power_limit_w();
    }
    plan.judged = judged_;
    if (!judged_) plan.cost_limit = optimizer_.View().early_stop_threshold;
    return plan;
  }

  StatusOr<Verdict> Judge(const RunPlan& plan, const Observation& observation) override {
    return optimizer_.Judge(plan.run_id, observation);
  }

  Status Observe(const RunPlan& plan, const RunOutcome& outcome) override {
    if (!outcome.ran) {
      // Could not afford one epoch: a failure priced far above the limit.
      const double cost = plan.cost_limit.has_value() ? 100.0 * *plan.cost_limit : 0.0;
      return optimizer_.ReportResult(plan.run_id, cost, false);
    }
    return optimizer_.ReportResult(plan.run_id, outcome.cost, outcome.reached);
  }

 private:
  PolicyContext context_;
  BatchSizeOptimizer optimizer_;
  JitPowerLimit jit_;
  bool jit_power_limit_;
  bool judged_;
};

StatusOr<std::unique_ptr<Policy>> MakeBandit(const PolicyContext& context, bool jit_power_limit,
                                             BatchSizePolicyKind batch_size_policy, bool judged) {
  BatchSizeOptimizerConfig config;
  config.policy = batch_size_policy;
  config.batch_sizes = context.workload->BatchSizeList();
  config.default_batch_size = context.workload->default_batch_size;
  config.seed = context.seed;
  config.beta = context.beta;
  ZEUS_ASSIGN_OR_RETURN(BatchSizeOptimizer optimizer, BatchSizeOptimizer::Create(config));
  return std::unique_ptr<Policy>(
      std::make_unique<BanditPolicy>(context, std::move(optimizer), jit_power_limit, judged));
}

}  // namespace

StatusOr<std::unique_ptr<Policy>> MakeZeus(const PolicyContext& context) {
  return MakeBandit(context, /*jit_power_limit=*/true, BatchSizePolicyKind::kZeus,
                    /*judged=*/false);
}

StatusOr<std::unique_ptr<Policy>> MakeFrugal(const PolicyContext& context) {
  return MakeBandit(context, /*jit_power_limit=*/true, BatchSizePolicyKind::kFrugal,
                    /*judged=*/true);
}

StatusOr<std::unique_ptr<Policy>> MakeSwarm(const PolicyContext& context) {
  return MakeBandit(context, /*jit_power_limit=*/true, BatchSizePolicyKind::kSwarm,
                    /*judged=*/true);
}

StatusOr<std::unique_ptr<Policy>> MakeBatchSizeOnly(const PolicyContext& context) {
  return MakeBandit(context, /*jit_power_limit=*/false, BatchSizePolicyKind::kZeus,
                    /*judged=*/false);
}

}  // namespace zeus::sim_policies
