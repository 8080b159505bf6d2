// The parts of `zeus simulate`'s text report written for a reader who has
// not read the paper: the settings header, the headline per GPU, the
// references' rows against themselves, and the notes explaining outliers.

#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "zeus/sim/report.h"

namespace zeus {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

PolicyResult ReadableResult(const std::string& gpu, const std::string& dataset,
                            const std::string& policy, double energy_ratio, double time_ratio,
                            double cost_ratio) {
  PolicyResult r;
  r.gpu = gpu;
  r.dataset = dataset;
  r.policy = policy;
  r.num_recurrences = 100;
  r.num_seeds = 2;
  r.energy_ratio = energy_ratio;
  r.time_ratio = time_ratio;
  r.cost_ratio = cost_ratio;
  r.final_batch_size = 128;
  r.final_power_limit_w = 200;
  r.default_run = {1024, 300, 1000.0, 10.0, 2000.0};
  r.oracle_run = {128, 200, 300.0, 5.0, 800.0};
  return r;
}

TEST(ReportReadabilityTest, SettingsHeaderSaysWhatEtaWeighsWhatBetaStopsAndTheSeeds) {
  SimulationOptions simulation;
  simulation.eta = 0.3;
  simulation.beta = 2.5;
  std::ostringstream out;
  WriteSettingsHeader(simulation, {1, 2, 3, 7, 9, 10}, out);
  EXPECT_EQ(out.str(),
            "eta 0.3: a run's cost = 0.3 x energy (J) + 0.7 x max power (W) x time (s), so 1\n"
            "  weighs energy only and 0 time only.\n"
            "beta 2.5: a policy stops a run once it has cost 2.5x the cheapest run so far\n"
            "  (early stopping).\n"
            "seeds: 1-3, 7, 9-10 (every number below is the mean over 6 seeds)\n");

  simulation.eta = 1.0;
  simulation.beta.reset();
  out.str("");
  WriteSettingsHeader(simulation, {4}, out);
  EXPECT_THAT(out.str(), HasSubstr("eta 1: a run's cost = 1 x energy (J) + 0 x max power"));
  EXPECT_THAT(out.str(), HasSubstr("beta none: no run is stopped early.\n"));
  EXPECT_THAT(out.str(), HasSubstr("seeds: 4 (every number below is the mean over 1 seed)\n"));
}

TEST(ReportReadabilityTest, HeadlineGivesThePapersPolicyTheBetterOfOursAndTheOraclePerGpu) {
  const std::vector<PolicyResult> results = {
      ReadableResult("a40", "cifar100", "zeus", 0.40, 0.50, 0.45),
      ReadableResult("a40", "cifar100", "frugal", 0.30, 0.40, 0.35),
      ReadableResult("a40", "cifar100", "swarm", 0.32, 0.42, 0.37),
      ReadableResult("a40", "cifar100", "default", 1.00, 1.00, 1.00),
      ReadableResult("a40", "cifar100", "oracle", 0.28, 0.38, 0.33),
      ReadableResult("a40", "squad", "zeus", 0.80, 1.10, 0.95),
      ReadableResult("a40", "squad", "frugal", 0.90, 1.20, 1.05),
      ReadableResult("a40", "squad", "swarm", 0.86, 1.00, 0.93),
      ReadableResult("a40", "squad", "default", 1.00, 1.00, 1.00),
      ReadableResult("a40", "squad", "oracle", 0.78, 0.98, 0.88),
      // Only the paper's policy on this GPU.
      ReadableResult("v100", "cifar100", "zeus", 0.50, 1.20, 0.85),
  };
  std::ostringstream out;
  WriteHeadline(results, out);
  // Means of the workloads' ratios: zeus on a40 (0.40 + 0.80) / 2 = 0.60;
  // swarm's mean cost (0.65) beats frugal's (0.70).
  EXPECT_EQ(out.str(),
            "Headline: energy, time and cost against `default` (the default batch size at the\n"
            "maximum power limit), mean of each GPU's workloads; negative = saved.\n"
            "  a40   zeus (the paper's policy)      energy  -40.0 %   time  -20.0 %   cost  "
            "-30.0 %\n"
            "        swarm (ours, the better here)  energy  -41.0 %   time  -29.0 %   cost  "
            "-35.0 %\n"
            "        oracle (hindsight: the bound)  energy  -47.0 %   time  -32.0 %   cost  "
            "-39.5 %\n"
            "  v100  zeus (the paper's policy)      energy  -50.0 %   time  +20.0 %   cost  "
            "-15.0 %\n");
}

TEST(ReportReadabilityTest, HeadlineIsEmptyWithoutThePapersPolicyOursOrTheOracle) {
  std::ostringstream out;
  WriteHeadline({ReadableResult("a40", "cifar100", "default", 1.0, 1.0, 1.0),
                 ReadableResult("a40", "cifar100", "grid-search", 1.5, 1.5, 1.5)},
                out);
  EXPECT_EQ(out.str(), "");
}

TEST(ReportReadabilityTest, TheReferencesAgainstThemselvesShowNoiseAsNoiseNotAsResults) {
  PolicyResult oracle_a = ReadableResult("a40", "cifar100", "oracle", 0.3, 0.4, 0.35);
  oracle_a.expected_regret = -0.0065;  // Luck of its runs, not a regret.
  PolicyResult oracle_b = ReadableResult("a40", "squad", "oracle", 0.8, 1.0, 0.9);
  oracle_b.expected_regret = 0.0022;
  PolicyResult default_a = ReadableResult("a40", "cifar100", "default", 1.0, 1.0, 1.003);
  default_a.expected_regret = 1.47;
  PolicyResult default_b = ReadableResult("a40", "squad", "default", 1.0, 1.0, 0.994);
  default_b.expected_regret = 0.05;
  PolicyResult zeus_a = ReadableResult("a40", "cifar100", "zeus", 0.4, 0.5, 0.45);
  zeus_a.expected_regret = 0.055;
  PolicyResult zeus_b = ReadableResult("a40", "squad", "zeus", 0.9, 1.1, 1.001);
  zeus_b.expected_regret = 0.092;
  std::ostringstream out;
  WriteComparisonTable({zeus_a, default_a, oracle_a, zeus_b, default_b, oracle_b}, out);
  const std::string text = out.str();
  EXPECT_THAT(text,
              HasSubstr("\noracle                2        0.00%       0.00%      0.900        0  "
                        "a40/squad\n"));
  EXPECT_THAT(text,
              HasSubstr("\ndefault               2       76.00%     147.00%      1.003        -  "
                        "a40/cifar100\n"));
  // Other policies as before: a cost ratio just above 1 counts.
  EXPECT_THAT(text,
              HasSubstr("\nzeus                  2        7.35%       9.20%      1.001        1  "
                        "a40/squad\n"));
  EXPECT_THAT(text, HasSubstr("oracle: regret 0 by definition"));
  EXPECT_THAT(text, HasSubstr("differs from that expected cost by -0.22 % on\n"
                              "average (-0.65 to 0.22 % per workload)"));
  EXPECT_THAT(text, HasSubstr("default: its cost relative to its own expected cost is 0.994 to "
                              "1.003 over the\nworkloads, the same noise"));

  // Without the references, no note about them.
  std::ostringstream zeus_only;
  WriteComparisonTable({zeus_a, zeus_b}, zeus_only);
  EXPECT_THAT(zeus_only.str(), Not(HasSubstr("by definition")));
  EXPECT_THAT(zeus_only.str(), Not(HasSubstr("its own expected cost")));
}

HistoryRow HistoryRun(const std::string* gpu, const std::string* dataset, const std::string* policy,
                      uint64_t seed, int batch_size, int power_limit_w, double cost, bool reached) {
  HistoryRow row;
  row.gpu = gpu;
  row.dataset = dataset;
  row.policy = policy;
  row.seed = seed;
  row.run.batch_size = batch_size;
  row.run.power_limit_w = power_limit_w;
  row.run.cost = cost;
  row.run.reached = reached;
  return row;
}

TEST(ReportReadabilityTest, AnOutlierIsExplainedByTheRunsThatMissedTheTarget) {
  const std::string gpu = "v100", dataset = "movielens-1m", grid = "grid-search", zeus = "zeus";
  RunEvidence evidence;
  for (uint64_t seed : {1, 2}) {
    // Per seed: 3 runs that reached the target (800 each) and one run that
    // did not, at batch size 4, costing 80,000 (100x the oracle's 800).
    for (int i = 0; i < 3; ++i)
      evidence.Add(HistoryRun(&gpu, &dataset, &grid, seed, 128, 200, 800, true));
    evidence.Add(HistoryRun(&gpu, &dataset, &grid, seed, 4, 125, seed == 1 ? 80000 : 40000, false));
    evidence.Add(HistoryRun(&gpu, &dataset, &zeus, seed, 128, 200, 800, true));
  }
  ASSERT_NE(evidence.Find(gpu, dataset, grid), nullptr);
  EXPECT_EQ(evidence.Find(gpu, dataset, grid)->runs, 8);
  EXPECT_EQ(evidence.Find(gpu, dataset, "default"), nullptr);

  PolicyResult outlier = ReadableResult(gpu, dataset, grid, 30.0, 30.0, 31.8);
  outlier.regret = 84.0;
  const PolicyResult fine = ReadableResult(gpu, dataset, zeus, 0.4, 0.4, 0.4);
  std::ostringstream out;
  WriteOutlierNotes({fine, outlier}, evidence, out);
  EXPECT_EQ(out.str(),
            "\nOutliers (cost above 2x `default`):\n\n"
            "- grid-search on v100/movielens-1m costs 31.8x `default` (regret 8400.0 %). Per\n"
            "  seed, 1 of its 4 runs did not reach the target, 96.2 % of its cost; its\n"
            "  costliest run, batch size 4 at 125 W, cost 100x the oracle's expected run. A\n"
            "  run that cannot reach the target costs all it spends until an early-stop bound\n"
            "  (beta) stops it or it runs out of epochs.\n");

  // Nothing above 2x: no section.
  std::ostringstream none;
  WriteOutlierNotes({fine}, evidence, none);
  EXPECT_EQ(none.str(), "");
}

TEST(ReportReadabilityTest, OutlierNotesAreCappedLargestFirstAndNeedNoEvidence) {
  std::vector<PolicyResult> results;
  for (int i = 0; i < 7; ++i) {
    results.push_back(
        ReadableResult("a40", "w" + std::to_string(i), "grid-search", 3.0, 3.0, 3.0 + i));
  }
  std::ostringstream out;
  WriteOutlierNotes(results, RunEvidence(), out);
  const std::string text = out.str();
  EXPECT_LT(text.find("a40/w6 costs 9.0x"), text.find("a40/w2 costs 5.0x"));
  EXPECT_THAT(text, Not(HasSubstr("a40/w1 ")));
  EXPECT_THAT(text, HasSubstr("- and 2 more above 2x `default`.\n"));
  EXPECT_THAT(text, Not(HasSubstr("Per seed")));
}

}  // namespace
}  // namespace zeus
