// BatchSizeClient against a real server on 127.0.0.1.

#include <gtest/gtest.h>

#include "zeus/client/batch_size_client.h"

#include "tests/server/server_test_util.h"

namespace zeus::testing {
namespace {

BatchSizeJobSpec Spec(const std::string& job_id) {
  StatusOr<BatchSizeJobSpec> spec = ParseJobSpec(JobBody(job_id, 5));
  ZEUS_CHECK(spec.ok());
  return *spec;
}

class BatchSizeClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string skip_reason;
    server_ = std::make_unique<TestServer>(NewDatabaseUrl(Backend::kSqlite, dir_, &skip_reason));
    ASSERT_TRUE(server_->ok()) << server_->error();
    options_.server_url = server_->base_url();
  }

  TempDir dir_;
  std::unique_ptr<TestServer> server_;
  BatchSizeClientOptions options_;
};

TEST_F(BatchSizeClientTest, RegistersRunsEpochsUntilStoppedThenStartsNextRun) {
  BatchSizeClient client(options_);
  ZEUS_ASSERT_OK_AND_ASSIGN(BatchSizeJobSpec job, client.Register(Spec("cli-1")));
  EXPECT_EQ(job.job_id, "cli-1");
  ZEUS_ASSERT_OK_AND_ASSIGN(BatchSizeJobSpec again, client.Register(Spec("cli-1")));
  EXPECT_TRUE(again == job);
  ZEUS_ASSERT_OK_AND_ASSIGN(TrialId trial, client.GetBatchSize());
  EXPECT_EQ(trial.batch_size, 128);
  EXPECT_EQ(trial.trial_number, 1);
  ZEUS_ASSERT_OK_AND_ASSIGN(ReportResponse first, client.ReportEpoch(1, 10, 1000, 0.2));
  EXPECT_FALSE(first.stop_train);
  ASSERT_TRUE(client.current_trial().has_value());
  ZEUS_ASSERT_OK_AND_ASSIGN(ReportResponse second, client.ReportEpoch(2, 20, 2000, 0.7));
  EXPECT_TRUE(second.stop_train);
  EXPECT_TRUE(second.converged);
  EXPECT_FALSE(client.current_trial().has_value());
  EXPECT_EQ(client.ReportEpoch(3, 30, 3000, 0.9).status().code(), StatusCode::kFailedPrecondition);
  ZEUS_ASSERT_OK_AND_ASSIGN(TrialId next, client.GetBatchSize());
  EXPECT_EQ(next.trial_number, 2);
}

TEST_F(BatchSizeClientTest, ACheckInPastTheBoundEndsTheRun) {
  BatchSizeClient client(options_);
  EXPECT_EQ(client.CheckIn(1, 10).status().code(), StatusCode::kFailedPrecondition);
  ZEUS_ASSERT_OK(client.Register(Spec("cli-1")).status());
  ZEUS_ASSERT_OK(client.GetBatchSize().status());
  ZEUS_ASSERT_OK_AND_ASSIGN(ReportResponse converged, client.ReportEpoch(1, 10, 1000, 0.9));
  ASSERT_TRUE(converged.converged);
  ZEUS_ASSERT_OK(client.GetBatchSize().status());
  ZEUS_ASSERT_OK_AND_ASSIGN(ReportResponse going, client.CheckIn(1, 10));
  EXPECT_FALSE(going.stop_train);
  ASSERT_TRUE(client.current_trial().has_value());
  ZEUS_ASSERT_OK_AND_ASSIGN(ReportResponse stopped, client.CheckIn(100, 1e6));
  EXPECT_TRUE(stopped.stop_train);
  EXPECT_FALSE(stopped.converged);
  EXPECT_NE(stopped.message.find("exceeded the cost upper bound"), std::string::npos)
      << stopped.message;
  EXPECT_FALSE(client.current_trial().has_value());
}

TEST_F(BatchSizeClientTest, EndFailsTheRunningTrial) {
  BatchSizeClient client(options_);
  ZEUS_ASSERT_OK(client.Register(Spec("cli-1")).status());
  ZEUS_ASSERT_OK_AND_ASSIGN(TrialId trial, client.GetBatchSize());
  ZEUS_ASSERT_OK(client.End());
  EXPECT_FALSE(client.current_trial().has_value());
  ZEUS_ASSERT_OK(client.End());  // Nothing running: no-op.
  ZEUS_ASSERT_OK_AND_ASSIGN(nlohmann::json trials, server_->service().ListTrials("cli-1"));
  EXPECT_EQ(trials["trials"][0]["status"], "failed");
  ZEUS_ASSERT_OK_AND_ASSIGN(ReportResponse late, client.Report(TrainingResult{trial, 1, 1, 1, 1}));
  EXPECT_TRUE(late.stop_train);
  EXPECT_FALSE(late.converged);
}

TEST_F(BatchSizeClientTest, NullJobIdIsFilledByServer) {
  BatchSizeClient client(options_);
  BatchSizeJobSpec spec = Spec("cli-1");
  spec.job_id.clear();
  spec.job_id_prefix = "cli";
  ZEUS_ASSERT_OK_AND_ASSIGN(BatchSizeJobSpec job, client.Register(spec));
  EXPECT_EQ(job.job_id.rfind("cli-", 0), 0u);
  ZEUS_ASSERT_OK(client.GetBatchSize().status());
}

TEST_F(BatchSizeClientTest, ServerErrorsBecomeStatusCodesWithMessages) {
  BatchSizeClient client(options_);
  EXPECT_EQ(client.GetBatchSize().status().code(), StatusCode::kFailedPrecondition);
  StatusOr<TrialId> missing = client.NextBatchSize("no-such-job");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no-such-job"), std::string::npos);
  EXPECT_NE(missing.status().message().find("HTTP 404"), std::string::npos);
  BatchSizeJobSpec bad = Spec("cli-1");
  bad.eta_knob = 3;
  StatusOr<BatchSizeJobSpec> rejected = client.Register(bad);
  EXPECT_EQ(rejected.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(rejected.status().message().find("eta_knob"), std::string::npos);
  ZEUS_ASSERT_OK(client.Register(Spec("cli-1")).status());
  BatchSizeJobSpec other = Spec("cli-1");
  other.max_epochs = 77;
  EXPECT_EQ(client.Register(other).status().code(), StatusCode::kAlreadyExists);
  ZEUS_ASSERT_OK(client.GetBatchSize().status());
  EXPECT_EQ(client.ReportEpoch(1, 1, -1, 0.1).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(BatchSizeClientTest, TokenIsSentAndUnreachableServerIsUnavailable) {
  HttpServerOptions options;
  options.token = "tok";
  std::string skip_reason;
  TempDir dir;
  TestServer guarded(NewDatabaseUrl(Backend::kSqlite, dir, &skip_reason), options);
  ASSERT_TRUE(guarded.ok()) << guarded.error();
  BatchSizeClientOptions without;
  without.server_url = guarded.base_url();
  EXPECT_EQ(BatchSizeClient(without).Register(Spec("cli-1")).status().code(),
            StatusCode::kPermissionDenied);
  BatchSizeClientOptions with = without;
  with.token = "tok";
  EXPECT_TRUE(BatchSizeClient(with).Register(Spec("cli-1")).ok());

  BatchSizeClientOptions nowhere;
  nowhere.server_url = "http://127.0.0.1:1";
  nowhere.max_attempts = 2;
  nowhere.retry_delay_s = 0.001;
  EXPECT_EQ(BatchSizeClient(nowhere).Register(Spec("cli-1")).status().code(),
            StatusCode::kUnavailable);
}

}  // namespace
}  // namespace zeus::testing
