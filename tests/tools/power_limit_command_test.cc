// Runs the built `zeus power-limit select` on the shared A40 profiles and on
// bad input.

#include <cstdlib>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "zeus/core/optimum_selector.h"
#include "zeus/core/power_limit_profile.h"
#include "zeus/util/file.h"

#include "tests/core/bundled_profiles.h"
#include "tests/testing/temp_dir.h"
#include "tests/tools/command_test_base.h"

namespace zeus {
namespace {

using ::testing::HasSubstr;

class PowerLimitCommandTest : public testing::CommandTestBase {
 protected:
  // Runs `zeus power-limit select <args>` (RunZeus).
  int Run(const std::string& args) { return RunZeus("power-limit select " + args); }
};

TEST_F(PowerLimitCommandTest, PrintsTheLimitOfEachSelectorInWatts) {
  struct Case {
    std::string args;
    OptimumSelector selector;
  };
  std::vector<Case> cases = {
      {"--selector energy", OptimumSelector::LeastEnergy()},
      {"--selector time", OptimumSelector::LeastTime()},
      {"--selector cost --eta 0.25", OptimumSelector::LeastCost(0.25)},
      {"", OptimumSelector::LeastCost(0.5)},
      {"--selector slowdown --max-slowdown 1.05", OptimumSelector::MaxSlowdown(1.05)},
      {"--selector slowdown", OptimumSelector::MaxSlowdown(1.1)},
  };
  for (const testing::RawProfile& raw : testing::ReadBundledProfiles()) {
    PowerLimitProfile profile = LoadProfile(raw.path).value();
    for (const Case& c : cases) {
      uint32_t expected_mw = SelectOptimumMw(profile, c.selector).value();
      ASSERT_EQ(Run("--profile '" + raw.path + "' " + c.args + " --json"), 0) << err_;
      nlohmann::json j = nlohmann::json::parse(out_);
      EXPECT_EQ(j.at("power_limit_w").get<double>(), expected_mw / 1000.0) << raw.path << c.args;
      ASSERT_EQ(Run("--profile '" + raw.path + "' " + c.args), 0) << err_;
      EXPECT_EQ(out_, std::to_string(expected_mw / 1000) + "\n");
    }
  }
}

TEST_F(PowerLimitCommandTest, ReadsTheOptimizersJsonProfile) {
  PowerLimitProfile p;
  p.num_gpus = 1;
  // Per step: 300 W 25 J, 0.1 s; 250 W 20 J, 0.11 s; 200 W 19 J, 0.15 s.
  p.measurements = {{300'000, 1000, 4, 40}, {250'000, 1200, 6.6, 60}, {200'000, 950, 7.5, 50}};
  std::string path = dir_.File("profile.json");
  ZEUS_ASSERT_OK(SaveProfile(path, p));
  ASSERT_EQ(Run("--profile " + path + " --selector energy"), 0) << err_;
  EXPECT_EQ(out_, "200\n");
  ASSERT_EQ(Run("--profile " + path + " --selector time"), 0) << err_;
  EXPECT_EQ(out_, "300\n");
  ASSERT_EQ(Run("--profile " + path + " --selector slowdown --max-slowdown 1.2 --json"), 0);
  EXPECT_EQ(nlohmann::json::parse(out_).at("power_limit_w").get<double>(), 250.0);
}

TEST_F(PowerLimitCommandTest, BadInputFailsWithTheReason) {
  EXPECT_EQ(Run("--profile /nonexistent.csv"), 1);
  EXPECT_THAT(err_, HasSubstr("zeus power-limit select: "));
  EXPECT_THAT(err_, HasSubstr("/nonexistent.csv"));
  std::string bad = dir_.WriteFile(
      "bad.csv",
      "start_time,window_name,elapsed_time,gpu0_energy\n1,__GlobalPowerLimitOptimizer_x,1,1\n");
  EXPECT_EQ(Run("--profile " + bad), 1);
  EXPECT_THAT(err_, HasSubstr(bad + ":2:2:"));
  std::string good = testing::ReadBundledProfiles().at(0).path;
  // Bad flag values are usage errors (exit 2) naming the option and value.
  EXPECT_EQ(Run("--profile '" + good + "' --eta 1.5"), 2);
  EXPECT_THAT(err_, HasSubstr("--eta: expected a number in [0, 1], got '1.5'"));
  EXPECT_EQ(Run("--profile '" + good + "' --selector fastest"), 2);
  EXPECT_THAT(err_, HasSubstr("--selector fastest: "));
  EXPECT_THAT(err_, HasSubstr("unknown name 'fastest'"));
  EXPECT_EQ(Run("--profile " + dir_.path()), 1);
  EXPECT_THAT(err_, HasSubstr(dir_.path() + ": is a directory"));
  // Issue 14: "5915.57" cut to "5" by the end of the file is refused, not read as 5 J.
  std::string raw = ReadFileToString(good).value();
  ASSERT_EQ(raw.back(), '\n');
  std::string truncated = dir_.WriteFile("cut.csv", raw.substr(0, raw.size() - 4));
  EXPECT_EQ(Run("--profile " + truncated), 1);
  EXPECT_THAT(err_, HasSubstr("truncated"));
}

}  // namespace
}  // namespace zeus
