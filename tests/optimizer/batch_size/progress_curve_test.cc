// Learning curves (progress_curve.h) and the optimizer's use of them:
// frugal's and swarm's probes stop once they have spent their bound's
// multiple of the reference run's curve.

#include "zeus/optimizer/batch_size/progress_curve.h"

#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "zeus/optimizer/batch_size/batch_size_optimizer.h"

#include "tests/optimizer/batch_size/five_sizes_config.h"
#include "tests/optimizer/batch_size/policy_under_test.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

TEST(ProgressCurveTest, AppendKeepsARunningBestAndRefusesBadPoints) {
  std::vector<ProgressPoint> curve;
  ZEUS_ASSERT_OK(AppendProgress(curve, 10, 0.2));
  ZEUS_ASSERT_OK(AppendProgress(curve, 20, 0.1));  // A dip keeps the best so far.
  ZEUS_ASSERT_OK(AppendProgress(curve, 20, 0.5));
  EXPECT_EQ(curve, (std::vector<ProgressPoint>{{10, 0.2}, {20, 0.2}, {20, 0.5}}));
  const Status down = AppendProgress(curve, 19, 0.6);
  EXPECT_EQ(down.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(down.message().find("cumulative"), std::string::npos) << down;
  EXPECT_EQ(AppendProgress(curve, -1, 0.6).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(AppendProgress(curve, 30, 1e16).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(AppendProgress(curve, 30, std::nan("")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(curve.size(), 3u);  // Nothing recorded by a refusal.
  std::vector<ProgressPoint> full(kMaxProgressPoints, ProgressPoint{1, 1});
  ZEUS_ASSERT_OK(AppendProgress(full, 2, 2));
  EXPECT_EQ(full.size(), kMaxProgressPoints);
}

TEST(ProgressCurveTest, BoundIsTheRatioOfTheFirstPointFurtherAlongExceptTheLast) {
  const std::vector<ProgressPoint> reference = {{10, 1}, {20, 1}, {30, 2}, {50, 3}};
  EXPECT_EQ(ProgressBound(reference, 0, 1.25), 12.5);          // Got past 0 at cost 10.
  EXPECT_EQ(ProgressBound(reference, 1, 1.25), 37.5);          // Past 1 at cost 30.
  EXPECT_EQ(ProgressBound(reference, 1.5, 2.0), 60.0);         // Past 1.5 at cost 30 too.
  EXPECT_EQ(ProgressBound(reference, 2, 1.25), std::nullopt);  // Only the target is further.
  EXPECT_EQ(ProgressBound(reference, 3, 1.25), std::nullopt);
  // Getting as far as a level: at the reference's first point at least there.
  EXPECT_EQ(ProgressReachedBound(reference, kNoProgress, 1.25), 12.5);
  EXPECT_EQ(ProgressReachedBound(reference, 1, 1.25), 12.5);    // At 1 by cost 10.
  EXPECT_EQ(ProgressReachedBound(reference, 1.5, 1.25), 37.5);  // Past 1 at cost 30.
  EXPECT_EQ(ProgressReachedBound(reference, 2, 1.25), 37.5);
  EXPECT_EQ(ProgressReachedBound(reference, 2.5, 1.25), std::nullopt);  // Only the target.
  // A run that got to 1 at 12.5 kept pace; at 13 it did not.
  EXPECT_FALSE(ReachedSlowerThan(reference, {{5, 0}, {12.5, 1}}, 1, 1.25));
  EXPECT_TRUE(ReachedSlowerThan(reference, {{5, 0}, {13, 1}}, 1, 1.25));
  EXPECT_FALSE(ReachedSlowerThan(reference, {{5, 0}}, 1, 1.25));       // Not there.
  EXPECT_FALSE(ReachedSlowerThan(reference, {{99, 2.5}}, 2.5, 1.25));  // No limit.
  EXPECT_EQ(ProgressBound({}, 0, 1.25), std::nullopt);
  EXPECT_EQ(ProgressBound({{50, 3}}, 0, 1.25), std::nullopt);  // The target alone.
}

TEST(ProgressCurveTest, JsonRoundTripAndStrictParsing) {
  const std::vector<ProgressPoint> curve = {{10, 0.5}, {20, 0.75}};
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<ProgressPoint> back,
                            ProgressFromJson(ProgressToJson(curve), "curve"));
  EXPECT_EQ(back, curve);
  for (const char* text : {R"({"a": 1})", R"([[1]])", R"([[1, "x"]])", R"([[2, 1], [1, 2]])",
                           R"([[1, 2], [2, 1]])", R"([[-1, 0]])"}) {
    const StatusOr<std::vector<ProgressPoint>> bad =
        ProgressFromJson(nlohmann::json::parse(text), "curve");
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(bad.status().message().find("'curve'"), std::string::npos) << bad.status();
  }
}

// Reports trial `trial` after epochs of cost 10 each, with `progress` after
// each, then its result.
void RunWithCurve(PolicyUnderTest& optimizer, const Trial& trial,
                  const std::vector<double>& progress, bool reached) {
  double cost = 0;
  for (double p : progress) {
    cost += 10;
    ZEUS_ASSERT_OK(optimizer.RecordProgress(trial.trial_number, cost, p));
  }
  ZEUS_ASSERT_OK(optimizer.ReportResult(trial.trial_number, cost, reached));
}

// A failed probe of `batch_size` counted at its whole bound `bound`:
// censored at it, and one observation of -bound.
void ExpectCensoredAtItsWholeBound(const PolicyUnderTest& optimizer, int batch_size, double bound) {
  EXPECT_EQ(optimizer.censored().at(batch_size), bound);
  bool found = false;
  for (const ArmState& arm : optimizer.ArmStates()) {
    if (arm.batch_size == batch_size && arm.num_observations == 1) {
      found = true;
      EXPECT_DOUBLE_EQ(arm.mean, -bound);
    }
  }
  EXPECT_TRUE(found);
}

TEST(ProgressCurveTest, FrugalProbesAreHeldToTheReferenceCurveAtTheirBoundsMultiple) {
  ZEUS_ASSERT_OK_AND_ASSIGN(
      PolicyUnderTest optimizer,
      PolicyUnderTest::Create(testing::FiveSizesConfig(BatchSizePolicyKind::kFrugal)));
  const Trial first = optimizer.NextTrial();           // The default, 64.
  RunWithCurve(optimizer, first, {1, 2, 3, 4}, true);  // Reached at cost 40.
  EXPECT_EQ(optimizer.reference_progress(),
            (std::vector<ProgressPoint>{{10, 1}, {20, 2}, {30, 3}, {40, 4}}));
  const Trial probe = optimizer.NextTrial();  // 32, held to 1.25 x 40 = 50.
  ASSERT_EQ(probe.kind, TrialKind::kExploration);
  EXPECT_EQ(optimizer.EarlyStopThreshold(probe.trial_number), 50.0);
  EXPECT_EQ(optimizer.EarlyStopThreshold(probe.trial_number, 0), 12.5);  // 1.25 x 10.
  EXPECT_EQ(optimizer.EarlyStopThreshold(probe.trial_number, 2), 37.5);  // 1.25 x 30.
  EXPECT_EQ(optimizer.EarlyStopThreshold(probe.trial_number, 3), 50.0);  // The whole bound.
  EXPECT_EQ(optimizer.ProgressLimits(probe.trial_number),
            (std::vector<ProgressPoint>{{12.5, 1}, {25, 2}, {37.5, 3}, {50, 4}}));
  // A concurrent run of the best size is held to the whole bound only.
  const Trial concurrent = optimizer.NextTrial();
  ASSERT_EQ(concurrent.kind, TrialKind::kConcurrent);
  EXPECT_EQ(optimizer.EarlyStopThreshold(concurrent.trial_number, 0), 80.0);
  EXPECT_TRUE(optimizer.ProgressLimits(concurrent.trial_number).empty());
  // The probe lags: at cost 30 its best progress is 1, which the reference
  // got past at cost 20 (bound 25). Stopped there, it counts at its whole
  // bound (50), not at what it spent, and is censored at that bound.
  ZEUS_ASSERT_OK(optimizer.RecordProgress(probe.trial_number, 10, 0));
  ZEUS_ASSERT_OK(optimizer.RecordProgress(probe.trial_number, 30, 1));
  EXPECT_EQ(optimizer.BestProgress(probe.trial_number), 1.0);
  EXPECT_LT(*optimizer.EarlyStopThreshold(probe.trial_number, 1), 30.0);
  ZEUS_ASSERT_OK(optimizer.ReportResult(probe.trial_number, 30, false));
  ExpectCensoredAtItsWholeBound(optimizer, 32, 50.0);
}

// Patience (a second failure before a steep direction ends) is for one
// unlucky run that missed the bound at the end; a run the curve stopped was
// slower all along and ends the direction.
TEST(ProgressCurveTest, AProbeTheCurveStoppedEndsItsDirectionWhateverItsPatience) {
  for (const bool learned_slower : {false, true}) {
    SCOPED_TRACE(learned_slower ? "curve stop" : "near miss");
    ZEUS_ASSERT_OK_AND_ASSIGN(
        PolicyUnderTest optimizer,
        PolicyUnderTest::Create(testing::FiveSizesConfig(BatchSizePolicyKind::kFrugal)));
    RunWithCurve(optimizer, optimizer.NextTrial(), {1, 2, 3, 4}, true);  // 64 at 40.
    const Trial step = optimizer.NextTrial();                            // 32.
    ASSERT_EQ(step.batch_size, 32);
    // 32 at 40 / 2: a steep slope, which earns the down walk its patience.
    for (int i = 1; i <= 4; ++i)
      ZEUS_ASSERT_OK(optimizer.RecordProgress(step.trial_number, 5 * i, i));
    ZEUS_ASSERT_OK(optimizer.ReportResult(step.trial_number, 20, true));
    const Trial probe = optimizer.NextTrial();  // 16, held to 1.25 x 20 = 25.
    ASSERT_EQ(probe.batch_size, 16);
    if (learned_slower) {
      // Progress 0 at cost 10: past 1.25 x 5, where the reference got further.
      ZEUS_ASSERT_OK(optimizer.RecordProgress(probe.trial_number, 10, 0));
      ZEUS_ASSERT_OK(optimizer.ReportResult(probe.trial_number, 10, false));
    } else {
      // On the reference's pace to its last level, then over the whole bound.
      for (int i = 1; i <= 3; ++i) {
        ZEUS_ASSERT_OK(optimizer.RecordProgress(probe.trial_number, 6 * i, i));
      }
      ZEUS_ASSERT_OK(optimizer.RecordProgress(probe.trial_number, 25, 3));
      ZEUS_ASSERT_OK(optimizer.ReportResult(probe.trial_number, 25, false));
    }
    // The near miss leaves the walk its second chance at 8; the curve stop
    // ends it (and the up direction is skipped: 32 was decisive).
    const Trial next = optimizer.NextTrial();
    if (learned_slower) {
      EXPECT_EQ(next.kind, TrialKind::kBandit);
    } else {
      EXPECT_EQ(next, (Trial{next.trial_number, 8, TrialKind::kExploration}));
    }
  }
}

// swarm: a speculative run the curve stopped keeps that in its result until
// the walk reaches its size, through the stored state.
TEST(ProgressCurveTest, ASpeculativeCurveStopEndsTheDirectionWhenTheWalkReachesIt) {
  ZEUS_ASSERT_OK_AND_ASSIGN(
      PolicyUnderTest optimizer,
      PolicyUnderTest::Create(testing::FiveSizesConfig(BatchSizePolicyKind::kSwarm)));
  const Trial first = optimizer.NextTrial();   // 64.
  const Trial down = optimizer.NextTrial();    // Speculative 32.
  const Trial up = optimizer.NextTrial();      // Speculative 128.
  const Trial deeper = optimizer.NextTrial();  // Speculative 16.
  ASSERT_EQ(down, (Trial{2, 32, TrialKind::kSpeculative}));
  ASSERT_EQ(up.batch_size, 128);
  ASSERT_EQ(deeper, (Trial{4, 16, TrialKind::kSpeculative}));
  RunWithCurve(optimizer, first, {1, 2, 3, 4}, true);  // 64 at 40; 32 is the walk's step.
  // 16 learns slower than 64's curve (1.25 x 10 at progress 0) and stops.
  ZEUS_ASSERT_OK(optimizer.RecordProgress(deeper.trial_number, 20, 0));
  ZEUS_ASSERT_OK(optimizer.ReportResult(deeper.trial_number, 20, false));
  ASSERT_EQ(optimizer.speculative_results().count(16), 1u);
  EXPECT_TRUE(optimizer.speculative_results().at(16).learned_slower);

  const nlohmann::json state = optimizer.ToJson();
  EXPECT_EQ(state["speculative_results"][0]["learned_slower"], true);
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest restored, PolicyUnderTest::FromJson(state));
  EXPECT_EQ(restored.ToJson(), state);
  nlohmann::json reached = state;
  reached["speculative_results"][0]["reached_target"] = true;
  nlohmann::json not_bool = state;
  not_bool["speculative_results"][0]["learned_slower"] = "yes";
  for (const nlohmann::json& bad : {reached, not_bool}) {
    const StatusOr<PolicyUnderTest> refused = PolicyUnderTest::FromJson(bad);
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(refused.status().message().find("learned_slower"), std::string::npos)
        << refused.status();
  }

  // 32 at 20 is steep (2x), yet the walk ends at 16's result: no step at 8.
  RunWithCurve(restored, down, {1, 2}, true);
  EXPECT_EQ(restored.NextTrial().kind, TrialKind::kBandit);
}

// A probe past its exploration bound on the reference's last stretch fails
// the walk there and runs on as a concurrent run to finish its submission.
TEST(ProgressCurveTest, ANearMissFailsTheWalkAndRunsOnToTheRunOnBound) {
  ZEUS_ASSERT_OK_AND_ASSIGN(
      PolicyUnderTest optimizer,
      PolicyUnderTest::Create(testing::FiveSizesConfig(BatchSizePolicyKind::kFrugal)));
  RunWithCurve(optimizer, optimizer.NextTrial(), {1, 2, 3, 4}, true);  // 64 at 40.
  const Trial probe = optimizer.NextTrial();                           // 32, bound 50.
  ASSERT_EQ(probe, (Trial{2, 32, TrialKind::kExploration}));
  // The reference's levels before the target are 1, 2 and 3: from 3 on the
  // curve no longer bounds the probe, and it may run on to beta (2) x 40.
  EXPECT_EQ(optimizer.RunOnBound(probe.trial_number, 2), std::nullopt);
  EXPECT_EQ(optimizer.RunOnBound(probe.trial_number, 3), 80.0);
  EXPECT_EQ(optimizer.RunOn(probe.trial_number, 2).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(optimizer.RunOn(99, 3).code(), StatusCode::kNotFound);
  for (int i = 1; i <= 3; ++i) {
    ZEUS_ASSERT_OK(optimizer.RecordProgress(probe.trial_number, 12 * i, i));
  }
  ZEUS_ASSERT_OK(optimizer.RecordProgress(probe.trial_number, 52, 3));
  // Its best progress within its bound (50) was 3.
  EXPECT_EQ(optimizer.BestProgressWithin(probe.trial_number, 50), 3.0);
  EXPECT_EQ(optimizer.BestProgressWithin(probe.trial_number, 30), 2.0);
  EXPECT_EQ(optimizer.BestProgressWithin(probe.trial_number, 5), std::nullopt);
  ZEUS_ASSERT_OK(optimizer.RunOn(probe.trial_number, 3));
  // The walk's failure at 32 (censored at its bound); the run goes on as a
  // concurrent run held to 80, with no curve.
  EXPECT_EQ(optimizer.censored().at(32), 50.0);
  EXPECT_EQ(optimizer.in_flight().at(probe.trial_number).kind, TrialKind::kConcurrent);
  EXPECT_EQ(optimizer.EarlyStopThreshold(probe.trial_number), 80.0);
  EXPECT_EQ(optimizer.EarlyStopThreshold(probe.trial_number, 3), 80.0);
  EXPECT_TRUE(optimizer.ProgressLimits(probe.trial_number).empty());
  const Trial next = optimizer.NextTrial();  // The down walk ended: up to 128.
  EXPECT_EQ(next, (Trial{3, 128, TrialKind::kExploration}));

  const nlohmann::json state = optimizer.ToJson();
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest restored, PolicyUnderTest::FromJson(state));
  EXPECT_EQ(restored.ToJson(), state);
  EXPECT_EQ(restored.EarlyStopThreshold(probe.trial_number), 80.0);
  // It finishes at 58: an observation of 32, not a new lowest cost.
  ZEUS_ASSERT_OK(restored.ReportResult(probe.trial_number, 58, true));
  EXPECT_EQ(restored.min_cost(), 40.0);

  // zeus never runs on; nor does a concurrent run.
  ZEUS_ASSERT_OK_AND_ASSIGN(
      PolicyUnderTest zeus,
      PolicyUnderTest::Create(testing::FiveSizesConfig(BatchSizePolicyKind::kZeus)));
  RunWithCurve(zeus, zeus.NextTrial(), {1, 2, 3, 4}, true);
  EXPECT_EQ(zeus.RunOnBound(zeus.NextTrial().trial_number, 3), std::nullopt);
  EXPECT_EQ(restored.RunOnBound(restored.NextTrial().trial_number, 3), std::nullopt);
}

// swarm: a speculative run that runs on leaves its failure for the walk.
TEST(ProgressCurveTest, ASpeculativeNearMissLeavesAFailureForTheWalk) {
  ZEUS_ASSERT_OK_AND_ASSIGN(
      PolicyUnderTest optimizer,
      PolicyUnderTest::Create(testing::FiveSizesConfig(BatchSizePolicyKind::kSwarm)));
  const Trial first = optimizer.NextTrial();  // 64.
  optimizer.NextTrial();                      // Speculative 32.
  const Trial up = optimizer.NextTrial();     // Speculative 128.
  ASSERT_EQ(up, (Trial{3, 128, TrialKind::kSpeculative}));
  RunWithCurve(optimizer, first, {1, 2, 3, 4}, true);
  ZEUS_ASSERT_OK(optimizer.RecordProgress(up.trial_number, 52, 3));
  ZEUS_ASSERT_OK(optimizer.RunOn(up.trial_number, 3));
  ASSERT_EQ(optimizer.speculative_results().count(128), 1u);
  EXPECT_EQ(optimizer.speculative_results().at(128).cost, 50.0);
  EXPECT_FALSE(optimizer.speculative_results().at(128).reached_target);
  EXPECT_EQ(optimizer.EarlyStopThreshold(up.trial_number), 80.0);

  // A run that ran on is nearly done: it is never restarted, even once its
  // size's mean cost (90, put into the state) is well above the lowest (40).
  nlohmann::json state = optimizer.ToJson();
  state["costs"].push_back({{"batch_size", 128}, {"costs", {90.0}}});
  nlohmann::json* entry = nullptr;
  for (nlohmann::json& e : state["in_flight"]) {
    if (e["trial_number"] == up.trial_number) entry = &e;
  }
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ((*entry)["ran_on"], true);
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest loaded, PolicyUnderTest::FromJson(state));
  EXPECT_EQ(loaded.RestartThreshold(up.trial_number), std::nullopt);
  nlohmann::json handed_out = state;
  for (nlohmann::json& e : handed_out["in_flight"]) e.erase("ran_on");
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest concurrent, PolicyUnderTest::FromJson(handed_out));
  EXPECT_EQ(concurrent.RestartThreshold(up.trial_number), 90.0 - 40.0);
  // Only a concurrent trial runs on.
  nlohmann::json bad = state;
  int others = 0;
  for (nlohmann::json& e : bad["in_flight"]) {
    if (e["kind"] != "concurrent") {
      e["ran_on"] = true;
      ++others;
    }
  }
  ASSERT_GT(others, 0);
  const StatusOr<PolicyUnderTest> refused = PolicyUnderTest::FromJson(bad);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("ran_on"), std::string::npos) << refused.status();
}

