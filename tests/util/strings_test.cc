#include "zeus/util/strings.h"

#include <cmath>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "zeus/util/env.h"

namespace zeus {
namespace {

TEST(StringsTest, SplitKeepsEmptyFields) {
  EXPECT_EQ(Split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(Split("", ','), (std::vector<std::string>{""}));
}

TEST(StringsTest, IgnoreCaseComparesAsciiLettersOnly) {
  EXPECT_TRUE(EqualsIgnoreCase("Content-Length", "content-LENGTH"));
  EXPECT_FALSE(EqualsIgnoreCase("Content-Length", "Content-Lengt"));
  EXPECT_FALSE(EqualsIgnoreCase("a-b", "a_b"));
  EXPECT_TRUE(StartsWithIgnoreCase("HTTPS://x", "https://"));
  EXPECT_FALSE(StartsWithIgnoreCase("http", "https://"));
}

TEST(StringsTest, ParsersRejectTrailingGarbageAndNameTheText) {
  EXPECT_EQ(*ParseInt64(" 42 "), 42);
  EXPECT_EQ(ParseInt64("42x").status().message(), "expected an integer, got '42x'");
  EXPECT_FALSE(ParseUint64("-1").ok());
  EXPECT_DOUBLE_EQ(*ParseDouble("1e-1"), 0.1);
  EXPECT_TRUE(std::isnan(*ParseDouble("nan")));
  EXPECT_FALSE(ParseDouble("").ok());
}

TEST(StringsTest, FindNonTextByteAcceptsUtf8TextAndLocatesAnythingElse) {
  EXPECT_EQ(FindNonTextByte(""), std::nullopt);
  EXPECT_EQ(FindNonTextByte("a,b\tc\r\n"), std::nullopt);
  EXPECT_EQ(FindNonTextByte("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), std::nullopt);
  EXPECT_EQ(FindNonTextByte(std::string("ab\0c", 4)), 2u);
  EXPECT_EQ(FindNonTextByte("ab\x01"), 2u);
  EXPECT_EQ(FindNonTextByte("a\x7F"), 1u);
  EXPECT_EQ(FindNonTextByte("\x89PNG"), 0u);           // Lone continuation byte.
  EXPECT_EQ(FindNonTextByte("x\xC3"), 1u);             // Cut-off sequence.
  EXPECT_EQ(FindNonTextByte("x\xC3(y"), 1u);           // Bad continuation.
  EXPECT_EQ(FindNonTextByte("\xC0\xAF"), 0u);          // Overlong '/'.
  EXPECT_EQ(FindNonTextByte("\xE0\x80\xAF"), 0u);      // Overlong, 3 bytes.
  EXPECT_EQ(FindNonTextByte("ok\xED\xA0\x80"), 2u);    // Surrogate U+D800.
  EXPECT_EQ(FindNonTextByte("\xF4\x90\x80\x80"), 0u);  // Above U+10FFFF.
  EXPECT_EQ(FindNonTextByte("\xFF"), 0u);
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
