#include "zeus/optimizer/batch_size/batch_size_optimizer.h"

#include <cmath>
#include <map>
#include <tuple>

#include <gtest/gtest.h>

#include "tests/optimizer/batch_size/policy_under_test.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

BatchSizeOptimizerConfig MakeConfig() {
  BatchSizeOptimizerConfig config;
  config.batch_sizes = {8, 16, 32, 64, 128};
  config.default_batch_size = 64;
  config.seed = 5;
  return config;
}

// Costs: 8 and 128 never reach the target; 32 is cheapest.
const std::map<int, std::pair<double, bool>>& Outcomes() {
  static const auto* outcomes = new std::map<int, std::pair<double, bool>>{
      {8, {50, false}}, {16, {30, true}}, {32, {10, true}}, {64, {20, true}}, {128, {90, false}}};
  return *outcomes;
}

// Runs `n` sequential recurrences; returns the batch sizes handed out.
std::vector<int> RunSequential(
    PolicyUnderTest& optimizer, int n,
    const std::map<int, std::pair<double, bool>>& outcomes = Outcomes()) {
  std::vector<int> sizes;
  for (int i = 0; i < n; ++i) {
    const Trial trial = optimizer.NextTrial();
    sizes.push_back(trial.batch_size);
    const auto& [cost, reached] = outcomes.at(trial.batch_size);
    // Small deterministic noise so arms have non-zero variance.
    EXPECT_TRUE(optimizer.ReportResult(trial.trial_number, cost + (i % 3), reached).ok());
  }
  return sizes;
}

TEST(BatchSizeOptimizerConfigTest, ValidationNamesTheField) {
  auto expect_field = [](BatchSizeOptimizerConfig config, const std::string& field) {
    const Status status = config.Validate();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << field;
    EXPECT_NE(status.message().find("'" + field + "'"), std::string::npos) << status;
  };
  BatchSizeOptimizerConfig config = MakeConfig();
  ZEUS_EXPECT_OK(config.Validate());
  config.batch_sizes = {};
  expect_field(config, "batch_sizes");
  config = MakeConfig();
  config.batch_sizes = {16, 8, 64};
  expect_field(config, "batch_sizes");
  config = MakeConfig();
  config.batch_sizes = {8, 8, 64};
  expect_field(config, "batch_sizes");
  config = MakeConfig();
  config.default_batch_size = 48;
  expect_field(config, "default_batch_size");
  config = MakeConfig();
  config.num_pruning_rounds = -1;
  expect_field(config, "num_pruning_rounds");
  config = MakeConfig();
  config.window_size = -1;
  expect_field(config, "window_size");
  config = MakeConfig();
  config.prior_precision = -1;
  expect_field(config, "prior_precision");
  config = MakeConfig();
  config.num_explorations = -1;
  expect_field(config, "num_explorations");
  config = MakeConfig();
  config.beta = 0.0;
  expect_field(config, "beta");
  EXPECT_FALSE(PolicyUnderTest::Create(config).ok());
}

TEST(BatchSizeOptimizerConfigTest, JsonRoundTripAndStrictParsing) {
  BatchSizeOptimizerConfig config = MakeConfig();
  config.beta.reset();
  config.seed = 0xfedcba9876543210ULL;
  ZEUS_ASSERT_OK_AND_ASSIGN(BatchSizeOptimizerConfig parsed,
                            BatchSizeOptimizerConfig::FromJson(config.ToJson()));
  EXPECT_TRUE(parsed == config);
  nlohmann::json json = config.ToJson();
  json["surprise"] = 1;
  EXPECT_EQ(BatchSizeOptimizerConfig::FromJson(json).status().code(), StatusCode::kInvalidArgument);
  json = config.ToJson();
  json["window_size"] = "3";
  EXPECT_NE(BatchSizeOptimizerConfig::FromJson(json).status().message().find("window_size"),
            std::string::npos);
  // Missing optional fields take their defaults.
  ZEUS_ASSERT_OK_AND_ASSIGN(parsed, BatchSizeOptimizerConfig::FromJson(nlohmann::json::parse(
                                        R"({"batch_sizes":[8,16],"default_batch_size":16})")));
  EXPECT_EQ(parsed.num_pruning_rounds, 2);
  EXPECT_EQ(parsed.beta, 2.0);
}

TEST(BatchSizeOptimizerTest, ExploresInPruningOrderThenUsesOnlySurvivors) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(MakeConfig()));
  EXPECT_TRUE(optimizer.exploring());
  const std::vector<int> sizes = RunSequential(optimizer, 40);
  EXPECT_EQ(std::vector<int>(sizes.begin(), sizes.begin() + 8),
            (std::vector<int>{64, 32, 16, 8, 128, 32, 16, 64}));
  EXPECT_FALSE(optimizer.exploring());
  for (size_t i = 8; i < sizes.size(); ++i) {
    EXPECT_TRUE(sizes[i] == 16 || sizes[i] == 32 || sizes[i] == 64) << sizes[i];
  }
  // The cheapest arm dominates once sampling starts.
  EXPECT_GT(std::count(sizes.begin() + 8, sizes.end(), 32), 20);
  std::vector<ArmState> arms = optimizer.ArmStates();
  ASSERT_EQ(arms.size(), 3u);
  EXPECT_EQ(arms[1].batch_size, 32);
  EXPECT_LT(arms[1].mean, -9);
  EXPECT_GT(arms[1].mean, -13);
}

