// The `frugal` policy against `zeus` on the bundled NSDI'23 V100 and A40
// traces (docs/BATCH_SIZE_POLICY.md): seeds 1-10, beta 2, eta 0.2, 0.5 and
// 0.8, with the default 2 x |batch sizes| x |power limits| recurrences and
// with half of them. Deterministic (fixed seeds); runs in about a second.

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "zeus/sim/experiment.h"
#include "zeus/sim/trace.h"

#include "tests/sim/bundled_workloads.h"

namespace zeus {
namespace {

struct Summary {
  double mean_regret = 0.0;
  double max_regret = 0.0;
  double max_cost_ratio = 0.0;
  int cases = 0;
};

// Per policy, over every workload of both GPUs: expected regret and cost
// ratio to `default` at `eta`, with all (or half of the) recurrences.
std::map<std::string, Summary> Measure(const std::vector<Workload>& workloads, double eta,
                                       bool half) {
  std::map<std::string, Summary> summaries;
  for (const Workload& workload : workloads) {
    ExperimentOptions options;
    options.policies = {"zeus", "frugal"};
    options.simulation.eta = eta;
    options.simulation.num_recurrences = half ? DefaultRecurrences(workload) / 2 : 0;
    StatusOr<std::vector<PolicyResult>> results = RunExperiment({workload}, options);
    EXPECT_TRUE(results.ok()) << results.status();
    if (!results.ok()) continue;
    for (const PolicyResult& r : *results) {
      Summary& s = summaries[r.policy];
      s.mean_regret += r.expected_regret;
      s.max_regret = std::max(s.max_regret, r.expected_regret);
      s.max_cost_ratio = std::max(s.max_cost_ratio, r.cost_ratio);
      ++s.cases;
    }
  }
  for (auto& [policy, s] : summaries) s.mean_regret /= s.cases;
  return summaries;
}

TEST(FrugalTargetsTest, BeatsZeusOnTheBundledTraces) {
  ZEUS_ASSERT_OK_AND_ASSIGN(const std::vector<Workload> workloads, testing::BundledWorkloads());
  ASSERT_EQ(workloads.size(), 12u);
  for (double eta : {0.2, 0.5, 0.8}) {
    for (bool half : {false, true}) {
      SCOPED_TRACE("eta " + std::to_string(eta) + (half ? ", half" : ", all") + " recurrences");
      std::map<std::string, Summary> s = Measure(workloads, eta, half);
      const Summary& zeus = s["zeus"];
      const Summary& frugal = s["frugal"];
      ASSERT_EQ(frugal.cases, 12);
      // Measured (docs/BATCH_SIZE_POLICY.md): frugal's mean regret is 0.49-0.51
      // of zeus's, its largest 0.45-0.52 of zeus's, and its costliest
      // workload is cheaper than zeus's costliest.
      EXPECT_LE(frugal.mean_regret, 0.55 * zeus.mean_regret);
      EXPECT_LE(frugal.max_regret, 0.55 * zeus.max_regret);
      EXPECT_LT(frugal.max_cost_ratio, zeus.max_cost_ratio);
      if (!half) {
        // The bounds with every recurrence: the largest regret
        // (4.4-4.6 %) and the 3 % mean (2.70-2.87 %).
        EXPECT_LE(frugal.max_regret, 0.05);
        EXPECT_LE(frugal.mean_regret, 0.030);
      } else {
        // Half the recurrences: mean 5.3-5.5 %, max 8.7-9.3 %.
        EXPECT_LE(frugal.max_regret, 0.095);
        EXPECT_LE(frugal.mean_regret, 0.056);
      }
    }
  }
}

}  // namespace
}  // namespace zeus
