// BatchSizePolicyKind::kSwarm: frugal plus speculative steps on concurrent
// submissions, with results accepted in any order.

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "zeus/optimizer/batch_size/batch_size_optimizer.h"

#include "tests/optimizer/batch_size/five_sizes_config.h"
#include "tests/optimizer/batch_size/policy_under_test.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

BatchSizeOptimizerConfig SwarmConfig(BatchSizePolicyKind policy = BatchSizePolicyKind::kSwarm) {
  return testing::FiveSizesConfig(policy);
}

// Sequential recurrences with fixed outcomes; returns the sizes handed out.
std::vector<int> SwarmRunSequential(PolicyUnderTest& optimizer, int n) {
  static const std::map<int, std::pair<double, bool>> outcomes = {
      {8, {50, false}}, {16, {30, true}}, {32, {10, true}}, {64, {20, true}}, {128, {90, false}}};
  std::vector<int> sizes;
  for (int i = 0; i < n; ++i) {
    const Trial trial = optimizer.NextTrial();
    sizes.push_back(trial.batch_size);
    const auto& [cost, reached] = outcomes.at(trial.batch_size);
    EXPECT_TRUE(optimizer.ReportResult(trial.trial_number, cost + (i % 3), reached).ok());
  }
  return sizes;
}

// Expects `optimizer` to hand out `trials` next, in order.
void ExpectNextTrials(PolicyUnderTest& optimizer, const std::vector<Trial>& trials) {
  for (const Trial& trial : trials) EXPECT_EQ(optimizer.NextTrial(), trial);
}

TEST(BatchSizeOptimizerSwarmTest, OneTrialAtATimeIsFrugalsSequence) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest swarm, PolicyUnderTest::Create(SwarmConfig()));
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest frugal,
                            PolicyUnderTest::Create(SwarmConfig(BatchSizePolicyKind::kFrugal)));
  EXPECT_EQ(SwarmRunSequential(swarm, 80), SwarmRunSequential(frugal, 80));
  nlohmann::json swarm_state = swarm.ToJson();
  nlohmann::json frugal_state = frugal.ToJson();
  EXPECT_EQ(swarm_state["config"]["policy"], "swarm");
  swarm_state["config"].erase("policy");
  frugal_state["config"].erase("policy");
  EXPECT_EQ(swarm_state, frugal_state);
}

TEST(BatchSizeOptimizerSwarmTest, ConcurrentTrialsTakeTheWalksNextSizesUnderTheTightBound) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(SwarmConfig()));
  const Trial first = optimizer.NextTrial();
  EXPECT_EQ(first, (Trial{1, 64, TrialKind::kExploration}));
  // The first wave: the default's step has not reported, so both directions
  // are open, interleaved nearest first (next down, first up, second down);
  // nothing has reached the target, so nothing bounds them yet.
  EXPECT_EQ(optimizer.NextTrial(), (Trial{2, 32, TrialKind::kSpeculative}));
  EXPECT_EQ(optimizer.NextTrial(), (Trial{3, 128, TrialKind::kSpeculative}));
  EXPECT_EQ(optimizer.NextTrial(), (Trial{4, 16, TrialKind::kSpeculative}));
  EXPECT_FALSE(optimizer.EarlyStopThreshold(2).has_value());
  EXPECT_FALSE(optimizer.EarlyStopThreshold(3).has_value());
  EXPECT_EQ(optimizer.NextTrial(), (Trial{5, 64, TrialKind::kConcurrent}));
  // A concurrent run of the default reaches first: from now on the
  // speculative runs are held to the exploration bound at their next report.
  ZEUS_ASSERT_OK(optimizer.ReportResult(5, 20.0, true));
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(2), FrugalKnobs::kExplorationBeta * 20.0);
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(3), FrugalKnobs::kExplorationBeta * 20.0);
  // The default's own step reports last: 32 is in flight as a speculative
  // trial, so it becomes the walk's step; nothing is handed out twice.
  ZEUS_ASSERT_OK(optimizer.ReportResult(1, 20.5, true));
  EXPECT_EQ(optimizer.in_flight().at(2).kind, TrialKind::kExploration);
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(2), FrugalKnobs::kExplorationBeta * 20.0);
  // Next: 16 and 128 (out already), 8, then the best size known.
  EXPECT_EQ(optimizer.NextTrial(), (Trial{6, 8, TrialKind::kSpeculative}));
  EXPECT_EQ(optimizer.NextTrial(), (Trial{7, 64, TrialKind::kConcurrent}));
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(7), 40.0);

  // Once the default's step has shown a smaller size cheaper, the up
  // direction is no longer speculated on.
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest down, PolicyUnderTest::Create(SwarmConfig()));
  ZEUS_ASSERT_OK(down.ReportResult(down.NextTrial().trial_number, 20.0, true));
  EXPECT_EQ(down.NextTrial(), (Trial{2, 32, TrialKind::kExploration}));
  EXPECT_EQ(down.NextTrial(), (Trial{3, 16, TrialKind::kSpeculative}));
  EXPECT_EQ(down.NextTrial(), (Trial{4, 128, TrialKind::kSpeculative}));
  ZEUS_ASSERT_OK(down.ReportResult(2, 15.0, true));
  EXPECT_EQ(down.NextTrial(), (Trial{5, 8, TrialKind::kSpeculative}));
  EXPECT_EQ(down.NextTrial(), (Trial{6, 32, TrialKind::kConcurrent}));

  BatchSizeOptimizerConfig off = SwarmConfig();
  off.beta.reset();
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest unbounded, PolicyUnderTest::Create(off));
  unbounded.NextTrial();
  // Without early stopping nothing would bound a speculative run, in the
  // first wave or later.
  EXPECT_EQ(unbounded.NextTrial().kind, TrialKind::kConcurrent);
  ZEUS_ASSERT_OK(unbounded.ReportResult(1, 20.0, true));
  unbounded.NextTrial();
  EXPECT_EQ(unbounded.NextTrial().kind, TrialKind::kConcurrent);
}

