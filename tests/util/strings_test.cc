#include "zeus/util/strings.h"

#include <cmath>

#include <gtest/gtest.h>

#include "zeus/util/env.h"

namespace zeus {
namespace {

TEST(StringsTest, SplitKeepsEmptyFields) {
  EXPECT_EQ(Split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(Split("", ','), (std::vector<std::string>{""}));
}

TEST(StringsTest, ParsersRejectTrailingGarbageAndNameTheText) {
  EXPECT_EQ(*ParseInt64(" 42 "), 42);
  EXPECT_EQ(ParseInt64("42x").status().message(), "expected an integer, got '42x'");
  EXPECT_FALSE(ParseUint64("-1").ok());
  EXPECT_DOUBLE_EQ(*ParseDouble("1e-1"), 0.1);
  EXPECT_TRUE(std::isnan(*ParseDouble("nan")));
  EXPECT_FALSE(ParseDouble("").ok());
}

TEST(EnvTest, DryRunFollowsTheVariable) {
  unsetenv("ZEUS_DRY_RUN");
  EXPECT_FALSE(IsDryRun());
  setenv("ZEUS_DRY_RUN", "1", 1);
  EXPECT_TRUE(IsDryRun());
  setenv("ZEUS_DRY_RUN", "False", 1);
  EXPECT_FALSE(IsDryRun());
  unsetenv("ZEUS_DRY_RUN");
}

}  // namespace
}  // namespace zeus
