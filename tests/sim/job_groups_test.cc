#include "zeus/sim/job_groups.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/sim/toy_workload.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

using testing::ToyWorkload;

std::unique_ptr<Policy> Zeus(const Workload& w, uint64_t seed) {
  PolicyContext context;
  context.workload = &w;
  context.seed = seed;
  return std::move(MakePolicy("zeus", context)).value();
}

TEST(JobGroupsTest, LoadsGroupsSortedByStartTime) {
  testing::TempDir dir;
  const std::string path = dir.WriteFile("groups.csv",
                                         "group,start_time,end_time,dataset,runtime_ratio\n"
                                         "a,100,200,toy,1.5\n"
                                         "b,0,10,toy,1\n"
                                         "a,50,300,toy,0.5\n");
  ZEUS_ASSERT_OK_AND_ASSIGN(JobGroups groups, LoadJobGroups(path));
  ASSERT_EQ(groups.size(), 2u);
  ASSERT_EQ(groups["a"].size(), 2u);
  EXPECT_EQ(groups["a"][0].start_time_s, 50);
  EXPECT_EQ(groups["a"][1].runtime_ratio, 1.5);
}

TEST(JobGroupsTest, RejectsBadRowsWithLocation) {
  testing::TempDir dir;
  auto load = [&](const std::string& row) {
    return LoadJobGroups(
               dir.WriteFile("g.csv", "group,start_time,end_time,dataset,runtime_ratio\n" + row))
        .status();
  };
  Status status = load("a,100,50,toy,1\n");
  EXPECT_NE(status.message().find("g.csv:2:3: column 'end_time'"), std::string::npos) << status;
  status = load("a,0,50,toy,0\n");
  EXPECT_NE(status.message().find("g.csv:2:5: column 'runtime_ratio'"), std::string::npos)
      << status;
  status = load("a,0,50,toy,1\na,1,60,other,1\n");
  EXPECT_NE(status.message().find("mixes datasets"), std::string::npos) << status;
  status = load("a,x,50,toy,1\n");
  EXPECT_NE(status.message().find("column 'start_time'"), std::string::npos) << status;
}

// The original Zeus's Alibaba group trace (trace/alibaba_groups.csv.xz,
// decompressed): pandas' unnamed index column first, then group, dataset,
// start_time, end_time, runtime_ratio, with integer group ids.
TEST(JobGroupsTest, LoadsTheOriginalAlibabaGroupLayout) {
  testing::TempDir dir;
  const std::string path = dir.WriteFile("alibaba_groups.csv",
                                         ",group,dataset,start_time,end_time,runtime_ratio\n"
                                         "0,17,toy,3600.0,9000.5,1.25\n"
                                         "1,17,toy,1800.0,2400.0,0.5\n"
                                         "2,4,toy,0.0,60.0,1.0\n");
  ZEUS_ASSERT_OK_AND_ASSIGN(JobGroups groups, LoadJobGroups(path));
  ASSERT_EQ(groups.size(), 2u);
  ASSERT_EQ(groups["17"].size(), 2u);
  EXPECT_EQ(groups["17"][0].start_time_s, 1800.0);
  EXPECT_EQ(groups["17"][1].end_time_s, 9000.5);
  EXPECT_EQ(groups["17"][1].runtime_ratio, 1.25);
  EXPECT_EQ(groups["4"][0].dataset, "toy");
  // A bad row of that layout is named by file, line and column.
  const Status bad =
      LoadJobGroups(dir.WriteFile("bad.csv",
                                  ",group,dataset,start_time,end_time,runtime_ratio\n"
                                  "0,17,toy,0,10,1\n"
                                  "1,17,toy,5,oops,1\n"))
          .status();
  EXPECT_NE(bad.message().find("bad.csv:3:5: column 'end_time'"), std::string::npos) << bad;
}

TEST(JobGroupsTest, RefusesACompressedTraceWithAHint) {
  testing::TempDir dir;
  const std::string xz = dir.WriteFile("groups.csv.xz", std::string("\xFD"
                                                                    "7zXZ\0\x04\xE6",
                                                                    8));
  Status status = LoadJobGroups(xz).status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("xz -dk"), std::string::npos) << status;
  const std::string gz = dir.WriteFile("groups.csv.gz", std::string("\x1F\x8B\x08\0", 4));
  status = LoadJobGroups(gz).status();
  EXPECT_NE(status.message().find("gzip -dk"), std::string::npos) << status;
}

TEST(JobGroupsTest, RejectsOutOfRangeValuesWithLocationAndRange) {
  testing::TempDir dir;
  auto load = [&](const std::string& row) {
    return LoadJobGroups(
               dir.WriteFile("g.csv", "group,start_time,end_time,dataset,runtime_ratio\n" + row))
        .status();
  };
  Status status = load("a,0,50,toy,1e300\n");
  EXPECT_NE(status.message().find("g.csv:2:5: column 'runtime_ratio': expected a ratio in "
                                  "[1e-06, 1e+06], got '1e300'"),
            std::string::npos)
      << status;
  status = load("a,0,50,toy,1e-300\n");
  EXPECT_NE(status.message().find("g.csv:2:5:"), std::string::npos) << status;
  status = load("a,-1e300,50,toy,1\n");
  EXPECT_NE(status.message().find("g.csv:2:2: column 'start_time': expected a time in "
                                  "[-1e+12, 1e+12] s, got '-1e300'"),
            std::string::npos)
      << status;
  status = load("a,0,1e300,toy,1\n");
  EXPECT_NE(status.message().find("g.csv:2:3: column 'end_time'"), std::string::npos) << status;
  // A BOM before the header is not part of the first column's name.
  ZEUS_ASSERT_OK_AND_ASSIGN(
      JobGroups groups,
      LoadJobGroups(dir.WriteFile(
          "bom.csv",
          "\xEF\xBB\xBFgroup,start_time,end_time,dataset,runtime_ratio\na,0,5,toy,1\n")));
  EXPECT_EQ(groups.count("a"), 1u);
}