TEST(BatchSizeOptimizerTest, TrialKindsAndNumbers) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(MakeConfig()));
  const Trial first = optimizer.NextTrial();
  EXPECT_EQ(first, (Trial{1, 64, TrialKind::kExploration}));
  ZEUS_ASSERT_OK(optimizer.ReportResult(1, 20, true));
  for (int i = 0; i < 7; ++i) {
    const Trial trial = optimizer.NextTrial();
    EXPECT_EQ(trial.kind, TrialKind::kExploration);
    const auto& [cost, reached] = Outcomes().at(trial.batch_size);
    ZEUS_ASSERT_OK(optimizer.ReportResult(trial.trial_number, cost, reached));
  }
  const Trial bandit = optimizer.NextTrial();
  EXPECT_EQ(bandit.trial_number, 9);
  EXPECT_EQ(bandit.kind, TrialKind::kBandit);
  EXPECT_EQ(optimizer.ReportResult(99, 1, true).code(), StatusCode::kNotFound);
  EXPECT_EQ(optimizer.ReportResult(1, 1, true).code(), StatusCode::kNotFound);
  EXPECT_EQ(optimizer.ReportResult(bandit.trial_number, NAN, true).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(optimizer.ReportResult(bandit.trial_number, -1, true).code(),
            StatusCode::kInvalidArgument);
}

TEST(BatchSizeOptimizerTest, EarlyStopThresholdFollowsTheLowestReachedCost) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(MakeConfig()));
  EXPECT_FALSE(optimizer.EarlyStopThreshold().has_value());
  Trial t = optimizer.NextTrial();  // 64
  ZEUS_ASSERT_OK(optimizer.ReportResult(t.trial_number, 20, true));
  EXPECT_EQ(optimizer.min_cost(), 20.0);
  EXPECT_EQ(optimizer.EarlyStopThreshold(), 40.0);
  t = optimizer.NextTrial();  // 32: an early-stopped failure costs more but does not count.
  ZEUS_ASSERT_OK(optimizer.ReportResult(t.trial_number, 5, false));
  EXPECT_EQ(optimizer.min_cost(), 20.0);
  t = optimizer.NextTrial();  // Down is over after 32 failed: up to 128.
  EXPECT_EQ(t.batch_size, 128);
  ZEUS_ASSERT_OK(optimizer.ReportResult(t.trial_number, 15, true));
  EXPECT_EQ(optimizer.EarlyStopThreshold(), 30.0);
  EXPECT_EQ(optimizer.best_batch_size(), 128);

  BatchSizeOptimizerConfig config = MakeConfig();
  config.beta.reset();
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest no_stop, PolicyUnderTest::Create(config));
  t = no_stop.NextTrial();
  ZEUS_ASSERT_OK(no_stop.ReportResult(t.trial_number, 20, true));
  EXPECT_FALSE(no_stop.EarlyStopThreshold().has_value());
}

TEST(BatchSizeOptimizerTest, RetriedFailuresAreObservedAndAdvanceTheWalk) {
  // A run that could not afford one epoch is reported as a failure with a
  // large cost; the walk moves on and the bandit keeps the observation.
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(MakeConfig()));
  Trial t = optimizer.NextTrial();
  ZEUS_ASSERT_OK(optimizer.ReportResult(t.trial_number, 20, true));
  t = optimizer.NextTrial();
  EXPECT_EQ(t.batch_size, 32);
  ZEUS_ASSERT_OK(optimizer.ReportResult(t.trial_number, 100 * 2 * 20, false));
  const std::vector<ArmState> arms = optimizer.ArmStates();
  EXPECT_EQ(arms[2].batch_size, 32);
  EXPECT_EQ(arms[2].num_observations, 1);
  EXPECT_EQ(arms[2].mean, -4000);
  EXPECT_EQ(optimizer.NextTrial().batch_size, 128);
}

