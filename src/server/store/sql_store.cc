// The Store over SqlConnection: one schema and one set of statements for
// SQLite and PostgreSQL, a connection pool, and schema migration.

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <sys/stat.h>

#include "zeus/server/store.h"

#include "src/server/store/sql_connection.h"

namespace zeus {

std::string_view TrialStatusName(TrialStatus status) {
  switch (status) {
    case TrialStatus::kDispatched:
      return "dispatched";
    case TrialStatus::kSucceeded:
      return "succeeded";
    case TrialStatus::kFailed:
      return "failed";
  }
  return "unknown";
}

namespace server_internal {
namespace {

// Migrations[v] takes the schema from version v to v + 1. Portable SQL
// (SQLite and PostgreSQL): BIGINT, DOUBLE PRECISION, TEXT.
const std::vector<std::string>& Migrations() {
  static const std::vector<std::string> kMigrations = {
      // 0 -> 1: jobs and trials.
      "CREATE TABLE zeus_jobs ("
      "  job_id TEXT PRIMARY KEY,"
      "  spec TEXT NOT NULL,"
      "  state TEXT NOT NULL,"
      "  min_cost DOUBLE PRECISION,"
      "  created_at_s DOUBLE PRECISION NOT NULL);"
      "CREATE TABLE zeus_trials ("
      "  job_id TEXT NOT NULL,"
      "  trial_number BIGINT NOT NULL,"
      "  batch_size BIGINT NOT NULL,"
      "  kind TEXT NOT NULL,"
      "  status TEXT NOT NULL,"
      "  start_time_s DOUBLE PRECISION NOT NULL,"
      "  updated_at_s DOUBLE PRECISION NOT NULL,"
      "  time_s DOUBLE PRECISION,"
      "  energy_j DOUBLE PRECISION,"
      "  metric DOUBLE PRECISION,"
      "  current_epoch BIGINT,"
      "  cost DOUBLE PRECISION,"
      "  converged BIGINT NOT NULL,"
      "  message TEXT NOT NULL,"
      "  PRIMARY KEY (job_id, trial_number));"
      "CREATE INDEX zeus_trials_silent ON zeus_trials (status, updated_at_s);",
      // 1 -> 2: the lowest cost is kept once, in the optimizer state.
      "ALTER TABLE zeus_jobs DROP COLUMN min_cost;",
  };
  return kMigrations;
}

constexpr char kJobColumns[] = "job_id, spec, state, created_at_s";
constexpr char kTrialColumns[] =
    "job_id, trial_number, batch_size, kind, status, start_time_s, updated_at_s, time_s, "
    "energy_j, metric, current_epoch, cost, converged, message";

StatusOr<JobRecord> JobFromRow(const SqlRow& row) {
  JobRecord job;
  ZEUS_ASSIGN_OR_RETURN(job.job_id, AsString(row[0]));
  ZEUS_ASSIGN_OR_RETURN(job.spec_json, AsString(row[1]));
  ZEUS_ASSIGN_OR_RETURN(job.state_json, AsString(row[2]));
  ZEUS_ASSIGN_OR_RETURN(job.created_at_s, AsDouble(row[3]));
  return job;
}

StatusOr<TrialStatus> ParseTrialStatus(const std::string& name) {
  for (TrialStatus s : {TrialStatus::kDispatched, TrialStatus::kSucceeded, TrialStatus::kFailed}) {
    if (name == TrialStatusName(s)) return s;
  }
  return InternalError("database: unknown trial status \"" + name + "\"");
}

StatusOr<TrialRecord> TrialFromRow(const SqlRow& row) {
  TrialRecord t;
  ZEUS_ASSIGN_OR_RETURN(t.job_id, AsString(row[0]));
  ZEUS_ASSIGN_OR_RETURN(t.trial_number, AsInt(row[1]));
  ZEUS_ASSIGN_OR_RETURN(t.batch_size, AsInt(row[2]));
  ZEUS_ASSIGN_OR_RETURN(t.kind, AsString(row[3]));
  ZEUS_ASSIGN_OR_RETURN(std::string status, AsString(row[4]));
  ZEUS_ASSIGN_OR_RETURN(t.status, ParseTrialStatus(status));
  ZEUS_ASSIGN_OR_RETURN(t.start_time_s, AsDouble(row[5]));
  ZEUS_ASSIGN_OR_RETURN(t.updated_at_s, AsDouble(row[6]));
  ZEUS_ASSIGN_OR_RETURN(t.time_s, AsOptionalDouble(row[7]));
  ZEUS_ASSIGN_OR_RETURN(t.energy_j, AsOptionalDouble(row[8]));
  ZEUS_ASSIGN_OR_RETURN(t.metric, AsOptionalDouble(row[9]));
  ZEUS_ASSIGN_OR_RETURN(t.current_epoch, AsOptionalInt(row[10]));
  ZEUS_ASSIGN_OR_RETURN(t.cost, AsOptionalDouble(row[11]));
  ZEUS_ASSIGN_OR_RETURN(int64_t converged, AsInt(row[12]));
  t.converged = converged != 0;
  ZEUS_ASSIGN_OR_RETURN(t.message, AsString(row[13]));
  return t;
}

StatusOr<std::vector<TrialRecord>> TrialsFromRows(const std::vector<SqlRow>& rows) {
  std::vector<TrialRecord> trials;
  trials.reserve(rows.size());
  for (const SqlRow& row : rows) {
    ZEUS_ASSIGN_OR_RETURN(TrialRecord t, TrialFromRow(row));
    trials.push_back(std::move(t));
  }
  return trials;
}

class SqlTransaction final : public StoreTransaction {
 public:
  SqlTransaction(SqlConnection* connection, TransactionMode mode)
      : c_(connection), lock_rows_(mode == TransactionMode::kWrite && c_->HasRowLocks()) {}

