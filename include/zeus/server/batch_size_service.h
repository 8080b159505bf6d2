// The job logic of the batch-size optimizer server, below HTTP and above the
// store: validation, trial hand-out, early stopping and the bandit's updates.
//
// Each call that changes a job runs in one write transaction that locks the
// job row, loads the job's BatchSizeOptimizer state, applies the request and
// stores the new state with the trial rows. So several threads or server
// processes sharing one database see a job's requests one at a time, and a
// process killed at any point leaves either the whole request or none of it.
//
// Identifiers (job ids) are printable text of at most 256 bytes and every
// number is range-checked before it reaches the optimizer
// (zeus/protocol/limits.h: job specs by ParseJobSpec, reports by
// src/server/input_limits.h). A job's spec is parsed from its stored text
// once per process and kept beside its decoded optimizer state, both keyed
// by the exact stored text (src/server/optimizer_cache.h).
//
// Errors: kInvalidArgument (bad request, names the field), kNotFound
// (unknown job or trial), kAlreadyExists (conflicting job spec),
// kUnavailable (database busy or unreachable), kInternal.
//
// Thread-safety: every method may be called concurrently.

#ifndef ZEUS_SERVER_BATCH_SIZE_SERVICE_H_
#define ZEUS_SERVER_BATCH_SIZE_SERVICE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/device/clock.h"
#include "zeus/protocol/job_spec.h"
#include "zeus/protocol/protocol.h"
#include "zeus/server/store.h"
#include "zeus/status.h"

namespace zeus {

namespace server_internal {
class OptimizerCache;
}  // namespace server_internal

// When FailSilentTrials() gives up on a dispatched trial whose client went
// away without PATCH /trials (killed, interrupted, lost its network). A trial
// is failed once silent (no report since its last one, or since it was handed
// out) for longer than
//   min(silent_trial_timeout_s,
//       max(min_silent_trial_timeout_s, silent_epochs x pace)),
// where pace is the trial's seconds per epoch (the slower of its reported
// time and the wall time since dispatch, per epoch), or, before its first
// report, the slowest pace of the job's trials that reported. Without any
// pace (a new job's first trial) the limit is silent_trial_timeout_s. So a
// job whose epochs take minutes gets a lost exploration step back within the
// floor, not after a day. A failed trial gives the bandit no observation; its
// exploration step is handed out again. A report that arrives after that is
// answered with the stored failure (stop_train), so the limits err long.
// One job as /metrics shows it.
struct JobSummary {
  std::string job_id;
  // The batch size of the job's latest trial (the one it trains with now, or
  // last did); nullopt before its first trial.
  std::optional<int64_t> current_batch_size;
  // The bandit's current best batch size.
  int64_t best_batch_size = 0;
  // The lowest cost of a finished trial; nullopt before the first.
  std::optional<double> min_cost;
  // Trials by status: dispatched, succeeded, failed.
  int64_t dispatched_trials = 0;
  int64_t succeeded_trials = 0;
  int64_t failed_trials = 0;
};

struct BatchSizeServiceOptions {
  // Upper limit of a trial's silence. Must be > 0. Default: one day.
  double silent_trial_timeout_s = 24 * 3600.0;
  // Lower limit of a trial's silence once a pace is known. >= 0.
  // Default: 30 minutes.
  double min_silent_trial_timeout_s = 1800.0;
  // Epochs a trial may be silent for; 0 disables pacing (every trial gets
  // silent_trial_timeout_s). >= 0. Default: 4.
  double silent_epochs = 4.0;
  // Trials of one job dispatched and not yet ended (in flight) at most; one
  // more GET /jobs/batch_size is kFailedPrecondition (409) naming the limit.
  // Bounds the job's stored state and its /jobs/arms answer, which list the
  // trials in flight. >= 1. Default: 1024.
  int64_t max_trials_in_flight = 1024;
};

class BatchSizeService {
 public:
  // `store` and `clock` must outlive the service. The clock's WallTimeS()
  // timestamps trials (shared by every server process using the store).
  BatchSizeService(Store* store, Clock* clock, BatchSizeServiceOptions options = {});
  ~BatchSizeService();
  BatchSizeService(const BatchSizeService&) = delete;
  BatchSizeService& operator=(const BatchSizeService&) = delete;

  struct Registration {
    // True when the job was created, false when an identical job existed.
    bool created = false;
    // The spec with its job_id filled in.
    BatchSizeJobSpec job;
  };
  // Registers `spec`, checked as ParseJobSpec checks a registration
  // (ValidateJobSpec: the same messages). An empty job_id gets
  // `<job_id_prefix>-<8 hex chars>`; a null mab_seed gets a random seed
  // (kept in the optimizer state). kAlreadyExists when the job id exists
  // with a different spec.
  StatusOr<Registration> RegisterJob(BatchSizeJobSpec spec);

