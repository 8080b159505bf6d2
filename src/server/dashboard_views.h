// The JSON documents of the dashboard's API (src/server/dashboard.h), built
// from the store in one read transaction each, so a job's trials and its
// bandit's belief come from the same moment.
//
// Units: energy in joules, time in seconds, cost in ZeusCost units (the
// job's own eta_knob and max_power; comparable only within one job).
//
// Thread-safety: pure functions of their arguments; the store calls may run
// concurrently.

#ifndef ZEUS_SRC_SERVER_DASHBOARD_VIEWS_H_
#define ZEUS_SRC_SERVER_DASHBOARD_VIEWS_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/optimizer/batch_size/gaussian_ts.h"
#include "zeus/server/store.h"
#include "zeus/status.h"

#include "src/server/input_limits.h"

namespace zeus::server_internal {

// One page of jobs by id: {"jobs": [{job_id, created_at_s, gpu_model,
// number_of_gpus, default_batch_size, batch_sizes, eta_knob, min_cost,
// exploring, best_batch_size, saved_vs_default (JobSavedFraction)}, ...],
// "next_after": the last job id of this
// page when more follow, else null}.
// kInternal for a job whose stored spec or state does not decode.
StatusOr<nlohmann::json> DashboardJobList(Store* store, const JobPage& page);

// One job: {job_id, created_at_s, job (the spec), trials_total, trials (the
// latest kMaxDashboardTrials), belief, cost_vs_default (totals over every
// trial, points of the listed ones)}; see docs/DASHBOARD.md for every field.
// kNotFound naming the job when it does not exist.
StatusOr<nlohmann::json> DashboardJobDetail(Store* store, const std::string& job_id);

// How a trial ended, for people: "running" (dispatched), "failed" (its
// client went away: no cost), "converged", "stopped_early" (ended before
// max_epochs without reaching the target: the cost bound) or
// "not_converged" (reached max_epochs without the target).
std::string TrialOutcome(const TrialRecord& trial, int64_t max_epochs);

// The bandit's belief in one arm in cost terms (reward = -cost):
// {batch_size, num_observations, mean_cost, cost_spread}, where cost_spread
// is the posterior standard deviation 1/sqrt(precision): 0 when the
// precision is infinite (observations all equal), null when it is 0 (no
// information); mean_cost is null when the arm has neither observations nor
// an informative prior.
nlohmann::json ArmBeliefToJson(const ArmState& arm);

// The job's cumulative cost against always running `default_batch_size`.
// Ended trials (converged, stopped early, not converged) count at their
// recorded cost in trial order; failed and running trials count on neither
// side. The default's cost per recurrence is estimated as the mean cost of
// the job's converged runs at the default batch size, and charged once per
// converged trial (one delivered result each). Without a converged default
// run there is no estimate: the default fields are null. Fields:
// {default_batch_size, default_runs, default_cost_estimate,
//  default_cost_min, default_cost_max, ended_trials, converged_trials,
//  failed_trials, running_trials, total_cost, total_default_cost,
//  saved_fraction, method, points: [{trial_number, batch_size, outcome, cost,
//  cumulative_cost, cumulative_default_cost}]}.
nlohmann::json CostAgainstDefault(const std::vector<TrialRecord>& trials,
                                  int64_t default_batch_size, int64_t max_epochs);

}  // namespace zeus::server_internal

#endif  // ZEUS_SRC_SERVER_DASHBOARD_VIEWS_H_
