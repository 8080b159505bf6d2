// Crash safety: a client drives a recurring job through the real
// `zeus serve` while the server is killed with SIGKILL at random points and
// restarted. Every result the client saw is stored exactly once.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "zeus/client/batch_size_client.h"

#include "tests/server/server_test_util.h"

namespace zeus::testing {
namespace {

using nlohmann::json;

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

std::vector<std::string> ServeArgs(const std::string& url, int port) {
  return {"--db", url, "--listen", "127.0.0.1:" + std::to_string(port), "--threads", "8"};
}

struct Outcome {
  int64_t batch_size;
  bool converged;
  std::string message;
};

class CrashTest : public ::testing::TestWithParam<Backend> {};

TEST_P(CrashTest, SigkillAtRandomPointsLosesNoResultAndCountsNoneTwice) {
  TempDir dir;
  std::string skip_reason;
  std::string url = NewDatabaseUrl(GetParam(), dir, &skip_reason);
  if (url.empty() && !skip_reason.empty()) GTEST_SKIP() << skip_reason;
  ASSERT_FALSE(url.empty());
  const int port = FreePort();
  std::mutex server_mutex;
  ServeProcess server;
  ZEUS_ASSERT_OK(server.Start(ServeArgs(url, port)));

  std::atomic<bool> done{false};
  std::atomic<int> kills{0};
  std::thread killer([&] {
    std::mt19937 random(12345);
    while (!done.load()) {
      // Up for 10-60 ms after it listens: long enough for a few requests.
      std::this_thread::sleep_for(std::chrono::milliseconds(10 + random() % 50));
      if (done.load()) break;
      std::lock_guard<std::mutex> lock(server_mutex);
      server.Kill();
      ++kills;
      Status status = server.Start(ServeArgs(url, port));
      if (!status.ok()) ADD_FAILURE() << status;
    }
  });

  BatchSizeClientOptions options;
  options.server_url = "http://127.0.0.1:" + std::to_string(port);
  options.max_attempts = 400;
  options.retry_delay_s = 0.005;
  options.max_retry_delay_s = 0.02;
  options.timeout_s = 5;
  BatchSizeClient client(options);
  BatchSizeJobSpec spec;
  spec.job_id = "crash-1";
  spec.job_id_prefix = "crash";
  spec.batch_sizes = {16, 32, 64, 128};
  spec.default_batch_size = 64;
  spec.num_pruning_rounds = 0;  // Every batch size is an arm: all observations visible.
  spec.mab_seed = 3;
  spec.max_epochs = 5;
  spec.max_power_w = 300;
  spec.number_of_gpus = 1;
  spec.gpu_model = "A40";
  StatusOr<BatchSizeJobSpec> registered = client.Register(spec);
  ZEUS_ASSERT_OK(registered.status());

  std::map<int64_t, Outcome> finished;  // By trial number.
  // At least 40 recurrences, and on until the server died 20 times.
  int recurrences = 0;
  for (int r = 0; (r < 40 || kills.load() < 20) && r < 20000; ++r) {
    ++recurrences;
    StatusOr<TrialId> trial = client.GetBatchSize();
    for (int attempt = 0; !trial.ok() && attempt < 400; ++attempt) {
      // A lost answer may leave an orphaned dispatched trial; ask again.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      trial = client.GetBatchSize();
    }
    ZEUS_ASSERT_OK(trial.status());
    const int64_t bs = trial->batch_size;
    // Smaller batches converge in fewer epochs; the largest never does.
    const int converge_epoch = bs == 128 ? 99 : static_cast<int>(bs / 16);
    for (int epoch = 1;; ++epoch) {
      StatusOr<ReportResponse> response = client.ReportEpoch(
          epoch, epoch * 10.0, epoch * 1000.0 / bs * 16, epoch >= converge_epoch ? 0.9 : 0.1);
      ASSERT_TRUE(response.ok()) << "recurrence " << r << " epoch " << epoch << ": "
                                 << response.status();
      if (response->stop_train) {
        finished[trial->trial_number] = Outcome{bs, response->converged, response->message};
        break;
      }
    }
  }
  done = true;
  killer.join();
  std::lock_guard<std::mutex> lock(server_mutex);
  EXPECT_GE(kills.load(), 20) << "the server was hardly killed; the test proves little";
  std::printf("zeus serve was killed %d times during %d recurrences\n", kills.load(), recurrences);

  TestClient http(port);
  // Every trial, page by page (at most 1000 per answer).
  json all_trials = json::array();
  for (std::string after = "0"; !after.empty();) {
    HttpReply trials;
    for (int attempt = 0; attempt < 100 && trials.status != 200; ++attempt) {
      trials = Send(http, "GET", "/trials?job_id=crash-1&after=" + after);
      if (trials.status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_EQ(trials.status, 200) << trials.raw;
    for (const json& t : trials.body["trials"]) all_trials.push_back(t);
    after = trials.body["next_after"].is_null() ? "" : trials.body["next_after"].dump();
  }
  int succeeded = 0;
  for (const json& t : all_trials) {
    if (t["status"] != "succeeded") {
      EXPECT_EQ(t["status"], "dispatched") << t.dump();  // Orphans of lost answers only.
      EXPECT_EQ(finished.count(t["trial_number"].get<int64_t>()), 0u) << t.dump();
      continue;
    }
    ++succeeded;
    auto it = finished.find(t["trial_number"].get<int64_t>());
    ASSERT_NE(it, finished.end()) << "stored result the client never saw: " << t.dump();
    EXPECT_EQ(t["batch_size"], it->second.batch_size);
    EXPECT_EQ(t["converged"], it->second.converged);
    // A report retried after its answer was lost gets the original
    // server's answer to a trial reported again; the stored verdict is the
    // one the lost answer carried.
    const std::string again =
        "Result for this trial(" + std::to_string(it->first) + ") is already reported.";
    if (it->second.message != again) {
      EXPECT_EQ(t["message"], it->second.message);
    }
  }
  EXPECT_EQ(succeeded, recurrences);
  EXPECT_EQ(finished.size(), static_cast<size_t>(recurrences));
  HttpReply arms = Send(http, "GET", "/jobs/arms?job_id=crash-1");
  ASSERT_EQ(arms.status, 200) << arms.raw;
  int observations = 0;
  for (const json& arm : arms.body["arms"]) observations += arm["num_observations"].get<int>();
  EXPECT_EQ(observations, recurrences) << arms.raw;
  server.Kill();
}

INSTANTIATE_TEST_SUITE_P(Stores, CrashTest, ::testing::Values(Backend::kSqlite, Backend::kPostgres),
                         BackendParamName);

}  // namespace
}  // namespace zeus::testing
