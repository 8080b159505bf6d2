// `zeus serve` hands out and judges a frugal or swarm job as `zeus
// simulate` does: the simulator's recorded group (hand-outs, reports and
// check-ins with the optimizer's verdicts) replayed over HTTP gets the same
// answer at every step (tests/server/equivalence_util.h).

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/server/equivalence_util.h"
#include "tests/server/server_test_util.h"
#include "tests/testing/temp_dir.h"

namespace zeus::testing {
namespace {

class JudgeReplayTest : public ::testing::TestWithParam<std::string> {};

TEST_P(JudgeReplayTest, TheServerAnswersEveryStepAsTheSimulatorDecided) {
  const std::string policy_name = GetParam();
  StatusOr<std::vector<Workload>> workloads = LoadA40Workloads();
  ASSERT_TRUE(workloads.ok()) << workloads.status();
  ASSERT_FALSE(workloads->empty());
  const std::vector<SimulatedJob> jobs = SimulateGroups(*workloads, policy_name, /*seed=*/1);
  ASSERT_EQ(jobs.size(), workloads->size());
  TempDir dir;
  std::string skip_reason;
  TestServer server(NewDatabaseUrl(Backend::kSqlite, dir, &skip_reason));
  ASSERT_TRUE(server.ok()) << server.error();
  TestClient client(server.port());
  const Transcript transcript = Replay(jobs, policy_name, /*seed=*/1, {&client});
  ASSERT_FALSE(::testing::Test::HasFailure());
  // The sequence exercised what it claims to: overlapping trials, check-ins
  // and runs stopped on their bounds.
  EXPECT_GE(transcript.max_in_flight, 3u);
  EXPECT_GT(transcript.check_ins, 100);
  EXPECT_GT(transcript.stops, 5);
  if (policy_name == "swarm") {
    EXPECT_GT(transcript.restarts + transcript.finishes + transcript.runs_on, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, JudgeReplayTest, ::testing::Values("frugal", "swarm"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

}  // namespace
}  // namespace zeus::testing
