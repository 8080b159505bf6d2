// No submission is abandoned: from a submission's try kMaxStoppableTries + 1
// on, the optimizer hands out a trial that may finish (Trial::may_finish),
// whatever the policy and phase; and a state written before this rule
// existed loads and continues.

#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "zeus/optimizer/batch_size/batch_size_optimizer.h"

#include "tests/optimizer/batch_size/five_sizes_config.h"
#include "tests/optimizer/batch_size/policy_under_test.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

using testing::FiveSizesConfig;

PolicyUnderTest Make(BatchSizePolicyKind policy) {
  return std::move(PolicyUnderTest::Create(FiveSizesConfig(policy))).value();
}

TEST(NoAbandonedSubmissionTest, ProbesAndRestartableRunsMayNotFinishOnAFirstTry) {
  PolicyUnderTest swarm = Make(BatchSizePolicyKind::kSwarm);
  const Trial step = swarm.NextTrial();
  EXPECT_EQ(step.kind, TrialKind::kExploration);
  EXPECT_FALSE(step.may_finish);  // Held to the exploration bound.
  const Trial speculative = swarm.NextTrial();
  EXPECT_EQ(speculative.kind, TrialKind::kSpeculative);
  EXPECT_FALSE(speculative.may_finish);
  // zeus holds every run to beta x the lowest cost alone.
  PolicyUnderTest zeus = Make(BatchSizePolicyKind::kZeus);
  EXPECT_TRUE(zeus.NextTrial().may_finish);
  EXPECT_TRUE(zeus.NextTrial(/*attempt=*/5).may_finish);
}

TEST(NoAbandonedSubmissionTest, AThirdTryDuringTheWalkIsAConcurrentRunAtTheBestSizeNeverRestarted) {
  for (BatchSizePolicyKind policy : {BatchSizePolicyKind::kFrugal, BatchSizePolicyKind::kSwarm}) {
    SCOPED_TRACE(std::string(BatchSizePolicyName(policy)));
    PolicyUnderTest optimizer = Make(policy);
    const Trial step = optimizer.NextTrial();
    ASSERT_TRUE(optimizer.ReportResult(step.trial_number, 100.0, true).ok());
    // A second try may still be a probe.
    const Trial second = optimizer.NextTrial(kMaxStoppableTries);
    EXPECT_FALSE(second.may_finish);
    const Trial third = optimizer.NextTrial(kMaxStoppableTries + 1);
    EXPECT_TRUE(third.may_finish);
    EXPECT_EQ(third.kind, TrialKind::kConcurrent);
    EXPECT_EQ(third.batch_size, optimizer.best_batch_size());
    // Held to beta x the lowest cost when it was handed out, and never
    // restarted, whatever cheaper size is found meanwhile.
    EXPECT_EQ(optimizer.EarlyStopThreshold(third.trial_number), 200.0);
    ASSERT_TRUE(optimizer.ReportResult(second.trial_number, 50.0, true).ok());
    EXPECT_EQ(optimizer.EarlyStopThreshold(third.trial_number), 200.0);
    EXPECT_EQ(optimizer.RestartThreshold(third.trial_number), std::nullopt);
    Observation early;
    early.cost = 1.0;
    early.check_in = true;
    ZEUS_ASSERT_OK_AND_ASSIGN(const Verdict verdict, optimizer.Judge(third.trial_number, early));
    EXPECT_FALSE(verdict.stops());
    // It stays so across a restart of the service.
    ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest restored,
                              PolicyUnderTest::FromJson(optimizer.ToJson()));
    EXPECT_TRUE(restored.in_flight().at(third.trial_number).may_finish);
    EXPECT_EQ(restored.RestartThreshold(third.trial_number), std::nullopt);
  }
}

// Before any run reached the target the best size is the default, and a
// must-finish run there has no bound at all.
TEST(NoAbandonedSubmissionTest, AThirdTryBeforeAnyRunReachedGoesToTheDefaultUnbounded) {
  PolicyUnderTest optimizer = Make(BatchSizePolicyKind::kSwarm);
  optimizer.NextTrial();
  const Trial third = optimizer.NextTrial(kMaxStoppableTries + 1);
  EXPECT_TRUE(third.may_finish);
  EXPECT_EQ(third.batch_size, 64);
  EXPECT_EQ(optimizer.EarlyStopThreshold(third.trial_number), std::nullopt);
}

std::string ReadTestdata(const std::string& name) {
  std::ifstream in(std::string(ZEUS_SOURCE_DIR) + "/tests/optimizer/batch_size/testdata/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// States written by the release before this one (commit 1a5fb59: a swarm
// first wave with a reference curve, curves in flight, a censored size)
// load, write back unchanged, and continue.
TEST(NoAbandonedSubmissionTest, AStateWrittenByThePreviousReleaseLoadsAndContinues) {
  for (const char* name : {"swarm_state_1a5fb59.json", "frugal_state_1a5fb59.json"}) {
    SCOPED_TRACE(name);
    const std::string text = ReadTestdata(name);
    ASSERT_FALSE(text.empty());
    const nlohmann::json stored = nlohmann::json::parse(text);
    ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::FromJson(stored));
    EXPECT_EQ(optimizer.ToJson(), stored);
    ASSERT_FALSE(optimizer.in_flight().empty());
    const int64_t first = optimizer.in_flight().begin()->first;
    ZEUS_EXPECT_OK(optimizer.ReportResult(first, 25.0, true));
    const Trial next = optimizer.NextTrial();
    EXPECT_GT(next.trial_number, first);
  }
}

}  // namespace
}  // namespace zeus
