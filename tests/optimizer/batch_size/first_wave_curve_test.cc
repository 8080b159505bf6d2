// swarm's first wave: before any run has reached the target, speculative
// trials are held to the curve of the walk's step in flight so far (its
// provisional curve), and a direction whose next size that curve stopped
// lends its speculation depth to the other direction.

#include <limits>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "zeus/optimizer/batch_size/batch_size_optimizer.h"
#include "zeus/optimizer/batch_size/progress_curve.h"

#include "tests/optimizer/batch_size/five_sizes_config.h"
#include "tests/optimizer/batch_size/policy_under_test.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

constexpr double kAhead = std::numeric_limits<double>::infinity();

// The first wave of FiveSizesConfig(kSwarm): the default's step (64), then
// speculative 32, 128 and 16.
struct FirstWave {
  Trial step;
  Trial down;
  Trial up;
  Trial deeper;
};

FirstWave HandOutFirstWave(PolicyUnderTest& optimizer) {
  FirstWave wave{optimizer.NextTrial(), optimizer.NextTrial(), optimizer.NextTrial(),
                 optimizer.NextTrial()};
  EXPECT_EQ(wave.step, (Trial{1, 64, TrialKind::kExploration}));
  EXPECT_EQ(wave.down, (Trial{2, 32, TrialKind::kSpeculative}));
  EXPECT_EQ(wave.up, (Trial{3, 128, TrialKind::kSpeculative}));
  EXPECT_EQ(wave.deeper, (Trial{4, 16, TrialKind::kSpeculative}));
  return wave;
}