TEST(JobGroupsTest, SimulationRefusesOutOfRangeSubmissions) {
  const Workload w = ToyWorkload();
  std::unique_ptr<Policy> policy = Zeus(w, 1);
  std::vector<JobSubmission> submissions = {{"g", 0, 10, "toy", 1e300}};
  Status status = SimulateJobGroup(w, *policy, submissions, SimulationOptions()).status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("job group 'g': submission 0"), std::string::npos) << status;
  Workload slow = w;
  slow.batch_sizes[0].power[0].time_per_epoch_s = 1e307;
  submissions = {{"g", 0, 10, "toy", 1}};
  status = SimulateJobGroup(slow, *policy, submissions, SimulationOptions()).status();
  EXPECT_NE(status.message().find("time_per_epoch_s must be in"), std::string::npos) << status;
}

TEST(JobGroupsTest, GeneratorIsSeededAndOverlaps) {
  JobGroupGeneratorOptions options;
  options.num_groups = 3;
  options.submissions_per_group = 50;
  ZEUS_ASSERT_OK_AND_ASSIGN(JobGroups a, GenerateJobGroups(options, {"x", "y"}));
  ZEUS_ASSERT_OK_AND_ASSIGN(JobGroups b, GenerateJobGroups(options, {"x", "y"}));
  ASSERT_EQ(a.size(), 3u);
  int overlaps = 0;
  for (const auto& [name, group] : a) {
    ASSERT_EQ(group.size(), 50u);
    for (size_t i = 0; i < group.size(); ++i) {
      EXPECT_EQ(group[i].start_time_s, b[name][i].start_time_s);
      EXPECT_GE(group[i].end_time_s, group[i].start_time_s);
      if (i > 0) {
        EXPECT_GE(group[i].start_time_s, group[i - 1].start_time_s);
        overlaps += group[i].start_time_s < group[i - 1].end_time_s;
      }
    }
  }
  EXPECT_GT(overlaps, 30);
  options.seed = 2;
  ZEUS_ASSERT_OK_AND_ASSIGN(JobGroups c, GenerateJobGroups(options, {"x", "y"}));
  EXPECT_NE(c.begin()->second[0].start_time_s, a.begin()->second[0].start_time_s);
  EXPECT_FALSE(GenerateJobGroups(options, {}).ok());
}

TEST(JobGroupsTest, SpacedOutSubmissionsReduceToTheSequentialSimulation) {
  const Workload w = ToyWorkload();
  std::vector<JobSubmission> submissions;
  for (int i = 0; i < 30; ++i) submissions.push_back({"g", i * 1000.0, i * 1000.0 + 1, "toy", 1.0});
  SimulationOptions options;
  options.seed = 4;
  options.num_recurrences = 30;
  std::unique_ptr<Policy> sequential_policy = Zeus(w, 4);
  std::unique_ptr<Policy> group_policy = Zeus(w, 4);
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<RunRecord> sequential,
                            SimulateRecurringJob(w, *sequential_policy, options));
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<GroupRunRecord> grouped,
                            SimulateJobGroup(w, *group_policy, submissions, options));
  ASSERT_EQ(sequential.size(), grouped.size());
  for (size_t i = 0; i < sequential.size(); ++i) {
    EXPECT_EQ(sequential[i].recurrence, grouped[i].run.recurrence);
    EXPECT_EQ(sequential[i].batch_size, grouped[i].run.batch_size);
    EXPECT_EQ(sequential[i].energy_j, grouped[i].run.energy_j);
  }
}

TEST(JobGroupsTest, OverlappingSubmissionsAreObservedOutOfOrderAndAllComplete) {
  const Workload w = ToyWorkload();
  // Every submission overlaps the next two; durations vary so ends reorder.
  std::vector<JobSubmission> submissions;
  for (int i = 0; i < 40; ++i) {
    const double duration = (i % 3 == 0) ? 250.0 : 90.0;
    submissions.push_back({"g", i * 100.0, i * 100.0 + duration, "toy", i % 2 ? 2.0 : 1.0});
  }
  SimulationOptions options;
  options.seed = 9;
  std::unique_ptr<Policy> policy = Zeus(w, 9);
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<GroupRunRecord> records,
                            SimulateJobGroup(w, *policy, submissions, options));
  std::set<int> reached;
  bool out_of_submission_order = false;
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].run.reached) reached.insert(records[i].run.recurrence);
    if (i > 0) {
      EXPECT_GE(records[i].end_time_s, records[i - 1].end_time_s);  // Observed by end time.
      out_of_submission_order |= records[i].run.recurrence < records[i - 1].run.recurrence;
    }
  }
  EXPECT_TRUE(out_of_submission_order);
  EXPECT_EQ(reached.size(), 40u);
  // The failing size is explored at most once per pruning round.
  int runs128 = 0;
  for (const GroupRunRecord& r : records) runs128 += r.run.batch_size == 128;
  EXPECT_LE(runs128, 2);
}

TEST(JobGroupsTest, RuntimeRatioScalesEnergyAndTime) {
  const Workload w = ToyWorkload();
  PolicyContext context;
  context.workload = &w;
  ZEUS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Policy> policy, MakePolicy("default", context));
  ZEUS_ASSERT_OK_AND_ASSIGN(
      std::vector<GroupRunRecord> records,
      SimulateJobGroup(w, *policy, {{"g", 0, 10, "toy", 2.5}}, SimulationOptions()));
  ASSERT_EQ(records.size(), 1u);
  // Default: 64 @ 200 W, 3 or 4 epochs of 6 s at 180 W.
  const double epochs = records[0].run.time_s / (2.5 * 6);
  EXPECT_TRUE(epochs == 3 || epochs == 4) << epochs;
  EXPECT_DOUBLE_EQ(records[0].run.energy_j, 2.5 * epochs * 6 * 180);
}