TEST(BatchSizeOptimizerSwarmTest, NoSpeculationPastAStepThatDidNotBeatTheBest) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(SwarmConfig()));
  ZEUS_ASSERT_OK(optimizer.ReportResult(optimizer.NextTrial().trial_number, 20.0, true));
  ASSERT_EQ(optimizer.NextTrial(), (Trial{2, 32, TrialKind::kExploration}));
  ASSERT_EQ(optimizer.NextTrial(), (Trial{3, 16, TrialKind::kSpeculative}));
  // 32 reaches within the exploration bound (22 <= 25) without beating the
  // default: the walk goes on to 16, now its step, but the best size is two
  // sizes behind it, so 8 is not speculated on; the up direction still is.
  ZEUS_ASSERT_OK(optimizer.ReportResult(2, 22.0, true));
  ASSERT_EQ(optimizer.in_flight().at(3).kind, TrialKind::kExploration);
  EXPECT_EQ(optimizer.NextTrial(), (Trial{4, 128, TrialKind::kSpeculative}));
  EXPECT_EQ(optimizer.NextTrial(), (Trial{5, 64, TrialKind::kConcurrent}));
  // 16 beats the default: the walk goes on to 8, its step now.
  ZEUS_ASSERT_OK(optimizer.ReportResult(5, 20.0, true));
  ZEUS_ASSERT_OK(optimizer.ReportResult(3, 12.0, true));
  ASSERT_EQ(optimizer.NextTrial(), (Trial{6, 8, TrialKind::kExploration}));
}

TEST(BatchSizeOptimizerSwarmTest, ResultsInAnyOrderAreJudgedWhenTheWalkReachesThem) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(SwarmConfig()));
  ZEUS_ASSERT_OK(optimizer.ReportResult(optimizer.NextTrial().trial_number, 20.0, true));
  const Trial step = optimizer.NextTrial();  // 32
  const Trial s16 = optimizer.NextTrial();
  const Trial s128 = optimizer.NextTrial();
  const Trial s8 = optimizer.NextTrial();
  ASSERT_EQ(step, (Trial{2, 32, TrialKind::kExploration}));
  ASSERT_EQ(s16.batch_size, 16);
  ASSERT_EQ(s128.batch_size, 128);  // Interleaved: next down, first up, second down.
  ASSERT_EQ(s8.batch_size, 8);
  // 8 reports first (reached, 11), then 16 (stopped short at 24). Neither
  // moves the walk, which waits on 32; 8's run is the best so far.
  ZEUS_ASSERT_OK(optimizer.ReportResult(s8.trial_number, 11.0, true));
  ZEUS_ASSERT_OK(optimizer.ReportResult(s16.trial_number, 24.0, false));
  EXPECT_EQ(optimizer.best_batch_size(), 8);
  EXPECT_EQ(optimizer.speculative_results().size(), 2u);
  EXPECT_TRUE(optimizer.exploring());
  // 32 reports 10: the walk goes on to 16 (a failure: censored at what it
  // spent), and 32 being 2x cheaper than the default earns the direction a
  // second chance; 8 passes (11 <= 1.25 x 10). The down walk was decisive,
  // so 128 is skipped and the bandit starts, with 128's run still out.
  ZEUS_ASSERT_OK(optimizer.ReportResult(step.trial_number, 10.0, true));
  EXPECT_FALSE(optimizer.exploring());
  EXPECT_TRUE(optimizer.speculative_results().empty());
  EXPECT_EQ(optimizer.censored(), (std::map<int, double>{{16, 24.0}}));
  std::vector<int> arms;
  for (const ArmState& arm : optimizer.ArmStates()) arms.push_back(arm.batch_size);
  EXPECT_EQ(arms, (std::vector<int>{8, 16, 32, 64}));
  ZEUS_ASSERT_OK(optimizer.ReportResult(s128.trial_number, 90.0, false));
  EXPECT_TRUE(optimizer.in_flight().empty());
  EXPECT_EQ(optimizer.NextTrial().kind, TrialKind::kBandit);
}

