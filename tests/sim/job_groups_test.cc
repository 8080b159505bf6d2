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

// A judging policy (RunPlan::judged) with a scripted sequence of plans:
// run 1 (128, never reaches the target), then runs of 64 (reach). Until a
// run of 64 has been observed it lets every run go on; from then on it holds
// run 1 to `bound` (kStop past it) or, with `restart`, restarts it at its
// next judgment. Records every judgment and observation.
class BoundAfterRun2Policy final : public Policy {
 public:
  explicit BoundAfterRun2Policy(double bound, bool restart = false)
      : bound_(bound), restart_(restart) {}

  RunPlan Next(int /*attempt*/) override {
    RunPlan plan;
    plan.run_id = ++next_id_;
    plan.batch_size = plan.run_id == 1 ? 128 : 64;
    plan.power_limit_w = 200;
    plan.judged = true;
    return plan;
  }
  StatusOr<Verdict> Judge(const RunPlan& plan, const Observation& observation) override {
    judgments_.emplace_back(plan.run_id, observation);
    Verdict verdict;
    if (plan.run_id != 1 || !run2_observed_) return verdict;
    verdict.whole_bound = verdict.cost_bound = bound_;
    if (restart_) {
      verdict.restart_below = observation.cost + 1.0;
      verdict.action = Verdict::Action::kRestart;
    } else if (observation.cost > bound_) {
      verdict.action = Verdict::Action::kStop;
    }
    return verdict;
  }
  Status Observe(const RunPlan& plan, const RunOutcome& outcome) override {
    observed_.emplace_back(plan, outcome);
    run2_observed_ = run2_observed_ || plan.run_id == 2;
    return Status::Ok();
  }
  const std::vector<std::pair<int64_t, Observation>>& judgments() const { return judgments_; }
  const std::vector<std::pair<RunPlan, RunOutcome>>& observed() const { return observed_; }

 private:
  double bound_;
  bool restart_;
  bool run2_observed_ = false;
  int64_t next_id_ = 0;
  std::vector<std::pair<int64_t, Observation>> judgments_;
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

// Run 1 (10 epochs of 4 s over [0, 100] s) has spent 1.5 epochs when run 2
// ([10, 15] s) ends at 15 s and the policy holds run 1 to 1.2 epochs: run 1
// is judged again at its next check-in (every 1.5 s of its time since its
// report at 4 s: at 7 s, 17.5 s in the group), or without check-ins at its
// report after epoch 2 (20 s), and stops there, charged what it spent.
TEST(JobGroupsTest, ARunIsJudgedAgainAtItsNextCheckInAfterAnotherRunEnds) {
  const double epoch_cost = EpochCost128(ToyWorkload(), SimulationOptions());
  const std::vector<JobSubmission> submissions = {{"g", 0, 100, "toy", 1.0},
                                                  {"g", 10, 15, "toy", 1.0}};
  for (const auto& [check_in_s, end_time_s, epochs] :
       std::vector<std::tuple<double, double, double>>{{1.5, 17.5, 1.75}, {0.0, 20.0, 2.0}}) {
    SCOPED_TRACE("check_in_s " + std::to_string(check_in_s));
    SimulationOptions options;
    options.group_run_time = GroupRunTime::kSubmission;
    options.check_in_s = check_in_s;
    BoundAfterRun2Policy policy(1.2 * epoch_cost);
    ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<GroupRunRecord> records,
                              SimulateJobGroup(ToyWorkload(), policy, submissions, options));
    ASSERT_GE(records.size(), 2u);
    EXPECT_EQ(records[0].run.recurrence, 1);
    const GroupRunRecord& stopped = records[1];
    EXPECT_EQ(stopped.run.recurrence, 0);
    EXPECT_FALSE(stopped.run.reached);
    EXPECT_TRUE(stopped.stopped_early);
    EXPECT_FALSE(stopped.restarted);
    EXPECT_NEAR(stopped.end_time_s, end_time_s, 1e-9);
    EXPECT_NEAR(stopped.run.cost, epochs * epoch_cost, 1e-9 * epoch_cost);
    // Its retry starts when it stopped.
    ASSERT_GE(records.size(), 3u);
    EXPECT_NEAR(records[2].start_time_s, end_time_s, 1e-9);
    // The judgment that stopped it was the first after run 2 ended.
    const auto last_of_run1 = std::find_if(policy.judgments().rbegin(), policy.judgments().rend(),
                                           [](const auto& j) { return j.first == 1; });
    ASSERT_NE(last_of_run1, policy.judgments().rend());
    EXPECT_EQ(last_of_run1->second.check_in, check_in_s > 0.0);
  }
}