  StatusOr<std::optional<JobRecord>> GetJob(const std::string& job_id) override {
    std::string sql = std::string("SELECT ") + kJobColumns + " FROM zeus_jobs WHERE job_id = ?";
    if (lock_rows_) sql += " FOR UPDATE";
    ZEUS_ASSIGN_OR_RETURN(std::vector<SqlRow> rows, c_->Query(sql, {job_id}));
    if (rows.empty()) return std::optional<JobRecord>();
    ZEUS_ASSIGN_OR_RETURN(JobRecord job, JobFromRow(rows[0]));
    return std::optional<JobRecord>(std::move(job));
  }

  StatusOr<bool> InsertJob(const JobRecord& job) override {
    ZEUS_ASSIGN_OR_RETURN(
        std::vector<SqlRow> rows,
        c_->Query(std::string("INSERT INTO zeus_jobs (") + kJobColumns +
                      ") VALUES (?, ?, ?, ?) ON CONFLICT (job_id) DO NOTHING RETURNING job_id",
                  {job.job_id, job.spec_json, job.state_json, job.created_at_s}));
    return !rows.empty();
  }

  Status UpdateJobState(const JobRecord& job) override {
    ZEUS_ASSIGN_OR_RETURN(
        std::vector<SqlRow> rows,
        c_->Query("UPDATE zeus_jobs SET state = ? WHERE job_id = ? RETURNING job_id",
                  {job.state_json, job.job_id}));
    if (rows.empty()) return NotFoundError("job \"" + job.job_id + "\": not found");
    return Status::Ok();
  }

  StatusOr<bool> DeleteJob(const std::string& job_id) override {
    ZEUS_RETURN_IF_ERROR(c_->Query("DELETE FROM zeus_trials WHERE job_id = ?", {job_id}).status());
    ZEUS_ASSIGN_OR_RETURN(
        std::vector<SqlRow> rows,
        c_->Query("DELETE FROM zeus_jobs WHERE job_id = ? RETURNING job_id", {job_id}));
    return !rows.empty();
  }

  StatusOr<std::vector<JobRecord>> ListJobs() override {
    ZEUS_ASSIGN_OR_RETURN(
        std::vector<SqlRow> rows,
        c_->Query(std::string("SELECT ") + kJobColumns + " FROM zeus_jobs ORDER BY job_id", {}));
    std::vector<JobRecord> jobs;
    for (const SqlRow& row : rows) {
      ZEUS_ASSIGN_OR_RETURN(JobRecord job, JobFromRow(row));
      jobs.push_back(std::move(job));
    }
    return jobs;
  }

  StatusOr<std::vector<JobRecord>> ListJobsAfter(const std::string& after_job_id,
                                                 int64_t limit) override {
    ZEUS_ASSIGN_OR_RETURN(std::vector<SqlRow> rows,
                          c_->Query(std::string("SELECT ") + kJobColumns +
                                        " FROM zeus_jobs WHERE job_id > ? ORDER BY job_id LIMIT ?",
                                    {after_job_id, limit}));
    std::vector<JobRecord> jobs;
    jobs.reserve(rows.size());
    for (const SqlRow& row : rows) {
      ZEUS_ASSIGN_OR_RETURN(JobRecord job, JobFromRow(row));
      jobs.push_back(std::move(job));
    }
    return jobs;
  }

