#include "zeus/util/env.h"

#include <stdlib.h>

#include <gtest/gtest.h>

namespace zeus {
namespace {

TEST(DryRunTest, ZeusDryRunIsParsedAsABooleanAndAnythingElseIsRefused) {
  unsetenv("ZEUS_DRY_RUN");
  EXPECT_FALSE(*DryRunSetting());
  for (const char* off : {"", "0", "false", "No", "OFF", " off "}) {
    setenv("ZEUS_DRY_RUN", off, 1);
    EXPECT_FALSE(*DryRunSetting()) << off;
    EXPECT_FALSE(IsDryRun()) << off;
  }
  for (const char* on : {"1", "true", "YES", "on"}) {
    setenv("ZEUS_DRY_RUN", on, 1);
    EXPECT_TRUE(*DryRunSetting()) << on;
    EXPECT_TRUE(IsDryRun()) << on;
  }
  for (const char* typo : {"of", "2", "enabled"}) {
    setenv("ZEUS_DRY_RUN", typo, 1);
    StatusOr<bool> parsed = DryRunSetting();
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << typo;
    EXPECT_EQ(parsed.status().message(),
              std::string("ZEUS_DRY_RUN=\"") + typo +
                  "\": expected true/false, 1/0, yes/no or on/off (any case)");
    EXPECT_TRUE(IsDryRun()) << typo;  // Never changes a device on a typo.
  }
  unsetenv("ZEUS_DRY_RUN");
}

}  // namespace
}  // namespace zeus