// Hands out a scripted sequence of plans (run 1 under `initial_limit`,
// recording its learning curve) and, once run 2 has been observed, holds
// run 1 to `tightened_limit` (as frugal and swarm do when a result lowers
// the best cost; a looser one, as swarm does for a walk step outbid from
// further along) and, when given, to learning-curve limits
// `tightened_curve` (a new reference curve). Records what it observed.
class TighteningPolicy final : public Policy {
 public:
  explicit TighteningPolicy(std::optional<double> tightened_limit,
                            std::optional<double> initial_limit = std::nullopt,
                            std::vector<ProgressPoint> tightened_curve = {},
                            std::optional<double> restart_threshold = std::nullopt)
      : tightened_limit_(tightened_limit),
        initial_limit_(initial_limit),
        tightened_curve_(std::move(tightened_curve)),
        restart_threshold_(restart_threshold) {}

  RunPlan Next(int /*attempt*/) override {
    RunPlan plan;
    plan.run_id = ++next_id_;
    // Run 1 never reaches the target (128); the others use 64 and do.
    plan.batch_size = plan.run_id == 1 ? 128 : 64;
    plan.power_limit_w = 200;
    plan.exact_cost_limit = true;
    plan.record_progress = true;
    if (plan.run_id == 1) plan.cost_limit = initial_limit_;
    return plan;
  }
  Status Observe(const RunPlan& plan, const RunOutcome& outcome) override {
    observed_.emplace_back(plan, outcome);
    return Status::Ok();
  }
  std::optional<double> CostLimitAtReport(const RunPlan& plan) const override {
    if (plan.run_id == 1 && finish_limit_.has_value()) return finish_limit_;
    return Tightens(plan) ? tightened_limit_ : plan.cost_limit;
  }
  std::vector<ProgressPoint> ProgressLimitsAtReport(const RunPlan& plan) const override {
    if (plan.run_id == 1 && finish_limit_.has_value()) return {};
    return Tightens(plan) ? tightened_curve_ : plan.progress_limits;
  }
  std::optional<double> RestartThresholdAtReport(const RunPlan& plan) const override {
    return Tightens(plan) ? restart_threshold_ : std::nullopt;
  }
  // Once tightened, run 1 finishes at any judgment, held to that cost plus
  // `finish_more` (when given).
  void LetFinish(double finish_more) { finish_more_ = finish_more; }
  std::optional<double> FinishLimitAtReport(const RunPlan& plan, const ProgressPoint& /*best*/,
                                            double cost) const override {
    if (!Tightens(plan) || !finish_more_.has_value() || finish_limit_.has_value()) {
      return std::nullopt;
    }
    return cost + *finish_more_;
  }
  Status Finish(const RunPlan& plan, const ProgressPoint& best, double cost) override {
    finish_limit_ = FinishLimitAtReport(plan, best, cost);
    finishes_.emplace_back(best, cost);
    return Status::Ok();
  }
  const std::vector<std::pair<ProgressPoint, double>>& finishes() const { return finishes_; }
  const std::vector<std::pair<RunPlan, RunOutcome>>& observed() const { return observed_; }

 private:
  // Whether `plan` is run 1 and run 2 has been observed.
  bool Tightens(const RunPlan& plan) const {
    return plan.run_id == 1 && std::any_of(observed_.begin(), observed_.end(),
                                           [](const auto& o) { return o.first.run_id == 2; });
  }

  std::optional<double> tightened_limit_;
  std::optional<double> initial_limit_;
  std::vector<ProgressPoint> tightened_curve_;
  std::optional<double> restart_threshold_;
  std::optional<double> finish_more_;
  std::optional<double> finish_limit_;
  std::vector<std::pair<ProgressPoint, double>> finishes_;
  int64_t next_id_ = 0;
  std::vector<std::pair<RunPlan, RunOutcome>> observed_;
};

// The cost of one epoch of 128 at 200 W (no profiling) under `options`.
double EpochCost128(const Workload& w, const SimulationOptions& options) {
  RunPlan plan;
  plan.batch_size = 128;
  plan.power_limit_w = 200;
  Rng rng(1);
  return ExecuteRun(options.ContextFor(w), plan, rng).cost / w.job.max_epochs;
}

// The group the bound tests simulate under `policy`: submission 1 over
// [0, 100] s and submission 2 over [10, 20] s (each retried as needed). With
// kSubmission (the bound tests) each run lasts its submission's duration.
StatusOr<std::vector<GroupRunRecord>> SimulateTwoSubmissions(
    TighteningPolicy& policy, GroupRunTime run_time = GroupRunTime::kSubmission,
    const Workload& w = ToyWorkload()) {
  SimulationOptions options;
  options.group_run_time = run_time;
  return SimulateJobGroup(w, policy, {{"g", 0, 100, "toy", 1.0}, {"g", 10, 20, "toy", 1.0}},
                          options);
}

// Run 1 (submission 0, never reaching the target) as its own bound stopped
// it: `epochs` epochs spent, ending at `end_time_s`.
void ExpectRun1StoppedByItsBound(const GroupRunRecord& run1, double end_time_s, double epochs,
                                 double epoch_cost) {
  EXPECT_EQ(run1.run.recurrence, 0);
  EXPECT_FALSE(run1.run.reached);
  EXPECT_FALSE(run1.stopped_early);
  EXPECT_DOUBLE_EQ(run1.end_time_s, end_time_s);
  EXPECT_NEAR(run1.run.cost, epochs * epoch_cost, 1e-9 * epoch_cost);
}