  // Hands out the next trial of the job (BatchSizeOptimizer::NextTrial):
  // `attempt` is which try of its submission it is (1: the first; a client
  // retrying a stopped submission passes more, and from the third on gets a
  // run that may finish).
  StatusOr<TrialId> NextBatchSize(const std::string& job_id, int attempt = 1);

  // Decides whether the trial stops: when the metric reaches the target,
  // when the cost passes the optimizer's EarlyStopThreshold(), or at
  // max_epochs. The final report feeds the bandit and the job's lowest cost.
  // Under the frugal and swarm policies each report is also a point of the
  // trial's learning curve (kept in the job state; a point whose cost is
  // below an earlier one is left out), and the bound is
  // EarlyStopThreshold(trial, best progress so far): a run the optimizer
  // holds to the curve of the run of the lowest cost stops before its whole
  // bound when it learns slower.
  // Every number must lie in its physical range (zeus/protocol/limits.h;
  // kInvalidArgument naming the field and the range otherwise). Reports are
  // monotonic per trial: one for an epoch already reported (a retry, or a
  // late report of an older epoch) changes nothing and answers the current
  // state (keep training). A report for a trial that already ended changes
  // nothing and answers as the original server: stop_train, the trial's
  // converged, message "Result for this trial(N) is already reported.".
  StatusOr<ReportResponse> Report(const TrainingResult& result);

  // A check-in during an epoch (POST /report/progress): judges the trial's
  // spend so far against its whole bound (EarlyStopThreshold(trial)) and
  // swarm's restart threshold, as Report judges an epoch's, so that a run
  // stops as soon as it passes them, or a bound that tightened since its
  // last report, instead of at the end of an epoch that may last hours. The
  // learning curve is not judged: it judges progress, which only reports
  // tell. A near miss past its whole bound runs on, as at a report. A
  // stop is the trial's final, failed result; a check-in that does not stop
  // the run records nothing (a near miss's verdict aside). One with less
  // time or energy than the trial's last report changes nothing and says
  // so; one for a trial that ended answers its stored outcome.
  // kInvalidArgument for numbers out of range, kNotFound as Report.
  StatusOr<ReportResponse> CheckIn(const ProgressCheckIn& check_in);

  // Marks a dispatched trial as failed (its client died); the bandit gets no
  // observation. A trial that already ended is returned unchanged.
  StatusOr<TrialRecord> EndTrial(const TrialId& trial);

  // Deletes the job and its trials.
  Status DeleteJob(const std::string& job_id);

  // Fails every dispatched trial silent for longer than its limit (see
  // BatchSizeServiceOptions); returns how many it failed.
  StatusOr<int> FailSilentTrials();

  // Observability (JSON views).
  StatusOr<nlohmann::json> GetJob(const std::string& job_id);
  // One page of jobs by id: {"jobs": [at most `limit` views of jobs whose id
  // sorts after `after_job_id`], "next_after": the last id of this page when
  // more follow, else null}. kInvalidArgument unless 1 <= limit <= 1000
  // (src/server/input_limits.h).
  StatusOr<nlohmann::json> ListJobs(const std::string& after_job_id = "", int64_t limit = 100);
  // One page of the job's trials by number: {"job_id", "trials": [at most
  // `limit` trials numbered above `after_trial_number`], "next_after": the
  // last trial number of this page when more follow, else null}.
  // kInvalidArgument unless 1 <= limit <= 1000.
  StatusOr<nlohmann::json> ListTrials(const std::string& job_id, int64_t after_trial_number = 0,
                                      int64_t limit = 1000);
  // Exploring flag, lowest cost, best batch size, in-flight trials and the
  // bandit's arm states.
  StatusOr<nlohmann::json> ArmStates(const std::string& job_id);

  // Every job with its trial counts, from one read transaction (reads every
  // trial row: meant for a scrape every few seconds, not per request).
  StatusOr<std::vector<JobSummary>> Summary();

  Store* store() const { return store_; }

 private:
  // How long `trial` may stay silent; `job_pace_s` is the slowest pace of
  // its job's reported trials.
  double SilenceLimitS(const TrialRecord& trial, std::optional<double> job_pace_s) const;
  // Runs a write transaction, retrying when the database aborts it for a
  // serialisation conflict.
  Status Write(const std::function<Status(StoreTransaction&)>& body);

  Store* store_;
  Clock* clock_;
  BatchSizeServiceOptions options_;
  // Decoded optimizer states by job (valid only while the stored text
  // matches, so correct across processes).
  std::unique_ptr<server_internal::OptimizerCache> cache_;
};

// JSON view of a trial row (all fields; nulls for absent values).
nlohmann::json TrialRecordToJson(const TrialRecord& trial);

}  // namespace zeus

#endif  // ZEUS_SERVER_BATCH_SIZE_SERVICE_H_
