// How a simulated recurring job picks its configuration.
//
// A policy hands out run plans (batch size, power limit, early-stop cost
// limit) and learns from their outcomes. Several plans may be in flight at
// once (recurring-job groups) and outcomes may arrive in any order. Adding a
// policy is one file in src/sim/policies/ plus one line in the registry
// (src/sim/policy_registry.cc).
//
// Thread-safety: a policy is used by one simulation thread.

#ifndef ZEUS_SIM_POLICY_H_
#define ZEUS_SIM_POLICY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zeus/optimizer/batch_size/progress_curve.h"
#include "zeus/sim/job_context.h"
#include "zeus/sim/trace.h"
#include "zeus/status.h"

namespace zeus {

// One run a policy asks for.
struct RunPlan {
  // Unique per policy instance; identifies the run in Observe().
  int64_t run_id = 0;
  int batch_size = 0;
  int power_limit_w = 0;
  // True on the first run of this batch size under JIT power-limit
  // profiling: the first epoch is spread over every power limit. Later runs
  // of the size reuse that profile's limit and do not profile again; a real
  // job does the same by keeping one profile per job and batch size
  // (GlobalPowerLimitOptimizer's profile_path, docs/BATCH_SIZE_POLICY.md).
  bool profile_power = false;
  // Early stopping at this cost. nullopt = run until the target or
  // max_epochs.
  std::optional<double> cost_limit;
  // How the limit is applied. false (the original simulator's, kept for
  // `zeus`): the run stops before the epoch that would pass the limit,
  // epochs priced at the batch size's own highest power limit and without
  // the profiling epoch, so a run may end slightly above the limit. true:
  // the run stops at its first report or check-in whose real cost so far
  // passes it (ExecuteRun), as `zeus serve` stops it.
  bool exact_cost_limit = false;
  // Early stopping on the learning curve (frugal and swarm): after an epoch
  // that does not end the run, it stops once its cost so far passes
  // ProgressBound(progress_limits, its progress, 1) (progress_curve.h).
  // Empty: no such stop.
  std::vector<ProgressPoint> progress_limits = {};
  // The curve limits apply only after epochs whose cost so far is above this
  // (J): a run in flight is held to new limits from its next report on, as
  // the server holds it. Default 0: from its first epoch. (Also raised for a
  // run that a restart threshold found past it: its epochs up to here were
  // reported before that threshold existed.)
  double progress_limits_from_cost = 0.0;
  // Whether the outcome records the run's curve (RunOutcome::progress).
  bool record_progress = false;
  // frugal and swarm, exact limits only: a run whose cost passes cost_limit
  // at an epoch after which it has got as far as the last level of
  // progress_limits before the target (a near miss; ProgressBound nullopt)
  // runs on to this limit instead of stopping (RunOutcome::ran_on;
  // Policy::RunOn). nullopt: it stops at cost_limit.
  std::optional<double> run_on_cost_limit = {};
  // The run may train to its target held to its cost limit alone, a limit
  // that does not tighten below beta x the lowest cost known (Trial::may_finish):
  // no exploration bound, learning curve or restart stops it. True for every
  // policy but frugal's and swarm's probes and swarm's restartable runs.
  bool may_finish = true;
  // What the policy handed this run out as, for the history: the bandit
  // policies' trial kind ("exploration", "concurrent", "bandit",
  // "speculative"); empty for the others. Points to static storage.
  std::string_view kind = {};
};

// What a run did.
struct RunOutcome {
  double energy_j = 0.0;
  double time_s = 0.0;
  bool reached = false;
  // False when even one epoch would pass an approximate cost limit
  // (RunPlan::exact_cost_limit false): nothing ran.
  bool ran = true;
  // ZeusCost(energy_j, time_s, eta, MaxPower).
  double cost = 0.0;
  // With RunPlan::record_progress: the run's cost so far and progress (the
  // workload's milestones reached, plus one for the target) after its first
  // epoch, each epoch at which its progress rose, and its last epoch. Empty
  // for runs of more than kMaxProgressPoints epochs.
  std::vector<ProgressPoint> progress = {};
  // With RunPlan::run_on_cost_limit, the epoch at which the run passed
  // cost_limit as a near miss and ran on: its cost and progress after that
  // epoch (`at`, also a point of `progress` when that is recorded), and its
  // progress at its last epoch within cost_limit (Policy::RunOn's). nullopt
  // when it did not.
  struct RanOn {
    ProgressPoint at;
    double progress_within = 0.0;
  };
  std::optional<RanOn> ran_on = {};
  // What the run's first epoch cost, and each later one (the cost a
  // per-epoch report adds), whether or not it ran them: the group
  // simulation tells from them when a run in flight reports next.
  double first_epoch_cost = 0.0;
  double epoch_cost = 0.0;
  // The same in seconds of the run's time (check-ins count it).
  double first_epoch_time_s = 0.0;
  double epoch_time_s = 0.0;
  // The run was stopped by a check-in between two reports (its last
  // `progress` point, when recorded, is the check-in's spend).
  bool stopped_at_check_in = false;
};

// Everything a policy may know up front: the simulated job's context.
using PolicyContext = JobContext;

class Policy {
 public:
  virtual ~Policy() = default;
  Policy() = default;
  Policy(const Policy&) = delete;
  Policy& operator=(const Policy&) = delete;

