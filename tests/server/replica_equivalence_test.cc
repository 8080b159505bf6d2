// Two server replicas on one PostgreSQL database decide as one does.
//
// Each replica is its own store (connection pool), service (optimizer cache)
// and HTTP server, as two `zeus serve` processes on one database would be.
//
// 1. Replayed sequence: the simulator's group simulation of a swarm (or
//    frugal) job with overlapping submissions (several trials in flight,
//    out-of-order reports, every report and check-in the simulator judged)
//    is replayed against one replica and, on a second database, spread over
//    two replicas (events alternate between them; a trial is often handed
//    out by one and reported to the other). Every
//    answer (batch size, trial number, stop_train, converged, message) and
//    the final arm states are identical, and match the simulator.
// 2. Racing: pairs of requests (two reports, or a hand-out and a report) go
//    to the two replicas at the same moment from two threads. After each
//    pair, the stored optimizer state and both answers equal those of
//    applying the two requests one after the other in one of the two orders,
//    on an in-memory optimizer that never went through the database: no
//    report is lost or applied twice, and no replica decides from a stale
//    state.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "zeus/optimizer/batch_size/batch_size_optimizer.h"

#include "tests/server/equivalence_util.h"
#include "tests/server/server_test_util.h"

namespace zeus::testing {
namespace {

using nlohmann::json;

class ReplicaEquivalenceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ReplicaEquivalenceTest, TwoReplicasOnOnePostgresDecideAsOne) {
  const std::string policy_name = GetParam();
  constexpr uint64_t kSeed = 1;
  TempDir dir;
  std::string skip_reason;
  const std::string one_url = NewDatabaseUrl(Backend::kPostgres, dir, &skip_reason);
  if (one_url.empty() && !skip_reason.empty()) GTEST_SKIP() << skip_reason;
  ASSERT_FALSE(one_url.empty());
  const std::string two_url = NewDatabaseUrl(Backend::kPostgres, dir, &skip_reason);
  ASSERT_FALSE(two_url.empty());

  StatusOr<std::vector<Workload>> workloads = LoadA40Workloads();
  ASSERT_TRUE(workloads.ok()) << workloads.status();
  ASSERT_FALSE(workloads->empty());
  const std::vector<SimulatedJob> jobs = SimulateGroups(*workloads, policy_name, kSeed);
  ASSERT_EQ(jobs.size(), workloads->size());

  TestServer single(one_url);
  ASSERT_TRUE(single.ok()) << single.error();
  TestClient single_client(single.port());
  const Transcript alone = Replay(jobs, policy_name, kSeed, {&single_client});
  ASSERT_FALSE(::testing::Test::HasFailure()) << "one replica departs from the simulator";

  TestServer first(two_url);
  ASSERT_TRUE(first.ok()) << first.error();
  TestServer second(two_url);
  ASSERT_TRUE(second.ok()) << second.error();
  TestClient first_client(first.port());
  TestClient second_client(second.port());
  const Transcript pair = Replay(jobs, policy_name, kSeed, {&first_client, &second_client});