// A check-in (spend between reports) judges the curve only where the run's
// progress was not judged against it: before its first report (at no
// progress), and once the curve changed since its last report, for a run
// that got to its progress slower than the new curve allows.
TEST(ProgressCurveTest, CheckInsJudgeTheCurveBeforeTheFirstReportAndOnceItChanged) {
  ZEUS_ASSERT_OK_AND_ASSIGN(
      PolicyUnderTest optimizer,
      PolicyUnderTest::Create(testing::FiveSizesConfig(BatchSizePolicyKind::kFrugal)));
  RunWithCurve(optimizer, optimizer.NextTrial(), {1, 2, 3, 4}, true);  // 64 at cost 40.
  const Trial probe = optimizer.NextTrial();                           // 32, whole bound 50.
  ASSERT_EQ(probe.kind, TrialKind::kExploration);
  EXPECT_EQ(optimizer.EarlyStopThreshold(probe.trial_number, kNoProgress), 12.5);
  EXPECT_EQ(optimizer.CheckInThreshold(probe.trial_number), 12.5);  // 1.25 x the first point.
  ZEUS_ASSERT_OK(optimizer.RecordProgress(probe.trial_number, 10, 1));
  // That report judged progress 1 against this curve: until the next, the
  // whole bound.
  EXPECT_EQ(optimizer.CheckInThreshold(probe.trial_number), 50.0);
  // A concurrent run of 64 reaches at cost 20 meanwhile: a new reference
  // ({10, 2}, {20, 4}), and a whole bound of 1.25 x 20. The probe got to 1
  // at cost 10, within 1.25 x 10 where the new curve got that far: on pace,
  // it may show more at its next report, so check-ins hold it to its whole
  // bound.
  const Trial concurrent = optimizer.NextTrial();
  ASSERT_EQ(concurrent.kind, TrialKind::kConcurrent);
  EXPECT_EQ(optimizer.CheckInThreshold(concurrent.trial_number), 80.0);  // No curve.
  RunWithCurve(optimizer, concurrent, {2, 4}, true);
  EXPECT_EQ(optimizer.EarlyStopThreshold(probe.trial_number), 25.0);
  EXPECT_EQ(optimizer.CheckInThreshold(probe.trial_number), 25.0);
  // Had it got to 1 at cost 13, it would be behind the new curve there:
  // check-ins hold its progress 1 to it (1.25 x 10), and survive the state.
  nlohmann::json behind = optimizer.ToJson();
  ASSERT_EQ(behind["trial_progress"][0]["curve"], nlohmann::json::parse("[[10, 1]]"));
  behind["trial_progress"][0]["curve"] = nlohmann::json::parse("[[13, 1]]");
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest restored, PolicyUnderTest::FromJson(behind));
  EXPECT_EQ(restored.CheckInThreshold(probe.trial_number), 12.5);
  ZEUS_ASSERT_OK_AND_ASSIGN(restored, PolicyUnderTest::FromJson(restored.ToJson()));
  EXPECT_EQ(restored.CheckInThreshold(probe.trial_number), 12.5);
  // Its next report is judged against the new curve; check-ins after it,
  // against the whole bound again, before and after a round trip.
  ZEUS_ASSERT_OK(optimizer.RecordProgress(probe.trial_number, 12, 2));
  EXPECT_EQ(optimizer.CheckInThreshold(probe.trial_number), 25.0);
  const nlohmann::json state = optimizer.ToJson();
  ASSERT_EQ(state["trial_progress"][0]["curve_at_report"], nlohmann::json({20.0, 1.25}));
  ZEUS_ASSERT_OK_AND_ASSIGN(restored, PolicyUnderTest::FromJson(state));
  EXPECT_EQ(restored.CheckInThreshold(probe.trial_number), 25.0);
  for (const nlohmann::json& key : {nlohmann::json({20.0}), nlohmann::json({20.0, 0.0}),
                                    nlohmann::json({-1.0, 1.25}), nlohmann::json("x")}) {
    nlohmann::json bad = state;
    bad["trial_progress"][0]["curve_at_report"] = key;
    const StatusOr<PolicyUnderTest> refused = PolicyUnderTest::FromJson(bad);
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << key;
    EXPECT_NE(refused.status().message().find("curve_at_report"), std::string::npos)
        << refused.status();
  }
}