TEST(BatchSizeOptimizerTest, ConcurrentTrialsUseBestKnownSizeAndDoNotDerailExploration) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(MakeConfig()));
  const Trial explore = optimizer.NextTrial();
  EXPECT_EQ(explore, (Trial{1, 64, TrialKind::kExploration}));
  // Before anything reached the target, concurrent trials use the default.
  const Trial c1 = optimizer.NextTrial();
  EXPECT_EQ(c1, (Trial{2, 64, TrialKind::kConcurrent}));
  // The concurrent trial finishes first: no effect on the walk.
  ZEUS_ASSERT_OK(optimizer.ReportResult(c1.trial_number, 21, true));
  EXPECT_EQ(optimizer.best_batch_size(), 64);
  ZEUS_ASSERT_OK(optimizer.ReportResult(explore.trial_number, 20, true));
  const Trial next = optimizer.NextTrial();
  EXPECT_EQ(next, (Trial{3, 32, TrialKind::kExploration}));
  const Trial c2 = optimizer.NextTrial();
  const Trial c3 = optimizer.NextTrial();
  EXPECT_EQ(c2.batch_size, 64);
  EXPECT_EQ(c3.kind, TrialKind::kConcurrent);
  EXPECT_EQ(optimizer.in_flight().size(), 3u);
  // Results arrive in reverse order.
  ZEUS_ASSERT_OK(optimizer.ReportResult(c3.trial_number, 22, true));
  ZEUS_ASSERT_OK(optimizer.ReportResult(next.trial_number, 10, true));
  ZEUS_ASSERT_OK(optimizer.ReportResult(c2.trial_number, 19, true));
  EXPECT_EQ(optimizer.best_batch_size(), 32);
  EXPECT_EQ(optimizer.NextTrial().batch_size, 16);
  EXPECT_EQ(optimizer.NextTrial(), (Trial{7, 32, TrialKind::kConcurrent}));
  // Observations of the concurrent runs count: 64 has four.
  EXPECT_EQ(optimizer.ArmStates()[3].num_observations, 4);
}

TEST(BatchSizeOptimizerTest, AbandonedExplorationTrialIsHandedOutAgain) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(MakeConfig()));
  const Trial first = optimizer.NextTrial();
  ZEUS_ASSERT_OK(optimizer.ReportFailure(first.trial_number));
  EXPECT_EQ(optimizer.ReportFailure(first.trial_number).code(), StatusCode::kNotFound);
  EXPECT_EQ(optimizer.NextTrial(), (Trial{2, 64, TrialKind::kExploration}));
  EXPECT_TRUE(optimizer.in_flight().count(2));
  EXPECT_EQ(optimizer.ArmStates()[3].num_observations, 0);
}

TEST(BatchSizeOptimizerTest, SameSeedSameSequence) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest a, PolicyUnderTest::Create(MakeConfig()));
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest b, PolicyUnderTest::Create(MakeConfig()));
  BatchSizeOptimizerConfig other = MakeConfig();
  other.seed = 6;
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest c, PolicyUnderTest::Create(other));
  // Close costs keep the sampling uncertain, so the seed matters.
  const std::map<int, std::pair<double, bool>> close = {
      {8, {11, true}}, {16, {10.5, true}}, {32, {10, true}}, {64, {10.2, true}}, {128, {11, true}}};
  const std::vector<int> sa = RunSequential(a, 200, close);
  EXPECT_EQ(sa, RunSequential(b, 200, close));
  EXPECT_NE(sa, RunSequential(c, 200, close));
}

TEST(BatchSizeOptimizerTest, AllPrunedFallsBackToBestKnownSize) {
  BatchSizeOptimizerConfig config;
  config.batch_sizes = {8, 16};
  config.default_batch_size = 16;
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(config));
  Trial t = optimizer.NextTrial();
  ZEUS_ASSERT_OK(optimizer.ReportResult(t.trial_number, 10, false));
  EXPECT_FALSE(optimizer.exploring());
  t = optimizer.NextTrial();
  EXPECT_EQ(t.batch_size, 16);
  EXPECT_EQ(t.kind, TrialKind::kBandit);
}

TEST(BatchSizeOptimizerTest, JsonRoundTripContinuesTheSameSequence) {
  for (int cut : {0, 3, 8, 9, 25}) {
    ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest original, PolicyUnderTest::Create(MakeConfig()));
    RunSequential(original, cut);
    // Leave one trial in flight across the restart.
    const Trial pending = original.NextTrial();
    const std::string stored = original.ToJson().dump();
    ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest restored,
                              PolicyUnderTest::FromJson(nlohmann::json::parse(stored)));
    EXPECT_EQ(restored.ToJson(), original.ToJson()) << "cut " << cut;
    EXPECT_EQ(restored.in_flight().at(pending.trial_number), pending);
    ZEUS_ASSERT_OK(original.ReportResult(pending.trial_number, 12, true));
    ZEUS_ASSERT_OK(restored.ReportResult(pending.trial_number, 12, true));
    EXPECT_EQ(RunSequential(original, 60), RunSequential(restored, 60)) << "cut " << cut;
  }
}