  // The next run to start: try `attempt` of its submission (1 for the
  // first; n + 1 after n tries that did not reach the target). A policy
  // hands a submission a run that may finish (RunPlan::may_finish) after at
  // most kMaxStoppableTries tries that did not.
  virtual RunPlan Next(int attempt) = 0;
  // The outcome of plan `plan` (handed out by Next() and not yet observed).
  // kNotFound for an unknown plan.
  virtual Status Observe(const RunPlan& plan, const RunOutcome& outcome) = 0;
  // The early-stop bound in-flight run `plan` is held to when it reports
  // (the group simulation asks just before Observe, and for every run still
  // in flight after each Observe). Default: the bound it
  // was handed, plan.cost_limit, as the original simulator does. A policy
  // whose server judges a run against the lowest cost known at report time
  // returns that bound; when it is tighter, the group simulation charges a
  // run in flight what it has spent so far and stops it if that reaches the
  // bound, else replays it under the bound (same draw of epochs)
  // (SimulateJobGroup).
  virtual std::optional<double> CostLimitAtReport(const RunPlan& plan) const {
    return plan.cost_limit;
  }
  // The learning-curve limits in-flight run `plan` is held to when it
  // reports, as CostLimitAtReport. Default: plan.progress_limits.
  virtual std::vector<ProgressPoint> ProgressLimitsAtReport(const RunPlan& plan) const {
    return plan.progress_limits;
  }
  // The run-on limit in-flight run `plan` is held to when it reports, as
  // CostLimitAtReport. Default: plan.run_on_cost_limit.
  virtual std::optional<double> RunOnLimitAtReport(const RunPlan& plan) const {
    return plan.run_on_cost_limit;
  }
  // The cost below which in-flight run `plan`, when it reports, stops so
  // that its submission restarts at a cheaper size (swarm's concurrent
  // runs: BatchSizeOptimizer::RestartThreshold); the group simulation asks
  // with CostLimitAtReport. Default: nullopt, never.
  virtual std::optional<double> RestartThresholdAtReport(const RunPlan& /*plan*/) const {
    return std::nullopt;
  }
  // In-flight run `plan` passed its cost limit as a near miss and runs on
  // (RunOutcome::ran_on; `progress` its progress_within): the simulations
  // call this at the end of that epoch, before any later report or
  // hand-out, as the server acts on that epoch's report. Default: nothing
  // to do.
  virtual Status RunOn(const RunPlan& plan, double progress) {
    (void)plan;
    (void)progress;
    return Status::Ok();
  }
  // The bound in-flight run `plan` finishes under when, judged at cost
  // `cost`, bounds that changed under it stop it (swarm:
  // BatchSizeOptimizer::FinishBound; `best` the point of its curve before
  // that judgment where it first reported its best progress); the group
  // simulation asks at each such stop. Default: nullopt, it stops.
  virtual std::optional<double> FinishLimitAtReport(const RunPlan& /*plan*/,
                                                    const ProgressPoint& /*best*/,
                                                    double /*cost*/) const {
    return std::nullopt;
  }
  // In-flight run `plan` finishes (FinishLimitAtReport has a value): the
  // group simulation calls this at the judgment's event, and then holds the
  // run to the bounds the policy gives it. Default: nothing to do.
  virtual Status Finish(const RunPlan& plan, const ProgressPoint& best, double cost) {
    (void)plan;
    (void)best;
    (void)cost;
    return Status::Ok();
  }
  // Whether the group simulation should tell the policy in-flight run
  // `plan`'s per-epoch reports as they happen (ReportProgress), because
  // they bound other runs in flight (swarm's provisional reference:
  // BatchSizeOptimizer::provisional_reference). Asked before each event.
  // Default: false; Observe then gets the whole curve.
  virtual bool ReportsInFlight(const RunPlan& /*plan*/) const { return false; }
  // One per-epoch report of in-flight run `plan`, its point on its curve,
  // in order. Observe then gets the run's whole curve, these points
  // included. Default: nothing to do.
  virtual Status ReportProgress(const RunPlan& plan, const ProgressPoint& point) {
    (void)plan;
    (void)point;
    return Status::Ok();
  }
};

// The registered policy names: zeus, frugal, swarm, default, oracle, walk-floor,
// jump-floor, grid-search, power-limit-only, batch-size-only.
std::vector<std::string> PolicyNames();

// kNotFound naming the known policies for an unknown `name`;
// kInvalidArgument for a workload failing ValidateWorkload, eta outside
// [0, 1] or a beta that is not finite and > 0.
// REQUIRES: context.workload outlives the policy.
StatusOr<std::unique_ptr<Policy>> MakePolicy(std::string_view name, const PolicyContext& context);

}  // namespace zeus

#endif  // ZEUS_SIM_POLICY_H_
