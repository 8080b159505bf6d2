#include "zeus/optimizer/batch_size/gaussian_ts.h"

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

TEST(GaussianTsTest, RefitsPrecisionFromPopulationVariance) {
  GaussianTsConfig config;
  GaussianTs bandit({8, 16}, config);
  ZEUS_ASSERT_OK(bandit.Observe(8, -10));
  ArmState arm = bandit.Arm(8);
  // One observation: variance 0, infinite precision, mean = the sample.
  EXPECT_TRUE(std::isinf(arm.precision));
  EXPECT_EQ(arm.mean, -10);
  ZEUS_ASSERT_OK(bandit.Observe(8, -14));
  arm = bandit.Arm(8);
  // Population variance of {-10, -14} is 4: reward precision 0.25, n = 2.
  EXPECT_DOUBLE_EQ(arm.reward_precision, 0.25);
  EXPECT_DOUBLE_EQ(arm.precision, 0.5);
  EXPECT_DOUBLE_EQ(arm.mean, -12);
  EXPECT_EQ(arm.num_observations, 2);
}

TEST(GaussianTsTest, PriorPullsTheMean) {
  GaussianTsConfig config;
  config.prior_mean = 0;
  config.prior_precision = 0.5;
  GaussianTs bandit({8}, config);
  ZEUS_ASSERT_OK(bandit.Observe(8, -10));
  ZEUS_ASSERT_OK(bandit.Observe(8, -14));
  // (0.5 * 0 + 0.25 * -24) / (0.5 + 0.5) = -6.
  EXPECT_DOUBLE_EQ(bandit.Arm(8).mean, -6);
  EXPECT_DOUBLE_EQ(bandit.Arm(8).precision, 1.0);
}

TEST(GaussianTsTest, WindowKeepsOnlyRecentObservations) {
  GaussianTsConfig config;
  config.window_size = 2;
  GaussianTs bandit({8}, config);
  for (double r : {-100.0, -10.0, -14.0}) ZEUS_ASSERT_OK(bandit.Observe(8, r));
  EXPECT_EQ(bandit.Arm(8).num_observations, 2);
  EXPECT_DOUBLE_EQ(bandit.Arm(8).mean, -12);
}

TEST(GaussianTsTest, ExploresUnderObservedArmsFirst) {
  GaussianTsConfig config;
  GaussianTs bandit({8, 16, 32}, config);
  for (double r : {-1.0, -2.0}) ZEUS_ASSERT_OK(bandit.Observe(8, r));
  for (double r : {-1.0, -2.0}) ZEUS_ASSERT_OK(bandit.Observe(32, r));
  ZEUS_ASSERT_OK(bandit.Observe(16, -1000));
  Rng rng(3);
  // 16 has one observation (< 2): always explored despite its terrible cost.
  for (int i = 0; i < 20; ++i) EXPECT_EQ(bandit.Predict(rng), 16);
}

TEST(GaussianTsTest, CensoredArmSamplesItsBoundUntilObserved) {
  GaussianTsConfig config;
  config.num_explorations = 1;
  GaussianTs bandit({8, 16}, config);
  // 8 costs 10 for sure; 16 was stopped at cost 12 without reaching the target.
  ZEUS_ASSERT_OK(bandit.Observe(8, -10));
  const std::map<int, double> censored = {{16, 12.0}};
  Rng rng(3);
  // 16 has no observation but is censored: not explored first, and its best
  // case (cost 12) loses to 8's certain 10.
  for (int i = 0; i < 20; ++i) EXPECT_EQ(bandit.Predict(rng, &censored), 8);
  // Without the bound it would be explored at once.
  EXPECT_EQ(bandit.Predict(rng), 16);
  // Once 8 looks dearer than 12, the censored arm is tried again.
  ZEUS_ASSERT_OK(bandit.Observe(8, -20));
  ZEUS_ASSERT_OK(bandit.Observe(8, -20));
  ZEUS_ASSERT_OK(bandit.Observe(8, -20));
  int censored_picks = 0;
  for (int i = 0; i < 100; ++i) censored_picks += bandit.Predict(rng, &censored) == 16;
  EXPECT_GT(censored_picks, 80);
  // An observation overrides the bound.
  ZEUS_ASSERT_OK(bandit.Observe(16, -30));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(bandit.Predict(rng, &censored), 8);
}