TEST(BatchSizeOptimizerTest, FromJsonRejectsBrokenState) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(MakeConfig()));
  optimizer.NextTrial();
  nlohmann::json state = optimizer.ToJson();
  nlohmann::json broken = state;
  broken.erase("rng");
  EXPECT_NE(PolicyUnderTest::FromJson(broken).status().message().find("rng"), std::string::npos);
  broken = state;
  broken["version"] = 99;
  EXPECT_FALSE(PolicyUnderTest::FromJson(broken).ok());
  broken = state;
  broken["exploration_trial"] = 42;
  EXPECT_FALSE(PolicyUnderTest::FromJson(broken).ok());
  broken = state;
  broken["in_flight"][0]["batch_size"] = 48;
  EXPECT_FALSE(PolicyUnderTest::FromJson(broken).ok());
  broken = state;
  broken["next_trial_number"] = 1;
  EXPECT_FALSE(PolicyUnderTest::FromJson(broken).ok());
  broken = state;
  broken["in_flight"][0]["kind"] = "nonsense";
  EXPECT_FALSE(PolicyUnderTest::FromJson(broken).ok());
  EXPECT_FALSE(PolicyUnderTest::FromJson(nlohmann::json::array()).ok());
}

// Found by fuzz_optimizer_state: an explorer whose walk held a batch size the
// job never listed (132) was loaded, handed that size out as a trial, and
// saved a state that no longer loaded. Every size the explorer holds must be
// one of its candidates, and the candidates one of the job's batch sizes.
TEST(BatchSizeOptimizerTest, FromJsonRefusesExplorerSizesOutsideTheJob) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(MakeConfig()));
  const nlohmann::json state = optimizer.ToJson();
  ZEUS_ASSERT_OK(PolicyUnderTest::FromJson(state).status());
  ASSERT_FALSE(state["explorer"]["down"].empty());
  auto refused = [](const nlohmann::json& broken, const std::string& where) {
    StatusOr<PolicyUnderTest> loaded = PolicyUnderTest::FromJson(broken);
    EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument) << where;
    EXPECT_NE(loaded.status().message().find(where), std::string::npos) << loaded.status();
  };
  nlohmann::json broken = state;
  broken["explorer"]["down"][0] = 132;
  refused(broken, "field 'down': 132 is not one of the candidates");
  broken = state;
  broken["explorer"]["up"].push_back(7);
  refused(broken, "field 'up': 7 is not one of the candidates");
  broken = state;
  broken["explorer"]["good"] = {5};
  refused(broken, "field 'good': 5 is not one of the candidates");
  broken = state;
  broken["explorer"]["default"] = 3;
  refused(broken, "field 'default': 3 is not one of the candidates");
  broken = state;
  broken["explorer"]["candidates"].push_back(4096);
  refused(broken, "4096 is not one of batch_sizes");
  broken = state;
  std::swap(broken["explorer"]["candidates"][0], broken["explorer"]["candidates"][1]);
  refused(broken, "must be strictly ascending");
  // The same for the bandit's arms once exploration is over.
  for (int i = 0; i < 100 && optimizer.exploring(); ++i) {
    const Trial trial = optimizer.NextTrial();
    ZEUS_ASSERT_OK(optimizer.ReportResult(trial.trial_number, 10 + trial.batch_size, true));
  }
  ASSERT_FALSE(optimizer.exploring());
  broken = optimizer.ToJson();
  ZEUS_ASSERT_OK(PolicyUnderTest::FromJson(broken).status());
  broken["bandit"]["arms"][0]["batch_size"] = 7;
  refused(broken, "field 'bandit': arm 7 is not one of batch_sizes");
}

// Issue 14: a state holding NaN, infinity or absurd values is refused on load,
// naming the field, so a poisoned bandit can no longer survive a restart.
TEST(BatchSizeOptimizerTest, FromJsonRefusesNonFiniteAndOutOfRangeValues) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest exploring, PolicyUnderTest::Create(MakeConfig()));
  const Trial first = exploring.NextTrial();
  ZEUS_ASSERT_OK(exploring.ReportResult(first.trial_number, 20, true));
  exploring.NextTrial();
  const nlohmann::json state = exploring.ToJson();
  ASSERT_EQ(state["costs"].size(), 1u);
  auto refused = [](const nlohmann::json& broken, const std::string& where) {
    StatusOr<PolicyUnderTest> loaded = PolicyUnderTest::FromJson(broken);
    EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument) << where;
    EXPECT_NE(loaded.status().message().find(where), std::string::npos) << loaded.status();
  };
  for (double bad : {std::nan(""), HUGE_VAL, -HUGE_VAL, 1e300, -1.0}) {
    nlohmann::json broken = state;
    broken["costs"][0]["costs"][0] = bad;
    refused(broken, "costs[0].costs[0]");
    broken = state;
    broken["min_cost"] = bad;
    refused(broken, "field 'min_cost'");
    broken = state;
    broken["explorer"]["best_cost"] = bad;
    refused(broken, "field 'best_cost'");
  }
  nlohmann::json broken = state;
  broken["config"]["prior_mean"] = std::nan("");
  refused(broken, "field 'prior_mean'");
  broken = state;
  broken["next_trial_number"] = -5;
  refused(broken, "field 'next_trial_number'");
  broken = state;
  broken["best_batch_size"] = 48;
  refused(broken, "field 'best_batch_size'");
  broken = state;
  broken["in_flight"][0]["trial_number"] = 0;
  refused(broken, "in_flight[0].trial_number");
  broken = state;
  broken["config"]["batch_sizes"][0] = 1e10;
  refused(broken, "batch_sizes[0]");

  // The bandit's rewards too.
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest bandit, PolicyUnderTest::Create(MakeConfig()));
  RunSequential(bandit, 30);
  ASSERT_FALSE(bandit.exploring());
  const nlohmann::json bandit_state = bandit.ToJson();
  ZEUS_ASSERT_OK(PolicyUnderTest::FromJson(bandit_state).status());
  for (double bad : {std::nan(""), HUGE_VAL, -1e300}) {
    broken = bandit_state;
    broken["bandit"]["arms"][0]["rewards"][0] = bad;
    refused(broken, "arms[0].rewards[0]");
  }
}

