#include "zeus/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "zeus/core/cost.h"
#include "zeus/optimizer/batch_size/batch_size_optimizer.h"

#include "tests/sim/toy_workload.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

// The shared toy workload with one target epoch per batch size: 32 is cheap
// and always reaches the target in 4 epochs, 64 (default) in 3, 128 never.
Workload SimulatorToyWorkload() {
  Workload w = testing::ToyWorkload();
  w.batch_sizes[0].target_epochs = {4.0, 4.0};
  w.batch_sizes[1].target_epochs = {3.0, 3.0};
  return w;
}

// `w` at eta 0.5.
JobContext Job(const Workload& w) {
  JobContext job;
  job.workload = &w;
  job.eta = 0.5;
  return job;
}

TEST(SimulatorTest, ExecuteRunComputesEnergyFromEpochs) {
  const Workload w = SimulatorToyWorkload();
  Rng rng(1);
  RunPlan plan{1, 64, 200, false, std::nullopt};
  RunOutcome outcome = ExecuteRun(Job(w), plan, rng);
  EXPECT_TRUE(outcome.reached);
  EXPECT_DOUBLE_EQ(outcome.time_s, 3 * 6);
  EXPECT_DOUBLE_EQ(outcome.energy_j, 3 * 6 * 180);
  EXPECT_DOUBLE_EQ(outcome.cost, ZeusCost(3 * 6 * 180, 18, 0.5, 200));
}

TEST(SimulatorTest, ProfilingSpreadsTheFirstEpochOverAllLimits) {
  const Workload w = SimulatorToyWorkload();
  Rng rng(1);
  RunPlan plan{1, 64, 100, true, std::nullopt};
  const RunOutcome outcome = ExecuteRun(Job(w), plan, rng);
  EXPECT_DOUBLE_EQ(outcome.time_s, (6.5 + 6) / 2.0 + 2 * 6.5);
  EXPECT_DOUBLE_EQ(outcome.energy_j, (6.5 * 95 + 6 * 180) / 2.0 + 2 * 6.5 * 95);
}

TEST(SimulatorTest, CostLimitStopsBeforeTheEpochThatWouldPassIt) {
  const Workload w = SimulatorToyWorkload();
  Rng rng(1);
  // Per-epoch cost of 128 at 200 W: 0.5 * 4 * 190 + 0.5 * 200 * 4 = 780.
  RunPlan plan{1, 128, 200, false, 780.0 * 2.5};
  RunOutcome outcome = ExecuteRun(Job(w), plan, rng);
  EXPECT_FALSE(outcome.reached);
  EXPECT_TRUE(outcome.ran);
  EXPECT_DOUBLE_EQ(outcome.time_s, 2 * 4);
  plan.cost_limit = 700.0;
  outcome = ExecuteRun(Job(w), plan, rng);
  EXPECT_FALSE(outcome.ran);
  EXPECT_EQ(outcome.energy_j, 0.0);
  // Without a limit a failing run trains max_epochs.
  plan.cost_limit.reset();
  outcome = ExecuteRun(Job(w), plan, rng);
  EXPECT_DOUBLE_EQ(outcome.time_s, 10 * 4);
}

TEST(SimulatorTest, DefaultAndOracleAreExact) {
  const Workload w = SimulatorToyWorkload();
  ZEUS_ASSERT_OK_AND_ASSIGN(ExpectedRun d, DefaultRun(Job(w)));
  EXPECT_EQ(d.batch_size, 64);
  EXPECT_EQ(d.power_limit_w, 200);
  EXPECT_DOUBLE_EQ(d.cost, 0.5 * 3 * 6 * 180 + 0.5 * 200 * 18);
  ZEUS_ASSERT_OK_AND_ASSIGN(ExpectedRun o, OracleRun(Job(w)));
  // Candidates: 32@100: 0.5*3200+0.5*200*40 = 5600; 32@200: 0.5*3840+0.5*200*32 = 5120;
  // 64@100: 0.5*1852.5+0.5*200*19.5 = 2876.25; 64@200: 3420.
  EXPECT_EQ(o.batch_size, 64);
  EXPECT_EQ(o.power_limit_w, 100);
  EXPECT_DOUBLE_EQ(o.cost, 2876.25);
}

