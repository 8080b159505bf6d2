// Policies `zeus`, `frugal`, `swarm` and `batch-size-only`: the shared batch-size
// optimizer (pruning exploration + Gaussian Thompson sampling + early
// stopping), with JIT power limits (zeus, frugal) or at each batch size's
// maximum limit.

#include <limits>
#include <map>
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
  BanditPolicy(const PolicyContext& context, BatchSizeOptimizer optimizer, bool jit_power_limit)
      : context_(context),
        optimizer_(std::move(optimizer)),
        jit_(*context.workload, context.eta),
        jit_power_limit_(jit_power_limit) {}

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
    plan.cost_limit = optimizer_.EarlyStopThreshold(trial.trial_number);
    // Zeus keeps the original simulator's approximate limit (its golden
    // histories); frugal's and swarm's tighter exploration bound is applied
    // as the server applies it.
    plan.exact_cost_limit = optimizer_.config().policy != BatchSizePolicy::kZeus;
    // frugal and swarm also stop a run that learns slower than the run of
    // the lowest cost known, as the server does from per-epoch reports.
    plan.record_progress = plan.exact_cost_limit && !context_.workload->milestones.empty();
    plan.progress_limits = optimizer_.ProgressLimits(trial.trial_number);
    // A near miss runs on past the exploration bound, as the server lets it.
    if (plan.exact_cost_limit) plan.run_on_cost_limit = RunOnLimit(trial.trial_number);
    return plan;
  }

  Status Observe(const RunPlan& plan, const RunOutcome& outcome) override {
    // (The points it reported in flight are recorded already.)
    size_t recorded = 0;
    if (auto it = reported_.find(plan.run_id); it != reported_.end()) {
      recorded = it->second;
      reported_.erase(it);
    }
    if (!outcome.ran) {
      // Could not afford one epoch: a failure priced far above the limit.
      const double cost = plan.cost_limit.has_value() ? 100.0 * *plan.cost_limit : 0.0;
      return optimizer_.ReportResult(plan.run_id, cost, false);
    }
    for (size_t i = recorded; i < outcome.progress.size(); ++i) {
      const ProgressPoint& point = outcome.progress[i];
      ZEUS_RETURN_IF_ERROR(optimizer_.RecordProgress(plan.run_id, point.cost, point.progress));
    }
    return optimizer_.ReportResult(plan.run_id, outcome.cost, outcome.reached);
  }

  // Swarm's probes (the walk's step, speculative trials), as the server
  // hears them: before any run reached the target the step's curve bounds
  // the speculative runs as it grows (the provisional reference), and a
  // concurrent trial goes to the probe that learns fastest so far
  // (BatchSizeOptimizer::ConcurrentSize).
  bool ReportsInFlight(const RunPlan& plan) const override {
    if (optimizer_.config().policy != BatchSizePolicy::kSwarm) return false;
    auto trial = optimizer_.in_flight().find(plan.run_id);
    return trial != optimizer_.in_flight().end() &&
           (trial->second.kind == TrialKind::kExploration ||
            trial->second.kind == TrialKind::kSpeculative);
  }
  Status ReportProgress(const RunPlan& plan, const ProgressPoint& point) override {
    ZEUS_RETURN_IF_ERROR(optimizer_.RecordProgress(plan.run_id, point.cost, point.progress));
    ++reported_[plan.run_id];
    return Status::Ok();
  }

  // frugal and swarm (the exact rule): the bound the server applies when the
  // run reports, from the lowest cost known then. zeus keeps the bound it
  // handed out, as the original simulator does.
  std::optional<double> CostLimitAtReport(const RunPlan& plan) const override {
    if (!plan.exact_cost_limit) return plan.cost_limit;
    return optimizer_.EarlyStopThreshold(plan.run_id);
  }
  std::vector<ProgressPoint> ProgressLimitsAtReport(const RunPlan& plan) const override {
    if (!plan.exact_cost_limit) return plan.progress_limits;
    return optimizer_.ProgressLimits(plan.run_id);
  }
  std::optional<double> RunOnLimitAtReport(const RunPlan& plan) const override {
    if (!plan.exact_cost_limit) return plan.run_on_cost_limit;
    return RunOnLimit(plan.run_id);
  }
  std::optional<double> RestartThresholdAtReport(const RunPlan& plan) const override {
    return optimizer_.RestartThreshold(plan.run_id);
  }
  Status RunOn(const RunPlan& plan, double progress) override {
    return optimizer_.RunOn(plan.run_id, progress);
  }
  std::optional<double> FinishLimitAtReport(const RunPlan& plan, const ProgressPoint& best,
                                            double cost) const override {
    if (!plan.exact_cost_limit) return std::nullopt;
    return optimizer_.FinishBound(plan.run_id, best, cost);
  }
  Status Finish(const RunPlan& plan, const ProgressPoint& best, double cost) override {
    return optimizer_.Finish(plan.run_id, best, cost);
  }

 private:
  // The limit trial `trial_number` runs on to if it passes its bound as a
  // near miss (whatever its progress then: ExecuteRun checks that).
  std::optional<double> RunOnLimit(int64_t trial_number) const {
    return optimizer_.RunOnBound(trial_number, std::numeric_limits<double>::infinity());
  }

  PolicyContext context_;
  BatchSizeOptimizer optimizer_;
  // Points each run in flight reported through ReportProgress.
  std::map<int64_t, size_t> reported_;
  JitPowerLimit jit_;
  bool jit_power_limit_;
};

StatusOr<std::unique_ptr<Policy>> MakeBandit(const PolicyContext& context, bool jit_power_limit,
                                             BatchSizePolicy batch_size_policy) {
  BatchSizeOptimizerConfig config;
  config.policy = batch_size_policy;
  config.batch_sizes = context.workload->BatchSizeList();
  config.default_batch_size = context.workload->default_batch_size;
  config.seed = context.seed;
  config.beta = context.beta;
  ZEUS_ASSIGN_OR_RETURN(BatchSizeOptimizer optimizer, BatchSizeOptimizer::Create(config));
  return std::unique_ptr<Policy>(
      std::make_unique<BanditPolicy>(context, std::move(optimizer), jit_power_limit));
}

}  // namespace

StatusOr<std::unique_ptr<Policy>> MakeZeus(const PolicyContext& context) {
  return MakeBandit(context, /*jit_power_limit=*/true, BatchSizePolicy::kZeus);
}

StatusOr<std::unique_ptr<Policy>> MakeFrugal(const PolicyContext& context) {
  return MakeBandit(context, /*jit_power_limit=*/true, BatchSizePolicy::kFrugal);
}

StatusOr<std::unique_ptr<Policy>> MakeSwarm(const PolicyContext& context) {
  return MakeBandit(context, /*jit_power_limit=*/true, BatchSizePolicy::kSwarm);
}

StatusOr<std::unique_ptr<Policy>> MakeBatchSizeOnly(const PolicyContext& context) {
  return MakeBandit(context, /*jit_power_limit=*/false, BatchSizePolicy::kZeus);
}

}  // namespace zeus::sim_policies