TEST(BatchSizeOptimizerTest, ReportResultRefusesCostsThatWouldPoisonTheBandit) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(MakeConfig()));
  const Trial trial = optimizer.NextTrial();
  for (double bad : {1e160 * 300, std::nan(""), HUGE_VAL, -1.0}) {
    EXPECT_EQ(optimizer.ReportResult(trial.trial_number, bad, true).code(),
              StatusCode::kInvalidArgument)
        << bad;
  }
  ZEUS_EXPECT_OK(optimizer.ReportResult(trial.trial_number, 1e17, true));
  ZEUS_EXPECT_OK(PolicyUnderTest::FromJson(optimizer.ToJson()).status());
}

TEST(BatchSizeOptimizerTest, RefusesACostBeyondTheBanditsRangeAndKeepsTheTrial) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(MakeConfig()));
  Trial trial = optimizer.NextTrial();
  EXPECT_EQ(optimizer.ReportResult(trial.trial_number, 1e160, true).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(optimizer.in_flight().count(trial.trial_number), 1u);
  ZEUS_EXPECT_OK(optimizer.ReportResult(trial.trial_number, 10.0, true));
  nlohmann::json state = optimizer.ToJson();
  state["min_cost"] = 1e160;
  EXPECT_EQ(PolicyUnderTest::FromJson(state).status().code(), StatusCode::kInvalidArgument);
  state = optimizer.ToJson();
  ASSERT_FALSE(state["costs"].empty()) << state.dump();
  state["costs"][0]["costs"][0] = -1.0;
  EXPECT_EQ(PolicyUnderTest::FromJson(state).status().code(), StatusCode::kInvalidArgument);
}

// Found by fuzz_optimizer_state: an explorer still exploring in a round at or
// past num_rounds was loaded, and the state it saved one trial later no
// longer loaded.
TEST(BatchSizeOptimizerTest, FromJsonRefusesAnExplorerPastItsLastRound) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(MakeConfig()));
  nlohmann::json state = optimizer.ToJson();
  ASSERT_FALSE(state["explorer"]["done"].get<bool>());
  state["explorer"]["round"] = state["explorer"]["num_rounds"];
  StatusOr<PolicyUnderTest> loaded = PolicyUnderTest::FromJson(state);
  EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(loaded.status().message().find("field 'round'"), std::string::npos) << loaded.status();
}

// Found by fuzz_optimizer_state (a misspelt "exploration_trial" key): an
// exploration in flight that the optimizer does not wait on was loaded. Each
// in-flight exploration must be the explorer's, of the size it is on.
TEST(BatchSizeOptimizerTest, FromJsonRefusesAnExplorationTheExplorerIsNotWaitingOn) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(MakeConfig()));
  const Trial exploration = optimizer.NextTrial();
  ASSERT_EQ(exploration.kind, TrialKind::kExploration);
  const nlohmann::json state = optimizer.ToJson();
  ZEUS_ASSERT_OK(PolicyUnderTest::FromJson(state).status());
  const auto refused = [](const nlohmann::json& bad, const std::string& field) {
    StatusOr<PolicyUnderTest> loaded = PolicyUnderTest::FromJson(bad);
    EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument) << bad.dump();
    EXPECT_NE(loaded.status().message().find("field '" + field + "'"), std::string::npos)
        << loaded.status();
  };
  nlohmann::json bad = state;
  bad.erase("exploration_trial");
  refused(bad, "in_flight");
  bad = state;
  bad["in_flight"][0]["batch_size"] = exploration.batch_size == 8 ? 16 : 8;
  refused(bad, "exploration_trial");
  bad = state;
  bad["in_flight"][0]["kind"] = "concurrent";
  refused(bad, "exploration_trial");
}

BatchSizeOptimizerConfig FrugalConfig() {
  BatchSizeOptimizerConfig config = MakeConfig();
  config.policy = BatchSizePolicyKind::kFrugal;
  return config;
}

