#include "zeus/core/optimum_selector.h"

#include <gtest/gtest.h>

#include "zeus/core/power_limit_profile.h"

#include "tests/core/bundled_profiles.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

using testing::RawProfile;
using testing::RawProfileRow;

// The expected optimum, from the raw CSV numbers: the lowest score, where a
// tie keeps the higher limit.
template <typename Score>
int ExpectedArgminW(const RawProfile& raw, Score score) {
  int best_w = -1;
  double best = 0;
  for (const RawProfileRow& row : raw.rows) {
    double s = score(row);
    if (best_w < 0 || s < best || (s == best && row.power_limit_w > best_w)) {
      best_w = row.power_limit_w;
      best = s;
    }
  }
  return best_w;
}

class BundledProfilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    raws_ = testing::ReadBundledProfiles();
    ASSERT_GE(raws_.size(), 6u) << "expected the six A40 profiles under " << testing::DataDir()
                                << "/profiles";
  }
  std::vector<RawProfile> raws_;
};

TEST_F(BundledProfilesTest, LeastEnergyAndLeastTimeMatchTheRawNumbers) {
  for (const RawProfile& raw : raws_) {
    ZEUS_ASSERT_OK_AND_ASSIGN(PowerLimitProfile profile, LoadProfile(raw.path));
    ZEUS_ASSERT_OK_AND_ASSIGN(uint32_t energy_mw,
                              SelectOptimumMw(profile, OptimumSelector::LeastEnergy()));
    EXPECT_EQ(energy_mw,
              1000u * ExpectedArgminW(raw, [](const RawProfileRow& r) { return r.TotalEnergyJ(); }))
        << raw.path;
    ZEUS_ASSERT_OK_AND_ASSIGN(uint32_t time_mw,
                              SelectOptimumMw(profile, OptimumSelector::LeastTime()));
    EXPECT_EQ(time_mw,
              1000u * ExpectedArgminW(raw, [](const RawProfileRow& r) { return r.time_s; }))
        << raw.path;
  }
}

TEST_F(BundledProfilesTest, LeastCostMatchesTheRawNumbersForEveryEta) {
  for (const RawProfile& raw : raws_) {
    ZEUS_ASSERT_OK_AND_ASSIGN(PowerLimitProfile profile, LoadProfile(raw.path));
    int max_w = 0;
    for (const RawProfileRow& r : raw.rows) max_w = std::max(max_w, r.power_limit_w);
    double max_power_w = static_cast<double>(max_w) * raw.rows[0].gpu_energy_j.size();
    for (double eta : {0.0, 0.25, 0.5, 0.75, 1.0}) {
      ZEUS_ASSERT_OK_AND_ASSIGN(uint32_t chosen_mw,
                                SelectOptimumMw(profile, OptimumSelector::LeastCost(eta)));
      int expected_w = ExpectedArgminW(raw, [&](const RawProfileRow& r) {
        return eta * r.TotalEnergyJ() + (1 - eta) * max_power_w * r.time_s;
      });
      EXPECT_EQ(chosen_mw, 1000u * expected_w) << raw.path << " eta " << eta;
    }
  }
}

TEST_F(BundledProfilesTest, MaxSlowdownMatchesTheRawNumbersForEveryFactor) {
  for (const RawProfile& raw : raws_) {
    ZEUS_ASSERT_OK_AND_ASSIGN(PowerLimitProfile profile, LoadProfile(raw.path));
    const RawProfileRow* at_max = &raw.rows[0];
    for (const RawProfileRow& r : raw.rows) {
      if (r.power_limit_w > at_max->power_limit_w) at_max = &r;
    }
    for (double factor : {1.0, 1.05, 1.1, 1.5, 100.0}) {
      ZEUS_ASSERT_OK_AND_ASSIGN(uint32_t chosen_mw,
                                SelectOptimumMw(profile, OptimumSelector::MaxSlowdown(factor)));
      int expected_w = at_max->power_limit_w;
      for (const RawProfileRow& r : raw.rows) {
        if (r.time_s <= factor * at_max->time_s) expected_w = std::min(expected_w, r.power_limit_w);
      }
      EXPECT_EQ(chosen_mw, 1000u * expected_w) << raw.path << " factor " << factor;
    }
  }
}

