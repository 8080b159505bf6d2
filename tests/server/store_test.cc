// The store on SQLite and PostgreSQL: schema creation and migration,
// transactions commit or roll back as a whole, constraint errors.

#include "zeus/server/store.h"

#include <gtest/gtest.h>

#include "tests/server/server_test_util.h"

namespace zeus::testing {
namespace {

class StoreTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    std::string skip_reason;
    url_ = NewDatabaseUrl(GetParam(), dir_, &skip_reason);
    if (url_.empty() && !skip_reason.empty()) GTEST_SKIP() << skip_reason;
    ASSERT_FALSE(url_.empty());
    ZEUS_ASSERT_OK_AND_ASSIGN(store_, OpenStore(url_));
  }

  static JobRecord Job(const std::string& id) {
    JobRecord job;
    job.job_id = id;
    job.spec_json = "{}";
    job.state_json = "{\"x\": 1}";
    job.created_at_s = 1.7e9 + 0.125;
    return job;
  }

  static TrialRecord Trial(const std::string& job_id, int64_t number) {
    TrialRecord t;
    t.job_id = job_id;
    t.trial_number = number;
    t.batch_size = 64;
    t.kind = "exploration";
    t.start_time_s = t.updated_at_s = 1.7e9 + 0.1;
    return t;
  }

  TempDir dir_;
  std::string url_;
  std::unique_ptr<Store> store_;
};

TEST_P(StoreTest, ReopeningKeepsDataAndSchemaVersion) {
  ZEUS_ASSERT_OK(store_->RunTransaction(TransactionMode::kWrite, [](StoreTransaction& txn) {
    ZEUS_ASSIGN_OR_RETURN(bool inserted, txn.InsertJob(Job("a-1")));
    return inserted ? Status::Ok() : InternalError("not inserted");
  }));
  store_.reset();
  ZEUS_ASSERT_OK_AND_ASSIGN(store_, OpenStore(url_));
  ZEUS_ASSERT_OK_AND_ASSIGN(int version, store_->SchemaVersion());
  EXPECT_EQ(version, kStoreSchemaVersion);
  std::optional<JobRecord> job;
  ZEUS_ASSERT_OK(store_->RunTransaction(TransactionMode::kRead, [&](StoreTransaction& txn) {
    ZEUS_ASSIGN_OR_RETURN(job, txn.GetJob("a-1"));
    return Status::Ok();
  }));
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->state_json, "{\"x\": 1}");
  EXPECT_EQ(job->created_at_s, 1.7e9 + 0.125);  // Doubles round-trip exactly.
  EXPECT_EQ(job->spec_json, "{}");
}

TEST_P(StoreTest, FailedBodyRollsBackEverything) {
  Status status = store_->RunTransaction(TransactionMode::kWrite, [](StoreTransaction& txn) {
    ZEUS_RETURN_IF_ERROR(txn.InsertJob(Job("a-1")).status());
    ZEUS_RETURN_IF_ERROR(txn.InsertTrial(Trial("a-1", 1)));
    return txn.InsertTrial(Trial("a-1", 1));  // Duplicate.
  });
  EXPECT_EQ(status.code(), StatusCode::kAlreadyExists) << status;
  ZEUS_ASSERT_OK(store_->RunTransaction(TransactionMode::kRead, [](StoreTransaction& txn) {
    ZEUS_ASSIGN_OR_RETURN(std::vector<JobRecord> jobs, txn.ListJobs());
    ZEUS_ASSIGN_OR_RETURN(std::vector<TrialRecord> trials, txn.ListTrials("a-1"));
    return jobs.empty() && trials.empty() ? Status::Ok() : InternalError("not rolled back");
  }));
}

