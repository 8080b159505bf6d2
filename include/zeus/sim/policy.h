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
#include "zeus/optimizer/batch_size/verdict.h"
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
  // max_epochs. Ignored for a judged run.
  std::optional<double> cost_limit;
  // How the limit is applied. false (the original simulator's, kept for
  // `zeus`): the run stops before the epoch that would pass the limit,
  // epochs priced at the batch size's own highest power limit and without
  // the profiling epoch, so a run may end slightly above the limit. true:
  // the run stops at its first report or check-in whose real cost so far
  // passes it (ExecuteRun), as `zeus serve` stops it.
  bool exact_cost_limit = false;
  // Early stopping on a fixed learning curve (the floor policies): after an
  // epoch that does not end the run, it stops once its cost so far passes
  // ProgressBound(progress_limits, its progress, 1) (progress_curve.h).
  // Empty: no such stop.
  std::vector<ProgressPoint> progress_limits = {};
  // Whether the outcome records the run's curve (RunOutcome::progress).
  bool record_progress = false;
  // The policy judges the run itself at each report and check-in
  // (Policy::Judge), as `zeus serve` judges it with the policy's optimizer:
  // the simulations step it through those points (cost_limit and
  // progress_limits are not used).
  bool judged = false;
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
  // A judged run that passed its bound as a near miss and ran on
  // (Verdict::ran_on_to).
  bool ran_on = false;
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
  // The verdict on judged run `plan` (RunPlan::judged) at one of its
  // reports or check-ins, in the order they happen across every run in
  // flight. Default: keep going. kNotFound for an unknown plan.
  virtual StatusOr<Verdict> Judge(const RunPlan& plan, const Observation& observation) {
    (void)plan;
    (void)observation;
    return Verdict();
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
