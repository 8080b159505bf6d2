#include "src/server/dashboard_views.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <utility>

#include "zeus/optimizer/batch_size/batch_size_optimizer.h"
#include "zeus/protocol/job_spec.h"
#include "zeus/util/json.h"

#include "src/server/job_saving.h"
#include "src/server/stored_job.h"

namespace zeus::server_internal {

using nlohmann::json;

namespace {

// A decoded job row: its spec and its optimizer.
struct DecodedJob {
  BatchSizeJobSpec spec;
  BatchSizeOptimizer optimizer;
};

StatusOr<DecodedJob> Decode(const JobRecord& job) {
  ZEUS_ASSIGN_OR_RETURN(BatchSizeJobSpec spec, DecodeSpec(job));
  ZEUS_ASSIGN_OR_RETURN(BatchSizeOptimizer optimizer, DecodeOptimizer(job));
  return DecodedJob{std::move(spec), std::move(optimizer)};
}

json TrialToJson(const TrialRecord& t, int64_t max_epochs) {
  return json{{"trial_number", t.trial_number},
              {"batch_size", t.batch_size},
              {"kind", t.kind},
              {"status", std::string(TrialStatusName(t.status))},
              {"outcome", TrialOutcome(t, max_epochs)},
              {"energy_j", JsonOrNull(t.energy_j)},
              {"time_s", JsonOrNull(t.time_s)},
              {"cost", JsonOrNull(t.cost)},
              {"metric", JsonOrNull(t.metric)},
              {"epoch", JsonOrNull(t.current_epoch)},
              {"converged", t.converged},
              {"message", t.message},
              {"start_time_s", t.start_time_s},
              {"updated_at_s", t.updated_at_s}};
}

json BeliefToJson(const BatchSizeJobSpec& spec, const BatchSizeOptimizer& optimizer) {
  json arms = json::array();
  std::set<int64_t> in_bandit;
  for (const ArmState& arm : optimizer.ArmStates()) {
    arms.push_back(ArmBeliefToJson(arm));
    in_bandit.insert(arm.batch_size);
  }
  json pruned = json::array();
  for (int64_t size : spec.batch_sizes) {
    if (in_bandit.count(size) == 0) pruned.push_back(size);
  }
  json in_flight = json::array();
  for (const auto& [number, trial] : optimizer.in_flight()) {
    in_flight.push_back(json{{"trial_number", number},
                             {"batch_size", trial.batch_size},
                             {"kind", std::string(TrialKindName(trial.kind))}});
  }
  const BatchSizeSearchView search = optimizer.View();
  return json{{"exploring", search.exploring},
              {"best_batch_size", search.best_batch_size},
              {"min_cost", JsonOrNull(search.min_cost)},
              {"early_stop_threshold", JsonOrNull(search.early_stop_threshold)},
              {"in_flight", std::move(in_flight)},
              {"arms", std::move(arms)},
              {"pruned_batch_sizes", std::move(pruned)}};
}

constexpr char kCostMethod[] =
    "Every trial that ended (converged, stopped early or out of epochs) counts at its recorded "
    "cost, in trial order; failed trials (client gone) and running ones have no final cost and "
    "count on neither side. Always running the default batch size is estimated from this job's "
    "own runs at the default that reached the target: their mean cost, charged once for every "
    "trial of the job that converged (one delivered result each). Default runs that did not "
    "reach the target are left out of that mean, which favours the default; with few default "
    "runs the estimate is noisy (their number and range are shown). Without any converged "
    "default run there is no estimate.";

}  // namespace

std::string TrialOutcome(const TrialRecord& trial, int64_t max_epochs) {
  switch (trial.status) {
    case TrialStatus::kDispatched:
      return "running";
    case TrialStatus::kFailed:
      return "failed";
    case TrialStatus::kSucceeded:
      break;
  }
  if (trial.converged) return "converged";
  if (trial.current_epoch && *trial.current_epoch >= max_epochs) return "not_converged";
  return "stopped_early";
}

json ArmBeliefToJson(const ArmState& arm) {
  json spread;
  if (std::isinf(arm.precision)) {
    spread = 0.0;
  } else if (arm.precision > 0.0) {
    spread = 1.0 / std::sqrt(arm.precision);
  }
  const bool informed = arm.num_observations > 0 || arm.precision > 0.0;
  return json{{"batch_size", arm.batch_size},
              {"num_observations", arm.num_observations},
              {"mean_cost", informed ? json(-arm.mean) : json(nullptr)},
              {"cost_spread", spread}};
}

json CostAgainstDefault(const std::vector<TrialRecord>& trials, int64_t default_batch_size,
                        int64_t max_epochs) {
  std::vector<const TrialRecord*> order;
  for (const TrialRecord& t : trials) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const TrialRecord* a, const TrialRecord* b) {
    return a->trial_number < b->trial_number;
  });

  int default_runs = 0;
  double default_sum = 0.0;
  std::optional<double> default_min, default_max;
  int ended = 0, converged = 0, failed = 0, running = 0;
  for (const TrialRecord* t : order) {
    if (t->status == TrialStatus::kFailed) ++failed;
    if (t->status == TrialStatus::kDispatched) ++running;
    if (t->status != TrialStatus::kSucceeded || !t->cost) continue;
    ++ended;
    if (!t->converged) continue;
    ++converged;
    if (t->batch_size != default_batch_size) continue;
    ++default_runs;
    default_sum += *t->cost;
    default_min = std::min(default_min.value_or(*t->cost), *t->cost);
    default_max = std::max(default_max.value_or(*t->cost), *t->cost);
  }
  std::optional<double> estimate;
  if (default_runs > 0) estimate = default_sum / default_runs;

  json points = json::array();
  double cumulative = 0.0, cumulative_default = 0.0;
  for (const TrialRecord* t : order) {
    if (t->status != TrialStatus::kSucceeded || !t->cost) continue;
    cumulative += *t->cost;
    if (estimate && t->converged) cumulative_default += *estimate;
    points.push_back(
        json{{"trial_number", t->trial_number},
             {"batch_size", t->batch_size},
             {"outcome", TrialOutcome(*t, max_epochs)},
             {"cost", *t->cost},
             {"cumulative_cost", cumulative},
             {"cumulative_default_cost", estimate ? json(cumulative_default) : json(nullptr)}});
  }
  json saved;
  if (estimate && cumulative_default > 0.0) saved = 1.0 - cumulative / cumulative_default;
  return json{{"default_batch_size", default_batch_size},
              {"default_runs", default_runs},
              {"default_cost_estimate", JsonOrNull(estimate)},
              {"default_cost_min", JsonOrNull(default_min)},
              {"default_cost_max", JsonOrNull(default_max)},
              {"ended_trials", ended},
              {"converged_trials", converged},
              {"failed_trials", failed},
              {"running_trials", running},
              {"total_cost", cumulative},
              {"total_default_cost", estimate ? json(cumulative_default) : json(nullptr)},
              {"saved_fraction", saved},
              {"method", kCostMethod},
              {"points", std::move(points)}};
}