// Run 1 (never reaches: 10 epochs over [0, 100] s) is in flight when run 2
// ([10, 20] s) reports and tightens run 1's bound to 1.5 epochs. By then run
// 1 has spent 2 epochs (20 % of its duration), so `zeus serve` stops it at
// its next report, having spent that: it is charged 2 epochs and ends at
// 20 s, not replayed as if the bound had held from its start (1 epoch,
// ending at 100 s). Its retry starts then and lasts the full 100 s.
TEST(JobGroupsTest, ARunPastATightenedBoundStopsHavingSpentWhatItRan) {
  const double epoch_cost = EpochCost128(ToyWorkload(), SimulationOptions());
  TighteningPolicy policy(1.5 * epoch_cost);
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<GroupRunRecord> records, SimulateTwoSubmissions(policy));
  ASSERT_EQ(records.size(), 3u);
  // Run 2, then run 1 stopped at once, then run 1's retry.
  EXPECT_EQ(records[0].run.recurrence, 1);
  const GroupRunRecord& stopped = records[1];
  EXPECT_EQ(stopped.run.recurrence, 0);
  EXPECT_EQ(stopped.run.batch_size, 128);
  EXPECT_FALSE(stopped.run.reached);
  EXPECT_DOUBLE_EQ(stopped.start_time_s, 0.0);
  EXPECT_DOUBLE_EQ(stopped.end_time_s, 20.0);
  EXPECT_NEAR(stopped.run.cost, 2 * epoch_cost, 1e-9 * epoch_cost);
  EXPECT_NEAR(stopped.run.time_s, 2 * 4.0, 1e-9);  // 4 s per epoch.
  const GroupRunRecord& retry = records[2];
  EXPECT_EQ(retry.run.recurrence, 0);
  EXPECT_TRUE(retry.run.reached);
  EXPECT_DOUBLE_EQ(retry.start_time_s, 20.0);
  EXPECT_DOUBLE_EQ(retry.end_time_s, 120.0);
  // The policy saw what was charged, under the tightened bound.
  ASSERT_EQ(policy.observed().size(), 3u);
  EXPECT_EQ(policy.observed()[1].first.run_id, 1);
  EXPECT_EQ(policy.observed()[1].first.cost_limit, 1.5 * epoch_cost);
  EXPECT_FALSE(policy.observed()[1].second.reached);
  EXPECT_NEAR(policy.observed()[1].second.cost, 2 * epoch_cost, 1e-9 * epoch_cost);
}

// As above, but the policy lets run 1 finish (Policy::Finish) at the
// report that would have stopped it (after epoch 2, 20 s), judged from its
// report after epoch 1, held to 2.5 epochs more: it runs on and stops at
// its first report past that, after 5 epochs (it never reaches), at 50 s;
// its retry starts then.
TEST(JobGroupsTest, ARunPastATightenedBoundFinishesWhereThePolicyLetsIt) {
  const Workload w = ToyWorkload();
  const double epoch_cost = EpochCost128(w, SimulationOptions());
  TighteningPolicy policy(1.5 * epoch_cost);
  policy.LetFinish(2.5 * epoch_cost);
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<GroupRunRecord> records, SimulateTwoSubmissions(policy));
  ASSERT_EQ(records.size(), 3u);
  ASSERT_EQ(policy.finishes().size(), 1u);
  EXPECT_NEAR(policy.finishes()[0].second, 2 * epoch_cost, 1e-9 * epoch_cost);
  EXPECT_NEAR(policy.finishes()[0].first.cost, epoch_cost, 1e-9 * epoch_cost);
  const GroupRunRecord& finished = records[1];
  EXPECT_EQ(finished.run.recurrence, 0);
  EXPECT_FALSE(finished.run.reached);
  EXPECT_FALSE(finished.stopped_early);
  EXPECT_NEAR(finished.run.cost, 5 * epoch_cost, 1e-9 * epoch_cost);
  EXPECT_DOUBLE_EQ(finished.end_time_s, 50.0);
  EXPECT_DOUBLE_EQ(records[2].start_time_s, 50.0);
  EXPECT_NEAR(*policy.observed()[1].first.cost_limit, 4.5 * epoch_cost, 1e-9 * epoch_cost);
}

// Run 1 (10 epochs of 4 s over [0, 100] s) has spent 1.5 epochs when run 2
// ([10, 15] s) reports at 15 s and tightens its bound to 1.2 epochs: the
// server learns of it at run 1's next check-in (every 1.5 s of its time
// since its report at 4 s: at 7 s, 17.5 s in the group), or without
// check-ins at its report after epoch 2 (20 s): it stops there, charged
// what it spent by then.
TEST(JobGroupsTest, ARunPastATightenedBoundStopsAtItsNextCheckIn) {
  const double epoch_cost = EpochCost128(ToyWorkload(), SimulationOptions());
  const std::vector<JobSubmission> submissions = {{"g", 0, 100, "toy", 1.0},
                                                  {"g", 10, 15, "toy", 1.0}};
  for (const auto& [check_in_s, end_time_s, epochs] :
       std::vector<std::tuple<double, double, double>>{{1.5, 17.5, 1.75}, {0.0, 20.0, 2.0}}) {
    SCOPED_TRACE("check_in_s " + std::to_string(check_in_s));
    SimulationOptions options;
    options.group_run_time = GroupRunTime::kSubmission;
    options.check_in_s = check_in_s;
    TighteningPolicy policy(1.2 * epoch_cost);
    ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<GroupRunRecord> records,
                              SimulateJobGroup(ToyWorkload(), policy, submissions, options));
    ASSERT_EQ(records.size(), 3u);
    const GroupRunRecord& stopped = records[1];
    EXPECT_EQ(stopped.run.recurrence, 0);
    EXPECT_TRUE(stopped.stopped_early);
    EXPECT_FALSE(stopped.run.reached);
    EXPECT_DOUBLE_EQ(stopped.end_time_s, end_time_s);
    EXPECT_NEAR(stopped.run.cost, epochs * epoch_cost, 1e-9 * epoch_cost);
    EXPECT_EQ(policy.observed()[1].second.stopped_at_check_in, check_in_s > 0.0);
    EXPECT_DOUBLE_EQ(records[2].start_time_s, end_time_s);
  }
}

