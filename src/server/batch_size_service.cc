#include "zeus/server/batch_size_service.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "zeus/core/cost.h"
#include "zeus/optimizer/batch_size/batch_size_optimizer.h"
#include "zeus/util/json.h"

#include "src/server/input_limits.h"
#include "src/server/optimizer_cache.h"
#include "src/server/stored_job.h"

namespace zeus {

using nlohmann::json;

using server_internal::JobNotFound;
using server_internal::LockJob;
using server_internal::OptimizerCache;
using server_internal::OptimizerOf;
using server_internal::SpecOf;
using server_internal::ValidateIdentifier;

namespace {

constexpr int kMaxAbortRetries = 5;
constexpr int kMaxJobIdAttempts = 8;
// Jobs whose decoded optimizer state is kept in memory.
constexpr size_t kOptimizerCacheJobs = 4096;
// The answer to a report that does not end the run (the original's words).
constexpr char kKeepTraining[] = "Stop condition not met, keep training";

uint64_t RandomU64() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

Status TrialNotFound(const std::string& job_id, int64_t trial_number) {
  return NotFoundError("job \"" + job_id + "\": trial " + std::to_string(trial_number) +
                       " not found");
}

// REQUIRES: `spec` from ParseJobSpec or ValidateJobSpec (its batch sizes
// and counts fit an int).
StatusOr<BatchSizeOptimizerConfig> OptimizerConfig(const BatchSizeJobSpec& spec, uint64_t seed) {
  BatchSizeOptimizerConfig c;
  for (int64_t size : spec.batch_sizes) c.batch_sizes.push_back(static_cast<int>(size));
  c.default_batch_size = static_cast<int>(spec.default_batch_size);
  c.num_pruning_rounds = static_cast<int>(spec.num_pruning_rounds);
  c.window_size = static_cast<int>(spec.window_size);
  c.num_explorations = static_cast<int>(spec.mab_num_explorations);
  c.prior_mean = spec.mab_prior_mean;
  c.prior_precision = spec.mab_prior_precision;
  c.seed = seed;
  c.beta = spec.beta_knob;
  ZEUS_ASSIGN_OR_RETURN(c.policy, ParseBatchSizePolicy(spec.policy));
  ZEUS_RETURN_IF_ERROR(c.Validate());
  return c;
}

void StoreOptimizer(const BatchSizeOptimizer& optimizer, JobRecord* job, OptimizerCache* cache) {
  job->state_json = optimizer.ToJson().dump();
  // Keyed by content: harmless if the transaction rolls back.
  cache->Put(job->job_id, job->state_json, optimizer);
}

StatusOr<TrialRecord> FindTrial(StoreTransaction& txn, const TrialId& id) {
  ZEUS_ASSIGN_OR_RETURN(std::optional<TrialRecord> trial, txn.GetTrial(id.job_id, id.trial_number));
  if (!trial) return TrialNotFound(id.job_id, id.trial_number);
  if (trial->batch_size != id.batch_size) {
    return InvalidArgumentError("field 'batch_size': trial " + std::to_string(id.trial_number) +
                                " of job \"" + id.job_id + "\" runs batch size " +
                                std::to_string(trial->batch_size) + ", not " +
                                std::to_string(id.batch_size));
  }
  return std::move(*trial);
}

// Fails a dispatched trial: no observation for the bandit.
Status FailTrial(StoreTransaction& txn, JobRecord& job, TrialRecord& trial, double now_s,
                 std::string message, OptimizerCache* cache) {
  ZEUS_ASSIGN_OR_RETURN(BatchSizeOptimizer optimizer, OptimizerOf(job, cache));
  Status status = optimizer.ReportFailure(trial.trial_number);
  // A trial the optimizer no longer tracks has nothing to undo there.
  if (!status.ok() && status.code() != StatusCode::kNotFound) return status;
  StoreOptimizer(optimizer, &job, cache);
  ZEUS_RETURN_IF_ERROR(txn.UpdateJobState(job));
  trial.status = TrialStatus::kFailed;
  trial.updated_at_s = now_s;
  trial.converged = false;
  trial.message = std::move(message);
  return txn.UpdateTrial(trial);
}

// Ends a dispatched trial with its final result, `cost` and `response`
// (stop_train): the optimizer observes it (kInternal when it refuses), and
// the job state and the trial are stored.
Status FinishTrial(StoreTransaction& txn, JobRecord& job, TrialRecord& trial,
                   BatchSizeOptimizer& optimizer, double cost, const ReportResponse& response,
                   OptimizerCache* cache) {
  Status status = optimizer.ReportResult(trial.trial_number, cost, response.converged);
  if (!status.ok()) {
    return InternalError(
        "job \"" + job.job_id + "\": trial " + std::to_string(trial.trial_number) +
        " is dispatched but the optimizer rejects its result: " + status.ToString());
  }
  StoreOptimizer(optimizer, &job, cache);
  ZEUS_RETURN_IF_ERROR(txn.UpdateJobState(job));
  trial.status = TrialStatus::kSucceeded;
  trial.cost = cost;
  trial.converged = response.converged;
  trial.message = response.message;
  return txn.UpdateTrial(trial);
}

// Seconds per epoch of a trial that reported: the slower of its reported
// training time and the wall time from dispatch to its last report (start-up
// included), per epoch. nullopt before its first report. A failed trial's
// updated_at_s is when it was failed, so only its reported time counts.
std::optional<double> EpochPaceS(const TrialRecord& trial) {
  if (!trial.current_epoch || *trial.current_epoch < 1) return std::nullopt;
  const double epochs = static_cast<double>(*trial.current_epoch);
  const double wall_s = trial.status == TrialStatus::kFailed
                            ? 0.0
                            : std::max(0.0, trial.updated_at_s - trial.start_time_s);
  return std::max(trial.time_s.value_or(0.0), wall_s) / epochs;
}

// The optimizer's verdict on in-flight `trial` (BatchSizeOptimizer::Judge);
// kInternal when it refuses a trial the store holds as dispatched.
StatusOr<Verdict> JudgeTrial(const JobRecord& job, const TrialRecord& trial,
                             const Observation& observation, BatchSizeOptimizer& optimizer) {
  StatusOr<Verdict> verdict = optimizer.Judge(trial.trial_number, observation);
  if (!verdict.ok()) {
    return InternalError(
        "job \"" + job.job_id + "\": trial " + std::to_string(trial.trial_number) +
        " is dispatched but the optimizer refuses to judge it: " + verdict.status().ToString());
  }
  return verdict;
}

// What `verdict` tells `trial` when it keeps training: kKeepTraining, or
// that it ran on as a near miss or finishes.
std::string ContinueMessage(const Verdict& v, const BatchSizeJobSpec& spec,
                            const TrialRecord& trial, const BatchSizeOptimizer& optimizer) {
  if (v.finishes_under) {
    return fmt::format(
        "Batch size {} passed its bound {} after a cheaper run reached the target while it ran; "
        "its learning curve projects it to the target for less than a fresh run costs (lowest "
        "cost {}): it finishes, held to {} ({} policy)",
        trial.batch_size, v.cost_bound.value_or(0.0), optimizer.View().min_cost.value_or(0.0),
        *v.finishes_under, spec.policy);
  }
  if (v.ran_on_to) {
    return fmt::format(
        "Batch size {} passed the exploration bound {} as a near miss (within it, it had got "
        "as far as the run of the lowest cost before that run's last epoch): it fails the "
        "walk here and runs on to finish its submission, held to {} (beta_knob {}, {} policy)",
        trial.batch_size, v.whole_bound.value_or(0.0), *v.ran_on_to, spec.beta_knob.value_or(0.0),
        spec.policy);
  }
  return kKeepTraining;
}

// Why `verdict` stops `trial` without converging: past a bound, or restarting.
std::string StopMessage(const Verdict& v, const BatchSizeJobSpec& spec, const TrialRecord& trial,
                        double cost, const BatchSizeOptimizer& optimizer) {
  const BatchSizeSearchView search = optimizer.View();
  const bool within_bound = v.action != Verdict::Action::kStop;
  if (!within_bound && v.curve_bound) {
    const double ratio = v.whole_bound.value_or(0.0) / search.min_cost.value_or(1.0);
    if (!v.best_progress) {
      return fmt::format(
          "Batch size {} is learning slower than the run of the lowest cost: cost {} > bound {} "
          "before its first report ({} x what that run had spent at its first report; "
          "beta_knob {}, {} policy)",
          trial.batch_size, cost, *v.cost_bound, ratio, spec.beta_knob.value_or(0.0), spec.policy);
    }
    // The trial's best metric so far, in the metric's own orientation.
    const double best_metric = spec.higher_is_better_metric ? *v.best_progress : -*v.best_progress;
    return fmt::format(
        "Batch size {} is learning slower than the run of the lowest cost: cost {} > bound {} "
        "at metric {} ({} x what that run had spent when it first got past that metric; "
        "beta_knob {}, {} policy)",
        trial.batch_size, cost, *v.cost_bound, best_metric, ratio, spec.beta_knob.value_or(0.0),
        spec.policy);
  }
  if (!within_bound) {
    return fmt::format(
        "Batch Size({0}) exceeded the cost upper bound: current cost({1:#}) > bound({2:#}) "
        "(beta_knob({3:#}), min_cost({5:#}), {4} policy)",
        trial.batch_size, cost, v.cost_bound.value_or(0.0), spec.beta_knob.value_or(0.0),
        spec.policy, search.min_cost.value_or(0.0));
  }
  return fmt::format(
      "Batch size {} is no longer the cheapest known: finishing this run is expected to cost "
      "more than a fresh run at batch size {} (cost {} so far < restart threshold {}, its "
      "size's mean cost less the lowest cost {}; {} policy): restart the submission",
      trial.batch_size, search.best_batch_size, cost, *v.restart_below,
      search.min_cost.value_or(0.0), spec.policy);
}

}  // namespace

BatchSizeService::BatchSizeService(Store* store, Clock* clock, BatchSizeServiceOptions options)
    : store_(store),
      clock_(clock),
      options_(options),
      cache_(std::make_unique<OptimizerCache>(kOptimizerCacheJobs)) {}

BatchSizeService::~BatchSizeService() = default;

Status BatchSizeService::Write(const std::function<Status(StoreTransaction&)>& body) {
  Status status;
  for (int attempt = 0; attempt < kMaxAbortRetries; ++attempt) {
    status = store_->RunTransaction(TransactionMode::kWrite, body);
    if (status.code() != StatusCode::kAborted) return status;
  }
  return status;
}

StatusOr<BatchSizeService::Registration> BatchSizeService::RegisterJob(BatchSizeJobSpec spec) {
  // From the wire, ParseJobSpec has checked it already; from C++, not yet.
  ZEUS_ASSIGN_OR_RETURN(spec, ValidateJobSpec(spec));
  OptimizerCache* cache = cache_.get();
  uint64_t seed = spec.mab_seed ? static_cast<uint64_t>(*spec.mab_seed) : RandomU64();
  ZEUS_ASSIGN_OR_RETURN(BatchSizeOptimizerConfig config, OptimizerConfig(spec, seed));
  ZEUS_ASSIGN_OR_RETURN(BatchSizeOptimizer optimizer, BatchSizeOptimizer::Create(config));
  const bool generate_id = spec.job_id.empty();
  Registration registration;
  for (int attempt = 0; attempt < kMaxJobIdAttempts; ++attempt) {
    if (generate_id) {
      spec.job_id = spec.job_id_prefix + fmt::format("-{:08x}", RandomU64() & 0xffffffffu);
    }
    bool collided = false;
    Status txn_status = Write([&](StoreTransaction& txn) -> Status {
      JobRecord job;
      job.job_id = spec.job_id;
      job.spec_json = JobSpecToJson(spec).dump();
      // Keyed by content: harmless if the transaction rolls back.
      cache->PutSpec(job.job_id, job.spec_json, spec);
      StoreOptimizer(optimizer, &job, cache);
      job.created_at_s = clock_->WallTimeS();
      ZEUS_ASSIGN_OR_RETURN(bool inserted, txn.InsertJob(job));
      if (inserted) {
        registration.created = true;
        return Status::Ok();
      }
      ZEUS_ASSIGN_OR_RETURN(JobRecord existing, LockJob(txn, spec.job_id));
      ZEUS_ASSIGN_OR_RETURN(BatchSizeJobSpec existing_spec, SpecOf(existing, cache));
      if (generate_id) {
        collided = true;
        return Status::Ok();
      }
      if (!(existing_spec == spec)) {
        return AlreadyExistsError("job \"" + spec.job_id +
                                  "\": already registered with a different spec");
      }
      registration.created = false;
      return Status::Ok();
    });
    if (!txn_status.ok()) return txn_status;
    if (!collided) {
      registration.job = spec;
      return registration;
    }
  }
  return InternalError("job_id_prefix \"" + spec.job_id_prefix +
                       "\": could not find an unused job id");
}

StatusOr<TrialId> BatchSizeService::NextBatchSize(const std::string& job_id, int attempt) {
  ZEUS_RETURN_IF_ERROR(ValidateIdentifier("job_id", job_id));
  OptimizerCache* cache = cache_.get();
  TrialId id;
  Status txn_status = Write([&](StoreTransaction& txn) -> Status {
    ZEUS_ASSIGN_OR_RETURN(JobRecord job, LockJob(txn, job_id));
    ZEUS_ASSIGN_OR_RETURN(BatchSizeOptimizer optimizer, OptimizerOf(job, cache));
    if (static_cast<int64_t>(optimizer.in_flight().size()) >= options_.max_trials_in_flight) {
      return FailedPreconditionError(fmt::format(
          "job \"{}\": {} trials are in flight (dispatched, not yet ended), the most a job may "
          "have; report or end some (PATCH /trials) first, or wait until silent ones are failed",
          job_id, optimizer.in_flight().size()));
    }
    Trial trial = optimizer.NextTrial(attempt);
    StoreOptimizer(optimizer, &job, cache);
    ZEUS_RETURN_IF_ERROR(txn.UpdateJobState(job));
    TrialRecord record;
    record.job_id = job_id;
    record.trial_number = trial.trial_number;
    record.batch_size = trial.batch_size;
    record.kind = std::string(TrialKindName(trial.kind));
    record.status = TrialStatus::kDispatched;
    record.start_time_s = record.updated_at_s = clock_->WallTimeS();
    ZEUS_RETURN_IF_ERROR(txn.InsertTrial(record));
    id = TrialId{job_id, trial.batch_size, trial.trial_number};
    return Status::Ok();
  });
  if (!txn_status.ok()) return txn_status;
  return id;
}

StatusOr<ReportResponse> BatchSizeService::Report(const TrainingResult& result) {
  ZEUS_RETURN_IF_ERROR(server_internal::ValidateTrainingResult(result));
  OptimizerCache* cache = cache_.get();
  ReportResponse response;
  Status txn_status = Write([&](StoreTransaction& txn) -> Status {
    ZEUS_ASSIGN_OR_RETURN(JobRecord job, LockJob(txn, result.trial.job_id));
    ZEUS_ASSIGN_OR_RETURN(TrialRecord trial, FindTrial(txn, result.trial));
    ZEUS_ASSIGN_OR_RETURN(BatchSizeJobSpec spec, SpecOf(job, cache));
    // A run stops at max_epochs: a later epoch cannot have happened.
    if (result.current_epoch > spec.max_epochs) {
      return InvalidArgumentError(fmt::format(
          "field 'current_epoch': {} is past max_epochs {} of job \"{}\" (a run stops there); "
          "nothing recorded",
          result.current_epoch, spec.max_epochs, job.job_id));
    }
    if (trial.status != TrialStatus::kDispatched) {
      // The original's answer to a trial reported again (ranks > 0 report
      // after rank 0): stop, with the trial's outcome.
      response = ReportResponse{
          true, trial.converged,
          fmt::format("Result for this trial({}) is already reported.", trial.trial_number)};
      return Status::Ok();
    }
    // Reports are monotonic: a retry or a late report of an epoch already
    // reported changes nothing and answers the trial's current state.
    if (trial.current_epoch && result.current_epoch <= *trial.current_epoch) {
      const bool same = result.current_epoch == *trial.current_epoch &&
                        trial.time_s == result.time_s && trial.energy_j == result.energy_j &&
                        trial.metric == result.metric;
      response = ReportResponse{
          false, false,
          same ? kKeepTraining
               : fmt::format("Report for epoch {} ignored: trial {} already reported epoch {}; {}",
                             result.current_epoch, trial.trial_number, *trial.current_epoch,
                             kKeepTraining)};
      return Status::Ok();
    }
    ZEUS_ASSIGN_OR_RETURN(BatchSizeOptimizer optimizer, OptimizerOf(job, cache));
    const double cost = ZeusCost(result.energy_j, result.time_s, spec.eta_knob, spec.max_power_w);
    const bool reached = spec.higher_is_better_metric ? result.metric >= spec.target_metric
                                                      : result.metric <= spec.target_metric;
    Observation observation;
    observation.cost = cost;
    observation.progress = spec.higher_is_better_metric ? result.metric : -result.metric;
    observation.reached_target = reached;
    ZEUS_ASSIGN_OR_RETURN(const Verdict verdict, JudgeTrial(job, trial, observation, optimizer));
    trial.updated_at_s = clock_->WallTimeS();
    trial.time_s = result.time_s;
    trial.energy_j = result.energy_j;
    trial.metric = result.metric;
    trial.current_epoch = result.current_epoch;
    if (!verdict.stops() && !reached && result.current_epoch < spec.max_epochs) {
      response = ReportResponse{false, false, ContinueMessage(verdict, spec, trial, optimizer)};
      if (verdict.state_changed) {
        StoreOptimizer(optimizer, &job, cache);
        ZEUS_RETURN_IF_ERROR(txn.UpdateJobState(job));
      }
      return txn.UpdateTrial(trial);
    }
    // A run that converged cost something: a zero cost (no time and no
    // energy for what the cost weighs) would make its batch size look free
    // to the bandit forever. A run that ended without the target is a
    // failure whatever it cost (a speculative run stopped at once may cost 0).
    if (reached && !(cost > 0.0)) {
      return InvalidArgumentError(fmt::format(
          "fields 'time' and 'energy': a report that converges trial {} of job \"{}\" (epoch {}) "
          "must report the run's time and energy, got time {} s and energy {} J (cost 0 with "
          "eta_knob {}); nothing recorded",
          trial.trial_number, job.job_id, result.current_epoch, result.time_s, result.energy_j,
          spec.eta_knob));
    }
    // The run is over: feed the bandit and the job's lowest cost.
    if (verdict.stops()) {
      response.message = StopMessage(verdict, spec, trial, cost, optimizer);
    } else if (reached) {
      response.message = "Train succeeded";
    } else {
      response.message =
          fmt::format("Train failed to converge within max_epoch({})", spec.max_epochs);
    }
    response.stop_train = true;
    response.converged = reached && verdict.action != Verdict::Action::kStop;
    return FinishTrial(txn, job, trial, optimizer, cost, response, cache);
  });
  if (!txn_status.ok()) return txn_status;
  return response;
}

StatusOr<ReportResponse> BatchSizeService::CheckIn(const ProgressCheckIn& check_in) {
  ZEUS_RETURN_IF_ERROR(server_internal::ValidateProgressCheckIn(check_in));
  OptimizerCache* cache = cache_.get();
  ReportResponse response;
  Status txn_status = Write([&](StoreTransaction& txn) -> Status {
    ZEUS_ASSIGN_OR_RETURN(JobRecord job, LockJob(txn, check_in.trial.job_id));
    ZEUS_ASSIGN_OR_RETURN(TrialRecord trial, FindTrial(txn, check_in.trial));
    ZEUS_ASSIGN_OR_RETURN(BatchSizeJobSpec spec, SpecOf(job, cache));
    if (trial.status != TrialStatus::kDispatched) {
      response = ReportResponse{true, trial.converged, trial.message};
      return Status::Ok();
    }
    // A check-in overtaken by a report of more spend changes nothing.
    if (check_in.time_s < trial.time_s.value_or(0.0) ||
        check_in.energy_j < trial.energy_j.value_or(0.0)) {
      response = ReportResponse{
          false, false,
          fmt::format("Check-in ignored: trial {} already reported time {} s and energy {} J "
                      "(epoch {}); {}",
                      trial.trial_number, trial.time_s.value_or(0.0), trial.energy_j.value_or(0.0),
                      trial.current_epoch.value_or(0), kKeepTraining)};
      return Status::Ok();
    }
    ZEUS_ASSIGN_OR_RETURN(BatchSizeOptimizer optimizer, OptimizerOf(job, cache));
    const double cost =
        ZeusCost(check_in.energy_j, check_in.time_s, spec.eta_knob, spec.max_power_w);
    Observation observation;
    observation.cost = cost;
    observation.check_in = true;
    ZEUS_ASSIGN_OR_RETURN(const Verdict verdict, JudgeTrial(job, trial, observation, optimizer));
    if (!verdict.stops()) {
      response = ReportResponse{false, false, ContinueMessage(verdict, spec, trial, optimizer)};
      // Only a near miss's or a finishing probe's verdict is recorded: the
      // trial's progress and silence are its reports'.
      if (!verdict.state_changed) return Status::Ok();
      StoreOptimizer(optimizer, &job, cache);
      return txn.UpdateJobState(job);
    }
    // Stopped mid-epoch: a failure at what it has spent.
    response = ReportResponse{true, false, StopMessage(verdict, spec, trial, cost, optimizer)};
    trial.updated_at_s = clock_->WallTimeS();
    trial.time_s = check_in.time_s;
    trial.energy_j = check_in.energy_j;
    return FinishTrial(txn, job, trial, optimizer, cost, response, cache);
  });
  if (!txn_status.ok()) return txn_status;
  return response;
}

StatusOr<TrialRecord> BatchSizeService::EndTrial(const TrialId& id) {
  ZEUS_RETURN_IF_ERROR(ValidateIdentifier("job_id", id.job_id));
  OptimizerCache* cache = cache_.get();
  TrialRecord out;
  Status txn_status = Write([&](StoreTransaction& txn) -> Status {
    ZEUS_ASSIGN_OR_RETURN(JobRecord job, LockJob(txn, id.job_id));
    ZEUS_ASSIGN_OR_RETURN(out, FindTrial(txn, id));
    if (out.status != TrialStatus::kDispatched) return Status::Ok();
    return FailTrial(txn, job, out, clock_->WallTimeS(),
                     "Trial ended by the client before its final report", cache);
  });
  if (!txn_status.ok()) return txn_status;
  return out;
}

Status BatchSizeService::DeleteJob(const std::string& job_id) {
  ZEUS_RETURN_IF_ERROR(ValidateIdentifier("job_id", job_id));
  return Write([&](StoreTransaction& txn) -> Status {
    ZEUS_RETURN_IF_ERROR(LockJob(txn, job_id).status());
    ZEUS_ASSIGN_OR_RETURN(bool deleted, txn.DeleteJob(job_id));
    if (!deleted) return JobNotFound(job_id);
    return Status::Ok();
  });
}

double BatchSizeService::SilenceLimitS(const TrialRecord& trial,
                                       std::optional<double> job_pace_s) const {
  std::optional<double> pace_s = EpochPaceS(trial);
  if (!pace_s) pace_s = job_pace_s;
  if (!pace_s || options_.silent_epochs <= 0) return options_.silent_trial_timeout_s;
  const double adaptive_s =
      std::max(options_.min_silent_trial_timeout_s, options_.silent_epochs * *pace_s);
  return std::min(options_.silent_trial_timeout_s, adaptive_s);
}

StatusOr<int> BatchSizeService::FailSilentTrials() {
  OptimizerCache* cache = cache_.get();
  const double now_s = clock_->WallTimeS();
  const double floor_s =
      std::min(options_.silent_trial_timeout_s, options_.min_silent_trial_timeout_s);
  // Candidates silent for longer than the shortest limit, with their limit.
  std::vector<std::pair<TrialRecord, double>> silent;
  Status txn_status =
      store_->RunTransaction(TransactionMode::kRead, [&](StoreTransaction& txn) -> Status {
        ZEUS_ASSIGN_OR_RETURN(std::vector<TrialRecord> candidates,
                              txn.ListSilentTrials(now_s - floor_s));
        // The slowest pace of each job's reported trials, for trials that
        // have not reported yet.
        std::map<std::string, std::optional<double>> job_pace_s;
        for (TrialRecord& trial : candidates) {
          auto it = job_pace_s.find(trial.job_id);
          if (it == job_pace_s.end()) {
            ZEUS_ASSIGN_OR_RETURN(std::vector<TrialRecord> trials, txn.ListTrials(trial.job_id));
            std::optional<double> slowest;
            for (const TrialRecord& t : trials) {
              std::optional<double> pace = EpochPaceS(t);
              if (pace && (!slowest || *pace > *slowest)) slowest = pace;
            }
            it = job_pace_s.emplace(trial.job_id, slowest).first;
          }
          const double limit_s = SilenceLimitS(trial, it->second);
          if (now_s - trial.updated_at_s > limit_s) silent.emplace_back(std::move(trial), limit_s);
        }
        return Status::Ok();
      });
  if (!txn_status.ok()) return txn_status;
  int failed = 0;
  for (const auto& [candidate, limit_s] : silent) {
    bool failed_here = false;
    Status status = Write([&, &candidate = candidate, limit_s = limit_s](StoreTransaction& txn) {
      ZEUS_ASSIGN_OR_RETURN(std::optional<JobRecord> job, txn.GetJob(candidate.job_id));
      if (!job) return Status::Ok();  // Deleted meanwhile.
      ZEUS_ASSIGN_OR_RETURN(std::optional<TrialRecord> trial,
                            txn.GetTrial(candidate.job_id, candidate.trial_number));
      // Re-checked under the job's lock: a report may have arrived meanwhile.
      if (!trial || trial->status != TrialStatus::kDispatched ||
          trial->updated_at_s != candidate.updated_at_s) {
        return Status::Ok();
      }
      failed_here = true;
      return FailTrial(
          txn, *job, *trial, now_s,
          fmt::format("Trial failed by the server: no report for more than {:.0f} s", limit_s),
          cache);
    });
    ZEUS_RETURN_IF_ERROR(status);
    if (failed_here) ++failed;
  }
  return failed;
}

}  // namespace zeus