  ASSERT_EQ(alone.answers.size(), pair.answers.size());
  for (size_t i = 0; i < alone.answers.size(); ++i) {
    EXPECT_EQ(alone.answers[i], pair.answers[i]) << "answer " << i;
  }
  ASSERT_EQ(alone.arms.size(), pair.arms.size());
  for (size_t i = 0; i < alone.arms.size(); ++i) {
    // The arms carry the job id, which is the same in both databases.
    EXPECT_EQ(alone.arms[i], pair.arms[i]) << "job " << i;
  }
  // The sequence exercised what it claims to: check-ins, stops, reports
  // to the replica that did not hand the trial out.
  EXPECT_GT(alone.answers.size(), 300u);
  EXPECT_GT(pair.check_ins, 100);
  EXPECT_GE(pair.stops, 2);
  EXPECT_EQ(pair.stops, alone.stops);
  EXPECT_EQ(pair.restarts, alone.restarts);
  EXPECT_EQ(pair.finishes, alone.finishes);
  EXPECT_GT(pair.cross_replica, 50);
  EXPECT_GE(pair.max_in_flight, 3u);
}

// One request of a racing pair.
struct Request {
  bool hand_out = true;
  json trial;           // Reports: the trial's body from its hand-out.
  double cost = 0.0;    // Reports: the run's cost.
  bool reached = true;  // Reports: whether it reached the target.
};

// Applies `request` to `optimizer` as the service does for a final report
// (cost = energy / 2 at eta 0.5 and time 0; the report is a point of the
// trial's learning curve, its metric `target_metric` or 0 as FinalReport
// sends it) and returns the answer's deciding fields: {batch_size,
// trial_number} or {stop_train, converged}.
json ApplyInMemory(BatchSizeOptimizer& optimizer, const Request& request, double target_metric) {
  if (request.hand_out) {
    Trial trial = optimizer.NextTrial();
    return json{{"batch_size", trial.batch_size}, {"trial_number", trial.trial_number}};
  }
  const int64_t number = request.trial["trial_number"].get<int64_t>();
  Observation observation;
  observation.cost = request.cost;
  observation.progress = request.reached ? target_metric : 0.0;
  observation.reached_target = request.reached;
  StatusOr<Verdict> verdict = optimizer.Judge(number, observation);
  EXPECT_TRUE(verdict.ok()) << verdict.status();
  const bool converged = request.reached && verdict.ok() && !verdict->stops();
  Status status = optimizer.ReportResult(number, request.cost, converged);
  EXPECT_TRUE(status.ok()) << status;
  return json{{"stop_train", true}, {"converged", converged}};
}

json Deciding(const HttpReply& reply, bool hand_out) {
  if (reply.status != 200) return json{{"error", reply.raw}};
  if (hand_out) {
    return json{{"batch_size", reply.body["batch_size"]},
                {"trial_number", reply.body["trial_number"]}};
  }
  return json{{"stop_train", reply.body["stop_train"]}, {"converged", reply.body["converged"]}};
}

HttpReply SendRequest(TestClient& client, const std::string& job_id, const Request& request,
                      double target_metric) {
  if (request.hand_out) return Send(client, "GET", "/jobs/batch_size?job_id=" + job_id);
  const json report = FinalReport(request.trial, request.cost, request.reached, target_metric);
  return Send(client, "POST", "/report", report.dump());
}

TEST_P(ReplicaEquivalenceTest, RacingRequestsOnTwoReplicasAreEachAppliedOnce) {
  const std::string policy_name = GetParam();
  TempDir dir;
  std::string skip_reason;
  const std::string url = NewDatabaseUrl(Backend::kPostgres, dir, &skip_reason);
  if (url.empty() && !skip_reason.empty()) GTEST_SKIP() << skip_reason;
  ASSERT_FALSE(url.empty());
  StatusOr<std::vector<Workload>> workloads = LoadA40Workloads();
  ASSERT_TRUE(workloads.ok()) << workloads.status();
  ASSERT_FALSE(workloads->empty());
  const Workload& workload = workloads->front();
  const double target = TargetMetric(workload);

  TestServer first(url);
  ASSERT_TRUE(first.ok()) << first.error();
  TestServer second(url);
  ASSERT_TRUE(second.ok()) << second.error();
  const std::string job_id = "rep-race-" + policy_name;
  {
    TestClient client(first.port());
    const HttpReply registered = Send(
        client, "POST", "/jobs", RegistrationBody(job_id, "rep", policy_name, workload, 5).dump());
    ASSERT_EQ(registered.status, 201) << registered.raw;
  }
  // The reference: the registered state, then every request applied in
  // memory, never decoded from the database again.
  StatusOr<json> initial = StoredState(first.store(), job_id);
  ASSERT_TRUE(initial.ok()) << initial.status();
  StatusOr<BatchSizeOptimizer> reference = BatchSizeOptimizer::FromJson(*initial);
  ASSERT_TRUE(reference.ok()) << reference.status();

  // A run's cost: lowest at batch size 128, rising by 4000 per doubling or
  // halving away from it, with +-20 % noise; one run in seven misses the
  // target.
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> noise(0.8, 1.2);
  auto run_cost = [&](int batch_size) {
    const double base = 1000.0 + 40.0 * std::abs(std::log2(batch_size) - 7.0) * 100.0;
    return base * noise(rng);
  };

  std::vector<json> in_flight;  // Trial bodies handed out and not reported.
  int reports = 0;
  int hand_outs = 0;
  for (int round = 0; round < 80 && !::testing::Test::HasFailure(); ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    // Keep about four trials in flight: two hand-outs when few are, else two
    // reports of random in-flight trials, else a hand-out racing a report.
    Request requests[2];
    if (in_flight.size() < 3) {
      requests[0].hand_out = requests[1].hand_out = true;
    } else {
      const bool mixed = round % 3 == 0;
      for (int k = 0; k < 2; ++k) {
        if (mixed && k == 0) continue;
        std::uniform_int_distribution<size_t> pick(0, in_flight.size() - 1);
        const size_t at = pick(rng);
        requests[k].hand_out = false;
        requests[k].trial = in_flight[at];
        requests[k].cost = run_cost(in_flight[at]["batch_size"].get<int>());
        requests[k].reached = rng() % 7 != 0;
        in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(at));
      }
    }
    // Race: each thread waits for the other before sending.
    HttpReply replies[2];
    std::atomic<int> ready{2};
    std::vector<std::thread> threads;
    for (int k = 0; k < 2; ++k) {
      threads.emplace_back([&, k] {
        TestClient client((k == 0 ? first : second).port());
        ready.fetch_sub(1);
        while (ready.load() > 0) std::this_thread::yield();
        replies[k] = SendRequest(client, job_id, requests[k], target);
      });
    }
    for (std::thread& t : threads) t.join();
    const json answers[2] = {Deciding(replies[0], requests[0].hand_out),
                             Deciding(replies[1], requests[1].hand_out)};

    StatusOr<json> stored = StoredState(second.store(), job_id);
    ASSERT_TRUE(stored.ok()) << stored.status();
    // Which serial order, if any, explains the stored state and both answers.
    std::optional<int> order;
    for (int o = 0; o < 2 && !order; ++o) {
      BatchSizeOptimizer candidate = *reference;
      json expected[2];
      expected[o] = ApplyInMemory(candidate, requests[o], target);
      expected[1 - o] = ApplyInMemory(candidate, requests[1 - o], target);
      if (candidate.ToJson() == *stored && expected[0] == answers[0] && expected[1] == answers[1]) {
        order = o;
        *reference = candidate;
      }
    }
    ASSERT_TRUE(order.has_value())
        << "no serial order of the two racing requests explains the result: answers "
        << answers[0].dump() << " and " << answers[1].dump() << "; stored state " << stored->dump();
    for (int k = 0; k < 2; ++k) {
      if (requests[k].hand_out) {
        in_flight.push_back(replies[k].body);
        ++hand_outs;
      } else {
        ++reports;
      }
    }
  }
  EXPECT_GT(reports, 60);
  EXPECT_GT(hand_outs, 60);

  // Every report is recorded exactly once, whichever replica took it.
  TestClient client(first.port());
  HttpReply trials = Send(client, "GET", "/trials?job_id=" + job_id);
  ASSERT_EQ(trials.status, 200) << trials.raw;
  int succeeded = 0;
  int dispatched = 0;
  for (const json& t : trials.body["trials"]) {
    if (t["status"] == "succeeded") ++succeeded;
    if (t["status"] == "dispatched") ++dispatched;
  }
  EXPECT_EQ(succeeded, reports);
  EXPECT_EQ(dispatched, static_cast<int>(in_flight.size()));
  EXPECT_EQ(static_cast<int>(trials.body["trials"].size()), hand_outs);
  EXPECT_EQ(static_cast<int>(reference->in_flight().size()), dispatched);
}

INSTANTIATE_TEST_SUITE_P(Policies, ReplicaEquivalenceTest, ::testing::Values("swarm", "frugal"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

}  // namespace
}  // namespace zeus::testing