TEST(BatchSizeOptimizerFrugalTest, WalksOnceThenSamplesEachSurvivorOnceAtMost) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(FrugalConfig()));
  // One round (Zeus: two): down 64, 32, 16, 8 (fails). 32 (cost 11) is more
  // than 1.25 x cheaper than 64 (cost 20), so the up direction (128) is
  // skipped.
  const std::vector<int> sizes = RunSequential(optimizer, 12);
  EXPECT_EQ(std::vector<int>(sizes.begin(), sizes.begin() + 4), (std::vector<int>{64, 32, 16, 8}));
  EXPECT_FALSE(optimizer.exploring());
  // Survivors {16, 32, 64} hold one observation each: no second try of them
  // before sampling, which then picks the cheapest, 32, every time here. 8
  // is a censored arm: its run stopped at 1.25 x 11, above 32's costs.
  for (size_t i = 4; i < sizes.size(); ++i) EXPECT_EQ(sizes[i], 32) << "trial " << i + 1;
  std::vector<int> arms;
  for (const ArmState& arm : optimizer.ArmStates()) arms.push_back(arm.batch_size);
  EXPECT_EQ(arms, (std::vector<int>{8, 16, 32, 64}));
  EXPECT_EQ(optimizer.censored(), (std::map<int, double>{{8, 1.25 * 11}}));
  EXPECT_EQ(optimizer.ArmStates().front().num_observations, 0);
}

// A frugal walk 64 (20), 32 (10), 16 and 8 stopped at the bound 1.25 x 10.
PolicyUnderTest FrugalWithTwoCensored() {
  StatusOr<PolicyUnderTest> created = PolicyUnderTest::Create(FrugalConfig());
  EXPECT_TRUE(created.ok());
  PolicyUnderTest optimizer = std::move(*created);
  for (const auto& [size, cost, reached] : {std::tuple<int, double, bool>{64, 20.0, true},
                                            {32, 10.0, true},
                                            {16, 12.0, false},
                                            {8, 12.0, false}}) {
    const Trial trial = optimizer.NextTrial();
    EXPECT_EQ(trial.batch_size, size);
    EXPECT_TRUE(optimizer.ReportResult(trial.trial_number, cost, reached).ok());
  }
  EXPECT_FALSE(optimizer.exploring());
  return optimizer;
}

TEST(BatchSizeOptimizerFrugalTest, CensoredSizeIsTriedAgainOnceTheBestLooksDearer) {
  PolicyUnderTest optimizer = FrugalWithTwoCensored();
  EXPECT_EQ(optimizer.censored(), (std::map<int, double>{{8, 12.5}, {16, 12.5}}));
  // 32's certain 10 beats the censored sizes' best case, 12.5.
  for (int i = 0; i < 5; ++i) {
    const Trial trial = optimizer.NextTrial();
    ASSERT_EQ(trial.batch_size, 32);
    ZEUS_ASSERT_OK(optimizer.ReportResult(trial.trial_number, 10.0, true));
  }
  // 32 turns out dearer. Once its dearest run (28.5) passes 64's one run
  // (20), 64, a neighbour seen once, gets a second run; then a censored size
  // gets its second chance as soon as 32 samples a cost above 12.5. Only 16
  // can: 8 is not a neighbour of the leader, 32.
  Trial retry;
  bool second_look = false;
  for (int i = 0; i < 20 && retry.trial_number == 0; ++i) {
    const Trial trial = optimizer.NextTrial();
    if (trial.batch_size == 64) {
      EXPECT_FALSE(second_look) << "64 has two runs: no further second look";
      second_look = true;
      ZEUS_ASSERT_OK(optimizer.ReportResult(trial.trial_number, 20.0, true));
    } else if (trial.batch_size != 32) {
      retry = trial;
    } else {
      ZEUS_ASSERT_OK(optimizer.ReportResult(trial.trial_number, 28.5, true));
    }
  }
  EXPECT_TRUE(second_look);
  ASSERT_EQ(retry.batch_size, 16);
  EXPECT_EQ(retry.kind, TrialKind::kBandit);
  // Bandit trials keep beta x the lowest cost.
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(retry.trial_number), 20.0);
  ZEUS_ASSERT_OK(optimizer.ReportResult(retry.trial_number, 5.0, true));
  // Observed: no longer censored, an ordinary arm that now wins.
  EXPECT_EQ(optimizer.censored().count(retry.batch_size), 0u);
  EXPECT_EQ(optimizer.censored().size(), 1u);
  EXPECT_EQ(optimizer.NextTrial().batch_size, retry.batch_size);
}

