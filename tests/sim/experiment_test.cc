#include "zeus/sim/experiment.h"

#include <gtest/gtest.h>

#include "zeus/sim/report.h"

#include "tests/sim/toy_workload.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

using testing::ToyWorkload;

TEST(ExperimentTest, AveragesOverSeedsAndReportsEveryRun) {
  const std::vector<Workload> workloads = {ToyWorkload("a"), ToyWorkload("b")};
  ExperimentOptions options;
  options.policies = {"zeus", "default", "oracle"};
  options.seeds = {1, 2, 3};
  size_t last_done = 0, last_total = 0, rows = 0;
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<PolicyResult> results, RunExperiment(
                                                                   workloads, options,
                                                                   [&](size_t done, size_t total) {
                                                                     EXPECT_EQ(done, last_done + 1);
                                                                     last_done = done;
                                                                     last_total = total;
                                                                   },
                                                                   [&](const HistoryRow& row) {
                                                                     ++rows;
                                                                     EXPECT_GE(row.seed, 1u);
                                                                     EXPECT_LE(row.seed, 3u);
                                                                   }));
  EXPECT_EQ(last_total, 2u * 3u * 3u);
  EXPECT_EQ(last_done, last_total);
  ASSERT_EQ(results.size(), 6u);
  EXPECT_GE(rows, 2u * 3u * 3u * 12u);  // 12 recurrences, retries add rows.
  for (const PolicyResult& r : results) {
    EXPECT_EQ(r.num_recurrences, 12);
    EXPECT_EQ(r.num_seeds, 3);
    EXPECT_LE(r.cost_ratio_min, r.cost_ratio);
    EXPECT_GE(r.cost_ratio_max, r.cost_ratio);
    if (r.policy == "oracle") {
      EXPECT_EQ(r.final_batch_size, r.oracle_run.batch_size);
      EXPECT_EQ(r.final_power_limit_w, r.oracle_run.power_limit_w);
    }
    if (r.policy == "default") {
      EXPECT_EQ(r.final_batch_size, 64);
    }
  }
}

TEST(ExperimentTest, RegretIsZeroForTheOracleAndPositiveForTheDefault) {
  const std::vector<Workload> workloads = {ToyWorkload("a")};
  ExperimentOptions options;
  options.policies = {"oracle", "default"};
  options.seeds = {7};
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<PolicyResult> results, RunExperiment(workloads, options));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].regret, 0.0);
  // The toy's default configuration is not its cheapest one.
  ASSERT_NE(results[1].default_run.cost, results[1].oracle_run.cost);
  EXPECT_GT(results[1].regret, 0.0);
  // Both are relative to the same oracle cost: cost = (1 + regret) x oracle's.
  EXPECT_NEAR(results[1].cost / (1 + results[1].regret), results[0].cost, 1e-9 * results[0].cost);
}

TEST(ExperimentTest, RejectsUnknownPolicyAndBadOptions) {
  const std::vector<Workload> workloads = {ToyWorkload("a")};
  ExperimentOptions options;
  options.policies = {"zeus", "nope"};
  EXPECT_EQ(RunExperiment(workloads, options).status().code(), StatusCode::kNotFound);
  options.policies = {"zeus"};
  options.seeds.clear();
  EXPECT_EQ(RunExperiment(workloads, options).status().code(), StatusCode::kInvalidArgument);
  options.seeds = {1};
  options.simulation.eta = -0.1;
  EXPECT_EQ(RunExperiment(workloads, options).status().code(), StatusCode::kInvalidArgument);
}

TEST(ExperimentTest, GroupExperimentScalesReferencesByRuntimeRatio) {
  const std::vector<Workload> workloads = {ToyWorkload("a")};
  JobGroups groups;
  groups["g"] = {{"g", 0, 10, "toy", 2.0}, {"g", 100, 110, "toy", 1.0}};
  groups["other"] = {{"other", 0, 10, "mnist", 1.0}};
  ExperimentOptions options;
  options.policies = {"oracle"};
  options.seeds = {1};
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<PolicyResult> results,
                            RunGroupExperiment(workloads, groups, options));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].num_recurrences, 2);
  // The oracle's configuration has epochs 3 or 4 per run: regret is the
  // sampling noise around the expected 3.5 epochs, within +-1/7.
  EXPECT_LE(std::abs(results[0].regret), 1.0 / 7 + 1e-9);

  JobGroups unrelated;
  unrelated["other"] = groups["other"];
  EXPECT_EQ(RunGroupExperiment(workloads, unrelated, options).status().code(),
            StatusCode::kNotFound);
}

// One loop runs both experiments: on a workload whose every seed run takes
// the same epochs (so the draws do not matter), a fixed policy's group
// experiment over one group of spaced-out submissions of runtime ratio 1 is
// the solo experiment of as many recurrences, field for field.
TEST(ExperimentTest, SoloExperimentIsAGroupOfSequentialSubmissions) {
  Workload w = ToyWorkload("a");
  w.batch_sizes[0].target_epochs = {4.0, 4.0};
  w.batch_sizes[1].target_epochs = {3.0, 3.0};
  const std::vector<Workload> workloads = {w};
  ExperimentOptions options;
  options.policies = {"default", "oracle"};
  options.seeds = {1, 2};
  options.simulation.num_recurrences = 5;
  JobGroups groups;
  for (int i = 0; i < 5; ++i) groups["g"].push_back({"g", 100.0 * i, 100.0 * i + 10, "toy", 1.0});
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<PolicyResult> solo, RunExperiment(workloads, options));
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<PolicyResult> grouped,
                            RunGroupExperiment(workloads, groups, options));
  ASSERT_EQ(solo.size(), 2u);
  ASSERT_EQ(grouped.size(), 2u);
  for (size_t i = 0; i < solo.size(); ++i) {
    SCOPED_TRACE(solo[i].policy);
    EXPECT_EQ(ResultToJson(grouped[i]), ResultToJson(solo[i]));
    EXPECT_EQ(solo[i].num_recurrences, 5);
  }
}

TEST(ExperimentTest, GroupExperimentRejectsWhatTheSoloOneRejects) {
  const std::vector<Workload> workloads = {ToyWorkload("a")};
  JobGroups groups;
  groups["g"] = {{"g", 0, 10, "toy", 1.0}};
  ExperimentOptions options;
  options.policies = {"zeus", "nope"};
  EXPECT_EQ(RunGroupExperiment(workloads, groups, options).status().code(), StatusCode::kNotFound);
  options.policies.clear();
  const Status none = RunGroupExperiment(workloads, groups, options).status();
  EXPECT_EQ(none.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(none.message().find("group experiment: no policies"), std::string::npos) << none;
  options.policies = {"zeus"};
  options.seeds.clear();
  EXPECT_EQ(RunGroupExperiment(workloads, groups, options).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace zeus
