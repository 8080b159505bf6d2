// A server restarted from its database continues exactly the batch-size
// sequence an uninterrupted server hands out: the bandit's generator state
// and the exploration progress live in the store.

#include <memory>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "tests/server/server_test_util.h"

namespace zeus::testing {
namespace {

class RestartTest : public ::testing::TestWithParam<Backend> {};

// Drives `recurrences` runs of job "rs-1" and returns the batch sizes handed
// out; re-opens the store and service every `restart_every` runs (0: never).
std::vector<int64_t> Drive(const std::string& url, int recurrences, int restart_every) {
  std::vector<int64_t> sizes;
  auto server = std::make_unique<TestServer>(url);
  EXPECT_TRUE(server->ok()) << server->error();
  StatusOr<BatchSizeJobSpec> spec = ParseJobSpec(JobBody("rs-1", 11));
  EXPECT_TRUE(server->service().RegisterJob(*spec).ok());
  for (int r = 0; r < recurrences; ++r) {
    if (restart_every > 0 && r > 0 && r % restart_every == 0) {
      server.reset();
      server = std::make_unique<TestServer>(url);
      EXPECT_TRUE(server->ok()) << server->error();
    }
    StatusOr<TrialId> trial = server->service().NextBatchSize("rs-1");
    EXPECT_TRUE(trial.ok()) << trial.status();
    if (!trial.ok()) break;
    sizes.push_back(trial->batch_size);
    // Noisy costs so that Thompson sampling has something to draw about.
    const double energy_j = 1000.0 + trial->batch_size * (3 + r % 5);
    const bool reached = trial->batch_size != 256;
    StatusOr<ReportResponse> response = server->service().Report(
        TrainingResult{*trial, 1.0, energy_j, reached ? 0.9 : 0.1, reached ? 1 : 10});
    EXPECT_TRUE(response.ok()) << response.status();
  }
  return sizes;
}

TEST_P(RestartTest, RestartedServerContinuesTheSameSequence) {
  TempDir dir;
  std::string skip_reason;
  std::string straight = NewDatabaseUrl(GetParam(), dir, &skip_reason);
  if (straight.empty() && !skip_reason.empty()) GTEST_SKIP() << skip_reason;
  std::string restarted = NewDatabaseUrl(GetParam(), dir, &skip_reason);
  ASSERT_FALSE(straight.empty());
  ASSERT_FALSE(restarted.empty());
  std::vector<int64_t> expected = Drive(straight, 40, 0);
  std::vector<int64_t> actual = Drive(restarted, 40, 3);
  EXPECT_EQ(actual, expected);
  // Sanity: the sequence is not trivially constant.
  EXPECT_GT(std::set<int64_t>(expected.begin(), expected.end()).size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Stores, RestartTest,
                         ::testing::Values(Backend::kSqlite, Backend::kPostgres), BackendParamName);

}  // namespace
}  // namespace zeus::testing