// A probe a check-in stopped before its first report spent more than its
// curve allows at no progress: it counts at its whole bound, as a curve stop.
TEST(ProgressCurveTest, AProbeStoppedBeforeItsFirstReportLearnedSlower) {
  ZEUS_ASSERT_OK_AND_ASSIGN(
      PolicyUnderTest optimizer,
      PolicyUnderTest::Create(testing::FiveSizesConfig(BatchSizePolicyKind::kFrugal)));
  RunWithCurve(optimizer, optimizer.NextTrial(), {1, 2, 3, 4}, true);
  const Trial probe = optimizer.NextTrial();
  ZEUS_ASSERT_OK(optimizer.ReportResult(probe.trial_number, 13, false));  // Past 12.5.
  ExpectCensoredAtItsWholeBound(optimizer, 32, 50.0);
}

TEST(ProgressCurveTest, ANewLowestCostBringsItsCurveOrNone) {
  ZEUS_ASSERT_OK_AND_ASSIGN(
      PolicyUnderTest optimizer,
      PolicyUnderTest::Create(testing::FiveSizesConfig(BatchSizePolicyKind::kSwarm)));
  RunWithCurve(optimizer, optimizer.NextTrial(), {1, 2}, true);  // 64 at cost 20.
  const Trial probe = optimizer.NextTrial();
  RunWithCurve(optimizer, probe, {2}, true);  // 32 at cost 10: the new reference.
  EXPECT_EQ(optimizer.reference_progress(), (std::vector<ProgressPoint>{{10, 2}}));
  // A cheaper run without a curve leaves no reference (its pace is unknown).
  const Trial next = optimizer.NextTrial();
  ZEUS_ASSERT_OK(optimizer.ReportResult(next.trial_number, 5, true));
  EXPECT_TRUE(optimizer.reference_progress().empty());
}