GaussianTsConfig Unimodal() {
  GaussianTsConfig config;
  config.num_explorations = 1;
  config.unimodal = true;
  return config;
}

// Arms 8..128 with two runs each: 16 leads; 128, far from it, has so wide a
// spread that a plain sample often beats the leader.
GaussianTs FiveArms(const GaussianTsConfig& config) {
  GaussianTs bandit({8, 16, 32, 64, 128}, config);
  const std::map<int, std::vector<double>> rewards = {{8, {-12.0, -14.0}},
                                                      {16, {-10.0, -11.0}},
                                                      {32, {-11.5, -13.0}},
                                                      {64, {-30.0, -31.0}},
                                                      {128, {-1.0, -200.0}}};
  for (const auto& [arm, values] : rewards) {
    for (double r : values) EXPECT_TRUE(bandit.Observe(arm, r).ok());
  }
  return bandit;
}

TEST(GaussianTsTest, UnimodalSamplesOnlyTheLeaderAndItsNeighbours) {
  GaussianTs bandit = FiveArms(Unimodal());
  Rng rng(5);
  std::map<int, int> picks;
  for (int i = 0; i < 500; ++i) ++picks[bandit.Predict(rng)];
  EXPECT_EQ(picks[64] + picks[128], 0);
  EXPECT_GT(picks[16], 0);
  EXPECT_GT(picks[8] + picks[32], 0);
  // The same arms without the mode: 128 wins a share of the draws.
  GaussianTsConfig plain = Unimodal();
  plain.unimodal = false;
  GaussianTs free_bandit = FiveArms(plain);
  int picks_128 = 0;
  for (int i = 0; i < 500; ++i) picks_128 += free_bandit.Predict(rng) == 128;
  EXPECT_GT(picks_128, 10);
}

TEST(GaussianTsTest, UnimodalGivesANeighbourSeenOnceASecondRun) {
  GaussianTs bandit({8, 16, 32, 64}, Unimodal());
  for (double r : {-10.0, -12.0}) ZEUS_ASSERT_OK(bandit.Observe(16, r));  // Leader, dearest 12.
  ZEUS_ASSERT_OK(bandit.Observe(8, -11.9));    // Seen once, within 12: owed a second run.
  ZEUS_ASSERT_OK(bandit.Observe(32, -11.95));  // Also owed; 8 comes first.
  ZEUS_ASSERT_OK(bandit.Observe(64, -12.5));   // Neither a neighbour of 16 nor a basin's best.
  Rng rng(7);
  EXPECT_EQ(bandit.Predict(rng), 8);
  // A run of 8 already handed out: the next second look is 32's.
  const std::set<int> pending_8 = {8};
  EXPECT_EQ(bandit.Predict(rng, nullptr, &pending_8), 32);
  // Both pending: plain sampling over 8, 16 and 32; 16 (mean 11, spread)
  // and the two certain neighbours share the draws, 64 never.
  const std::set<int> pending_both = {8, 32};
  std::map<int, int> picks;
  for (int i = 0; i < 200; ++i) ++picks[bandit.Predict(rng, nullptr, &pending_both)];
  EXPECT_EQ(picks[64], 0);
  EXPECT_GT(picks[16], 0);
  // A second observation ends the debt.
  ZEUS_ASSERT_OK(bandit.Observe(8, -13.0));
  ZEUS_ASSERT_OK(bandit.Observe(32, -13.0));
  for (int i = 0; i < 50; ++i) EXPECT_NE(bandit.Predict(rng), 64);
}