TEST_P(StoreTest, TrialRowsRoundTripAndUpdate) {
  TrialRecord t = Trial("a-1", 3);
  ZEUS_ASSERT_OK(store_->RunTransaction(TransactionMode::kWrite, [&](StoreTransaction& txn) {
    ZEUS_RETURN_IF_ERROR(txn.InsertJob(Job("a-1")).status());
    ZEUS_RETURN_IF_ERROR(txn.InsertTrial(t));
    t.status = TrialStatus::kSucceeded;
    t.time_s = 12.5;
    t.energy_j = 0.1 + 0.2;
    t.metric = 0.75;
    t.current_epoch = 4;
    t.cost = 1e300;
    t.converged = true;
    t.message = "done \"quoted\" ü";
    return txn.UpdateTrial(t);
  }));
  std::optional<TrialRecord> read;
  ZEUS_ASSERT_OK(store_->RunTransaction(TransactionMode::kRead, [&](StoreTransaction& txn) {
    ZEUS_ASSIGN_OR_RETURN(read, txn.GetTrial("a-1", 3));
    return Status::Ok();
  }));
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->status, TrialStatus::kSucceeded);
  EXPECT_EQ(read->energy_j, 0.1 + 0.2);
  EXPECT_EQ(read->cost, 1e300);
  EXPECT_EQ(read->current_epoch, 4);
  EXPECT_TRUE(read->converged);
  EXPECT_EQ(read->message, t.message);
  Status missing = store_->RunTransaction(TransactionMode::kWrite, [&](StoreTransaction& txn) {
    TrialRecord other = t;
    other.trial_number = 99;
    return txn.UpdateTrial(other);
  });
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
}

TEST_P(StoreTest, SilentTrialsListsOnlyOldDispatchedOnes) {
  ZEUS_ASSERT_OK(store_->RunTransaction(TransactionMode::kWrite, [&](StoreTransaction& txn) {
    ZEUS_RETURN_IF_ERROR(txn.InsertJob(Job("a-1")).status());
    TrialRecord old_one = Trial("a-1", 1);
    old_one.updated_at_s = 100;
    TrialRecord fresh = Trial("a-1", 2);
    fresh.updated_at_s = 300;
    TrialRecord done = Trial("a-1", 3);
    done.updated_at_s = 100;
    done.status = TrialStatus::kSucceeded;
    ZEUS_RETURN_IF_ERROR(txn.InsertTrial(old_one));
    ZEUS_RETURN_IF_ERROR(txn.InsertTrial(fresh));
    return txn.InsertTrial(done);
  }));
  std::vector<TrialRecord> silent;
  ZEUS_ASSERT_OK(store_->RunTransaction(TransactionMode::kRead, [&](StoreTransaction& txn) {
    ZEUS_ASSIGN_OR_RETURN(silent, txn.ListSilentTrials(200));
    return Status::Ok();
  }));
  ASSERT_EQ(silent.size(), 1u);
  EXPECT_EQ(silent[0].trial_number, 1);
}

TEST_P(StoreTest, RefusesNewerSchema) {
  store_.reset();
  ZEUS_ASSERT_OK(ExecRawSql(url_, "UPDATE zeus_schema_version SET version = 99"));
  StatusOr<std::unique_ptr<Store>> reopened = OpenStore(url_);
  EXPECT_EQ(reopened.status().code(), StatusCode::kFailedPrecondition) << reopened.status();
  EXPECT_NE(reopened.status().message().find("99"), std::string::npos);
}

TEST(StoreUrlTest, RejectsZeroConnections) {
  TempDir dir;
  StatusOr<std::unique_ptr<Store>> store = OpenStore("sqlite:" + dir.File("a.db"), StoreOptions{0});
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument);
}

TEST(StoreUrlTest, RejectsUnknownSchemesAndMemoryDatabases) {
  EXPECT_EQ(OpenStore("mysql://x").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenStore("sqlite::memory:").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenStore("postgresql://zeus@127.0.0.1:1/none?connect_timeout=2").status().code(),
            StatusCode::kUnavailable);
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreTest, ::testing::Values(Backend::kSqlite, Backend::kPostgres),
                         BackendParamName);

}  // namespace
}  // namespace zeus::testing
