// swarm: a probe the lowest cost overtook while it ran finishes when its
// learning curve projects it to the target for less than a fresh run costs
// (PolicyUnderTest::FinishCandidate, FinishBound, Finish).

#include <optional>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "zeus/optimizer/batch_size/batch_size_optimizer.h"
#include "zeus/optimizer/batch_size/progress_curve.h"

#include "tests/optimizer/batch_size/five_sizes_config.h"
#include "tests/optimizer/batch_size/overtaken_first_wave.h"
#include "tests/optimizer/batch_size/policy_under_test.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

using testing::Overtaken;
using testing::OvertakeTheFirstWave;

TEST(FinishTest, AProbeTheLowestCostOvertookFinishesWhenItsCurveSaysThatIsCheaper) {
  Overtaken o = OvertakeTheFirstWave();
  PolicyUnderTest& optimizer = o.optimizer;
  // The step's curve changed since its last report; it first got to its
  // best progress, 2, at 40.
  const std::optional<ProgressPoint> best = optimizer.FinishCandidate(o.step.trial_number);
  ASSERT_EQ(best, (ProgressPoint{40, 2}));
  // Its bound now: beta x 24 (a run further along its direction reached
  // within the exploration bound). At its pace (40 where the reference had
  // spent 16) it reaches the target at 40 / 16 x 24 = 60: judged at 50,
  // 10 more, less than a fresh run (24): it finishes, held to 50 + 24.
  EXPECT_EQ(optimizer.EarlyStopThreshold(o.step.trial_number), 48.0);
  EXPECT_EQ(optimizer.FinishBound(o.step.trial_number, *best, 50), 74.0);
  // Judged where 60 - cost is 24 or more, it stops.
  EXPECT_EQ(optimizer.FinishBound(o.step.trial_number, *best, 36), std::nullopt);
  EXPECT_EQ(optimizer.FinishBound(o.step.trial_number, *best, 36.5), 60.5);

  // 16 got to 1 at 30 where the reference spent 8: 90 projected, 55 more
  // at 35; it stops.
  const std::optional<ProgressPoint> deeper = optimizer.FinishCandidate(o.deeper.trial_number);
  ASSERT_EQ(deeper, (ProgressPoint{30, 1}));
  EXPECT_EQ(optimizer.FinishBound(o.deeper.trial_number, *deeper, 35), std::nullopt);
  EXPECT_EQ(optimizer.Finish(o.deeper.trial_number, *deeper, 35).code(),
            StatusCode::kFailedPrecondition);

  // A probe that reported since under the same curve is no candidate; nor
  // one that never reported.
  EXPECT_EQ(optimizer.FinishCandidate(o.up.trial_number), std::nullopt);
  ZEUS_ASSERT_OK(optimizer.RecordProgress(o.up.trial_number, 12, 1));
  EXPECT_EQ(optimizer.FinishCandidate(o.up.trial_number), std::nullopt);

  ZEUS_ASSERT_OK(optimizer.Finish(o.step.trial_number, *best, 50));
  // Held to that bound alone from now on, whatever the lowest cost does.
  EXPECT_EQ(optimizer.EarlyStopThreshold(o.step.trial_number), 74.0);
  EXPECT_EQ(optimizer.EarlyStopThreshold(o.step.trial_number, 2), 74.0);
  EXPECT_EQ(optimizer.CheckInThreshold(o.step.trial_number), 74.0);
  EXPECT_TRUE(optimizer.ProgressLimits(o.step.trial_number).empty());
  EXPECT_EQ(optimizer.RunOnBound(o.step.trial_number, 2), std::nullopt);
  EXPECT_EQ(optimizer.FinishCandidate(o.step.trial_number), std::nullopt);
  EXPECT_EQ(optimizer.FinishBound(o.step.trial_number, *best, 60), std::nullopt);
  EXPECT_EQ(optimizer.in_flight().at(o.step.trial_number).kind, TrialKind::kExploration);

  // The state keeps it.
  const nlohmann::json state = optimizer.ToJson();
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest loaded, PolicyUnderTest::FromJson(state));
  EXPECT_EQ(loaded.ToJson(), state);
  EXPECT_EQ(loaded.EarlyStopThreshold(o.step.trial_number), 74.0);

  // Its result is the walk's: reaching at 70 (dearer than 32's 24) ends
  // the step; the walk goes on down.
  ZEUS_ASSERT_OK(optimizer.ReportResult(o.step.trial_number, 70, true));
  EXPECT_EQ(optimizer.EarlyStopThreshold(o.step.trial_number), optimizer.EarlyStopThreshold());
  EXPECT_EQ(optimizer.min_cost(), 24.0);
  EXPECT_EQ(optimizer.best_batch_size(), 32);
}

TEST(FinishTest, OnlySwarmProbesFinishAndAStoredBoundIsChecked) {
  Overtaken o = OvertakeTheFirstWave();
  const ProgressPoint best{40, 2};
  ZEUS_ASSERT_OK(o.optimizer.Finish(o.step.trial_number, best, 50));
  nlohmann::json state = o.optimizer.ToJson();
  nlohmann::json* entry = nullptr;
  for (nlohmann::json& e : state["in_flight"]) {
    if (e["trial_number"] == o.step.trial_number) entry = &e;
  }
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ((*entry)["finish_bound"], 74.0);

  nlohmann::json bad = state;
  for (nlohmann::json& e : bad["in_flight"]) {
    if (e["trial_number"] == o.step.trial_number) e["finish_bound"] = -1.0;
  }
  StatusOr<PolicyUnderTest> refused = PolicyUnderTest::FromJson(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("finish_bound"), std::string::npos) << refused.status();

  // A concurrent trial does not finish (it keeps the bound it was handed).
  bad = state;
  for (nlohmann::json& e : bad["in_flight"]) {
    if (e["trial_number"] == o.step.trial_number) e["kind"] = "concurrent";
  }
  refused = PolicyUnderTest::FromJson(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("finish_bound"), std::string::npos) << refused.status();

  // frugal never lets a run finish: one submission at a time, no lowest
  // cost falls under a run.
  ZEUS_ASSERT_OK_AND_ASSIGN(
      PolicyUnderTest frugal,
      PolicyUnderTest::Create(testing::FiveSizesConfig(BatchSizePolicyKind::kFrugal)));
  const Trial first = frugal.NextTrial();
  ZEUS_ASSERT_OK(frugal.RecordProgress(first.trial_number, 10, 1));
  EXPECT_EQ(frugal.FinishCandidate(first.trial_number), std::nullopt);
  EXPECT_EQ(frugal.FinishBound(first.trial_number, {10, 1}, 20), std::nullopt);
}

}  // namespace
}  // namespace zeus