TEST(GaussianTsTest, UnimodalSecondLookOnlyWithinTheLeadersDearestRun) {
  GaussianTs bandit({8, 16, 32}, Unimodal());
  for (double r : {-10.0, -10.5}) ZEUS_ASSERT_OK(bandit.Observe(16, r));  // Dearest 10.5.
  ZEUS_ASSERT_OK(bandit.Observe(8, -12.0));   // Dearer than any run of 16.
  ZEUS_ASSERT_OK(bandit.Observe(32, -10.5));  // Exactly its dearest: owed.
  Rng rng(9);
  EXPECT_EQ(bandit.Predict(rng), 32);
  ZEUS_ASSERT_OK(bandit.Observe(32, -14.0));
  // No second look is owed: 8 at a certain 12 loses every draw to 16,
  // whose samples stay near 10.25; 32 (mean 12.25, spread) rarely wins.
  std::map<int, int> picks;
  for (int i = 0; i < 200; ++i) ++picks[bandit.Predict(rng)];
  EXPECT_EQ(picks[8], 0);
  EXPECT_GT(picks[16], 150);
}

TEST(GaussianTsTest, UnimodalSecondLookWithinTheLeadersSpread) {
  GaussianTs bandit({8, 16, 32}, Unimodal());
  // Dearest run 20, population standard deviation 4: a run up to 24 is
  // within the leader's own spread.
  for (double r : {-10.0, -10.0, -10.0, -10.0, -20.0}) ZEUS_ASSERT_OK(bandit.Observe(16, r));
  ZEUS_ASSERT_OK(bandit.Observe(8, -25.0));   // Beyond it.
  ZEUS_ASSERT_OK(bandit.Observe(32, -23.0));  // Within it: owed.
  Rng rng(4);
  EXPECT_EQ(bandit.Predict(rng), 32);
  // With the band widened to 2 standard deviations (28), 8 is owed first.
  GaussianTsConfig wide = Unimodal();
  wide.second_look_sigmas = 2.0;
  GaussianTs wide_bandit({8, 16, 32}, wide);
  for (double r : {-10.0, -10.0, -10.0, -10.0, -20.0}) {
    ZEUS_ASSERT_OK(wide_bandit.Observe(16, r));
  }
  ZEUS_ASSERT_OK(wide_bandit.Observe(8, -25.0));
  ZEUS_ASSERT_OK(wide_bandit.Observe(32, -23.0));
  EXPECT_EQ(wide_bandit.Predict(rng), 8);
}

TEST(GaussianTsTest, UnimodalAlsoSamplesTheBestOfAnotherBasin) {
  // Costs with two basins: 8 (the leader) and 64, whose one run was dear.
  GaussianTs bandit({8, 16, 32, 64, 128}, Unimodal());
  for (double r : {-10.0, -13.0}) ZEUS_ASSERT_OK(bandit.Observe(8, r));  // Dearest 13, sd 1.5.
  ZEUS_ASSERT_OK(bandit.Observe(16, -14.0));   // Leader's neighbour, within 14.5: owed.
  ZEUS_ASSERT_OK(bandit.Observe(32, -16.0));   // Beyond the leader's spread.
  ZEUS_ASSERT_OK(bandit.Observe(64, -12.9));   // Another basin's best: owed.
  ZEUS_ASSERT_OK(bandit.Observe(128, -16.0));  // Its neighbour, beyond the spread.
  Rng rng(3);
  EXPECT_EQ(bandit.Predict(rng), 16);
  const std::set<int> pending_16 = {16};
  EXPECT_EQ(bandit.Predict(rng, nullptr, &pending_16), 64);
  // Once 64 ran cheap it leads, and 8, two sizes away but the best of its
  // own basin, is still sampled against it.
  ZEUS_ASSERT_OK(bandit.Observe(16, -14.0));
  ZEUS_ASSERT_OK(bandit.Observe(64, -8.0));
  std::map<int, int> picks;
  for (int i = 0; i < 200; ++i) ++picks[bandit.Predict(rng)];
  EXPECT_GT(picks[64], 100);
  EXPECT_GT(picks[8], 0);
}

