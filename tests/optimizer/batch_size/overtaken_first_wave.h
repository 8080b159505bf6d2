// A swarm job whose first wave a cheaper run overtook, shared by the finish
// and concurrent-size tests.

#ifndef ZEUS_TESTS_OPTIMIZER_BATCH_SIZE_OVERTAKEN_FIRST_WAVE_H_
#define ZEUS_TESTS_OPTIMIZER_BATCH_SIZE_OVERTAKEN_FIRST_WAVE_H_

#include <utility>

#include <gtest/gtest.h>

#include "zeus/optimizer/batch_size/batch_size_optimizer.h"

#include "tests/optimizer/batch_size/five_sizes_config.h"
#include "tests/optimizer/batch_size/policy_under_test.h"

namespace zeus::testing {

// FiveSizesConfig(kSwarm) after its first wave (the default's step 64,
// speculative 32, 128 and 16): the step reported progress 1 at 20 and 2 at
// 40, 16 progress 1 at 30, then 32 reached the target at 24 (curve 1 at 8,
// 2 at 16, 3 at 24): the lowest cost fell under the step and the others,
// and 32's curve is the reference. 128 has not reported.
struct Overtaken {
  PolicyUnderTest optimizer;
  Trial step, up, deeper;
};

inline Overtaken OvertakeTheFirstWave() {
  StatusOr<PolicyUnderTest> created =
      PolicyUnderTest::Create(FiveSizesConfig(BatchSizePolicyKind::kSwarm));
  EXPECT_TRUE(created.ok()) << created.status();
  PolicyUnderTest optimizer = std::move(*created);
  const Trial step = optimizer.NextTrial();
  const Trial down = optimizer.NextTrial();
  const Trial up = optimizer.NextTrial();
  const Trial deeper = optimizer.NextTrial();
  EXPECT_EQ(step, (Trial{1, 64, TrialKind::kExploration}));
  EXPECT_EQ(down, (Trial{2, 32, TrialKind::kSpeculative}));
  EXPECT_EQ(up, (Trial{3, 128, TrialKind::kSpeculative}));
  EXPECT_EQ(deeper, (Trial{4, 16, TrialKind::kSpeculative}));
  EXPECT_TRUE(optimizer.RecordProgress(step.trial_number, 20, 1).ok());
  EXPECT_TRUE(optimizer.RecordProgress(step.trial_number, 40, 2).ok());
  EXPECT_TRUE(optimizer.RecordProgress(deeper.trial_number, 30, 1).ok());
  EXPECT_TRUE(optimizer.RecordProgress(down.trial_number, 8, 1).ok());
  EXPECT_TRUE(optimizer.RecordProgress(down.trial_number, 16, 2).ok());
  EXPECT_TRUE(optimizer.RecordProgress(down.trial_number, 24, 3).ok());
  EXPECT_TRUE(optimizer.ReportResult(down.trial_number, 24, true).ok());
  EXPECT_EQ(optimizer.min_cost(), 24.0);
  return Overtaken{std::move(optimizer), step, up, deeper};
}

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_OPTIMIZER_BATCH_SIZE_OVERTAKEN_FIRST_WAVE_H_
