// The `swarm` policy (frugal plus speculative steps on concurrent
// submissions, docs/BATCH_SIZE_POLICY.md) on the bundled NSDI'23 traces:
// one submission at a time it is frugal, run for run; in generated job
// groups (seeds 1-10, eta 0.5, beta 2) it pays less than frugal. Deterministic.

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "zeus/sim/experiment.h"
#include "zeus/sim/job_groups.h"
#include "zeus/sim/trace.h"

#include "tests/sim/bundled_workloads.h"

namespace zeus {
namespace {

ExperimentOptions Options() {
  ExperimentOptions options;
  options.policies = {"frugal", "swarm"};
  options.simulation.eta = 0.5;
  return options;
}

TEST(SwarmGroupsTest, OneSubmissionAtATimeIsFrugalRunForRun) {
  ZEUS_ASSERT_OK_AND_ASSIGN(const std::vector<Workload> workloads, testing::BundledWorkloads());
  std::map<std::string, std::vector<std::string>> runs;
  HistoryCallback history = [&](const HistoryRow& row) {
    runs[*row.policy].push_back(*row.gpu + "/" + *row.dataset + " " + std::to_string(row.seed) +
                                " " + std::to_string(row.run.batch_size) + "@" +
                                std::to_string(row.run.power_limit_w) + " " +
                                std::to_string(row.run.cost));
  };
  ZEUS_ASSERT_OK(RunExperiment(workloads, Options(), nullptr, history).status());
  ASSERT_FALSE(runs["frugal"].empty());
  EXPECT_EQ(runs["swarm"], runs["frugal"]);
}

struct GroupSummary {
  double mean_regret = 0.0;
  double max_regret = 0.0;
  double max_cost_ratio = 0.0;
};

std::map<std::string, GroupSummary> MeasureGroups(const std::vector<Workload>& workloads,
                                                  int num_groups) {
  JobGroupGeneratorOptions generator;
  generator.num_groups = num_groups;
  generator.seed = 1;
  std::set<std::string> names;
  for (const Workload& w : workloads) names.insert(w.job.dataset);
  StatusOr<JobGroups> groups = GenerateJobGroups(generator, {names.begin(), names.end()});
  EXPECT_TRUE(groups.ok()) << groups.status();
  std::map<std::string, GroupSummary> summaries;
  if (!groups.ok()) return summaries;
  StatusOr<std::vector<PolicyResult>> results = RunGroupExperiment(workloads, *groups, Options());
  EXPECT_TRUE(results.ok()) << results.status();
  if (!results.ok()) return summaries;
  std::map<std::string, int> cases;
  for (const PolicyResult& r : *results) {
    GroupSummary& s = summaries[r.policy];
    s.mean_regret += r.expected_regret;
    s.max_regret = std::max(s.max_regret, r.expected_regret);
    s.max_cost_ratio = std::max(s.max_cost_ratio, r.cost_ratio);
    ++cases[r.policy];
  }
  for (auto& [policy, s] : summaries) s.mean_regret /= cases[policy];
  return summaries;
}

TEST(SwarmGroupsTest, PaysLessThanFrugalInJobGroups) {
  ZEUS_ASSERT_OK_AND_ASSIGN(const std::vector<Workload> workloads, testing::BundledWorkloads());
  for (int num_groups : {4, 16, 64}) {
    SCOPED_TRACE(std::to_string(num_groups) + " groups");
    std::map<std::string, GroupSummary> s = MeasureGroups(workloads, num_groups);
    const GroupSummary& frugal = s["frugal"];
    const GroupSummary& swarm = s["swarm"];
    EXPECT_LT(swarm.mean_regret, frugal.mean_regret);
    EXPECT_LT(swarm.max_regret, frugal.max_regret);
    // The issue's cost target (no group workload above 1.05x the default),
    // which swarm meets on these draws.
    EXPECT_LE(swarm.max_cost_ratio, 1.05);
    // The issue's regret targets (8 / 6 / 6 % mean) are NOT met; this pins
    // where swarm stands so a regression shows (docs/BATCH_SIZE_POLICY.md,
    // sixth round, scaled run times: 13.3 / 10.5 / 9.9 %; 18.1 / 12.7 /
    // 11.5 % with the original's fixed durations).
    EXPECT_LT(swarm.mean_regret, 0.145);
  }
}

}  // namespace
}  // namespace zeus