TEST_F(BundledProfilesTest, ExtremesOfTheKnobsAgreeWithEnergyAndTime) {
  for (const RawProfile& raw : raws_) {
    ZEUS_ASSERT_OK_AND_ASSIGN(PowerLimitProfile profile, LoadProfile(raw.path));
    EXPECT_EQ(SelectOptimumMw(profile, OptimumSelector::LeastCost(1.0)).value(),
              SelectOptimumMw(profile, OptimumSelector::LeastEnergy()).value());
    EXPECT_EQ(SelectOptimumMw(profile, OptimumSelector::LeastCost(0.0)).value(),
              SelectOptimumMw(profile, OptimumSelector::LeastTime()).value());
    // A factor of 100 admits every limit: the lowest one.
    uint32_t lowest_mw = UINT32_MAX;
    for (const PowerLimitMeasurement& m : profile.measurements) {
      lowest_mw = std::min(lowest_mw, m.power_limit_mw);
    }
    EXPECT_EQ(SelectOptimumMw(profile, OptimumSelector::MaxSlowdown(100)).value(), lowest_mw);
  }
}

PowerLimitProfile Synthetic(std::vector<PowerLimitMeasurement> ms, int num_gpus = 1) {
  PowerLimitProfile p;
  p.num_gpus = num_gpus;
  p.measurements = std::move(ms);
  return p;
}

TEST(OptimumSelectorTest, TiesGoToTheHigherLimit) {
  PowerLimitProfile p =
      Synthetic({{200'000, 100, 10, 1}, {250'000, 100, 10, 1}, {150'000, 120, 10, 1}});
  EXPECT_EQ(SelectOptimumMw(p, OptimumSelector::LeastEnergy()).value(), 250'000u);
  EXPECT_EQ(SelectOptimumMw(p, OptimumSelector::LeastTime()).value(), 250'000u);
  EXPECT_EQ(SelectOptimumMw(p, OptimumSelector::LeastCost(0.5)).value(), 250'000u);
}

TEST(OptimumSelectorTest, ComparesPerStepSoStretchLengthsMayDiffer) {
  // 300 W: 1000 J over 40 steps (25 J/step); 200 W: 1200 J over 60 steps (20 J/step).
  PowerLimitProfile p = Synthetic({{300'000, 1000, 4, 40}, {200'000, 1200, 9, 60}});
  EXPECT_EQ(SelectOptimumMw(p, OptimumSelector::LeastEnergy()).value(), 200'000u);
  // Time per step: 0.1 s vs 0.15 s.
  EXPECT_EQ(SelectOptimumMw(p, OptimumSelector::LeastTime()).value(), 300'000u);
  EXPECT_EQ(SelectOptimumMw(p, OptimumSelector::MaxSlowdown(1.5)).value(), 200'000u);
  EXPECT_EQ(SelectOptimumMw(p, OptimumSelector::MaxSlowdown(1.49)).value(), 300'000u);
}

TEST(OptimumSelectorTest, CostScalesMaxPowerByTheNumberOfGpus) {
  // eta 0.5: cost = 0.5 E + 0.5 * 300 W * n * T.
  // n = 1: 300 W: 0.5*1000 + 150*10 = 2000; 200 W: 0.5*600 + 150*11 = 1950 -> 200 W.
  // n = 4: 300 W: 500 + 6000 = 6500; 200 W: 300 + 6600 = 6900 -> 300 W.
  std::vector<PowerLimitMeasurement> ms = {{300'000, 1000, 10, 1}, {200'000, 600, 11, 1}};
  EXPECT_EQ(SelectOptimumMw(Synthetic(ms, 1), OptimumSelector::LeastCost(0.5)).value(), 200'000u);
  EXPECT_EQ(SelectOptimumMw(Synthetic(ms, 4), OptimumSelector::LeastCost(0.5)).value(), 300'000u);
}

TEST(OptimumSelectorTest, RejectsBadKnobsAndNames) {
  PowerLimitProfile p = Synthetic({{300'000, 1000, 10, 1}});
  Status s = SelectOptimumMw(p, OptimumSelector::LeastCost(1.5)).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("eta must be in [0, 1], got 1.5"), std::string::npos) << s;
  s = SelectOptimumMw(p, OptimumSelector::MaxSlowdown(0.9)).status();
  EXPECT_NE(s.message().find("max_slowdown"), std::string::npos) << s;
  EXPECT_EQ(ParseOptimumKind("cost").value(), OptimumKind::kCost);
  s = ParseOptimumKind("fast").status();
  EXPECT_NE(s.message().find("'fast'"), std::string::npos) << s;
  EXPECT_FALSE(SelectOptimumMw(Synthetic({}), OptimumSelector::LeastEnergy()).ok());
}

}  // namespace
}  // namespace zeus
