// BatchSizeService's read-only views: jobs, trials, arms and the summary the
// exporter publishes. Each reads in one read transaction.

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "zeus/optimizer/batch_size/batch_size_optimizer.h"
#include "zeus/server/batch_size_service.h"
#include "zeus/util/json.h"

#include "src/server/input_limits.h"
#include "src/server/optimizer_cache.h"
#include "src/server/stored_job.h"

namespace zeus {

using nlohmann::json;

using server_internal::LockJob;
using server_internal::OptimizerCache;
using server_internal::OptimizerOf;
using server_internal::ValidateIdentifier;

namespace {

// The job's spec and lowest cost (kept once, in the optimizer state).
StatusOr<json> JobView(const JobRecord& job, OptimizerCache* cache) {
  ZEUS_ASSIGN_OR_RETURN(BatchSizeOptimizer optimizer, OptimizerOf(job, cache));
  json view;
  // The stored spec was validated on registration; an unreadable one shows as null.
  view["job"] = ParseJson(job.spec_json, "stored spec").value_or(json(nullptr));
  view["job_id"] = job.job_id;
  view["min_cost"] = JsonOrNull(optimizer.View().min_cost);
  view["created_at_s"] = job.created_at_s;
  return view;
}

// `view` of job `job_id`, computed in one read transaction.
StatusOr<json> ReadJobView(Store* store, const std::string& job_id,
                           const std::function<StatusOr<json>(const JobRecord&)>& view) {
  ZEUS_RETURN_IF_ERROR(ValidateIdentifier("job_id", job_id));
  json result;
  ZEUS_RETURN_IF_ERROR(
      store->RunTransaction(TransactionMode::kRead, [&](StoreTransaction& txn) -> Status {
        ZEUS_ASSIGN_OR_RETURN(JobRecord job, LockJob(txn, job_id));
        ZEUS_ASSIGN_OR_RETURN(result, view(job));
        return Status::Ok();
      }));
  return result;
}

}  // namespace

json TrialRecordToJson(const TrialRecord& t) {
  return json{{"job_id", t.job_id},
              {"trial_number", t.trial_number},
              {"batch_size", t.batch_size},
              {"kind", t.kind},
              {"status", std::string(TrialStatusName(t.status))},
              {"start_time_s", t.start_time_s},
              {"updated_at_s", t.updated_at_s},
              {"time", JsonOrNull(t.time_s)},
              {"energy", JsonOrNull(t.energy_j)},
              {"metric", JsonOrNull(t.metric)},
              {"current_epoch", JsonOrNull(t.current_epoch)},
              {"cost", JsonOrNull(t.cost)},
              {"converged", t.converged},
              {"message", t.message}};
}

StatusOr<json> BatchSizeService::GetJob(const std::string& job_id) {
  OptimizerCache* cache = cache_.get();
  return ReadJobView(store_, job_id, [cache](const JobRecord& job) { return JobView(job, cache); });
}

StatusOr<json> BatchSizeService::ListJobs(const std::string& after_job_id, int64_t limit) {
  if (limit < 1 || limit > server_internal::kMaxJobsPerPage) {
    return InvalidArgumentError(fmt::format("query parameter 'limit': {} is outside [1, {}]", limit,
                                            server_internal::kMaxJobsPerPage));
  }
  OptimizerCache* cache = cache_.get();
  json jobs = json::array();
  json next_after = nullptr;
  Status txn_status =
      store_->RunTransaction(TransactionMode::kRead, [&](StoreTransaction& txn) -> Status {
        jobs = json::array();
        next_after = nullptr;
        // One more than asked: whether another page follows.
        ZEUS_ASSIGN_OR_RETURN(std::vector<JobRecord> records,
                              txn.ListJobsAfter(after_job_id, limit + 1));
        const bool more = static_cast<int64_t>(records.size()) > limit;
        if (more) records.resize(static_cast<size_t>(limit));
        for (const JobRecord& job : records) {
          ZEUS_ASSIGN_OR_RETURN(json view, JobView(job, cache));
          jobs.push_back(std::move(view));
        }
        if (more) next_after = records.back().job_id;
        return Status::Ok();
      });
  if (!txn_status.ok()) return txn_status;
  return json{{"jobs", std::move(jobs)}, {"next_after", std::move(next_after)}};
}

StatusOr<json> BatchSizeService::ListTrials(const std::string& job_id, int64_t after_trial_number,
                                            int64_t limit) {
  ZEUS_RETURN_IF_ERROR(ValidateIdentifier("job_id", job_id));
  if (limit < 1 || limit > server_internal::kMaxTrialsPerPage) {
    return InvalidArgumentError(fmt::format("query parameter 'limit': {} is outside [1, {}]", limit,
                                            server_internal::kMaxTrialsPerPage));
  }
  json trials = json::array();
  json next_after = nullptr;
  Status txn_status =
      store_->RunTransaction(TransactionMode::kRead, [&](StoreTransaction& txn) -> Status {
        trials = json::array();
        next_after = nullptr;
        ZEUS_RETURN_IF_ERROR(LockJob(txn, job_id).status());
        // One more than asked: whether another page follows.
        ZEUS_ASSIGN_OR_RETURN(std::vector<TrialRecord> records,
                              txn.ListTrialsAfter(job_id, after_trial_number, limit + 1));
        if (static_cast<int64_t>(records.size()) > limit) {
          records.resize(static_cast<size_t>(limit));
          next_after = records.back().trial_number;
        }
        for (const TrialRecord& t : records) trials.push_back(TrialRecordToJson(t));
        return Status::Ok();
      });
  if (!txn_status.ok()) return txn_status;
  return json{{"job_id", job_id}, {"trials", std::move(trials)}, {"next_after", next_after}};
}

StatusOr<json> BatchSizeService::ArmStates(const std::string& job_id) {
  OptimizerCache* cache = cache_.get();
  return ReadJobView(store_, job_id, [cache](const JobRecord& job) -> StatusOr<json> {
    ZEUS_ASSIGN_OR_RETURN(BatchSizeOptimizer optimizer, OptimizerOf(job, cache));
    json arms = json::array();
    for (const ArmState& arm : optimizer.ArmStates()) {
      // JSON has no infinity: an arm whose observations are all equal
      // reports a null precision.
      auto finite = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
      arms.push_back(json{{"batch_size", arm.batch_size},
                          {"num_observations", arm.num_observations},
                          {"mean", finite(arm.mean)},
                          {"precision", finite(arm.precision)},
                          {"reward_precision", finite(arm.reward_precision)}});
    }
    json in_flight = json::array();
    for (const auto& entry : optimizer.in_flight()) {
      in_flight.push_back(json{{"trial_number", entry.second.trial_number},
                               {"batch_size", entry.second.batch_size},
                               {"kind", std::string(TrialKindName(entry.second.kind))}});
    }
    const BatchSizeSearchView search = optimizer.View();
    return json{{"job_id", job.job_id},
                {"exploring", search.exploring},
                {"min_cost", JsonOrNull(search.min_cost)},
                {"best_batch_size", search.best_batch_size},
                {"in_flight", std::move(in_flight)},
                {"arms", std::move(arms)}};
  });
}

StatusOr<std::vector<JobSummary>> BatchSizeService::Summary() {
  OptimizerCache* cache = cache_.get();
  std::vector<JobSummary> jobs;
  Status txn_status =
      store_->RunTransaction(TransactionMode::kRead, [&](StoreTransaction& txn) -> Status {
        jobs.clear();
        ZEUS_ASSIGN_OR_RETURN(std::vector<JobRecord> records, txn.ListJobs());
        for (const JobRecord& job : records) {
          ZEUS_ASSIGN_OR_RETURN(BatchSizeOptimizer optimizer, OptimizerOf(job, cache));
          JobSummary summary;
          summary.job_id = job.job_id;
          const BatchSizeSearchView search = optimizer.View();
          summary.best_batch_size = search.best_batch_size;
          summary.min_cost = search.min_cost;
          ZEUS_ASSIGN_OR_RETURN(std::vector<TrialRecord> trials, txn.ListTrials(job.job_id));
          for (const TrialRecord& trial : trials) {
            switch (trial.status) {
              case TrialStatus::kDispatched:
                ++summary.dispatched_trials;
                break;
              case TrialStatus::kSucceeded:
                ++summary.succeeded_trials;
                break;
              case TrialStatus::kFailed:
                ++summary.failed_trials;
                break;
            }
          }
          // Trials come by trial number: the last is the latest.
          if (!trials.empty()) summary.current_batch_size = trials.back().batch_size;
          jobs.push_back(std::move(summary));
        }
        return Status::Ok();
      });
  if (!txn_status.ok()) return txn_status;
  return jobs;
}

}  // namespace zeus
