#include "zeus/core/power_limit_profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/core/bundled_profiles.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

using ::testing::HasSubstr;

TEST(ProfileTest, ReadsTheSharedCsvLogsSummingGpuColumns) {
  for (const testing::RawProfile& raw : testing::ReadBundledProfiles()) {
    ZEUS_ASSERT_OK_AND_ASSIGN(PowerLimitProfile profile, LoadProfile(raw.path));
    EXPECT_EQ(profile.num_gpus, static_cast<int>(raw.rows[0].gpu_energy_j.size())) << raw.path;
    ASSERT_EQ(profile.measurements.size(), raw.rows.size()) << raw.path;
    for (size_t i = 0; i < raw.rows.size(); ++i) {
      EXPECT_EQ(profile.measurements[i].power_limit_mw, 1000u * raw.rows[i].power_limit_w);
      EXPECT_DOUBLE_EQ(profile.measurements[i].energy_j, raw.rows[i].TotalEnergyJ());
      EXPECT_DOUBLE_EQ(profile.measurements[i].time_s, raw.rows[i].time_s);
      EXPECT_EQ(profile.measurements[i].steps, 1);
    }
  }
}

TEST(ProfileTest, JsonRoundTripKeepsEveryField) {
  PowerLimitProfile p;
  p.num_gpus = 2;
  p.min_stretch_time_s = 3.5;
  p.measurements = {{175'000, 1234.5, 6.25, 80}, {300'000, 2000.125, 5.5, 40}};
  testing::TempDir dir;
  ZEUS_ASSERT_OK(SaveProfile(dir.File("p.json"), p));
  ZEUS_ASSERT_OK_AND_ASSIGN(PowerLimitProfile back, LoadProfile(dir.File("p.json")));
  EXPECT_EQ(back.num_gpus, 2);
  EXPECT_DOUBLE_EQ(back.min_stretch_time_s, 3.5);
  ASSERT_EQ(back.measurements.size(), 2u);
  // Saved in descending limit order.
  EXPECT_EQ(back.measurements[0].power_limit_mw, 300'000u);
  EXPECT_DOUBLE_EQ(back.measurements[0].energy_j, 2000.125);
  EXPECT_EQ(back.measurements[0].steps, 40);
  EXPECT_EQ(back.measurements[1].power_limit_mw, 175'000u);
  EXPECT_DOUBLE_EQ(back.measurements[1].time_s, 6.25);
  EXPECT_EQ(back.measurements[1].steps, 80);
}

TEST(ProfileTest, CsvErrorsNameFileLineAndColumn) {
  std::string header = "start_time,window_name,elapsed_time,gpu0_energy\n";
  Status s = ProfileFromCsv(header +
                                "1,__GlobalPowerLimitOptimizer_300,9.2,2053\n"
                                "2,__GlobalPowerLimitOptimizer_abc,9.0,2051\n",
                            "p.csv")
                 .status();
  EXPECT_THAT(s.message(), HasSubstr("p.csv:3:2:")) << s;
  EXPECT_THAT(s.message(), HasSubstr("'__GlobalPowerLimitOptimizer_abc'")) << s;
  s = ProfileFromCsv(header + "1,__GlobalPowerLimitOptimizer_300,x,2053\n", "p.csv").status();
  EXPECT_THAT(s.message(), HasSubstr("p.csv:2:3: column 'elapsed_time'")) << s;
  s = ProfileFromCsv(header + "1,__GlobalPowerLimitOptimizer_300,9.2,-1\n", "p.csv").status();
  EXPECT_THAT(s.message(), HasSubstr("p.csv:2:4: column 'gpu0_energy'")) << s;
  s = ProfileFromCsv(header + "1,OtherWindow,9.2,1\n", "p.csv").status();
  EXPECT_THAT(s.message(), HasSubstr("p.csv:2:2:")) << s;
  EXPECT_THAT(s.message(), HasSubstr("no '__GlobalPowerLimitOptimizer_<W>' window")) << s;
  s = ProfileFromCsv(header +
                         "1,__GlobalPowerLimitOptimizer_300,9.2,1\n"
                         "1,__GlobalPowerLimitOptimizer_300,9.1,1\n",
                     "p.csv")
          .status();
  EXPECT_THAT(s.message(), HasSubstr("p.csv:3:2:")) << s;
  EXPECT_THAT(s.message(), HasSubstr("appears twice")) << s;
  s = ProfileFromCsv("start_time,window_name,elapsed_time\n", "p.csv").status();
  EXPECT_THAT(s.message(), HasSubstr("no gpu<i>_energy column")) << s;
  s = ProfileFromCsv(header, "p.csv").status();
  EXPECT_THAT(s.message(), HasSubstr("no measurements")) << s;
}

TEST(ProfileTest, CsvSkipsTheUsersOwnWindows) {
  // A Python-Zeus log where the user also timed each epoch.
  ZEUS_ASSERT_OK_AND_ASSIGN(PowerLimitProfile p,
                            ProfileFromCsv("start_time,window_name,elapsed_time,gpu0_energy\n"
                                           "1,__GlobalPowerLimitOptimizer_300,9.2,2053\n"
                                           "2,train_epoch,120.5,30000\n"
                                           "3,__GlobalPowerLimitOptimizer_250,9.4,1900\n",
                                           "p.csv"));
  ASSERT_EQ(p.measurements.size(), 2u);
  EXPECT_EQ(p.measurements[0].power_limit_mw, 300'000u);
  EXPECT_EQ(p.measurements[1].power_limit_mw, 250'000u);
  EXPECT_DOUBLE_EQ(p.measurements[1].energy_j, 1900);
}

TEST(ProfileTest, CsvCutOffMidNumberIsRefused) {
  const std::string text =
      "start_time,window_name,elapsed_time,gpu0_energy\n"
      "1,__GlobalPowerLimitOptimizer_300,9.2,2053\n"
      "2,__GlobalPowerLimitOptimizer_175,9.9,5915.57\n";
  ZEUS_ASSERT_OK(ProfileFromCsv(text, "p.csv").status());
  // "5915.57\n" cut to "5": a valid number, but not the one written.
  Status s = ProfileFromCsv(text.substr(0, text.size() - 7), "p.csv").status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("p.csv:3:")) << s;
  EXPECT_THAT(s.message(), HasSubstr("truncated")) << s;
}

TEST(ProfileTest, JsonIsBoundedAndStrict) {
  const std::string head =
      "{\"format\": \"zeus-power-limit-profile\", \"version\": 1, \"num_gpus\": 1, ";
  const std::string measurement =
      "{\"power_limit_mw\": 300000, \"energy_j\": 1, \"time_s\": 2, \"steps\": 1}";
  ZEUS_ASSERT_OK(
      ProfileFromJson(head + "\"measurements\": [" + measurement + "]}", "p.json").status());
  Status s = ProfileFromJson(head + "\"measurements\": " + std::string(100000, '[') +
                                 std::string(100000, ']') + "}",
                             "p.json")
                 .status();
  EXPECT_THAT(s.message(), HasSubstr("p.json: nesting deeper than 64 levels")) << s;
  s = ProfileFromJson(head + "\"num_gpus\": 2, \"measurements\": [" + measurement + "]}", "p.json")
          .status();
  EXPECT_THAT(s.message(), HasSubstr("p.json: duplicate key 'num_gpus'")) << s;
  s = ProfileFromJson(head + "\"measurements\": [" + measurement + "], \"extra\": 1}", "p.json")
          .status();
  EXPECT_THAT(s.message(), HasSubstr("p.json: field 'extra': unknown field")) << s;
  s = ProfileFromJson(head +
                          "\"measurements\": [{\"power_limit_mw\": 300000, \"energy_j\": 1e400, "
                          "\"time_s\": 2, \"steps\": 1}]}",
                      "p.json")
          .status();
  EXPECT_THAT(s.message(), HasSubstr("outside the range of a double")) << s;
  testing::TempDir dir;
  EXPECT_THAT(LoadProfile(dir.path()).status().message(), HasSubstr("is a directory")) << s;
}

TEST(ProfileTest, JsonErrorsNameTheField) {
  Status s = ProfileFromJson(
                 "{\"format\": \"zeus-power-limit-profile\", \"version\": 1, "
                 "\"num_gpus\": 1, \"measurements\": [{\"power_limit_mw\": 300000, "
                 "\"energy_j\": 1, \"time_s\": \"slow\", \"steps\": 1}]}",
                 "p.json")
                 .status();
  EXPECT_THAT(s.message(), HasSubstr("p.json: measurements[0].time_s: expected a number")) << s;
  s = ProfileFromJson(
          "{\"format\": \"zeus-power-limit-profile\", \"version\": 1, "
          "\"num_gpus\": 1, \"measurements\": [{\"power_limit_mw\": 300000, "
          "\"energy_j\": 1, \"time_s\": 0, \"steps\": 1}]}",
          "p.json")
          .status();
  EXPECT_THAT(s.message(), HasSubstr("time_s must be in (0, 1e+09], got 0")) << s;
  s = ProfileFromJson("[1, 2", "p.json").status();
  EXPECT_THAT(s.message(), HasSubstr("p.json: not valid JSON")) << s;
  s = ProfileFromJson("{\"format\": \"other\"}", "p.json").status();
  EXPECT_THAT(s.message(), HasSubstr("field 'format'")) << s;
  EXPECT_EQ(LoadProfile("/nonexistent/p.json").status().code(), StatusCode::kNotFound);
}

// Issue 23, item 9: binary garbage in a .json profile was parsed as a CSV log
// and reported as "truncated".
TEST(ProfileTest, BinaryDataIsCalledBinaryWhateverTheFileName) {
  testing::TempDir dir;
  const std::string png("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16);
  for (const char* name : {"p.json", "p.csv", "profile"}) {
    Status s = LoadProfile(dir.WriteFile(name, png)).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr(std::string(name) +
                                       ": not a power-limit profile: binary data (byte 0x89 at "
                                       "offset 0 is not UTF-8 text)"))
        << s;
    EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("truncated"))) << s;
  }
  // A NUL inside otherwise valid JSON is binary too, located by its offset.
  Status s = LoadProfile(dir.WriteFile("nul.json", std::string("{\"format\"\0}", 11))).status();
  EXPECT_THAT(s.message(), HasSubstr("byte 0x00 at offset 9")) << s;
}

TEST(ProfileTest, AJsonFileNameIsParsedAsJson) {
  testing::TempDir dir;
  Status s = LoadProfile(dir.WriteFile("p.json", "not json at all")).status();
  EXPECT_THAT(s.message(), HasSubstr("p.json: not valid JSON")) << s;
  s = LoadProfile(dir.WriteFile("p.json", "")).status();
  EXPECT_THAT(s.message(), HasSubstr("p.json: not valid JSON")) << s;
}

TEST(ProfileTest, AUtf8ByteOrderMarkIsSkipped) {
  PowerLimitProfile p;
  p.measurements = {{175'000, 1234.5, 6.25, 80}, {300'000, 2000.125, 5.5, 40}};
  testing::TempDir dir;
  ZEUS_ASSERT_OK_AND_ASSIGN(
      PowerLimitProfile json,
      LoadProfile(dir.WriteFile("p.json", "\xEF\xBB\xBF" + ProfileToJson(p))));
  EXPECT_EQ(json.measurements.size(), 2u);
  ZEUS_ASSERT_OK_AND_ASSIGN(
      PowerLimitProfile csv,
      LoadProfile(dir.WriteFile("log.csv",
                                "\xEF\xBB\xBFstart_time,window_name,elapsed_time,gpu0_energy\n"
                                "1,__GlobalPowerLimitOptimizer_300,5.5,2000\n")));
  ASSERT_EQ(csv.measurements.size(), 1u);
  EXPECT_EQ(csv.measurements[0].power_limit_mw, 300'000u);
}

TEST(ProfileTest, MeasurementsOutOfRangeAreRefusedNamingTheValue) {
  auto json = [](const std::string& energy, const std::string& time, const std::string& steps) {
    return ProfileFromJson(
               "{\"format\": \"zeus-power-limit-profile\", \"version\": 1, \"num_gpus\": 1, "
               "\"measurements\": [{\"power_limit_mw\": 300000, \"energy_j\": " +
                   energy + ", \"time_s\": " + time + ", \"steps\": " + steps + "}]}",
               "p.json")
        .status();
  };
  EXPECT_TRUE(json("1e18", "1e9", "9007199254740992").ok());
  EXPECT_THAT(json("1e300", "1", "1").message(),
              HasSubstr("p.json: power-limit profile: measurement 0 (power_limit_mw 300000): "
                        "energy_j must be in [0, 1e+18], got 1e+300"));
  EXPECT_THAT(json("1", "1e300", "1").message(),
              HasSubstr("time_s must be in (0, 1e+09], got 1e+300"));
  EXPECT_THAT(json("1", "1", "9007199254740993").message(),
              HasSubstr("steps must be in [1, 9007199254740992], got 9007199254740993"));
  EXPECT_THAT(ProfileFromCsv("start_time,window_name,elapsed_time,gpu0_energy\n"
                             "1,__GlobalPowerLimitOptimizer_300,1e300,2000\n",
                             "log.csv")
                  .status()
                  .message(),
              HasSubstr("time_s must be in (0, 1e+09]"));
}

}  // namespace
}  // namespace zeus