  StatusOr<std::optional<TrialRecord>> GetTrial(const std::string& job_id,
                                                int64_t trial_number) override {
    ZEUS_ASSIGN_OR_RETURN(std::vector<SqlRow> rows,
                          c_->Query(std::string("SELECT ") + kTrialColumns +
                                        " FROM zeus_trials WHERE job_id = ? AND trial_number = ?",
                                    {job_id, trial_number}));
    if (rows.empty()) return std::optional<TrialRecord>();
    ZEUS_ASSIGN_OR_RETURN(TrialRecord t, TrialFromRow(rows[0]));
    return std::optional<TrialRecord>(std::move(t));
  }

  Status InsertTrial(const TrialRecord& t) override {
    return c_
        ->Query(
            std::string("INSERT INTO zeus_trials (") + kTrialColumns +
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            {t.job_id, t.trial_number, t.batch_size, t.kind, std::string(TrialStatusName(t.status)),
             t.start_time_s, t.updated_at_s, FromOptional(t.time_s), FromOptional(t.energy_j),
             FromOptional(t.metric), FromOptional(t.current_epoch), FromOptional(t.cost),
             static_cast<int64_t>(t.converged), t.message})
        .status();
  }

  Status UpdateTrial(const TrialRecord& t) override {
    ZEUS_ASSIGN_OR_RETURN(
        std::vector<SqlRow> rows,
        c_->Query("UPDATE zeus_trials SET status = ?, updated_at_s = ?, time_s = ?, energy_j = ?, "
                  "metric = ?, current_epoch = ?, cost = ?, converged = ?, message = ? "
                  "WHERE job_id = ? AND trial_number = ? RETURNING trial_number",
                  {std::string(TrialStatusName(t.status)), t.updated_at_s, FromOptional(t.time_s),
                   FromOptional(t.energy_j), FromOptional(t.metric), FromOptional(t.current_epoch),
                   FromOptional(t.cost), static_cast<int64_t>(t.converged), t.message, t.job_id,
                   t.trial_number}));
    if (rows.empty()) {
      return NotFoundError("job \"" + t.job_id + "\": trial " + std::to_string(t.trial_number) +
                           " not found");
    }
    return Status::Ok();
  }

  StatusOr<std::vector<TrialRecord>> ListTrialsAfter(const std::string& job_id,
                                                     int64_t after_trial_number,
                                                     int64_t limit) override {
    ZEUS_ASSIGN_OR_RETURN(std::vector<SqlRow> rows,
                          c_->Query(std::string("SELECT ") + kTrialColumns +
                                        " FROM zeus_trials WHERE job_id = ? AND trial_number > ? "
                                        "ORDER BY trial_number LIMIT ?",
                                    {job_id, after_trial_number, limit}));
    return TrialsFromRows(rows);
  }

  StatusOr<std::vector<TrialRecord>> ListTrials(const std::string& job_id) override {
    ZEUS_ASSIGN_OR_RETURN(std::vector<SqlRow> rows,
                          c_->Query(std::string("SELECT ") + kTrialColumns +
                                        " FROM zeus_trials WHERE job_id = ? ORDER BY trial_number",
                                    {job_id}));
    return TrialsFromRows(rows);
  }

  StatusOr<std::vector<TrialRecord>> ListSilentTrials(double updated_before_s) override {
    ZEUS_ASSIGN_OR_RETURN(
        std::vector<SqlRow> rows,
        c_->Query(std::string("SELECT ") + kTrialColumns +
                      " FROM zeus_trials WHERE status = 'dispatched' AND updated_at_s < ? "
                      "ORDER BY job_id, trial_number",
                  {updated_before_s}));
    return TrialsFromRows(rows);
  }

 private:
  SqlConnection* c_;
  bool lock_rows_;
};

using Connector = std::function<StatusOr<std::unique_ptr<SqlConnection>>()>;

class SqlStore final : public Store {
 public:
  SqlStore(std::string backend, Connector connect, int max_connections)
      : backend_(std::move(backend)),
        connect_(std::move(connect)),
        max_connections_(max_connections) {}

  ~SqlStore() override {
    if (checkpointer_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(stop_mutex_);
        stopping_ = true;
      }
      stop_.notify_all();
      checkpointer_.join();
    }
  }

