// swarm: a concurrent trial goes to the probe in flight that learns fastest
// relative to the reference, when it learns faster than the reference did
// (PolicyUnderTest::ConcurrentSize, PaceOf).

#include <optional>

#include <gtest/gtest.h>

#include "zeus/optimizer/batch_size/batch_size_optimizer.h"

#include "tests/optimizer/batch_size/five_sizes_config.h"
#include "tests/optimizer/batch_size/overtaken_first_wave.h"
#include "tests/optimizer/batch_size/policy_under_test.h"

namespace zeus {
namespace {

using testing::Overtaken;
using testing::OvertakeTheFirstWave;

TEST(ConcurrentSizeTest, PaceIsTheCostToGetAsFarOverTheReferences) {
  Overtaken o = OvertakeTheFirstWave();
  // The step first reached 2 at 40, the reference at 16.
  EXPECT_EQ(o.optimizer.PaceOf(o.step.trial_number), 2.5);
  EXPECT_EQ(o.optimizer.PaceOf(o.up.trial_number), std::nullopt);  // No report yet.
  // 16 got no further than the reference's first point (progress 1): too
  // early to tell a pace.
  EXPECT_EQ(o.optimizer.PaceOf(o.deeper.trial_number), std::nullopt);
  // Its best progress counts from where it first got there: 2 at 48, where
  // the reference had spent 16.
  ASSERT_TRUE(o.optimizer.RecordProgress(o.deeper.trial_number, 48, 2).ok());
  ASSERT_TRUE(o.optimizer.RecordProgress(o.deeper.trial_number, 50, 2).ok());
  EXPECT_EQ(o.optimizer.PaceOf(o.deeper.trial_number), 3.0);
  // As far as the reference's target: nothing to compare with.
  ASSERT_TRUE(o.optimizer.RecordProgress(o.step.trial_number, 44, 3).ok());
  EXPECT_EQ(o.optimizer.PaceOf(o.step.trial_number), std::nullopt);
}

TEST(ConcurrentSizeTest, AConcurrentTrialFollowsTheProbeThatLearnsFasterThanTheReference) {
  Overtaken o = OvertakeTheFirstWave();
  PolicyUnderTest& optimizer = o.optimizer;
  // Every size within reach is in flight or known; no probe is faster than
  // the reference: the best size known.
  EXPECT_EQ(optimizer.NextTrial(), (Trial{5, 32, TrialKind::kConcurrent}));
  // 128 got to 1 for less than the reference, but no further than its
  // first point.
  ASSERT_TRUE(optimizer.RecordProgress(o.up.trial_number, 6, 1).ok());
  EXPECT_EQ(optimizer.NextTrial(), (Trial{6, 32, TrialKind::kConcurrent}));
  // Then to 2 at 16, as the reference: not faster.
  ASSERT_TRUE(optimizer.RecordProgress(o.up.trial_number, 16, 2).ok());
  EXPECT_EQ(optimizer.NextTrial(), (Trial{7, 32, TrialKind::kConcurrent}));
  // Then to 2.5 at 18: the reference got as far only at its target (24),
  // which a pace is not measured against.
  ASSERT_TRUE(optimizer.RecordProgress(o.up.trial_number, 18, 2.5).ok());
  EXPECT_EQ(optimizer.PaceOf(o.up.trial_number), std::nullopt);
  EXPECT_EQ(optimizer.NextTrial(), (Trial{8, 32, TrialKind::kConcurrent}));
}

TEST(ConcurrentSizeTest, AFasterProbeTakesEveryConcurrentTrial) {
  Overtaken o = OvertakeTheFirstWave();
  PolicyUnderTest& optimizer = o.optimizer;
  // 128 got to 2 at 12 where the reference spent 16.
  ASSERT_TRUE(optimizer.RecordProgress(o.up.trial_number, 12, 2).ok());
  EXPECT_EQ(optimizer.PaceOf(o.up.trial_number), 0.75);
  EXPECT_EQ(optimizer.NextTrial(), (Trial{5, 128, TrialKind::kConcurrent}));
  // Until it reports otherwise: the step (2.5) and 16 (3.75 at 2) are
  // slower.
  ASSERT_TRUE(optimizer.RecordProgress(o.deeper.trial_number, 60, 2).ok());
  EXPECT_EQ(optimizer.NextTrial(), (Trial{6, 128, TrialKind::kConcurrent}));
  ASSERT_TRUE(optimizer.RecordProgress(o.up.trial_number, 30, 2.5).ok());
  EXPECT_EQ(optimizer.NextTrial(), (Trial{7, 32, TrialKind::kConcurrent}));
}

TEST(ConcurrentSizeTest, AProbeTheWalkCannotUseIsNotFollowed) {
  Overtaken o = OvertakeTheFirstWave();
  PolicyUnderTest& optimizer = o.optimizer;
  ASSERT_TRUE(optimizer.RecordProgress(o.up.trial_number, 12, 2).ok());
  EXPECT_EQ(optimizer.NextTrial().batch_size, 128);
  // The default's step reaches at 60, over 1.25 x 24: the down walk was
  // decisive and will skip the up direction, so 128 is orphaned. The walk
  // takes 32's result and adopts 16 as its step; 8 is speculated on.
  ASSERT_TRUE(optimizer.ReportResult(o.step.trial_number, 60, true).ok());
  EXPECT_EQ(optimizer.NextTrial(), (Trial{6, 8, TrialKind::kSpeculative}));
  EXPECT_EQ(optimizer.NextTrial(), (Trial{7, 32, TrialKind::kConcurrent}));
}

TEST(ConcurrentSizeTest, BeforeAnyRunReachedAndUnderFrugalItIsTheBestSizeKnown) {
  StatusOr<PolicyUnderTest> swarm =
      PolicyUnderTest::Create(testing::FiveSizesConfig(BatchSizePolicyKind::kSwarm));
  ASSERT_TRUE(swarm.ok()) << swarm.status();
  for (int i = 0; i < 4; ++i) swarm->NextTrial();
  // 32 learns fast, but no run has reached the target: no reference.
  ASSERT_TRUE(swarm->RecordProgress(2, 1, 1).ok());
  ASSERT_TRUE(swarm->RecordProgress(2, 2, 2).ok());
  EXPECT_EQ(swarm->PaceOf(2), std::nullopt);
  EXPECT_EQ(swarm->NextTrial(), (Trial{5, 64, TrialKind::kConcurrent}));

  StatusOr<PolicyUnderTest> frugal =
      PolicyUnderTest::Create(testing::FiveSizesConfig(BatchSizePolicyKind::kFrugal));
  ASSERT_TRUE(frugal.ok()) << frugal.status();
  const Trial first = frugal->NextTrial();
  ASSERT_TRUE(frugal->RecordProgress(first.trial_number, 20, 1).ok());
  ASSERT_TRUE(frugal->RecordProgress(first.trial_number, 40, 2).ok());
  ASSERT_TRUE(frugal->RecordProgress(first.trial_number, 60, 3).ok());
  ASSERT_TRUE(frugal->ReportResult(first.trial_number, 60, true).ok());
  const Trial step = frugal->NextTrial();
  EXPECT_EQ(step, (Trial{2, 32, TrialKind::kExploration}));
  ASSERT_TRUE(frugal->RecordProgress(step.trial_number, 5, 2).ok());
  EXPECT_EQ(frugal->PaceOf(step.trial_number), 0.125);
  EXPECT_EQ(frugal->NextTrial(), (Trial{3, 64, TrialKind::kConcurrent}));
}

}  // namespace
}  // namespace zeus