TEST(BatchSizeOptimizerSwarmTest, ASpeculativeRunAboveTheBoundKnownAtReportIsAFailure) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(SwarmConfig()));
  ZEUS_ASSERT_OK(optimizer.ReportResult(optimizer.NextTrial().trial_number, 20.0, true));
  const Trial step = optimizer.NextTrial();  // 32
  const Trial s16 = optimizer.NextTrial();
  // 16 reached at 18 under its bound at hand-out (25); but by the time the
  // walk reaches it, 32 has cost 10 and the bound is 12.5.
  ZEUS_ASSERT_OK(optimizer.ReportResult(s16.trial_number, 18.0, true));
  ZEUS_ASSERT_OK(optimizer.ReportResult(step.trial_number, 10.0, true));
  // 16 failed the walk (one miss of two), not censored: its cost is known.
  EXPECT_TRUE(optimizer.exploring());
  EXPECT_TRUE(optimizer.censored().empty());
  EXPECT_EQ(optimizer.NextTrial().batch_size, 8);
}

TEST(BatchSizeOptimizerSwarmTest, ASpeculativeRunTheWalkCanNoLongerReachStopsAtItsNextReport) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(SwarmConfig()));
  ExpectNextTrials(optimizer, {{1, 64, TrialKind::kExploration},
                               {2, 32, TrialKind::kSpeculative},
                               {3, 128, TrialKind::kSpeculative},
                               {4, 16, TrialKind::kSpeculative},
                               {5, 64, TrialKind::kConcurrent}});
  ZEUS_ASSERT_OK(optimizer.ReportResult(5, 20.0, true));
  ZEUS_ASSERT_OK(optimizer.ReportResult(1, 20.5, true));
  ASSERT_EQ(optimizer.in_flight().at(2).kind, TrialKind::kExploration);
  ASSERT_EQ(optimizer.NextTrial(), (Trial{6, 8, TrialKind::kSpeculative}));
  const double exploration_bound = FrugalKnobs::kExplorationBeta * 20.0;
  // While the walk may still reach them, speculative runs keep the
  // exploration bound, the up direction's included.
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(3), exploration_bound);
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(4), exploration_bound);
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(6), exploration_bound);
  // 32's step fails: the down direction is over and the walk goes up to
  // 128, whose run becomes its step. 16 and 8 can no longer serve the walk
  // (one round) nor, being past a failure, likely be the best: stopped at
  // their next report.
  ZEUS_ASSERT_OK(optimizer.ReportResult(2, 30.0, false));
  ASSERT_TRUE(optimizer.exploring());
  EXPECT_EQ(optimizer.in_flight().at(3).kind, TrialKind::kExploration);
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(3), exploration_bound);
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(4), SwarmKnobs::kOrphanBeta * 20.0);
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(6), SwarmKnobs::kOrphanBeta * 20.0);
  EXPECT_LT(SwarmKnobs::kOrphanBeta, FrugalKnobs::kExplorationBeta);
  // Its stopped run is an observation, never a step of the walk.
  ZEUS_ASSERT_OK(optimizer.ReportResult(4, 0.5, false));
  EXPECT_EQ(optimizer.in_flight().at(3).kind, TrialKind::kExploration);
  EXPECT_TRUE(optimizer.exploring());
}