// The same, with the bound tightened to 5.5 epochs: run 1 has spent less
// (2 epochs), so it goes on under the new bound and stops at its first
// report past it, after 6 epochs (its 4 s epochs leave no room for a 10 s
// check-in), when it has spent them (60 s: 6/10 of its 10 epochs'
// duration), not at the end of its submission's duration.
TEST(JobGroupsTest, ARunBelowATightenedBoundGoesOnUnderIt) {
  const double epoch_cost = EpochCost128(ToyWorkload(), SimulationOptions());
  TighteningPolicy policy(5.5 * epoch_cost);
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<GroupRunRecord> records, SimulateTwoSubmissions(policy));
  ASSERT_EQ(records.size(), 3u);
  ExpectRun1StoppedByItsBound(records[1], 60.0, 6, epoch_cost);
  // Its retry starts when it stopped and lasts the submission's duration.
  EXPECT_DOUBLE_EQ(records[2].start_time_s, 60.0);
  EXPECT_DOUBLE_EQ(records[2].end_time_s, 160.0);
}

// Run 1 handed out under 3.5 epochs (it would stop after 4, at 40 s),
// loosened to 5.5 epochs when run 2 reports at 20 s: still going, it goes on
// under the looser bound and stops after 6 epochs, at 60 s.
TEST(JobGroupsTest, ARunWhoseBoundLoosensGoesOnUnderIt) {
  const double epoch_cost = EpochCost128(ToyWorkload(), SimulationOptions());
  TighteningPolicy policy(5.5 * epoch_cost, 3.5 * epoch_cost);
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<GroupRunRecord> records, SimulateTwoSubmissions(policy));
  ASSERT_GE(records.size(), 2u);
  ExpectRun1StoppedByItsBound(records[1], 60.0, 6, epoch_cost);
  EXPECT_EQ(policy.observed()[1].first.cost_limit, 5.5 * epoch_cost);
}

// A run its own bound stops ends when it has spent what it ran, at the pace
// of its unbounded run: here run 1 under 1.5 epochs stops at its report
// after two, at 20 s (a fifth of its 10 epochs' 100 s), as run 2 ([10, 20]
// s) reports, and is observed first (it was handed out first).
TEST(JobGroupsTest, ARunItsBoundStopsEndsWhenItHasSpentTheBound) {
  const double epoch_cost = EpochCost128(ToyWorkload(), SimulationOptions());
  TighteningPolicy policy(5.5 * epoch_cost, 1.5 * epoch_cost);
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<GroupRunRecord> records, SimulateTwoSubmissions(policy));
  ASSERT_GE(records.size(), 2u);
  ExpectRun1StoppedByItsBound(records[0], 20.0, 2, epoch_cost);
  EXPECT_EQ(policy.observed()[0].first.run_id, 1);
  EXPECT_EQ(policy.observed()[0].first.cost_limit, 1.5 * epoch_cost);
}

// Run 1 (10 epochs over [0, 100] s) is in flight when run 2 ([10, 15] s)
// reports and sets a restart threshold of 2.5 epochs: having spent 1.5
// epochs, its next report (after 2 epochs, at 20 s) is below it, so it stops
// there, charged 2 epochs, and its retry starts then. With a threshold of
// 1.8 epochs its next report is past it: it goes on (to its end: it never
// reaches), and its epochs up to 15 s were reported before the threshold
// existed.
TEST(JobGroupsTest, ARunBelowARestartThresholdStopsAtItsNextReport) {
  const double epoch_cost = EpochCost128(ToyWorkload(), SimulationOptions());
  const std::vector<JobSubmission> submissions = {{"g", 0, 100, "toy", 1.0},
                                                  {"g", 10, 15, "toy", 1.0}};
  SimulationOptions options;
  options.group_run_time = GroupRunTime::kSubmission;
  TighteningPolicy restarts(std::nullopt, std::nullopt, {}, 2.5 * epoch_cost);
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<GroupRunRecord> records,
                            SimulateJobGroup(ToyWorkload(), restarts, submissions, options));
  ASSERT_EQ(records.size(), 3u);
  const GroupRunRecord& stopped = records[1];
  EXPECT_EQ(stopped.run.recurrence, 0);
  EXPECT_TRUE(stopped.restarted);
  EXPECT_TRUE(stopped.stopped_early);
  EXPECT_FALSE(stopped.run.reached);
  EXPECT_DOUBLE_EQ(stopped.end_time_s, 20.0);
  EXPECT_NEAR(stopped.run.cost, 2 * epoch_cost, 1e-9 * epoch_cost);
  EXPECT_DOUBLE_EQ(records[2].start_time_s, 20.0);
  EXPECT_FALSE(records[0].restarted);
  EXPECT_FALSE(records[2].restarted);

  TighteningPolicy goes_on(std::nullopt, std::nullopt, {}, 1.8 * epoch_cost);
  ZEUS_ASSERT_OK_AND_ASSIGN(records,
                            SimulateJobGroup(ToyWorkload(), goes_on, submissions, options));
  ASSERT_EQ(records.size(), 3u);  // Run 1 fails at its end and is retried.
  EXPECT_EQ(records[1].run.recurrence, 0);
  EXPECT_FALSE(records[1].restarted);
  EXPECT_FALSE(records[1].stopped_early);
  EXPECT_DOUBLE_EQ(records[1].end_time_s, 100.0);
  EXPECT_NEAR(goes_on.observed()[1].first.progress_limits_from_cost, 1.5 * epoch_cost,
              1e-9 * epoch_cost);
}

