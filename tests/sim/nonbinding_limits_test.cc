// JIT power-limit profiles that skip the limits that cannot bind
// (SimulationOptions::nonbinding_margin, zeus simulate --skip-nonbinding-limits).

#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "zeus/core/power_limit_profile.h"
#include "zeus/sim/job_context.h"
#include "zeus/sim/trace.h"

#include "src/sim/judged_run.h"
#include "src/sim/policies/jit_power_limit.h"

namespace zeus {
namespace {

// One batch size at limits 100-300 W drawing 120 W at 300 W: only 100 W is
// below 120 x 1.2 = 144 W. Above the draw every limit runs as the maximum.
Workload LowDrawWorkload() {
  Workload w;
  w.gpu = "toy";
  w.job = {"toy", "net", "sgd", 0.5, 10, 64};
  w.default_batch_size = 64;
  w.max_power_w = 300;
  w.power_limits_w = {100, 150, 200, 250, 300};
  w.batch_sizes = {
      {64,
       {{100, 12, 95}, {150, 10, 120}, {200, 10, 120}, {250, 10, 120}, {300, 10, 120}},
       {3.0, 4.0}},
  };
  return w;
}

std::vector<int> Limits(const std::vector<const PowerPoint*>& points) {
  std::vector<int> limits;
  for (const PowerPoint* point : points) limits.push_back(point->power_limit_w);
  return limits;
}

TEST(NonbindingLimitsTest, AProfileRunsTheLimitsThatCanBindAndTheMaximum) {
  const Workload w = LowDrawWorkload();
  const BatchSizeTrace& trace = w.batch_sizes.front();
  EXPECT_EQ(Limits(trace.ProfiledPoints(std::nullopt)),
            (std::vector<int>{100, 150, 200, 250, 300}));
  EXPECT_EQ(Limits(trace.ProfiledPoints(kDefaultNonbindingMargin)), (std::vector<int>{100, 300}));
  // A wider margin reaches 150 W (below 120 x 1.5 = 180 W).
  EXPECT_EQ(Limits(trace.ProfiledPoints(0.5)), (std::vector<int>{100, 150, 300}));
}

TEST(NonbindingLimitsTest, TheSkippedLimitsShareOfTheFirstEpochRunsAtTheRunsLimit) {
  const Workload w = LowDrawWorkload();
  const BatchSizeTrace& trace = w.batch_sizes.front();
  JobContext job;
  job.workload = &w;
  const PowerPoint& chosen = *trace.At(100);
  const RunMeter every = RunMeter::Of(job, trace, chosen, /*profile=*/true);
  // An even fifth of the epoch at each limit.
  EXPECT_DOUBLE_EQ(every.first_time_s, (12.0 + 4 * 10.0) / 5);
  job.nonbinding_margin = kDefaultNonbindingMargin;
  const RunMeter skipping = RunMeter::Of(job, trace, chosen, /*profile=*/true);
  // 100 and 300 W profiled; the three skipped fifths at the run's 100 W.
  EXPECT_DOUBLE_EQ(skipping.first_time_s, (12.0 + 10.0 + 3 * 12.0) / 5);
  EXPECT_DOUBLE_EQ(skipping.first_energy_j, (12.0 * 95 + 10.0 * 120 + 3 * 12.0 * 95) / 5);
}

TEST(NonbindingLimitsTest, SkippingChoosesTheLimitAFullProfileChooses) {
  const Workload w = LowDrawWorkload();
  for (double eta : {0.0, 0.5, 1.0}) {
    sim_policies::JitPowerLimit full(w, eta);
    sim_policies::JitPowerLimit skipping(w, eta, kDefaultNonbindingMargin);
    bool profiled_full = false;
    bool profiled_skipping = false;
    EXPECT_EQ(skipping.For(64, &profiled_skipping), full.For(64, &profiled_full)) << eta;
    EXPECT_TRUE(profiled_full);
    EXPECT_TRUE(profiled_skipping);
  }
}

}  // namespace
}  // namespace zeus