TEST(ProgressCurveTest, ZeusRecordsNothingAndIsHeldToTheWholeBound) {
  ZEUS_ASSERT_OK_AND_ASSIGN(
      PolicyUnderTest optimizer,
      PolicyUnderTest::Create(testing::FiveSizesConfig(BatchSizePolicyKind::kZeus)));
  RunWithCurve(optimizer, optimizer.NextTrial(), {1, 2, 3, 4}, true);
  EXPECT_TRUE(optimizer.reference_progress().empty());
  const Trial probe = optimizer.NextTrial();
  ZEUS_ASSERT_OK(optimizer.RecordProgress(probe.trial_number, 10, 0));
  EXPECT_EQ(optimizer.BestProgress(probe.trial_number), std::nullopt);
  EXPECT_EQ(optimizer.EarlyStopThreshold(probe.trial_number, 0),
            optimizer.EarlyStopThreshold(probe.trial_number));
  EXPECT_FALSE(optimizer.ToJson().contains("trial_progress"));
  EXPECT_EQ(optimizer.RecordProgress(999, 10, 0).code(), StatusCode::kNotFound);
}

TEST(ProgressCurveTest, CurvesSurviveTheStateAndBadOnesAreRefused) {
  ZEUS_ASSERT_OK_AND_ASSIGN(
      PolicyUnderTest optimizer,
      PolicyUnderTest::Create(testing::FiveSizesConfig(BatchSizePolicyKind::kFrugal)));
  RunWithCurve(optimizer, optimizer.NextTrial(), {1, 2, 3, 4}, true);
  const Trial probe = optimizer.NextTrial();
  ZEUS_ASSERT_OK(optimizer.RecordProgress(probe.trial_number, 10, 1));
  const nlohmann::json state = optimizer.ToJson();
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest restored, PolicyUnderTest::FromJson(state));
  EXPECT_EQ(restored.ToJson(), state);
  EXPECT_EQ(restored.reference_progress(), optimizer.reference_progress());
  EXPECT_EQ(restored.BestProgress(probe.trial_number), 1.0);

  nlohmann::json not_in_flight = state;
  not_in_flight["trial_progress"][0]["trial_number"] = 99;
  nlohmann::json decreasing = state;
  decreasing["reference_progress"] = {{20, 1}, {10, 2}};
  nlohmann::json zeus = state;
  zeus["config"].erase("policy");
  for (const nlohmann::json& bad : {not_in_flight, decreasing, zeus}) {
    const StatusOr<PolicyUnderTest> refused = PolicyUnderTest::FromJson(bad);
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(refused.status().message().find("progress"), std::string::npos) << refused.status();
  }
}

}  // namespace
}  // namespace zeus