TEST(GaussianTsTest, UnimodalWithoutObservationsConsidersEveryArm) {
  GaussianTs bandit({8, 16, 32}, Unimodal());
  // Every arm censored, none observed: no leader, so each samples its bound.
  const std::map<int, double> censored = {{8, 30.0}, {16, 20.0}, {32, 25.0}};
  Rng rng(1);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(bandit.Predict(rng, &censored), 16);
}

TEST(GaussianTsTest, SamplesFavourTheCheaperArmAndAreDeterministic) {
  GaussianTsConfig config;
  GaussianTs bandit({8, 16}, config);
  for (double r : {-10.0, -12.0, -11.0}) ZEUS_ASSERT_OK(bandit.Observe(8, r));
  for (double r : {-13.0, -9.0, -14.0}) ZEUS_ASSERT_OK(bandit.Observe(16, r));
  Rng a(11), b(11);
  std::map<int, int> picks;
  for (int i = 0; i < 2000; ++i) {
    const int arm = bandit.Predict(a);
    EXPECT_EQ(arm, bandit.Predict(b));
    ++picks[arm];
  }
  // Means -11 vs -12: 8 should win most draws, 16 a fair share.
  EXPECT_GT(picks[8], picks[16]);
  EXPECT_GT(picks[16], 200);
}

TEST(GaussianTsTest, SampleStddevScaleNarrowsTheDrawsAroundEachMean) {
  // Arm 8: mean -11, posterior sd sqrt((2/3) / 3); arm 16: mean -12, sd
  // sqrt((14/3) / 3). 16 wins a draw with probability Phi(-1 / (s x 1.333)):
  // 22.7 % at scale s = 1, 10.6 % at 0.6, 0 at a vanishing scale.
  auto share_of_16 = [](double scale) {
    GaussianTsConfig config;
    config.sample_stddev_scale = scale;
    GaussianTs bandit({8, 16}, config);
    for (double r : {-10.0, -12.0, -11.0}) EXPECT_TRUE(bandit.Observe(8, r).ok());
    for (double r : {-13.0, -9.0, -14.0}) EXPECT_TRUE(bandit.Observe(16, r).ok());
    Rng rng(7);
    int picks = 0;
    for (int i = 0; i < 10000; ++i) picks += bandit.Predict(rng) == 16;
    return picks / 10000.0;
  };
  EXPECT_NEAR(share_of_16(1.0), 0.227, 0.015);
  EXPECT_NEAR(share_of_16(0.6), 0.106, 0.015);
  EXPECT_EQ(share_of_16(1e-9), 0.0);
}