TEST(SimulatorTest, PolicyRegistryKnowsEveryPolicyAndRejectsOthers) {
  const Workload w = SimulatorToyWorkload();
  PolicyContext context;
  context.workload = &w;
  for (const std::string& name : PolicyNames()) {
    ZEUS_EXPECT_OK(MakePolicy(name, context).status());
  }
  EXPECT_EQ(PolicyNames().size(), 10u);
  EXPECT_NE(std::find(PolicyNames().begin(), PolicyNames().end(), "frugal"), PolicyNames().end());
  EXPECT_NE(std::find(PolicyNames().begin(), PolicyNames().end(), "swarm"), PolicyNames().end());
  const Status status = MakePolicy("magic", context).status();
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_NE(status.message().find("grid-search"), std::string::npos);
}

StatusOr<std::vector<RunRecord>> Simulate(const Workload& w, const std::string& policy_name,
                                          uint64_t seed, int recurrences = 0) {
  PolicyContext context;
  context.workload = &w;
  context.seed = seed;
  ZEUS_ASSIGN_OR_RETURN(std::unique_ptr<Policy> policy, MakePolicy(policy_name, context));
  SimulationOptions options;
  options.seed = seed;
  options.num_recurrences = recurrences;
  return SimulateRecurringJob(w, *policy, options);
}

TEST(SimulatorTest, FixedPoliciesRunTheirConfiguration) {
  const Workload w = SimulatorToyWorkload();
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<RunRecord> runs, Simulate(w, "default", 1));
  ASSERT_EQ(runs.size(), static_cast<size_t>(DefaultRecurrences(w)));
  EXPECT_EQ(DefaultRecurrences(w), 12);
  for (const RunRecord& run : runs) {
    EXPECT_EQ(run.batch_size, 64);
    EXPECT_EQ(run.power_limit_w, 200);
  }
  ZEUS_ASSERT_OK_AND_ASSIGN(SimulationSummary summary, Summarize(Job(w), runs, 12));
  EXPECT_DOUBLE_EQ(summary.cost_ratio, 1.0);
  ZEUS_ASSERT_OK_AND_ASSIGN(runs, Simulate(w, "oracle", 1));
  ZEUS_ASSERT_OK_AND_ASSIGN(summary, Summarize(Job(w), runs, 12));
  EXPECT_NEAR(summary.regret, 0.0, 1e-12);
  EXPECT_EQ(summary.final_batch_size, 64);
  EXPECT_EQ(summary.final_power_limit_w, 100);
}

TEST(SimulatorTest, PowerLimitOnlyProfilesOnceThenPinsTheCheapestLimit) {
  const Workload w = SimulatorToyWorkload();
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<RunRecord> runs, Simulate(w, "power-limit-only", 1));
  // 64: epoch cost at 100 W: (0.5*95+100)*6.5 = 958.75; at 200 W: (0.5*180+100)*6 = 1140.
  for (const RunRecord& run : runs) EXPECT_EQ(run.power_limit_w, 100);
  EXPECT_DOUBLE_EQ(runs[0].time_s, (6.5 + 6) / 2.0 + 2 * 6.5);
  EXPECT_DOUBLE_EQ(runs[1].time_s, 3 * 6.5);
}

TEST(SimulatorTest, PowerLimitOnlyBreaksACostTieTowardTheHigherLimit) {
  Workload w = SimulatorToyWorkload();
  // 64: epoch cost at 100 W: 0.5*5*40 + 0.5*200*5 = 600; at 200 W: 0.5*4*100 + 0.5*200*4 = 600.
  w.batch_sizes[1].power = {{100, 5, 40}, {200, 4, 100}};
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<RunRecord> runs, Simulate(w, "power-limit-only", 1));
  ASSERT_FALSE(runs.empty());
  for (const RunRecord& run : runs) EXPECT_EQ(run.power_limit_w, 200);
}

TEST(SimulatorTest, GridSearchTriesEveryConfigurationThenKeepsTheBest) {
  const Workload w = SimulatorToyWorkload();
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<RunRecord> runs, Simulate(w, "grid-search", 1, 10));
  std::set<std::pair<int, int>> tried;
  for (size_t i = 0; i < 6; ++i) tried.insert({runs[i].batch_size, runs[i].power_limit_w});
  EXPECT_EQ(tried.size(), 6u);
  EXPECT_EQ(runs.back().batch_size, 64);
  EXPECT_EQ(runs.back().power_limit_w, 100);
  // 128 never reaches: its tries are retried within the same recurrence.
  EXPECT_EQ(runs[4].recurrence, runs[5].recurrence);
}

