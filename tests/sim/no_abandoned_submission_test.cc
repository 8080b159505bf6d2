// No policy abandons a submission (SubmissionTally::abandoned is 0): the two
// loops found on the bundled traces, where a swarm concurrent run stopped
// with a restart was handed back at the same size and stopped again until
// the simulator's 20 tries were used up, now end with a run that may finish.
// The groups are the draw `zeus simulate --generate-groups 64` makes with
// --group-draw-seed 1; the seeds are those of the loops.

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "zeus/sim/job_groups.h"
#include "zeus/sim/policy.h"

#include "tests/sim/bundled_workloads.h"

namespace zeus {
namespace {

struct Loop {
  double runtime_ratio_sigma = 0.25;
  std::string gpu;
  std::string group;
  std::vector<uint64_t> seeds;
};

TEST(NoAbandonedSubmissionTest, TheRestartLoopsOfTheBundledTracesEndInARunThatMayFinish) {
  ZEUS_ASSERT_OK_AND_ASSIGN(const std::vector<Workload> workloads, testing::BundledWorkloads());
  std::set<std::string> datasets;
  for (const Workload& w : workloads) datasets.insert(w.job.dataset);
  const std::vector<Loop> loops = {
      // 4 A40 imagenet submissions abandoned at 20 tries.
      {0.25, "a40", "group-45", {7, 9}},
      // --group-runtime-sigma 1.0: dozens of imagenet submissions.
      {1.0, "a40", "group-45", {2, 3, 5}},
      {1.0, "v100", "group-45", {2, 9}},
      {1.0, "v100", "group-11", {4}},
  };
  for (const Loop& loop : loops) {
    JobGroupGeneratorOptions generator;
    generator.num_groups = 64;
    generator.seed = 1;
    generator.runtime_ratio_sigma = loop.runtime_ratio_sigma;
    ZEUS_ASSERT_OK_AND_ASSIGN(const JobGroups groups,
                              GenerateJobGroups(generator, {datasets.begin(), datasets.end()}));
    const std::vector<JobSubmission>& group = groups.at(loop.group);
    ASSERT_EQ(group.front().dataset, "imagenet");
    const Workload* workload = nullptr;
    for (const Workload& w : workloads) {
      if (w.gpu == loop.gpu && w.job.dataset == "imagenet") workload = &w;
    }
    ASSERT_NE(workload, nullptr);
    for (uint64_t seed : loop.seeds) {
      SCOPED_TRACE(loop.gpu + " " + loop.group + " sigma " +
                   std::to_string(loop.runtime_ratio_sigma) + " seed " + std::to_string(seed));
      SimulationOptions options;
      options.seed = GroupSeed(seed, loop.group);
      ZEUS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Policy> policy,
                                MakePolicy("swarm", options.ContextFor(*workload)));
      SubmissionTally tally;
      ZEUS_ASSERT_OK(SimulateJobGroup(*workload, *policy, group, options, &tally).status());
      EXPECT_EQ(tally.submissions, static_cast<int>(group.size()));
      EXPECT_EQ(tally.abandoned, 0);
      EXPECT_LT(tally.most_tries, options.max_tries);
    }
  }
}

}  // namespace
}  // namespace zeus