  // SQLite: copies the write-ahead log into the database every
  // `period` on a background thread (PASSIVE: never blocks writers), so no
  // request pays for a checkpoint's fsync.
  void StartCheckpointer(std::chrono::milliseconds period) {
    checkpointer_ = std::thread([this, period] {
      std::unique_ptr<SqlConnection> c;
      std::unique_lock<std::mutex> lock(stop_mutex_);
      while (!stop_.wait_for(lock, period, [this] { return stopping_; })) {
        if (!c) {
          StatusOr<std::unique_ptr<SqlConnection>> opened = connect_();
          if (!opened.ok()) continue;
          c = std::move(*opened);
        }
        // A busy database is checkpointed next time.
        c->Exec("PRAGMA wal_checkpoint(PASSIVE)").IgnoreError();
      }
    });
  }

  // SQLite: from now on, CheckHealth() and every write transaction compare
  // the file at `path` with the one open now (device and inode). A path
  // that cannot be stat'ed now is not watched.
  void WatchDatabaseFile(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return;
    std::lock_guard<std::mutex> lock(file_mutex_);
    file_path_ = path;
    file_dev_ = st.st_dev;
    file_ino_ = st.st_ino;
  }

  Status CheckHealth() override {
    std::lock_guard<std::mutex> lock(file_mutex_);
    if (file_path_.empty()) return Status::Ok();
    if (!file_error_.empty()) return UnavailableError(file_error_);
    struct stat st {};
    std::string problem;
    if (::stat(file_path_.c_str(), &st) != 0) {
      const int error = errno;
      problem = error == ENOENT ? "was deleted"
                                : std::string("cannot be checked: ") + std::strerror(error);
    } else if (st.st_dev != file_dev_ || st.st_ino != file_ino_) {
      problem = "was replaced by another file (device:inode " + std::to_string(st.st_dev) + ":" +
                std::to_string(st.st_ino) + ", opened " + std::to_string(file_dev_) + ":" +
                std::to_string(file_ino_) + ")";
    }
    if (problem.empty()) return Status::Ok();
    file_error_ = "database: the SQLite file \"" + file_path_ + "\" " + problem +
                  " while the server ran; refusing writes so that nothing is written into a "
                  "file that is gone (restore the file and restart zeus serve)";
    return UnavailableError(file_error_);
  }

  Status RunTransaction(TransactionMode mode,
                        const std::function<Status(StoreTransaction&)>& body) override {
    if (mode == TransactionMode::kWrite) ZEUS_RETURN_IF_ERROR(CheckHealth());
    // SQLite admits one writer at a time and makes the others poll with
    // sleeps; queueing this process's writers on a mutex first keeps latency
    // low. Correctness does not rest on it: BEGIN IMMEDIATE still serialises
    // writers of every process sharing the file.
    std::unique_lock<std::mutex> writer;
    if (mode == TransactionMode::kWrite && backend_ == "sqlite") {
      writer = std::unique_lock<std::mutex>(sqlite_writer_mutex_);
    }
    ZEUS_ASSIGN_OR_RETURN(std::unique_ptr<SqlConnection> c, Acquire());
    Status status = RunOn(*c, mode, body);
    Release(std::move(c));
    return status;
  }

  std::string_view backend() const override { return backend_; }

  StatusOr<int> SchemaVersion() override {
    int version = 0;
    ZEUS_RETURN_IF_ERROR(WithConnection([&](SqlConnection& c) -> Status {
      ZEUS_ASSIGN_OR_RETURN(std::vector<SqlRow> rows,
                            c.Query("SELECT version FROM zeus_schema_version", {}));
      if (rows.size() != 1) return InternalError("database: zeus_schema_version has no row");
      ZEUS_ASSIGN_OR_RETURN(int64_t v, AsInt(rows[0][0]));
      version = static_cast<int>(v);
      return Status::Ok();
    }));
    return version;
  }

  // Creates or migrates the schema inside one write transaction. In
  // PostgreSQL an advisory lock keeps concurrent servers from racing.
  Status Migrate() {
    return WithConnection([&](SqlConnection& c) -> Status {
      return RunOn(c, TransactionMode::kWrite, [&](StoreTransaction&) -> Status {
        if (c.HasRowLocks()) {
          ZEUS_RETURN_IF_ERROR(c.Query("SELECT pg_advisory_xact_lock(727272)", {}).status());
        }
        ZEUS_RETURN_IF_ERROR(
            c.Exec("CREATE TABLE IF NOT EXISTS zeus_schema_version (version BIGINT NOT NULL)"));
        ZEUS_ASSIGN_OR_RETURN(std::vector<SqlRow> rows,
                              c.Query("SELECT version FROM zeus_schema_version", {}));
        int64_t version = 0;
        if (rows.empty()) {
          ZEUS_RETURN_IF_ERROR(
              c.Query("INSERT INTO zeus_schema_version (version) VALUES (0)", {}).status());
        } else {
          ZEUS_ASSIGN_OR_RETURN(version, AsInt(rows[0][0]));
        }
        if (version > kStoreSchemaVersion) {
          return FailedPreconditionError("database: schema version " + std::to_string(version) +
                                         " is newer than " + std::to_string(kStoreSchemaVersion) +
                                         ", which this server understands");
        }
        for (int64_t v = version; v < kStoreSchemaVersion; ++v) {
          ZEUS_RETURN_IF_ERROR(
              c.Exec(Migrations()[v])
                  .WithContext("database: migrating schema to version " + std::to_string(v + 1)));
        }
        return c
            .Query("UPDATE zeus_schema_version SET version = ?",
                   {static_cast<int64_t>(kStoreSchemaVersion)})
            .status();
      });
    });
  }

