// 32 clients drive the same job at once through two servers that share one
// database (each with its own store and connection pool, as two processes
// would): trial numbers stay unique and every result is recorded once.

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/server/server_test_util.h"

namespace zeus::testing {
namespace {

using nlohmann::json;

class ConcurrencyTest : public ::testing::TestWithParam<Backend> {};

TEST_P(ConcurrencyTest, ThirtyTwoClientsOnOneJobGetUniqueTrialsAndEachResultCountsOnce) {
  TempDir dir;
  std::string skip_reason;
  std::string url = NewDatabaseUrl(GetParam(), dir, &skip_reason);
  if (url.empty() && !skip_reason.empty()) GTEST_SKIP() << skip_reason;
  ASSERT_FALSE(url.empty());
  TestServer first(url);
  ASSERT_TRUE(first.ok()) << first.error();
  TestServer second(url);
  ASSERT_TRUE(second.ok()) << second.error();

  json job = JobBody("conc-1", 7);
  job["num_pruning_rounds"] = 0;  // Every batch size is an arm: all observations visible.
  {
    TestClient client(first.port());
    ASSERT_EQ(Send(client, "POST", "/jobs", job.dump()).status, 201);
  }

  constexpr int kClients = 32;
  std::vector<int64_t> trial_numbers(kClients, -1);
  std::vector<std::string> errors(kClients);
  std::atomic<int> waiting{kClients};
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      TestClient client((i % 2 == 0 ? first : second).port());
      // Start together: every client connected and ready.
      waiting.fetch_sub(1);
      while (waiting.load() > 0) std::this_thread::yield();
      HttpReply trial = Send(client, "GET", "/jobs/batch_size?job_id=conc-1");
      if (trial.status != 200) {
        errors[i] = "GET: " + trial.raw;
        return;
      }
      trial_numbers[i] = trial.body["trial_number"];
      json report = trial.body;
      report["time"] = 1.0;
      report["energy"] = 100.0 + i;  // Identifies the client in the stored row.
      report["metric"] = 0.1;
      report["current_epoch"] = 1;
      HttpReply keep = Send(client, "POST", "/report", report.dump());
      if (keep.status != 200 || keep.body["stop_train"] != false) {
        errors[i] = "epoch 1: " + keep.raw;
        return;
      }
      report["time"] = 2.0;
      report["energy"] = 200.0 + i;
      report["metric"] = 0.9;
      report["current_epoch"] = 2;
      HttpReply done = Send(client, "POST", "/report", report.dump());
      if (done.status != 200 || done.body["stop_train"] != true) {
        errors[i] = "epoch 2: " + done.raw;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kClients; ++i) EXPECT_EQ(errors[i], "") << "client " << i;

  std::set<int64_t> unique(trial_numbers.begin(), trial_numbers.end());
  EXPECT_EQ(unique.size(), static_cast<size_t>(kClients));
  EXPECT_EQ(*unique.begin(), 1);
  EXPECT_EQ(*unique.rbegin(), kClients);

  TestClient client(second.port());
  HttpReply trials = Send(client, "GET", "/trials?job_id=conc-1");
  ASSERT_EQ(trials.status, 200);
  ASSERT_EQ(trials.body["trials"].size(), static_cast<size_t>(kClients));
  std::set<double> energies;
  for (const json& t : trials.body["trials"]) {
    EXPECT_EQ(t["status"], "succeeded") << t.dump();
    EXPECT_EQ(t["current_epoch"], 2);
    energies.insert(t["energy"].get<double>());
  }
  EXPECT_EQ(energies.size(), static_cast<size_t>(kClients));
  EXPECT_EQ(*energies.begin(), 200.0);
  HttpReply arms = Send(client, "GET", "/jobs/arms?job_id=conc-1");
  ASSERT_EQ(arms.status, 200) << arms.raw;
  int observations = 0;
  for (const json& arm : arms.body["arms"]) observations += arm["num_observations"].get<int>();
  EXPECT_EQ(observations, kClients);
  EXPECT_TRUE(arms.body["in_flight"].empty());
}

INSTANTIATE_TEST_SUITE_P(Stores, ConcurrencyTest,
                         ::testing::Values(Backend::kSqlite, Backend::kPostgres), BackendParamName);

}  // namespace
}  // namespace zeus::testing
