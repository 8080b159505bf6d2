// WalkBanditPolicy::Judge: every decision about a running trial, for every
// policy (the rules it applies are the policy's hooks).

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "src/optimizer/batch_size/walk_bandit_policy.h"

namespace zeus {

StatusOr<Verdict> WalkBanditPolicy::Judge(int64_t trial_number, const Observation& observation) {
  if (in_flight_.count(trial_number) == 0) return NotInFlight(trial_number);
  const double cost = observation.cost;
  if (!std::isfinite(cost) || cost < 0 || cost > GaussianTs::kMaxAbsReward) {
    return InvalidArgumentError("batch size optimizer: trial " + std::to_string(trial_number) +
                                ": cost must be finite and in [0, 1e100], got " +
                                nlohmann::json(cost).dump());
  }
  const bool check_in = observation.check_in;
  const bool reached = observation.reached_target;
  Verdict v;
  // What a finish would start from, before this report's point is recorded.
  const std::optional<ProgressPoint> finish_from = FinishCandidate(trial_number);
  if (!check_in && observation.progress.has_value()) {
    // A point the curve refuses (a cumulative cost below an earlier one) is
    // left out of it; the report counts all the same.
    StatusOr<bool> recorded = RecordProgress(trial_number, cost, *observation.progress);
    if (recorded.ok()) {
      v.state_changed = *recorded;
    } else if (recorded.status().code() != StatusCode::kInvalidArgument) {
      return recorded.status();
    }
  }
  v.whole_bound = EarlyStopThreshold(trial_number);
  v.best_progress = BestProgress(trial_number);
  if (check_in) {
    v.cost_bound = CheckInThreshold(trial_number);
  } else {
    v.cost_bound =
        v.best_progress ? EarlyStopThreshold(trial_number, *v.best_progress) : v.whole_bound;
  }
  bool within = !v.cost_bound || cost <= *v.cost_bound;
  v.curve_bound = v.cost_bound && (!v.whole_bound || *v.cost_bound < *v.whole_bound);
  // A probe the lowest cost overtook finishes when its curve says that costs
  // less than a fresh run (swarm: FinishBound).
  if (!within && !reached && finish_from) {
    if (const std::optional<double> finish = FinishBound(trial_number, *finish_from, cost)) {
      ZEUS_RETURN_IF_ERROR(Finish(trial_number, *finish_from, cost));
      within = true;
      v.finishes_under = finish;
      v.state_changed = true;
    }
  }
  // A near miss runs on: a probe past its whole bound that had got as far
  // as the reference run's last level within it fails the walk now and goes
  // on as a concurrent run under beta (RunOnBound).
  if (!within && !v.curve_bound) {
    const std::optional<double> progress_within = BestProgressWithin(trial_number, *v.whole_bound);
    const std::optional<double> run_on =
        progress_within ? RunOnBound(trial_number, *progress_within) : std::nullopt;
    if (run_on && cost <= *run_on) {
      ZEUS_RETURN_IF_ERROR(RunOn(trial_number, *progress_within));
      within = true;
      v.ran_on_to = run_on;
      v.state_changed = true;
    }
  }
  // A concurrent run whose size is no longer the cheapest known stops while
  // finishing it would still cost more than a fresh run at the cheaper size
  // (swarm: RestartThreshold).
  if (!reached && within) v.restart_below = RestartThreshold(trial_number);
  if (!within) {
    v.action = Verdict::Action::kStop;
  } else if (v.restart_below && cost < *v.restart_below) {
    v.action = Verdict::Action::kRestart;
  }
  return v;
}

}  // namespace zeus