TEST(BatchSizeOptimizerFrugalTest, SecondLookIsHandedOutOnceWhileItRuns) {
  PolicyUnderTest optimizer = FrugalWithTwoCensored();
  // 32 leads at 10; 64's one run (20) is dearer than any run of 32 so far.
  Trial trial = optimizer.NextTrial();
  ASSERT_EQ(trial.batch_size, 32);
  // A dear run of 32 (25): 64's 20 may have been bad luck.
  ZEUS_ASSERT_OK(optimizer.ReportResult(trial.trial_number, 25.0, true));
  const Trial second_look = optimizer.NextTrial();
  EXPECT_EQ(second_look.batch_size, 64);
  EXPECT_EQ(second_look.kind, TrialKind::kBandit);
  // While it runs, a concurrent submission is not sent to 64 as well: the
  // others sample 32 or the censored 16 (bound 12.5 < 64's 20).
  for (int i = 0; i < 10; ++i) {
    const Trial concurrent = optimizer.NextTrial();
    EXPECT_NE(concurrent.batch_size, 64);
    ZEUS_ASSERT_OK(optimizer.ReportFailure(concurrent.trial_number));
  }
  ZEUS_ASSERT_OK(optimizer.ReportResult(second_look.trial_number, 21.0, true));
  EXPECT_EQ(optimizer.ArmStates().back().num_observations, 2);
}

TEST(BatchSizeOptimizerFrugalTest, CensoredSizesRoundTripAndBadOnesAreRefused) {
  PolicyUnderTest optimizer = FrugalWithTwoCensored();
  const nlohmann::json state = optimizer.ToJson();
  ASSERT_TRUE(state.contains("censored"));
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest loaded, PolicyUnderTest::FromJson(state));
  EXPECT_EQ(loaded.censored(), optimizer.censored());
  EXPECT_EQ(loaded.ToJson(), state);
  EXPECT_EQ(RunSequential(loaded, 10), RunSequential(optimizer, 10));

  auto refused = [](nlohmann::json bad, const std::string& detail) {
    StatusOr<PolicyUnderTest> result = PolicyUnderTest::FromJson(bad);
    EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument) << bad["censored"].dump();
    EXPECT_NE(result.status().message().find(detail), std::string::npos) << result.status();
  };
  nlohmann::json bad = state;
  bad["censored"][0]["batch_size"] = 7;
  refused(bad, "not one of batch_sizes");
  bad = state;
  bad["censored"][0]["batch_size"] = 32;  // An arm with observations.
  refused(bad, "already has observations");
  bad = state;
  bad["censored"][1]["batch_size"] = bad["censored"][0]["batch_size"];
  refused(bad, "appears twice");
  bad = state;
  bad["censored"][0]["cost"] = -1.0;
  refused(bad, "cost");
  bad = state;
  bad["censored"][0]["batch_size"] = 128;  // Never walked: not an arm.
  refused(bad, "not an arm of the bandit");
  bad = state;
  bad["censored"] = "8";
  refused(bad, "censored");
  bad = state;
  bad["config"].erase("policy");  // Zeus.
  refused(bad, "only the frugal policy");

  // Zeus never censors: its state has no such field.
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest zeus, PolicyUnderTest::Create(MakeConfig()));
  RunSequential(zeus, 20);
  EXPECT_FALSE(zeus.ToJson().contains("censored"));
}

TEST(BatchSizeOptimizerFrugalTest, ExplorationTrialsStopAtTheTighterBound) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(FrugalConfig()));
  const Trial first = optimizer.NextTrial();
  EXPECT_EQ(optimizer.EarlyStopThreshold(first.trial_number), std::nullopt);
  ZEUS_ASSERT_OK(optimizer.ReportResult(first.trial_number, 100.0, true));
  const Trial explore = optimizer.NextTrial();
  const Trial concurrent = optimizer.NextTrial();
  ASSERT_EQ(explore.kind, TrialKind::kExploration);
  ASSERT_EQ(concurrent.kind, TrialKind::kConcurrent);
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(explore.trial_number),
                   FrugalKnobs::kExplorationBeta * 100.0);
  // Other trials keep beta (2) x the lowest cost.
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(concurrent.trial_number), 200.0);
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(), 200.0);

  // A beta below the exploration knob wins; no beta turns stopping off.
  BatchSizeOptimizerConfig tight = FrugalConfig();
  tight.beta = 1.1;
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest tight_optimizer, PolicyUnderTest::Create(tight));
  ZEUS_ASSERT_OK(
      tight_optimizer.ReportResult(tight_optimizer.NextTrial().trial_number, 100.0, true));
  EXPECT_DOUBLE_EQ(*tight_optimizer.EarlyStopThreshold(tight_optimizer.NextTrial().trial_number),
                   110.0);
  BatchSizeOptimizerConfig off = FrugalConfig();
  off.beta.reset();
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest off_optimizer, PolicyUnderTest::Create(off));
  ZEUS_ASSERT_OK(off_optimizer.ReportResult(off_optimizer.NextTrial().trial_number, 100.0, true));
  EXPECT_EQ(off_optimizer.EarlyStopThreshold(off_optimizer.NextTrial().trial_number), std::nullopt);
}