// Under kScaled (the default) a run lasts its submission's duration x its
// time / the default's expected time (64 at 200 W: 3 or 4 epochs of 6 s, 21 s
// on average). Run 2 (64) over [10, 20] s lasts 10 s x its own time / 21 s;
// run 1 (128, 10 epochs of 4 s) would last 100 s x 40 / 21, and stopped by
// a bound of 5.5 epochs at its report after 6, it ends 6/10 through that.
TEST(JobGroupsTest, ScaledRunTimeLastsTheSubmissionsDurationTimesTheRunsTimeOverTheDefaults) {
  const double epoch_cost = EpochCost128(ToyWorkload(), SimulationOptions());
  TighteningPolicy policy(5.5 * epoch_cost);
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<GroupRunRecord> records,
                            SimulateTwoSubmissions(policy, GroupRunTime::kScaled));
  ASSERT_GE(records.size(), 2u);
  const GroupRunRecord& run2 = records[0];
  EXPECT_EQ(run2.run.recurrence, 1);
  EXPECT_TRUE(run2.run.reached);
  EXPECT_TRUE(run2.run.time_s == 18.0 || run2.run.time_s == 24.0) << run2.run.time_s;
  EXPECT_NEAR(run2.end_time_s, 10.0 + 10.0 * run2.run.time_s / 21.0, 1e-9);
  const GroupRunRecord& run1 = records[1];
  EXPECT_EQ(run1.run.recurrence, 0);
  EXPECT_FALSE(run1.run.reached);
  EXPECT_NEAR(run1.run.cost, 6 * epoch_cost, 1e-9 * epoch_cost);
  EXPECT_NEAR(run1.end_time_s, 0.6 * 100.0 * 40.0 / 21.0, 1e-9);
}

// Scaled run times need the default's expected time: a default that never
// reaches the target is refused with the option named, and the original's
// fixed durations still simulate it.
TEST(JobGroupsTest, ScaledRunTimeNeedsADefaultThatReachesTheTarget) {
  Workload w = ToyWorkload();
  w.default_batch_size = 128;  // Never reaches the target.
  PolicyContext context;
  context.workload = &w;
  ZEUS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Policy> policy, MakePolicy("default", context));
  SimulationOptions options;
  options.max_tries = 2;
  Status status = SimulateJobGroup(w, *policy, {{"g", 0, 10, "toy", 1.0}}, options).status();
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("--group-run-time scaled"), std::string::npos)
      << status.message();
  options.group_run_time = GroupRunTime::kSubmission;
  ZEUS_EXPECT_OK(SimulateJobGroup(w, *policy, {{"g", 0, 10, "toy", 1.0}}, options).status());
}

TEST(JobGroupsTest, GroupRunTimeNamesRoundTrip) {
  for (GroupRunTime model : {GroupRunTime::kScaled, GroupRunTime::kSubmission}) {
    ZEUS_ASSERT_OK_AND_ASSIGN(GroupRunTime parsed, ParseGroupRunTime(GroupRunTimeName(model)));
    EXPECT_EQ(parsed, model);
  }
  Status bad = ParseGroupRunTime("fixed").status();
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("'fixed'"), std::string::npos) << bad.message();
}

TEST(JobGroupsTest, GroupsRunningPicksADatasetsGroupsInNameOrder) {
  JobGroups groups;
  groups["b"] = {{"b", 0, 1, "toy", 1.0}};
  groups["a"] = {{"a", 0, 1, "toy", 1.0}, {"a", 2, 3, "toy", 1.0}};
  groups["c"] = {{"c", 0, 1, "mnist", 1.0}};
  groups["empty"] = {};
  const std::vector<const std::vector<JobSubmission>*> toy = GroupsRunning(groups, "toy");
  ASSERT_EQ(toy.size(), 2u);
  EXPECT_EQ(toy[0], &groups["a"]);
  EXPECT_EQ(toy[1], &groups["b"]);
  EXPECT_TRUE(GroupsRunning(groups, "imagenet").empty());
}

TEST(JobGroupsTest, GroupSeedDependsOnTheName) {
  EXPECT_NE(GroupSeed(1, "a"), GroupSeed(1, "b"));
  EXPECT_EQ(GroupSeed(1, "a"), GroupSeed(1, "a"));
  EXPECT_NE(GroupSeed(1, "a"), GroupSeed(2, "a"));
}

}  // namespace
}  // namespace zeus

