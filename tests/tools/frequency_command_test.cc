// Runs the built `zeus frequency select` on a saved frequency profile and on
// bad input.

#include <cstdlib>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "zeus/core/frequency_profile.h"
#include "zeus/util/file.h"

#include "tests/testing/temp_dir.h"
#include "tests/tools/command_test_base.h"
#include "tests/tools/frequency_profiles.h"

namespace zeus {
namespace {

using ::testing::HasSubstr;

class FrequencyCommandTest : public testing::CommandTestBase {
 protected:
  // Runs `zeus frequency select <args>` (RunZeus).
  int Run(const std::string& args) { return RunZeus("frequency select " + args); }
};

TEST_F(FrequencyCommandTest, PrintsTheClockEachSelectorChoosesInMhz) {
  const FrequencyProfile p = zeus::testing::ThreeClockProfile(1);
  const std::string path = dir_.File("clocks.json");
  ZEUS_ASSERT_OK(SaveFrequencyProfile(path, p));
  for (const auto& [args, selector] : std::vector<std::pair<std::string, OptimumSelector>>{
           {"--selector energy", OptimumSelector::LeastEnergy()},
           {"--selector time", OptimumSelector::LeastTime()},
           {"", OptimumSelector::LeastCost(0.5)},
           {"--selector cost --eta 0.9", OptimumSelector::LeastCost(0.9)},
           {"--selector slowdown --max-slowdown 1.2", OptimumSelector::MaxSlowdown(1.2)}}) {
    const uint32_t expected = SelectOptimumMhz(p, selector).value();
    ASSERT_EQ(Run("--profile " + path + " " + args), 0) << err_;
    EXPECT_EQ(out_, std::to_string(expected) + "\n") << args;
    ASSERT_EQ(Run("--profile " + path + " " + args + " --json"), 0) << err_;
    EXPECT_EQ(nlohmann::json::parse(out_).at("sm_clock_mhz").get<uint32_t>(), expected);
  }
  ASSERT_EQ(Run("--profile " + path + " --selector energy"), 0);
  EXPECT_EQ(out_, "1080\n");
  ASSERT_EQ(Run("--profile " + path + " --selector time"), 0);
  EXPECT_EQ(out_, "1980\n");
}

TEST_F(FrequencyCommandTest, BadInputIsNamed) {
  EXPECT_EQ(Run("--profile " + dir_.File("missing.json")), 1);
  EXPECT_THAT(err_, HasSubstr("zeus frequency select: "));
  EXPECT_THAT(err_, HasSubstr("missing.json"));
  // A power-limit profile is not a frequency profile.
  ZEUS_ASSERT_OK(WriteFileAtomically(
      dir_.File("pl.json"),
      R"({"format": "zeus-power-limit-profile", "version": 1, "num_gpus": 1, "measurements": []})"));
  EXPECT_EQ(Run("--profile " + dir_.File("pl.json")), 1);
  EXPECT_THAT(err_, HasSubstr("zeus-frequency-profile"));
  // --eta with a selector that ignores it is a usage error.
  EXPECT_EQ(Run("--profile x --selector energy --eta 0.3"), 2);
  EXPECT_THAT(err_, HasSubstr("--eta"));
}

}  // namespace
}  // namespace zeus