// A concurrent run went to the best size known to finish its submission: a
// cheaper size found while it runs does not tighten its bound.
TEST(BatchSizeOptimizerFrugalTest, ConcurrentTrialsKeepTheBoundTheyWereHandedOutWith) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(FrugalConfig()));
  const Trial first = optimizer.NextTrial();  // 64.
  const Trial unbounded = optimizer.NextTrial();
  ASSERT_EQ(unbounded.kind, TrialKind::kConcurrent);
  EXPECT_EQ(optimizer.EarlyStopThreshold(unbounded.trial_number), std::nullopt);
  ZEUS_ASSERT_OK(optimizer.ReportResult(first.trial_number, 100.0, true));
  const Trial step = optimizer.NextTrial();  // 32.
  const Trial concurrent = optimizer.NextTrial();
  ASSERT_EQ(concurrent, (Trial{concurrent.trial_number, 64, TrialKind::kConcurrent}));
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(concurrent.trial_number), 200.0);
  ZEUS_ASSERT_OK(optimizer.ReportResult(step.trial_number, 40.0, true));
  // Handed out under 2 x 100, it keeps that; the one handed out before any
  // cost was known follows the lowest cost, as a later one does.
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(concurrent.trial_number), 200.0);
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(unbounded.trial_number), 80.0);

  const nlohmann::json state = optimizer.ToJson();
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest restored, PolicyUnderTest::FromJson(state));
  EXPECT_EQ(restored.ToJson(), state);
  EXPECT_DOUBLE_EQ(*restored.EarlyStopThreshold(concurrent.trial_number), 200.0);
  ZEUS_ASSERT_OK(restored.ReportResult(concurrent.trial_number, 150.0, true));
  EXPECT_FALSE(restored.ToJson().dump().find("min_cost_at_handout") != std::string::npos);

  // Only a concurrent trial of frugal or swarm records it, as a cost.
  nlohmann::json on_bandit = state;
  nlohmann::json as_text = state;
  nlohmann::json under_zeus = state;
  under_zeus["config"].erase("policy");
  for (nlohmann::json& entry : on_bandit["in_flight"]) {
    if (entry.contains("min_cost_at_handout")) entry["kind"] = "bandit";
  }
  for (nlohmann::json& entry : as_text["in_flight"]) {
    if (entry.contains("min_cost_at_handout")) entry["min_cost_at_handout"] = "100";
  }
  for (const nlohmann::json& bad : {on_bandit, as_text, under_zeus}) {
    const StatusOr<PolicyUnderTest> refused = PolicyUnderTest::FromJson(bad);
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(refused.status().message().find("min_cost_at_handout"), std::string::npos)
        << refused.status();
  }
}

TEST(BatchSizeOptimizerFrugalTest, ZeusThresholdIsTheSameForEveryTrial) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest optimizer, PolicyUnderTest::Create(MakeConfig()));
  ZEUS_ASSERT_OK(optimizer.ReportResult(optimizer.NextTrial().trial_number, 100.0, true));
  const Trial explore = optimizer.NextTrial();
  EXPECT_EQ(optimizer.EarlyStopThreshold(explore.trial_number), optimizer.EarlyStopThreshold());
  EXPECT_DOUBLE_EQ(*optimizer.EarlyStopThreshold(explore.trial_number), 200.0);
}

TEST(BatchSizeOptimizerFrugalTest, PolicyIsStoredOnlyWhenNotZeusAndOldStateLoadsAsZeus) {
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest zeus, PolicyUnderTest::Create(MakeConfig()));
  EXPECT_FALSE(zeus.ToJson()["config"].contains("policy"));
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest frugal, PolicyUnderTest::Create(FrugalConfig()));
  RunSequential(frugal, 3);
  const nlohmann::json state = frugal.ToJson();
  EXPECT_EQ(state["config"]["policy"], "frugal");
  ZEUS_ASSERT_OK_AND_ASSIGN(PolicyUnderTest loaded, PolicyUnderTest::FromJson(state));
  EXPECT_EQ(loaded.config().policy, BatchSizePolicyKind::kFrugal);
  EXPECT_EQ(loaded.ToJson(), state);
  EXPECT_EQ(RunSequential(loaded, 10), RunSequential(frugal, 10));

  nlohmann::json old_config = MakeConfig().ToJson();
  ZEUS_ASSERT_OK_AND_ASSIGN(BatchSizeOptimizerConfig parsed,
                            BatchSizeOptimizerConfig::FromJson(old_config));
  EXPECT_EQ(parsed.policy, BatchSizePolicyKind::kZeus);
  old_config["policy"] = "greedy";
  StatusOr<BatchSizeOptimizerConfig> bad = BatchSizeOptimizerConfig::FromJson(old_config);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'policy'"), std::string::npos) << bad.status();
  EXPECT_NE(bad.status().message().find("greedy"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace zeus