// Before run 2 ends nothing bounds run 1: with check-ins every 1.5 s, it is
// judged at each of its reports and at the first check-in after each (which
// gives no bound), not at every check-in.
TEST(JobGroupsTest, CheckInsPastAVerdictWithoutABoundAreSkippedUntilTheReport) {
  SimulationOptions options;
  options.group_run_time = GroupRunTime::kSubmission;
  options.check_in_s = 1.5;
  BoundAfterRun2Policy policy(1e9);
  ZEUS_ASSERT_OK(
      SimulateJobGroup(ToyWorkload(), policy, {{"g", 0, 100, "toy", 1.0}}, options).status());
  int reports = 0;
  int check_ins = 0;
  for (const auto& [run, observation] : policy.judgments()) {
    if (run == 1) (observation.check_in ? check_ins : reports) += 1;
  }
  EXPECT_EQ(reports, 10);    // 10 epochs, 128 never reaches.
  EXPECT_EQ(check_ins, 10);  // The first check-in after each report.
}

// A restart verdict stops the run where it is judged (a restart, not
// reached), and its submission is retried from then.
TEST(JobGroupsTest, ARestartVerdictStopsTheRunAndItsSubmissionRetries) {
  SimulationOptions options;
  options.group_run_time = GroupRunTime::kSubmission;
  options.check_in_s = 0.0;
  BoundAfterRun2Policy policy(1e9, /*restart=*/true);
  ZEUS_ASSERT_OK_AND_ASSIGN(
      std::vector<GroupRunRecord> records,
      SimulateJobGroup(ToyWorkload(), policy,
                       {{"g", 0, 100, "toy", 1.0}, {"g", 10, 15, "toy", 1.0}}, options));
  ASSERT_GE(records.size(), 3u);
  const GroupRunRecord& restarted = records[1];
  EXPECT_EQ(restarted.run.recurrence, 0);
  EXPECT_TRUE(restarted.restarted);
  EXPECT_TRUE(restarted.stopped_early);
  EXPECT_DOUBLE_EQ(restarted.end_time_s, 20.0);  // Its report after epoch 2.
  EXPECT_EQ(records[2].run.recurrence, 0);
  EXPECT_EQ(records[2].attempt, 2);
  EXPECT_DOUBLE_EQ(records[2].start_time_s, 20.0);
}

// Under GroupRunTime::kScaled a run lasts its submission's duration x its
// time / the default's expected time (64 at 200 W: 3 or 4 epochs of 6 s,
// 21 s on average). Run 2 (64) over [10, 20] s lasts 10 s x its own time /
// 21 s; run 1 (128, 10 epochs of 4 s) would last 100 s x 40 / 21, and held
// to 5.5 epochs once run 2 ended, it stops at its report after 6, 6/10
// through that.
TEST(JobGroupsTest, ScaledRunTimeLastsTheSubmissionsDurationTimesTheRunsTimeOverTheDefaults) {
  const double epoch_cost = EpochCost128(ToyWorkload(), SimulationOptions());
  BoundAfterRun2Policy policy(5.5 * epoch_cost);
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<GroupRunRecord> records,
                            SimulateJobGroup(ToyWorkload(), policy,
                                             {{"g", 0, 100, "toy", 1.0}, {"g", 10, 20, "toy", 1.0}},
                                             SimulationOptions()));
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