TEST(SimulatorTest, ZeusPrunesTheFailingSizeAndIsDeterministic) {
  const Workload w = SimulatorToyWorkload();
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<RunRecord> a, Simulate(w, "zeus", 3, 40));
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<RunRecord> b, Simulate(w, "zeus", 3, 40));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].batch_size, b[i].batch_size);
    EXPECT_EQ(a[i].energy_j, b[i].energy_j);
  }
  // Exploration order: 64, 32 (down), 128 (up, fails and is early-stopped,
  // retried in the same recurrence), then round 2 over {32, 64}.
  EXPECT_EQ(a[0].batch_size, 64);
  EXPECT_EQ(a[1].batch_size, 32);
  EXPECT_EQ(a[2].batch_size, 128);
  EXPECT_FALSE(a[2].reached);
  EXPECT_EQ(a[3].recurrence, a[2].recurrence);
  int count128 = 0;
  for (const RunRecord& run : a) count128 += run.batch_size == 128;
  EXPECT_EQ(count128, 1);
  EXPECT_EQ(a.back().batch_size, 64);
  EXPECT_EQ(a.back().recurrence, 39);
}

// Issue 23, item 4: a Workload built in code (not loaded, so no file check)
// with a time of 1e307 s aborted in the JIT power-limit selection ("check
// failed: chosen_mw.ok()") and one with a limit of 5000000 W wrapped in the
// W -> mW conversion and aborted in ExecuteRun ("check failed: point !=
// nullptr"). Every policy now gets ValidateWorkload's error instead.
TEST(SimulatorTest, OutOfRangeWorkloadsAreRefusedBeforeAnyPolicyRuns) {
  Workload slow = SimulatorToyWorkload();
  slow.batch_sizes[0].power[0].time_per_epoch_s = 1e307;
  Workload huge = SimulatorToyWorkload();
  huge.batch_sizes[0].power[1].power_limit_w = 5'000'000;
  huge.batch_sizes[1].power[1].power_limit_w = 5'000'000;
  huge.batch_sizes[2].power[1].power_limit_w = 5'000'000;
  huge.power_limits_w = {100, 5'000'000};
  huge.max_power_w = 5'000'000;
  Workload wraps = huge;
  for (BatchSizeTrace& b : wraps.batch_sizes) b.power[1].power_limit_w = 4'294'968;
  wraps.power_limits_w = {100, 4'294'968};
  wraps.max_power_w = 4'294'968;
  const Workload valid = SimulatorToyWorkload();
  for (const Workload* w : {&slow, &huge, &wraps}) {
    for (const std::string& name : PolicyNames()) {
      // Some policies plan from the workload as they are made.
      PolicyContext context;
      context.workload = w;
      Status made = MakePolicy(name, context).status();
      EXPECT_EQ(made.code(), StatusCode::kInvalidArgument) << name;
      EXPECT_NE(made.message().find("policy '" + name + "': workload toy toy/net/sgd: "),
                std::string::npos)
          << made;
      // And the simulator checks the workload it runs, whatever the policy saw.
      context.workload = &valid;
      ZEUS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Policy> policy, MakePolicy(name, context));
      SimulationOptions options;
      options.num_recurrences = 4;
      StatusOr<std::vector<RunRecord>> runs = SimulateRecurringJob(*w, *policy, options);
      EXPECT_EQ(runs.status().code(), StatusCode::kInvalidArgument) << name;
      EXPECT_NE(runs.status().message().find("workload toy toy/net/sgd: "), std::string::npos)
          << name << ": " << runs.status();
    }
  }
}