// A concurrent run went to the best size known then; once a cheaper size
// is known, it stops while finishing would still cost more than a fresh run
// there (its size's mean cost less the lowest cost), and that stop is no
// observation of its size.
TEST(BatchSizeOptimizerSwarmTest, AConcurrentRunRestartsWhileFinishingCostsMoreThanTheCheaperSize) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(SwarmConfig()));
  ZEUS_ASSERT_OK(optimizer.ReportResult(optimizer.NextTrial().trial_number, 20.0, true));
  ExpectNextTrials(optimizer, {{2, 32, TrialKind::kExploration},
                               {3, 16, TrialKind::kSpeculative},
                               {4, 128, TrialKind::kSpeculative},
                               {5, 8, TrialKind::kSpeculative},
                               {6, 64, TrialKind::kConcurrent},
                               {7, 64, TrialKind::kConcurrent},
                               {8, 64, TrialKind::kConcurrent}});
  // Its size is still the cheapest: nothing to restart for.
  EXPECT_EQ(optimizer.RestartThreshold(6), std::nullopt);
  ZEUS_ASSERT_OK(optimizer.ReportResult(2, 12.0, true));
  EXPECT_DOUBLE_EQ(*optimizer.RestartThreshold(6), 20.0 - 12.0);
  // Probes are never restarted; nor are trials not in flight.
  for (int64_t probe : {3, 4, 5, 99}) EXPECT_EQ(optimizer.RestartThreshold(probe), std::nullopt);
  // Stopped below it: 64's mean cost stays 20 (the others' threshold too).
  ZEUS_ASSERT_OK(optimizer.ReportResult(6, 5.0, false));
  EXPECT_DOUBLE_EQ(*optimizer.RestartThreshold(7), 8.0);
  // A failure past it (within its bound, 40) is an observation: mean 25.
  ZEUS_ASSERT_OK(optimizer.ReportResult(7, 30.0, false));
  EXPECT_DOUBLE_EQ(*optimizer.RestartThreshold(8), 25.0 - 12.0);
  const nlohmann::json state = optimizer.ToJson();
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest restored, PolicyUnderTest::FromJson(state));
  EXPECT_DOUBLE_EQ(*restored.RestartThreshold(8), 13.0);

  // frugal's concurrent runs finish whatever is found meanwhile.
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest frugal,
                            PolicyUnderTest::Create(SwarmConfig(BatchSizePolicyKind::kFrugal)));
  ZEUS_ASSERT_OK(frugal.ReportResult(frugal.NextTrial().trial_number, 20.0, true));
  const Trial step = frugal.NextTrial();
  const Trial concurrent = frugal.NextTrial();
  ASSERT_EQ(concurrent.kind, TrialKind::kConcurrent);
  ZEUS_ASSERT_OK(frugal.ReportResult(step.trial_number, 12.0, true));
  EXPECT_EQ(frugal.RestartThreshold(concurrent.trial_number), std::nullopt);
}

TEST(BatchSizeOptimizerSwarmTest, AStepOutbidByASizeFurtherAlongDoesNotEndTheDirection) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(SwarmConfig()));
  ZEUS_ASSERT_OK(optimizer.ReportResult(optimizer.NextTrial().trial_number, 20.0, true));
  const Trial step = optimizer.NextTrial();  // 32
  const Trial s16 = optimizer.NextTrial();
  ASSERT_EQ(s16, (Trial{3, 16, TrialKind::kSpeculative}));
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(step.trial_number), 25.0);  // 1.25 x 20.
  // 16 reaches at 8: the lowest cost drops. 32's result can no longer end
  // the direction, so its run is held to beta (2 x 8 = 16) as a concurrent
  // run would be, not to the exploration bound (1.25 x 8 = 10); it stops at
  // 17 without reaching.
  ZEUS_ASSERT_OK(optimizer.ReportResult(s16.trial_number, 8.0, true));
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(step.trial_number), 16.0);
  ZEUS_ASSERT_OK(optimizer.ReportResult(step.trial_number, 17.0, false));
  // Frugal's walk would end the direction at this first failure (no steep
  // slope of its own yet) and never use 16's result; swarm's goes on: 16
  // passes and the walk reaches 8.
  EXPECT_EQ(optimizer.censored(), (std::map<int, double>{{32, 16.0}}));
  EXPECT_TRUE(optimizer.exploring());
  EXPECT_EQ(optimizer.NextTrial(), (Trial{4, 8, TrialKind::kExploration}));
}

