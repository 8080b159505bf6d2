#include "zeus/core/early_stop.h"

#include <gtest/gtest.h>

namespace zeus {
namespace {

TEST(EarlyStopTest, BoundIsBetaTimesTheLowestReachedCost) {
  EXPECT_EQ(EarlyStopCostBound(2.0, 20.0), 40.0);
  EXPECT_EQ(EarlyStopCostBound(1.5, 10.0), 15.0);
}

TEST(EarlyStopTest, NoBoundWithoutBetaOrBeforeAnyRunReachedTheTarget) {
  EXPECT_FALSE(EarlyStopCostBound(std::nullopt, 20.0).has_value());
  EXPECT_FALSE(EarlyStopCostBound(2.0, std::nullopt).has_value());
  EXPECT_FALSE(EarlyStopCostBound(std::nullopt, std::nullopt).has_value());
}

}  // namespace
}  // namespace zeus
