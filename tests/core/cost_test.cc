#include "zeus/core/cost.h"

#include <gtest/gtest.h>

namespace zeus {
namespace {

TEST(ZeusCostTest, WeighsEnergyAndTimeAtMaxPower) {
  EXPECT_DOUBLE_EQ(ZeusCost(1000, 10, 0.5, 300), 0.5 * 1000 + 0.5 * 300 * 10);
  EXPECT_DOUBLE_EQ(ZeusCost(1000, 10, 1.0, 300), 1000);
  EXPECT_DOUBLE_EQ(ZeusCost(1000, 10, 0.0, 300), 3000);
}

TEST(ZeusCostTest, MaxPowerIsTheHighestLimitTimesTheGpus) {
  EXPECT_DOUBLE_EQ(MaxPowerW(300, 1), 300);
  EXPECT_DOUBLE_EQ(MaxPowerW(250, 4), 1000);
  // Time weighs in at every GPU's highest limit.
  EXPECT_DOUBLE_EQ(ZeusCost(1000, 10, 0.0, MaxPowerW(250, 4)), 10000);
}

}  // namespace
}  // namespace zeus
