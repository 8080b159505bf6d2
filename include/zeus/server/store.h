// Durable state of the batch-size optimizer server: one row per job (its
// spec, the optimizer's JSON state, the next trial number) and one row per
// trial (for observability and idempotent reports).
//
// Two implementations share one versioned schema, created and migrated by
// OpenStore(): SQLite (WAL, busy timeout; the default) and PostgreSQL (for
// several server processes). A job's requests are serialised in the
// database: every write transaction locks the job row (PostgreSQL:
// `SELECT ... FOR UPDATE`; SQLite: `BEGIN IMMEDIATE`), so several processes
// sharing one database stay correct without in-process locks.
//
// Thread-safety: a Store may be used from many threads at once; each
// StoreTransaction belongs to the thread running it.

#ifndef ZEUS_SERVER_STORE_H_
#define ZEUS_SERVER_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zeus/status.h"

namespace zeus {

// The version of the schema this build creates and migrates to.
// 1: jobs and trials. 2: the jobs' min_cost column is gone (the lowest cost
// lives in the optimizer state only).
inline constexpr int kStoreSchemaVersion = 2;

struct JobRecord {
  std::string job_id;
  // JobSpecToJson() of the registered spec, serialised.
  std::string spec_json;
  // BatchSizeOptimizer::ToJson(), serialised (the job's lowest cost
  // included).
  std::string state_json;
  // Wall-clock seconds since the Unix epoch.
  double created_at_s = 0.0;
};

enum class TrialStatus { kDispatched, kSucceeded, kFailed };
// "dispatched", "succeeded" or "failed".
std::string_view TrialStatusName(TrialStatus status);

struct TrialRecord {
  std::string job_id;
  int64_t trial_number = 0;
  int64_t batch_size = 0;
  // TrialKindName() of the optimizer's trial kind.
  std::string kind;
  TrialStatus status = TrialStatus::kDispatched;
  // Wall-clock seconds since the Unix epoch: when handed out, and when last
  // reported on (or ended).
  double start_time_s = 0.0;
  double updated_at_s = 0.0;
  // The latest report: cumulative time (s) and energy (J) since the run
  // began, validation metric, epoch. nullopt before the first report.
  std::optional<double> time_s;
  std::optional<double> energy_j;
  std::optional<double> metric;
  std::optional<int64_t> current_epoch;
  // Final outcome, set when status != kDispatched.
  std::optional<double> cost;
  bool converged = false;
  std::string message;
};

// Operations inside one transaction. Every call returns kUnavailable when the
// database cannot be reached or stays busy, kInternal for other database
// errors.
class StoreTransaction {
 public:
  virtual ~StoreTransaction() = default;

  // The job, or nullopt. In a write transaction the job row stays locked
  // until the transaction ends (the per-job serialisation point).
  virtual StatusOr<std::optional<JobRecord>> GetJob(const std::string& job_id) = 0;
  // Inserts `job` unless its id exists; returns false when it existed.
  virtual StatusOr<bool> InsertJob(const JobRecord& job) = 0;
  // Updates state_json. kNotFound when the job is gone.
  virtual Status UpdateJobState(const JobRecord& job) = 0;
  // Deletes the job and its trials; false when it did not exist.
  virtual StatusOr<bool> DeleteJob(const std::string& job_id) = 0;
  virtual StatusOr<std::vector<JobRecord>> ListJobs() = 0;
  // At most `limit` jobs whose id sorts after `after_job_id` (all when it is
  // empty), by job id: one page of a listing. REQUIRES: limit >= 1.
  virtual StatusOr<std::vector<JobRecord>> ListJobsAfter(const std::string& after_job_id,
                                                         int64_t limit) = 0;

  virtual StatusOr<std::optional<TrialRecord>> GetTrial(const std::string& job_id,
                                                        int64_t trial_number) = 0;
  // kAlreadyExists when (job_id, trial_number) exists.
  virtual Status InsertTrial(const TrialRecord& trial) = 0;
  // Overwrites every mutable field. kNotFound when absent.
  virtual Status UpdateTrial(const TrialRecord& trial) = 0;
  // Trials of one job by trial number.
  virtual StatusOr<std::vector<TrialRecord>> ListTrials(const std::string& job_id) = 0;
  // At most `limit` trials of one job numbered above `after_trial_number`,
  // by trial number: one page of a listing. REQUIRES: limit >= 1.
  virtual StatusOr<std::vector<TrialRecord>> ListTrialsAfter(const std::string& job_id,
                                                             int64_t after_trial_number,
                                                             int64_t limit) = 0;
  // Dispatched trials of any job last updated before `updated_before_s`.
  virtual StatusOr<std::vector<TrialRecord>> ListSilentTrials(double updated_before_s) = 0;
};

enum class TransactionMode {
  // Reads only; sees a consistent snapshot and locks nothing.
  kRead,
  // May write; GetJob locks the job row.
  kWrite,
};

class Store {
 public:
  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  virtual ~Store() = default;

  // Runs `body` in one transaction: commits when it returns OK, rolls back
  // otherwise (and returns its status). A commit failure is returned too.
  virtual Status RunTransaction(TransactionMode mode,
                                const std::function<Status(StoreTransaction&)>& body) = 0;

  // "sqlite" or "postgresql".
  virtual std::string_view backend() const = 0;
  // The schema version found in the database (after migration).
  virtual StatusOr<int> SchemaVersion() = 0;
  // Whether the store can take writes. SQLite: kUnavailable naming the path
  // once the database file this store opened has been deleted or replaced
  // by another file (device and inode checked here and before every write
  // transaction); from then on every write transaction fails with that
  // error, so nothing is written into a deleted file. Latched: restart the
  // server once the file is back. Default: Ok.
  virtual Status CheckHealth() { return Status::Ok(); }
};

struct StoreOptions {
  // Database connections this store keeps open at most; a transaction waits
  // for a free one. PostgreSQL allows 100 connections per cluster by default,
  // shared by every server process. Must be >= 1. Default: 32.
  int max_connections = 32;
};

// Opens the store named by `url`, creating or migrating the schema:
//   "sqlite:PATH" (PATH created if absent; ":memory:" is refused because
//                  every connection would see its own database),
//   "postgresql://..." or "postgres://..." (a libpq connection URI).
// kInvalidArgument for another scheme; kFailedPrecondition when the database
// holds a newer schema than kStoreSchemaVersion; kUnavailable when it cannot
// be reached.
StatusOr<std::unique_ptr<Store>> OpenStore(const std::string& url,
                                           const StoreOptions& options = {});

}  // namespace zeus

#endif  // ZEUS_SERVER_STORE_H_