// The size of the lowest cost known is judged by its best run: its own
// speculative result (10) is above the exploration bound once its concurrent
// run has lowered the lowest cost (to 6, bound 7.5), yet it passes, and the
// steps before it are outbid by it. Without that the walk ended at 128's
// failure and the bandit, without 512 among its arms, sent every later trial
// to sizes that fail at 2 x 6 (seen under heavy overlap: 3.4x the default's
// cost).
TEST(BatchSizeOptimizerSwarmTest, TheSizeOfTheLowestCostKnownIsNeverLostByTheWalk) {
  BatchSizeOptimizerConfig config = SwarmConfig();
  config.batch_sizes = {16, 32, 64, 128, 256, 512};
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(config));
  ZEUS_ASSERT_OK(optimizer.ReportResult(optimizer.NextTrial().trial_number, 20.0, true));
  ExpectNextTrials(optimizer, {{2, 32, TrialKind::kExploration},
                               {3, 16, TrialKind::kSpeculative},
                               {4, 128, TrialKind::kSpeculative},
                               {5, 256, TrialKind::kSpeculative},
                               {6, 512, TrialKind::kSpeculative}});
  // 32 fails: the walk goes up, and 128's run becomes its step.
  ZEUS_ASSERT_OK(optimizer.ReportResult(2, 30.0, false));
  ASSERT_EQ(optimizer.in_flight().at(4).kind, TrialKind::kExploration);
  ZEUS_ASSERT_OK(optimizer.ReportResult(6, 10.0, true));
  ASSERT_EQ(optimizer.NextTrial(), (Trial{7, 512, TrialKind::kConcurrent}));
  ZEUS_ASSERT_OK(optimizer.ReportResult(7, 6.0, true));
  // 128 and 256 are outbid by 512: held to beta (2 x 6), their failures do
  // not end the direction.
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(4), 12.0);
  ZEUS_ASSERT_OK(optimizer.ReportResult(4, 12.0, false));
  ASSERT_TRUE(optimizer.exploring());
  ASSERT_EQ(optimizer.in_flight().at(5).kind, TrialKind::kExploration);
  ZEUS_ASSERT_OK(optimizer.ReportResult(5, 9.0, true));
  // 512's own result (10 > 7.5) passes: the walk is over with 512 an arm.
  EXPECT_FALSE(optimizer.exploring());
  std::vector<int> arms;
  for (const ArmState& arm : optimizer.ArmStates()) arms.push_back(arm.batch_size);
  EXPECT_NE(std::find(arms.begin(), arms.end(), 512), arms.end());
}

TEST(BatchSizeOptimizerSwarmTest, ReportFailureOfASpeculativeTrialLetsTheSizeBeTriedAgain) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(SwarmConfig()));
  ZEUS_ASSERT_OK(optimizer.ReportResult(optimizer.NextTrial().trial_number, 20.0, true));
  optimizer.NextTrial();
  const Trial s16 = optimizer.NextTrial();
  ASSERT_EQ(s16.kind, TrialKind::kSpeculative);
  ZEUS_ASSERT_OK(optimizer.ReportFailure(s16.trial_number));
  EXPECT_EQ(optimizer.NextTrial().batch_size, 16);
}

// Drives two optimizers with the same reports, several in flight, in a fixed
// scrambled order; returns the trials handed out.
std::vector<Trial> Scrambled(PolicyUnderTest& optimizer, int rounds) {
  static const std::map<int, std::pair<double, bool>> outcomes = {
      {8, {13, true}}, {16, {11, true}}, {32, {10, true}}, {64, {20, true}}, {128, {90, false}}};
  std::vector<Trial> trials;
  for (int r = 0; r < rounds; ++r) {
    std::vector<Trial> batch;
    for (int i = 0; i < 3; ++i) batch.push_back(optimizer.NextTrial());
    // Last handed out reports first.
    for (auto it = batch.rbegin(); it != batch.rend(); ++it) {
      const auto& [cost, reached] = outcomes.at(it->batch_size);
      EXPECT_TRUE(optimizer.ReportResult(it->trial_number, cost + r % 3, reached).ok());
    }
    trials.insert(trials.end(), batch.begin(), batch.end());
  }
  return trials;
}