TEST(GaussianTsTest, RejectsUnknownArmAndNonFiniteReward) {
  GaussianTs bandit({8}, GaussianTsConfig());
  EXPECT_EQ(bandit.Observe(16, -1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bandit.Observe(8, NAN).code(), StatusCode::kInvalidArgument);
}

TEST(GaussianTsTest, JsonRoundTripRestoresBeliefs) {
  GaussianTsConfig config;
  config.window_size = 3;
  GaussianTs bandit({8, 16}, config);
  for (double r : {-10.1, -12.3, -11.7, -9.9}) ZEUS_ASSERT_OK(bandit.Observe(8, r));
  ZEUS_ASSERT_OK(bandit.Observe(16, -3.3));
  const std::string text = bandit.ToJson().dump();
  ZEUS_ASSERT_OK_AND_ASSIGN(GaussianTs restored,
                            GaussianTs::FromJson(nlohmann::json::parse(text), config));
  for (int arm : {8, 16}) {
    EXPECT_EQ(restored.Arm(arm).mean, bandit.Arm(arm).mean);
    EXPECT_EQ(restored.Arm(arm).precision, bandit.Arm(arm).precision);
    EXPECT_EQ(restored.Arm(arm).num_observations, bandit.Arm(arm).num_observations);
  }
}

// Huge rewards would overflow the variance (a NaN mean); rewards so close
// that 1 / variance overflows would make infinity / infinity. Neither may
// leave a non-finite mean.
TEST(GaussianTsTest, BeliefsStayFiniteAtTheEdgesOfTheRewardRange) {
  GaussianTs bandit({8, 16, 32}, GaussianTsConfig());
  EXPECT_EQ(bandit.Observe(8, -1e160).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bandit.Observe(8, -INFINITY).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bandit.Arm(8).num_observations, 0);
  for (double r : {-GaussianTs::kMaxAbsReward, -1.0, -GaussianTs::kMaxAbsReward}) {
    ZEUS_ASSERT_OK(bandit.Observe(8, r));
  }
  for (double r : {-1e-160, -2e-160, -1.5e-160}) ZEUS_ASSERT_OK(bandit.Observe(16, r));
  for (double r : {-1e-300, -3e-300}) ZEUS_ASSERT_OK(bandit.Observe(32, r));
  for (const ArmState& arm : bandit.ArmStates()) {
    EXPECT_TRUE(std::isfinite(arm.mean)) << arm.batch_size << ": " << arm.mean;
    EXPECT_FALSE(std::isnan(arm.precision)) << arm.batch_size;
    EXPECT_FALSE(std::isnan(arm.reward_precision)) << arm.batch_size;
  }
  EXPECT_NEAR(bandit.Arm(16).mean, -1.5e-160, 1e-170);
  // prior_precision x prior_mean overflows.
  GaussianTsConfig prior;
  prior.prior_precision = 1e300;
  prior.prior_mean = -1e300;
  GaussianTs confident({8}, prior);
  for (double r : {-1.0, -2.0}) ZEUS_ASSERT_OK(confident.Observe(8, r));
  EXPECT_DOUBLE_EQ(confident.Arm(8).mean, -1e300);
}

TEST(GaussianTsTest, StateWithARewardOutOfRangeIsRefusedOnLoad) {
  nlohmann::json state = {{"arms", {{{"batch_size", 8}, {"rewards", {-1.0, -1e160}}}}}};
  StatusOr<GaussianTs> loaded = GaussianTs::FromJson(state, GaussianTsConfig());
  EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument);
}

TEST(GaussianTsTest, FromJsonRefusesNonFiniteOrHugeRewardsNamingTheArm) {
  GaussianTs bandit({8, 16}, GaussianTsConfig());
  ZEUS_ASSERT_OK(bandit.Observe(8, -10));
  ZEUS_ASSERT_OK(bandit.Observe(16, -3));
  const nlohmann::json state = bandit.ToJson();
  for (double bad : {std::nan(""), HUGE_VAL, -1e300, 2 * GaussianTs::kMaxAbsReward}) {
    nlohmann::json broken = state;
    broken["arms"][1]["rewards"][0] = bad;
    StatusOr<GaussianTs> loaded = GaussianTs::FromJson(broken, GaussianTsConfig());
    EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(loaded.status().message().find("bandit: arms[1].rewards[0]"), std::string::npos)
        << loaded.status();
  }
  nlohmann::json duplicate = state;
  duplicate["arms"][1]["batch_size"] = 8;
  EXPECT_NE(GaussianTs::FromJson(duplicate, GaussianTsConfig())
                .status()
                .message()
                .find("duplicate arm 8"),
            std::string::npos);
  // Large but bounded rewards keep every belief finite.
  nlohmann::json large = state;
  large["arms"][0]["rewards"] = {-1e18, -1e18 + 1e12, -2e15};
  ZEUS_ASSERT_OK_AND_ASSIGN(GaussianTs restored, GaussianTs::FromJson(large, GaussianTsConfig()));
  EXPECT_TRUE(std::isfinite(restored.Arm(8).mean));
}

}  // namespace
}  // namespace zeus