TEST(SimulatorTest, DefaultRecurrencesSaturateInsteadOfOverflowing) {
  Workload w = SimulatorToyWorkload();
  EXPECT_EQ(DefaultRecurrences(w), 2 * 3 * 2);
  // 50000 x 50000 x 2 = 5e9 recurrences: past INT_MAX (signed overflow before).
  w.batch_sizes.resize(50'000);
  w.power_limits_w.resize(50'000);
  EXPECT_EQ(DefaultRecurrences(w), std::numeric_limits<int>::max());
}

TEST(SimulatorTest, PolicyContextIsValidated) {
  const Workload w = SimulatorToyWorkload();
  PolicyContext context;
  context.workload = &w;
  context.eta = std::nan("");
  EXPECT_EQ(MakePolicy("zeus", context).status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(MakePolicy("power-limit-only", context).status().message().find("eta must be in"),
            std::string::npos);
  context.eta = 0.5;
  context.beta = 0.0;
  EXPECT_NE(MakePolicy("zeus", context).status().message().find("beta must be finite and > 0"),
            std::string::npos);
}

TEST(SimulatorTest, ContextCarriesTheOptionsAndPricesAtTheWorkloadsMaxPower) {
  Workload w = SimulatorToyWorkload();
  w.max_power_w = 250;
  SimulationOptions options;
  options.eta = 0.3;
  options.beta = std::nullopt;
  options.seed = 7;
  const JobContext job = options.ContextFor(w);
  EXPECT_EQ(job.workload, &w);
  EXPECT_EQ(job.eta, 0.3);
  EXPECT_FALSE(job.beta.has_value());
  EXPECT_EQ(job.seed, 7u);
  EXPECT_DOUBLE_EQ(job.Cost(1000, 10), ZeusCost(1000, 10, 0.3, 250));
  // The default's expected cost is priced the same way: 3 epochs of 6 s at 180 W.
  ZEUS_ASSERT_OK_AND_ASSIGN(ExpectedRun d, DefaultRun(job));
  EXPECT_DOUBLE_EQ(d.cost, ZeusCost(3 * 6 * 180, 18, 0.3, 250));
  EXPECT_EQ(options.RecurrencesOf(w), DefaultRecurrences(w));
  options.num_recurrences = 3;
  EXPECT_EQ(options.RecurrencesOf(w), 3);
}

TEST(SimulatorTest, OptionsAreValidated) {
  SimulationOptions options;
  options.eta = 1.5;
  EXPECT_NE(options.Validate().message().find("'eta'"), std::string::npos);
  options = SimulationOptions();
  options.beta = -1.0;
  EXPECT_NE(options.Validate().message().find("'beta'"), std::string::npos);
  options = SimulationOptions();
  options.max_tries = 0;
  EXPECT_NE(options.Validate().message().find("'max_tries'"), std::string::npos);
}

}  // namespace
}  // namespace zeus

namespace zeus {
namespace {

// The toy workload with two milestones on the way to the target: 64 (cost
// per epoch 0.5 * 6 * 180 + 0.5 * 200 * 6 = 1140 at 200 W) passes them at
// epochs 1 and 2 and reaches at 3; 32 (0.5 * 8 * 120 + 0.5 * 200 * 8 = 1280
// per epoch) at epochs 2 and 3 and reaches at 4.
Workload MilestoneToyWorkload() {
  Workload w = SimulatorToyWorkload();
  w.milestones = {0.2, 0.4};
  w.batch_sizes[0].milestone_epochs = {{2.0, 3.0}, {2.0, 3.0}};
  w.batch_sizes[1].milestone_epochs = {{1.0, 2.0}, {1.0, 2.0}};
  w.batch_sizes[2].milestone_epochs = {{1.0, std::nullopt}, {1.0, std::nullopt}};
  return w;
}

TEST(SimulatorTest, RecordsTheCurveWhereProgressRisesAndAtTheEnd) {
  const Workload w = MilestoneToyWorkload();
  ZEUS_ASSERT_OK(ValidateWorkload(w));
  Rng rng(1);
  RunPlan plan{1, 32, 200, false, std::nullopt};
  plan.record_progress = true;
  const RunOutcome outcome = ExecuteRun(Job(w), plan, rng);
  ASSERT_TRUE(outcome.reached);
  // Its first epoch, then each epoch its progress rose.
  EXPECT_EQ(outcome.progress, (std::vector<ProgressPoint>{
                                  {1280.0, 0}, {2 * 1280.0, 1}, {3 * 1280.0, 2}, {4 * 1280.0, 3}}));
  EXPECT_DOUBLE_EQ(outcome.progress.back().cost, outcome.cost);
}

TEST(SimulatorTest, ProgressLimitsStopARunThatLearnsSlowerThanTheReference) {
  const Workload w = MilestoneToyWorkload();
  Rng rng(1);
  // 64's curve, held at 1.25x: past progress 0 by 1425, 1 by 2850.
  const std::vector<ProgressPoint> limits = {{1.25 * 1140, 1}, {1.25 * 2280, 2}, {1.25 * 3420, 3}};
  RunPlan plan{1, 32, 200, false, std::nullopt};
  plan.progress_limits = limits;
  plan.record_progress = true;
  // 32 after epoch 1: progress 0 at 1280 <= 1425, goes on; after epoch 2:
  // progress 1 at 2560 <= 2850; after epoch 3: progress 2, and only the
  // target is further along the curve: it reaches.
  RunOutcome outcome = ExecuteRun(Job(w), plan, rng);
  EXPECT_TRUE(outcome.reached);
  // At 1.0x, 32 has spent 1280 > 1140 after epoch 1 without progress: stopped.
  for (ProgressPoint& point : plan.progress_limits) point.cost /= 1.25;
  outcome = ExecuteRun(Job(w), plan, rng);
  EXPECT_FALSE(outcome.reached);
  EXPECT_DOUBLE_EQ(outcome.cost, 1280.0);
  EXPECT_EQ(outcome.progress, (std::vector<ProgressPoint>{{1280.0, 0}}));
  // Without limits the same draw reaches.
  plan.progress_limits.clear();
  EXPECT_TRUE(ExecuteRun(Job(w), plan, rng).reached);
}

// A run whose cost passes its fixed cost_limit stops at its first judgment
// past it: its report without check-ins, or the check-in past it.
TEST(SimulatorTest, AFixedLimitStopsTheRunAtItsFirstJudgmentPastIt) {
  const Workload w = MilestoneToyWorkload();
  Rng rng(1);
  RunPlan plan{1, 32, 200, false, 3900.0};
  plan.exact_cost_limit = true;
  plan.record_progress = true;
  plan.progress_limits = {{1.25 * 1140, 1}, {1.25 * 2280, 2}, {1.25 * 3420, 3}};
  // With no check-in in its 8 s epochs, its report after epoch 4, which
  // reaches the target past the limit: a failure.
  RunOutcome outcome = ExecuteRun(Job(w), plan, rng);
  EXPECT_FALSE(outcome.reached);
  EXPECT_DOUBLE_EQ(outcome.cost, 4 * 1280.0);
  EXPECT_FALSE(outcome.stopped_at_check_in);
  // Checking in every 2 s of its time, it passes 3900 at 24.375 s and stops
  // at the check-in at 26 s, a quarter into epoch 4.
  JobContext checking_in = Job(w);
  checking_in.check_in_s = 2.0;
  outcome = ExecuteRun(checking_in, plan, rng);
  EXPECT_FALSE(outcome.reached);
  EXPECT_DOUBLE_EQ(outcome.cost, 3.25 * 1280.0);
  EXPECT_DOUBLE_EQ(outcome.time_s, 26.0);
  EXPECT_TRUE(outcome.stopped_at_check_in);
  // (A check-in tells no progress: its curve ends at its last report.)
  EXPECT_EQ(outcome.progress.back(), (ProgressPoint{3 * 1280.0, 2}));
  // Passing 2600 in epoch 3: it stops at its report after epoch 3...
  plan.cost_limit = 2600.0;
  outcome = ExecuteRun(Job(w), plan, rng);
  EXPECT_FALSE(outcome.reached);
  EXPECT_DOUBLE_EQ(outcome.cost, 3 * 1280.0);
  EXPECT_EQ(outcome.progress,
            (std::vector<ProgressPoint>{{1280.0, 0}, {2 * 1280.0, 1}, {3 * 1280.0, 2}}));
  // ... or at its check-in at 18 s.
  outcome = ExecuteRun(checking_in, plan, rng);
  EXPECT_FALSE(outcome.reached);
  EXPECT_DOUBLE_EQ(outcome.cost, 2.25 * 1280.0);
  EXPECT_EQ(outcome.progress, (std::vector<ProgressPoint>{{1280.0, 0}, {2 * 1280.0, 1}}));
}

// Check-ins are every check_in_s of the run's time since its last report:
// none in an epoch shorter than that, and a profiled first epoch counts its
// own time.
TEST(SimulatorTest, AnExactLimitIsJudgedAtEachReportAndCheckIn) {
  const Workload w = MilestoneToyWorkload();
  Rng rng(1);
  RunPlan plan{1, 32, 200, false, 1000.0};
  plan.exact_cost_limit = true;
  // Epoch 1 passes 1000 at 6.25 s: stopped at its report (8 s) without
  // check-ins, at 7 s checking in every 7 s, at 8 s every 9 s.
  for (const auto& [check_in_s, time_s] :
       std::vector<std::pair<double, double>>{{0.0, 8.0}, {7.0, 7.0}, {9.0, 8.0}, {1.0, 7.0}}) {
    JobContext job = Job(w);
    job.check_in_s = check_in_s;
    const RunOutcome outcome = ExecuteRun(job, plan, rng);
    EXPECT_FALSE(outcome.reached) << check_in_s;
    EXPECT_TRUE(outcome.ran) << check_in_s;
    EXPECT_DOUBLE_EQ(outcome.time_s, time_s) << check_in_s;
    EXPECT_DOUBLE_EQ(outcome.cost, time_s / 8.0 * 1280.0) << check_in_s;
    EXPECT_EQ(outcome.stopped_at_check_in, time_s < 8.0) << check_in_s;
  }
  // A limit of 0 stops it at its first check-in (or report): it ran.
  plan.cost_limit = 0.0;
  JobContext job = Job(w);
  job.check_in_s = 2.0;
  const RunOutcome outcome = ExecuteRun(job, plan, rng);
  EXPECT_TRUE(outcome.ran);
  EXPECT_DOUBLE_EQ(outcome.time_s, 2.0);
}

// Before its first report a run has shown no progress: its check-ins hold
// it to its curve's first point too;
// after it, reports alone judge its curve.
TEST(SimulatorTest, CheckInsBeforeTheFirstReportJudgeTheCurvesFirstPoint) {
  const Workload w = MilestoneToyWorkload();
  Rng rng(1);
  RunPlan plan{1, 32, 200, false, 5000.0};
  plan.exact_cost_limit = true;
  plan.record_progress = true;
  // Epochs of 1280 over 8 s, a check-in every 7 s; the curve's first
  // point is 1000 (6.25 s).
  plan.progress_limits = {{1000.0, 0}, {3000.0, 1}, {4000.0, 2}};
  JobContext job = Job(w);
  job.check_in_s = 7.0;
  RunOutcome outcome = ExecuteRun(job, plan, rng);
  EXPECT_FALSE(outcome.reached);
  EXPECT_TRUE(outcome.stopped_at_check_in);
  EXPECT_DOUBLE_EQ(outcome.time_s, 8.0 * 0.875);  // The check-in at 7 s.
  EXPECT_DOUBLE_EQ(outcome.cost, 0.875 * 1280.0);
  EXPECT_TRUE(outcome.progress.empty());  // A check-in tells no progress.
  // Without check-ins its first report (1280, progress 0) is within the
  // curve (3000 until progress 1): it runs on.
  job.check_in_s = 0.0;
  outcome = ExecuteRun(job, plan, rng);
  EXPECT_GT(outcome.cost, 1280.0);
}

TEST(SimulatorTest, MilestoneEpochsMustMatchTheSeedRunsAndAscend) {
  Workload w = MilestoneToyWorkload();
  w.batch_sizes[0].milestone_epochs.pop_back();
  EXPECT_EQ(ValidateWorkload(w).code(), StatusCode::kInvalidArgument);
  w = MilestoneToyWorkload();
  w.batch_sizes[0].milestone_epochs[0] = {3.0, 2.0};
  const Status descending = ValidateWorkload(w);
  EXPECT_EQ(descending.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(descending.message().find("ascend"), std::string::npos) << descending;
  w = MilestoneToyWorkload();
  w.batch_sizes[0].milestone_epochs[0] = {std::nullopt, 3.0};  // Harder before easier.
  EXPECT_EQ(ValidateWorkload(w).code(), StatusCode::kInvalidArgument);
  w = MilestoneToyWorkload();
  w.batch_sizes[0].milestone_epochs[0] = {2.0, 5.0};  // After the target (epoch 4).
  EXPECT_EQ(ValidateWorkload(w).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace zeus
