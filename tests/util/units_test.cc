#include "zeus/util/units.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace zeus {
namespace {

TEST(UnitsTest, CheckedWToMwConvertsEveryWattCountThatFits) {
  EXPECT_EQ(CheckedWToMw(0), 0u);
  EXPECT_EQ(CheckedWToMw(300), 300'000u);
  EXPECT_EQ(CheckedWToMw(kMaxWattsAsMw), 4'294'967'000u);
  EXPECT_EQ(WToMw(300), 300'000u);
}

TEST(UnitsTest, CheckedWToMwRefusesWhatWouldWrap) {
  // 4294968 W is 4294968000 mW, which a plain uint32_t product wraps to 32704.
  EXPECT_FALSE(CheckedWToMw(4'294'968).has_value());
  EXPECT_FALSE(CheckedWToMw(5'000'000).has_value());
  EXPECT_FALSE(CheckedWToMw(-1).has_value());
  EXPECT_FALSE(CheckedWToMw(std::numeric_limits<int64_t>::max()).has_value());
}

TEST(UnitsTest, CheckedFromSecondsConvertsFiniteDurationsThatFit) {
  EXPECT_EQ(CheckedFromSeconds(1.5), std::chrono::milliseconds(1500));
  EXPECT_EQ(CheckedFromSeconds(-2.0), std::chrono::seconds(-2));
  EXPECT_EQ(CheckedFromSeconds(9e9), std::chrono::seconds(9'000'000'000));
}

TEST(UnitsTest, CheckedFromSecondsRefusesNonFiniteAndOverflowingDurations) {
  EXPECT_FALSE(CheckedFromSeconds(1e10).has_value());  // 1e19 ns > INT64_MAX.
  EXPECT_FALSE(CheckedFromSeconds(-1e10).has_value());
  EXPECT_FALSE(CheckedFromSeconds(1e307).has_value());
  EXPECT_FALSE(CheckedFromSeconds(std::nan("")).has_value());
  EXPECT_FALSE(CheckedFromSeconds(std::numeric_limits<double>::infinity()).has_value());
}

}  // namespace
}  // namespace zeus