 private:
  Status RunOn(SqlConnection& c, TransactionMode mode,
               const std::function<Status(StoreTransaction&)>& body) {
    ZEUS_RETURN_IF_ERROR(c.Begin(mode));
    SqlTransaction txn(&c, mode);
    Status status = body(txn);
    if (status.ok()) status = c.Commit();
    if (!status.ok()) c.Rollback().IgnoreError();
    return status;
  }

  Status WithConnection(const std::function<Status(SqlConnection&)>& fn) {
    ZEUS_ASSIGN_OR_RETURN(std::unique_ptr<SqlConnection> c, Acquire());
    Status status = fn(*c);
    Release(std::move(c));
    return status;
  }

  // A pooled connection, or a new one while fewer than max_connections_
  // are open; otherwise waits for one to be released.
  StatusOr<std::unique_ptr<SqlConnection>> Acquire() {
    std::unique_lock<std::mutex> lock(pool_mutex_);
    pool_released_.wait(lock, [this] { return !idle_.empty() || open_ < max_connections_; });
    if (!idle_.empty()) {
      std::unique_ptr<SqlConnection> c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
    ++open_;
    lock.unlock();
    StatusOr<std::unique_ptr<SqlConnection>> c = connect_();
    if (!c.ok()) {
      lock.lock();
      --open_;
      pool_released_.notify_one();
    }
    return c;
  }

  void Release(std::unique_ptr<SqlConnection> c) {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    if (c->healthy()) {
      idle_.push_back(std::move(c));
    } else {
      --open_;  // Dropped; a later Acquire() reconnects.
    }
    pool_released_.notify_one();
  }

  std::string backend_;
  Connector connect_;
  int max_connections_;
  std::mutex pool_mutex_;
  std::condition_variable pool_released_;
  // Connections open (idle or in use); at most max_connections_.
  int open_ = 0;
  std::vector<std::unique_ptr<SqlConnection>> idle_;
  std::mutex sqlite_writer_mutex_;
  // The watched SQLite file (WatchDatabaseFile); empty path: not watched.
  std::mutex file_mutex_;
  std::string file_path_;
  dev_t file_dev_ = 0;
  ino_t file_ino_ = 0;
  // Set once the file was found gone or replaced; never cleared.
  std::string file_error_;
  std::thread checkpointer_;
  std::mutex stop_mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
};

}  // namespace
}  // namespace server_internal

StatusOr<std::unique_ptr<Store>> OpenStore(const std::string& url, const StoreOptions& options) {
  if (options.max_connections < 1) {
    return InvalidArgumentError("store: max_connections " +
                                std::to_string(options.max_connections) + " must be >= 1");
  }
  using server_internal::SqlStore;
  std::unique_ptr<SqlStore> store;
  if (url.rfind("sqlite:", 0) == 0) {
    std::string path = url.substr(7);
    store = std::make_unique<SqlStore>(
        "sqlite", [path] { return server_internal::OpenSqliteConnection(path); },
        options.max_connections);
  } else if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0) {
    store = std::make_unique<SqlStore>(
        "postgresql", [url] { return server_internal::OpenPostgresConnection(url); },
        options.max_connections);
  } else {
    std::string shown = url.substr(0, url.find(':') == std::string::npos ? 32 : url.find(':'));
    return InvalidArgumentError("store url \"" + shown +
                                "...\": expected sqlite:PATH or postgresql://...");
  }
  ZEUS_RETURN_IF_ERROR(store->Migrate());
  if (store->backend() == "sqlite") {
    store->WatchDatabaseFile(url.substr(7));
    store->StartCheckpointer(std::chrono::milliseconds(200));
  }
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace zeus