TEST(FirstWaveCurveTest, SpeculativeTrialsAreHeldToTheStepInFlightEveryPointOfIt) {
  ZEUS_ASSERT_OK_AND_ASSIGN(
      PolicyUnderTest optimizer,
      PolicyUnderTest::Create(testing::FiveSizesConfig(BatchSizePolicyKind::kSwarm)));
  const FirstWave wave = HandOutFirstWave(optimizer);
  // Nothing bounds them before the step has reported.
  EXPECT_EQ(optimizer.provisional_reference(), std::nullopt);
  EXPECT_EQ(optimizer.CheckInThreshold(wave.down.trial_number), std::nullopt);
  EXPECT_TRUE(optimizer.ProgressLimits(wave.down.trial_number).empty());

  ZEUS_ASSERT_OK(optimizer.RecordProgress(wave.step.trial_number, 10, 1));
  EXPECT_EQ(optimizer.provisional_reference(), wave.step.trial_number);
  // 1.25 x its first point, which bounds a probe as its last point too (the
  // target is still ahead); no whole bound yet.
  EXPECT_EQ(optimizer.ProgressLimits(wave.down.trial_number),
            (std::vector<ProgressPoint>{{12.5, 1}, {kAhead, kAhead}}));
  EXPECT_EQ(optimizer.CheckInThreshold(wave.down.trial_number), 12.5);
  EXPECT_EQ(optimizer.EarlyStopThreshold(wave.down.trial_number, 0.5), 12.5);
  EXPECT_EQ(optimizer.EarlyStopThreshold(wave.down.trial_number, 1), std::nullopt);
  EXPECT_EQ(optimizer.EarlyStopThreshold(wave.down.trial_number), std::nullopt);
  // The step is not held to its own curve, nor a concurrent run of its size.
  EXPECT_EQ(optimizer.EarlyStopThreshold(wave.step.trial_number, 0.5), std::nullopt);
  const Trial concurrent = optimizer.NextTrial();
  ASSERT_EQ(concurrent, (Trial{5, 64, TrialKind::kConcurrent}));
  EXPECT_EQ(optimizer.CheckInThreshold(concurrent.trial_number), std::nullopt);

  // 32 reports progress 1 at 12 (on pace); the step then gets to 2 at 20.
  ZEUS_ASSERT_OK(optimizer.RecordProgress(wave.down.trial_number, 12, 1));
  EXPECT_EQ(optimizer.CheckInThreshold(wave.down.trial_number), std::nullopt);
  ZEUS_ASSERT_OK(optimizer.RecordProgress(wave.step.trial_number, 20, 2));
  EXPECT_EQ(optimizer.EarlyStopThreshold(wave.down.trial_number, 1), 25.0);
  // A changed curve, but 32 got to 1 within it (12 <= 12.5): until its next
  // report, nothing; behind it, the curve at its progress.
  EXPECT_EQ(optimizer.CheckInThreshold(wave.down.trial_number), std::nullopt);
  ZEUS_ASSERT_OK(optimizer.RecordProgress(wave.deeper.trial_number, 13, 1));
  ZEUS_ASSERT_OK(optimizer.RecordProgress(wave.step.trial_number, 30, 3));
  EXPECT_EQ(optimizer.CheckInThreshold(wave.deeper.trial_number), 25.0);

  // The state keeps all of it.
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest restored,
                            PolicyUnderTest::FromJson(optimizer.ToJson()));
  EXPECT_EQ(restored.ToJson(), optimizer.ToJson());
  for (const PolicyUnderTest* o : {&optimizer, &restored}) {
    EXPECT_EQ(o->provisional_reference(), wave.step.trial_number);
    EXPECT_EQ(o->CheckInThreshold(wave.deeper.trial_number), 25.0);
    EXPECT_EQ(o->EarlyStopThreshold(wave.down.trial_number, 1), 25.0);
  }

  // 16 stops there, learned slower; the step reaches at 40 and becomes the
  // reference (its last point the target), and the curve's bound is the
  // exploration bound's again.
  ZEUS_ASSERT_OK(optimizer.ReportResult(wave.deeper.trial_number, 26, false));
  ASSERT_EQ(optimizer.speculative_results().count(16), 1u);
  EXPECT_TRUE(optimizer.speculative_results().at(16).learned_slower);
  EXPECT_EQ(optimizer.speculative_results().at(16).cost, 26.0);
  ZEUS_ASSERT_OK(optimizer.RecordProgress(wave.step.trial_number, 40, 4));
  ZEUS_ASSERT_OK(optimizer.ReportResult(wave.step.trial_number, 40, true));
  EXPECT_EQ(optimizer.provisional_reference(), std::nullopt);
  EXPECT_EQ(optimizer.EarlyStopThreshold(wave.down.trial_number), 50.0);
  EXPECT_EQ(optimizer.ProgressLimits(wave.down.trial_number),
            (std::vector<ProgressPoint>{{12.5, 1}, {25, 2}, {37.5, 3}, {50, 4}}));

  // 32, now the walk's step, reaches at 36: the walk goes on to 16, whose
  // run the curve stopped at 26, below the exploration bound now (1.25 x
  // 36): censored at that bound, and the down direction ends there; the
  // walk turns up, to 128's run in flight.
  ASSERT_EQ(optimizer.in_flight().at(wave.down.trial_number).kind, TrialKind::kExploration);
  ZEUS_ASSERT_OK(optimizer.ReportResult(wave.down.trial_number, 36, true));
  EXPECT_EQ(optimizer.censored().at(16), 45.0);
  EXPECT_EQ(optimizer.in_flight().at(wave.up.trial_number).kind, TrialKind::kExploration);
}

TEST(FirstWaveCurveTest, ADirectionTheCurveEndedLendsItsDepthToTheOther) {
  ZEUS_ASSERT_OK_AND_ASSIGN(
      PolicyUnderTest optimizer,
      PolicyUnderTest::Create(testing::FiveSizesConfig(BatchSizePolicyKind::kSwarm)));
  const FirstWave wave = HandOutFirstWave(optimizer);
  ZEUS_ASSERT_OK(optimizer.RecordProgress(wave.step.trial_number, 10, 1));
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest twin, PolicyUnderTest::FromJson(optimizer.ToJson()));

  // 128, the up direction's next size, fails without the curve stopping
  // it: the up direction still has its depth, and nothing is left to
  // speculate on (8 is three sizes down).
  ZEUS_ASSERT_OK(twin.ReportResult(wave.up.trial_number, 5, false));
  EXPECT_FALSE(twin.speculative_results().at(128).learned_slower);
  EXPECT_EQ(twin.NextTrial(), (Trial{5, 64, TrialKind::kConcurrent}));

  // The curve stops 128 (13 spent at no progress, past 12.5): the up
  // direction ends there, so its depth goes down, to 8.
  ZEUS_ASSERT_OK(optimizer.ReportResult(wave.up.trial_number, 13, false));
  EXPECT_TRUE(optimizer.speculative_results().at(128).learned_slower);
  EXPECT_EQ(optimizer.NextTrial(), (Trial{5, 8, TrialKind::kSpeculative}));
}

}  // namespace
}  // namespace zeus