StatusOr<json> DashboardJobList(Store* store, const JobPage& page) {
  json jobs = json::array();
  json next_after = nullptr;
  Status status = store->RunTransaction(TransactionMode::kRead, [&](StoreTransaction& txn) {
    jobs = json::array();
    next_after = nullptr;
    // One more than asked: whether another page follows.
    ZEUS_ASSIGN_OR_RETURN(std::vector<JobRecord> records,
                          txn.ListJobsAfter(page.after, page.limit + 1));
    if (static_cast<int64_t>(records.size()) > page.limit) {
      records.resize(static_cast<size_t>(page.limit));
      next_after = records.back().job_id;
    }
    for (const JobRecord& job : records) {
      ZEUS_ASSIGN_OR_RETURN(DecodedJob decoded, Decode(job));
      const BatchSizeJobSpec& spec = decoded.spec;
      const BatchSizeSearchView search = decoded.optimizer.View();
      ZEUS_ASSIGN_OR_RETURN(
          json saved, JobSavedFraction(txn, job.job_id, spec.default_batch_size, spec.max_epochs));
      jobs.push_back(json{{"job_id", job.job_id},
                          {"created_at_s", job.created_at_s},
                          {"gpu_model", spec.gpu_model},
                          {"number_of_gpus", spec.number_of_gpus},
                          {"default_batch_size", spec.default_batch_size},
                          {"batch_sizes", spec.batch_sizes},
                          {"eta_knob", spec.eta_knob},
                          {"min_cost", JsonOrNull(search.min_cost)},
                          {"exploring", search.exploring},
                          {"best_batch_size", search.best_batch_size},
                          {"saved_vs_default", std::move(saved)}});
    }
    return Status::Ok();
  });
  if (!status.ok()) return status;
  return json{{"jobs", std::move(jobs)}, {"next_after", std::move(next_after)}};
}

StatusOr<json> DashboardJobDetail(Store* store, const std::string& job_id) {
  json view;
  Status status = store->RunTransaction(TransactionMode::kRead, [&](StoreTransaction& txn) {
    ZEUS_ASSIGN_OR_RETURN(std::optional<JobRecord> job, txn.GetJob(job_id));
    if (!job) return NotFoundError("job \"" + job_id + "\": not found");
    ZEUS_ASSIGN_OR_RETURN(DecodedJob decoded, Decode(*job));
    ZEUS_ASSIGN_OR_RETURN(std::vector<TrialRecord> trials, txn.ListTrials(job_id));
    const BatchSizeJobSpec& spec = decoded.spec;
    // The latest kMaxDashboardTrials trials are listed (and charted); the
    // cost totals count every trial.
    const size_t first_shown =
        trials.size() > kMaxDashboardTrials ? trials.size() - kMaxDashboardTrials : 0;
    json trial_rows = json::array();
    for (size_t i = first_shown; i < trials.size(); ++i) {
      trial_rows.push_back(TrialToJson(trials[i], spec.max_epochs));
    }
    json cost = CostAgainstDefault(trials, spec.default_batch_size, spec.max_epochs);
    json& points = cost["points"];
    if (points.size() > kMaxDashboardTrials) {
      points.erase(points.begin(), points.begin() + static_cast<std::ptrdiff_t>(
                                                        points.size() - kMaxDashboardTrials));
    }
    view = json{{"job_id", job->job_id},
                {"created_at_s", job->created_at_s},
                {"job", JobSpecToJson(spec)},
                {"trials_total", trials.size()},
                {"trials", std::move(trial_rows)},
                {"belief", BeliefToJson(spec, decoded.optimizer)},
                {"cost_vs_default", std::move(cost)}};
    return Status::Ok();
  });
  if (!status.ok()) return status;
  return view;
}

}  // namespace zeus::server_internal