namespace zeus {
namespace {

// The toy workload with two milestones: 128 passes the first after epoch 2
// and the second after epoch 6 (it never reaches the target in 10 epochs);
// 32 and 64 pass both after epochs 1 and 2.
Workload GroupMilestoneToyWorkload() {
  Workload w = ToyWorkload();
  w.milestones = {0.2, 0.4};
  w.batch_sizes[0].milestone_epochs = {{1.0, 2.0}, {1.0, 2.0}};
  w.batch_sizes[1].milestone_epochs = {{1.0, 2.0}, {1.0, 2.0}};
  w.batch_sizes[2].milestone_epochs = {{2.0, 6.0}, {2.0, 6.0}};
  return w;
}

// Run 1 (10 epochs over [0, 100] s) has spent 2 epochs and passed the first
// milestone (progress 1) when run 2 reports at 20 s with a curve that wants
// progress 2 by 1.5 epochs' cost: past it already, run 1 stops there.
TEST(JobGroupsCurveTest, ARunPastANewCurveAtItsProgressStopsAtTheReport) {
  const double epoch = EpochCost128(GroupMilestoneToyWorkload(), SimulationOptions());
  TighteningPolicy policy(std::nullopt, std::nullopt,
                          {{0.5 * epoch, 1}, {1.5 * epoch, 2}, {9 * epoch, 3}});
  ZEUS_ASSERT_OK_AND_ASSIGN(
      std::vector<GroupRunRecord> records,
      SimulateTwoSubmissions(policy, GroupRunTime::kSubmission, GroupMilestoneToyWorkload()));
  ASSERT_GE(records.size(), 2u);
  const GroupRunRecord& run1 = records[1];
  EXPECT_EQ(run1.run.recurrence, 0);
  EXPECT_FALSE(run1.run.reached);
  EXPECT_TRUE(run1.stopped_early);
  EXPECT_DOUBLE_EQ(run1.end_time_s, 20.0);
  EXPECT_NEAR(run1.run.cost, 2 * epoch, 1e-9 * epoch);
  // The policy sees its curve up to then.
  ASSERT_GE(policy.observed().size(), 2u);
  EXPECT_EQ(policy.observed()[1].second.progress.back().progress, 1.0);
}

// Run 1 over [0, 100] s and run 2 over [10, 25] s of the milestone toy,
// each lasting its submission, checking in every `check_in_s` of its time.
StatusOr<std::vector<GroupRunRecord>> SimulateOverlappingToyRuns(Policy& policy,
                                                                 double check_in_s) {
  SimulationOptions options;
  options.group_run_time = GroupRunTime::kSubmission;
  options.check_in_s = check_in_s;
  return SimulateJobGroup(GroupMilestoneToyWorkload(), policy,
                          {{"g", 0, 100, "toy", 1.0}, {"g", 10, 25, "toy", 1.0}}, options);
}

// Run 2 ([10, 25] s) reports mid-epoch 3 of run 1 (spent 2.5 epochs, at
// progress 1 since epoch 2) with a curve that wants progress 2 by 2.2
// epochs' cost: its progress was not judged against that curve, and it got
// to progress 1 slower than the curve did (by half an epoch), so its next
// check-in judges it (27.5 s: its 4 s epochs last 10 s in the group, and it
// checks in every 1.5 s of its time since its report at 20 s), or without
// check-ins its report after epoch 3 (30 s).
TEST(JobGroupsCurveTest, ARunPastANewCurveStopsAtItsNextCheckIn) {
  const double epoch = EpochCost128(GroupMilestoneToyWorkload(), SimulationOptions());
  for (const auto& [check_in_s, end_time_s, epochs] :
       std::vector<std::tuple<double, double, double>>{{1.5, 27.5, 2.75}, {0.0, 30.0, 3.0}}) {
    SCOPED_TRACE("check_in_s " + std::to_string(check_in_s));
    TighteningPolicy policy(std::nullopt, std::nullopt,
                            {{0.5 * epoch, 1}, {2.2 * epoch, 2}, {9 * epoch, 3}});
    ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<GroupRunRecord> records,
                              SimulateOverlappingToyRuns(policy, check_in_s));
    ASSERT_GE(records.size(), 2u);
    const GroupRunRecord& run1 = records[1];
    EXPECT_EQ(run1.run.recurrence, 0);
    EXPECT_TRUE(run1.stopped_early);
    EXPECT_DOUBLE_EQ(run1.end_time_s, end_time_s);
    EXPECT_NEAR(run1.run.cost, epochs * epoch, 1e-9 * epoch);
    ASSERT_GE(policy.observed().size(), 2u);
    const RunOutcome& observed = policy.observed()[1].second;
    EXPECT_EQ(observed.stopped_at_check_in, check_in_s > 0.0);
    // Its curve: its reports (epochs 1 and 2), and the stop when a report.
    EXPECT_EQ(observed.progress.size(), check_in_s > 0.0 ? 2u : 3u);
  }
}

// The same run, but the new curve got to progress 1 no sooner than it did
// (by 2.05 epochs' cost; it did by 2): on pace there, it may show progress 2
// at its next report, so its check-ins hold it to its whole bound only, and
// the curve stops it at that report (30 s), still at progress 1.
TEST(JobGroupsCurveTest, ARunOnPaceWithANewCurveStopsAtItsNextReport) {
  const double epoch = EpochCost128(GroupMilestoneToyWorkload(), SimulationOptions());
  TighteningPolicy policy(std::nullopt, std::nullopt,
                          {{2.05 * epoch, 1}, {2.2 * epoch, 2}, {9 * epoch, 3}});
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<GroupRunRecord> records,
                            SimulateOverlappingToyRuns(policy, /*check_in_s=*/1.5));
  ASSERT_GE(records.size(), 2u);
  const GroupRunRecord& run1 = records[1];
  EXPECT_EQ(run1.run.recurrence, 0);
  EXPECT_TRUE(run1.stopped_early);
  EXPECT_DOUBLE_EQ(run1.end_time_s, 30.0);
  EXPECT_NEAR(run1.run.cost, 3 * epoch, 1e-9 * epoch);
  ASSERT_GE(policy.observed().size(), 2u);
  EXPECT_FALSE(policy.observed()[1].second.stopped_at_check_in);
}

// The same run at 20 s is within a curve that wanted progress 1 by half an
// epoch (its first epoch, at progress 0, would have passed that) and wants
// progress 2 by 4.5 epochs: judged at its progress now, it goes on, and the
// curve stops it after epoch 5 (cost 5 > 4.5 at progress 1), at 50 s.
TEST(JobGroupsCurveTest, ANewCurveJudgesOnlyTheEpochsAfterItArrives) {
  const double epoch = EpochCost128(GroupMilestoneToyWorkload(), SimulationOptions());
  TighteningPolicy policy(std::nullopt, std::nullopt,
                          {{0.5 * epoch, 1}, {4.5 * epoch, 2}, {9 * epoch, 3}});
  ZEUS_ASSERT_OK_AND_ASSIGN(
      std::vector<GroupRunRecord> records,
      SimulateTwoSubmissions(policy, GroupRunTime::kSubmission, GroupMilestoneToyWorkload()));
  ASSERT_GE(records.size(), 2u);
  const GroupRunRecord& run1 = records[1];
  EXPECT_EQ(run1.run.recurrence, 0);
  EXPECT_FALSE(run1.run.reached);
  EXPECT_FALSE(run1.stopped_early);
  EXPECT_DOUBLE_EQ(run1.end_time_s, 50.0);
  EXPECT_NEAR(run1.run.cost, 5 * epoch, 1e-9 * epoch);
}