TEST(BatchSizeOptimizerSwarmTest, StateRoundTripsMidFirstWave) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(SwarmConfig()));
  optimizer.NextTrial();                     // 64, the walk's step
  optimizer.NextTrial();                     // 32, speculative, unbounded
  const Trial s128 = optimizer.NextTrial();  // speculative, reports first
  optimizer.NextTrial();                     // 16, stays in flight
  ASSERT_EQ(s128.batch_size, 128);
  // 128 reports before anything has reached: no bound, its result waits.
  ZEUS_ASSERT_OK(optimizer.ReportResult(s128.trial_number, 35.0, true));
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(2), FrugalKnobs::kExplorationBeta * 35.0);
  const nlohmann::json state = optimizer.ToJson();
  ASSERT_TRUE(state.contains("speculative_results"));
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest loaded,
                            PolicyUnderTest::FromJson(nlohmann::json::parse(state.dump())));
  EXPECT_EQ(loaded.ToJson(), state);
  for (PolicyUnderTest* o : {&optimizer, &loaded}) {
    ZEUS_ASSERT_OK(o->ReportResult(4, 30.0, true));  // 16 before the step
    ZEUS_ASSERT_OK(o->ReportResult(1, 20.0, true));  // the default's step
  }
  EXPECT_EQ(loaded.ToJson(), optimizer.ToJson());
  EXPECT_EQ(Scrambled(loaded, 30), Scrambled(optimizer, 30));
}

TEST(BatchSizeOptimizerSwarmTest, StateRoundTripsMidSpeculationAndContinuesTheSameSequence) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(SwarmConfig()));
  ZEUS_ASSERT_OK(optimizer.ReportResult(optimizer.NextTrial().trial_number, 20.0, true));
  optimizer.NextTrial();                    // 32, the walk's step
  const Trial s16 = optimizer.NextTrial();  // speculative, reports early
  optimizer.NextTrial();                    // 128, stays in flight
  ZEUS_ASSERT_OK(optimizer.ReportResult(s16.trial_number, 11.0, true));
  const nlohmann::json state = optimizer.ToJson();
  ASSERT_TRUE(state.contains("speculative_results"));
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest loaded,
                            PolicyUnderTest::FromJson(nlohmann::json::parse(state.dump())));
  EXPECT_EQ(loaded.ToJson(), state);
  EXPECT_EQ(loaded.in_flight(), optimizer.in_flight());
  for (PolicyUnderTest* o : {&optimizer, &loaded}) {
    ZEUS_ASSERT_OK(o->ReportResult(2, 10.0, true));
    ZEUS_ASSERT_OK(o->ReportResult(4, 90.0, false));
  }
  EXPECT_EQ(loaded.ToJson(), optimizer.ToJson());
  EXPECT_EQ(Scrambled(loaded, 30), Scrambled(optimizer, 30));

  auto refused = [](nlohmann::json bad, const std::string& detail) {
    StatusOr<PolicyUnderTest> result = PolicyUnderTest::FromJson(bad);
    EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument) << bad.dump();
    EXPECT_NE(result.status().message().find(detail), std::string::npos) << result.status();
  };
  nlohmann::json bad = state;
  bad["speculative_results"][0]["batch_size"] = 7;
  refused(bad, "not one of batch_sizes");
  bad = state;
  bad["speculative_results"].push_back(bad["speculative_results"][0]);
  refused(bad, "appears twice");
  bad = state;
  bad["speculative_results"][0]["cost"] = -1.0;
  refused(bad, "cost");
  bad = state;
  bad["speculative_results"][0].erase("reached_target");
  refused(bad, "reached_target");
  bad = state;
  bad["config"]["policy"] = "frugal";
  refused(bad, "only the swarm policy");
  bad.erase("speculative_results");
  refused(bad, "only the swarm policy speculates");  // The speculative trial in flight.
}

TEST(BatchSizeOptimizerSwarmTest, ManyInFlightAnyOrderEndsWithNothingLost) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(SwarmConfig()));
  const std::vector<Trial> trials = Scrambled(optimizer, 20);
  EXPECT_TRUE(optimizer.in_flight().empty());
  EXPECT_FALSE(optimizer.exploring());
  int speculative = 0;
  for (const Trial& t : trials) speculative += t.kind == TrialKind::kSpeculative;
  EXPECT_GT(speculative, 0);
  EXPECT_EQ(optimizer.best_batch_size(), 32);
}

}  // namespace
}  // namespace zeus