// Run 1 (64, the milestone toy's fast learner) reports its epochs in flight;
// run 2 (128) is held to 1.25 x the curve run 1 has reported so far, every
// point of it (as swarm's first wave is held to the walk's step in flight).
class InFlightReferencePolicy final : public Policy {
 public:
  explicit InFlightReferencePolicy(bool reports_in_flight)
      : reports_in_flight_(reports_in_flight) {}

  RunPlan Next(int /*attempt*/) override {
    RunPlan plan;
    plan.run_id = ++next_id_;
    plan.batch_size = plan.run_id == 1 ? 64 : 128;
    plan.power_limit_w = 200;
    plan.exact_cost_limit = true;
    plan.record_progress = true;
    return plan;
  }
  Status Observe(const RunPlan& plan, const RunOutcome& outcome) override {
    observed_.emplace_back(plan, outcome);
    return Status::Ok();
  }
  bool ReportsInFlight(const RunPlan& plan) const override {
    return reports_in_flight_ && plan.run_id == 1;
  }
  Status ReportProgress(const RunPlan& plan, const ProgressPoint& point) override {
    EXPECT_EQ(plan.run_id, 1);
    reported_.push_back(point);
    handed_out_at_report_.push_back(next_id_);
    return Status::Ok();
  }
  std::vector<ProgressPoint> ProgressLimitsAtReport(const RunPlan& plan) const override {
    if (plan.run_id != 2 || reported_.empty()) return plan.progress_limits;
    std::vector<ProgressPoint> limits = reported_;
    for (ProgressPoint& point : limits) point.cost *= 1.25;
    const double ahead = std::numeric_limits<double>::infinity();
    limits.push_back({ahead, ahead});
    return limits;
  }

  const std::vector<ProgressPoint>& reported() const { return reported_; }
  const std::vector<int64_t>& handed_out_at_report() const { return handed_out_at_report_; }
  const std::vector<std::pair<RunPlan, RunOutcome>>& observed() const { return observed_; }

 private:
  bool reports_in_flight_;
  int64_t next_id_ = 0;
  std::vector<ProgressPoint> reported_;
  // Runs handed out when each report came.
  std::vector<int64_t> handed_out_at_report_;
  std::vector<std::pair<RunPlan, RunOutcome>> observed_;
};

// Run 1 (64 over [0, 40] s: 3 or 4 epochs, passing the milestones after
// epochs 1 and 2) tells each epoch but its last as it ends, once, in order;
// its observation then carries its whole curve. Run 2 (128 over [5, 105] s,
// 10 s epochs, at progress 1 from epoch 2 to 5) is held from run 1's second
// report on to 1.25 x run 1's cost at progress 2, and its report after
// epoch 4 (45 s) passes that. Without the reports in flight nothing bounds
// it: it runs its 10 epochs.
TEST(JobGroupsCurveTest, ARunReportingInFlightBoundsTheOthersAsItGoes) {
  const Workload w = GroupMilestoneToyWorkload();
  SimulationOptions options;
  options.group_run_time = GroupRunTime::kSubmission;
  options.check_in_s = 0.0;
  options.max_tries = 1;
  const std::vector<JobSubmission> submissions = {{"g", 0, 40, "toy", 1.0},
                                                  {"g", 5, 105, "toy", 1.0}};
  const double epoch128 = EpochCost128(w, options);
  for (const bool in_flight : {true, false}) {
    SCOPED_TRACE(in_flight ? "reports in flight" : "no reports in flight");
    InFlightReferencePolicy policy(in_flight);
    ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<GroupRunRecord> records,
                              SimulateJobGroup(w, policy, submissions, options));
    ASSERT_EQ(policy.observed().size(), 2u);
    const RunOutcome& run1 = policy.observed()[0].second;
    ASSERT_EQ(policy.observed()[0].first.run_id, 1);
    ASSERT_TRUE(run1.reached);
    ASSERT_GE(run1.progress.size(), 3u);
    const GroupRunRecord& run2 = records[1];
    ASSERT_EQ(run2.run.batch_size, 128);
    if (!in_flight) {
      EXPECT_TRUE(policy.reported().empty());
      EXPECT_DOUBLE_EQ(run2.end_time_s, 105.0);
      EXPECT_NEAR(run2.run.cost, 10 * epoch128, 1e-9 * epoch128);
      continue;
    }
    // Every epoch but the last, as it ended (the first after run 2 was
    // handed out: 3 or 4 epochs over 40 s end after 5 s).
    ASSERT_EQ(policy.reported().size(), run1.progress.size() - 1);
    for (size_t i = 0; i < policy.reported().size(); ++i) {
      EXPECT_EQ(policy.reported()[i], run1.progress[i]) << i;
    }
    EXPECT_EQ(policy.handed_out_at_report().front(), 2);
    ASSERT_GT(4 * epoch128, 1.25 * run1.progress[1].cost);
    ASSERT_LT(3 * epoch128, 1.25 * run1.progress[1].cost);
    EXPECT_FALSE(run2.run.reached);
    EXPECT_DOUBLE_EQ(run2.end_time_s, 45.0);
    EXPECT_NEAR(run2.run.cost, 4 * epoch128, 1e-9 * epoch128);
  }
}

}  // namespace
}  // namespace zeus
