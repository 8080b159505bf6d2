// In-process tests of the daemon's pieces: the state file (durable, strict
// on load) and query parsing.

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "zeus/util/file.h"

#include "src/daemon/routes.h"
#include "src/daemon/state_file.h"
#include "tests/testing/temp_dir.h"

namespace zeus::daemon {
namespace {

using ::testing::HasSubstr;
using zeus::testing::TempDir;

TEST(StateFileTest, RoundTripsEveryFieldAndLeavesNoTemporaryFile) {
  TempDir dir;
  const std::string path = dir.File("state.json");
  LeaseRecord a;
  a.gpu = 3;
  a.pid = 1234;
  a.uid = 1000;
  a.start_time = 987654321;
  a.original_power_limit_mw = 300'000;
  LeaseRecord b;
  b.gpu = 0;
  b.pid = 77;
  b.original_persistence_mode = false;
  b.reset_gpu_locked_clocks = true;
  b.reset_mem_locked_clocks = true;
  ZEUS_ASSERT_OK(SaveLeaseRecords(path, {a, b}));
  struct stat st {};
  EXPECT_NE(stat((path + ".tmp").c_str(), &st), 0);
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<LeaseRecord> loaded, LoadLeaseRecords(path));
  ASSERT_EQ(loaded.size(), 2u);
  EXPECT_EQ(loaded[0].gpu, 3);
  EXPECT_EQ(loaded[0].pid, 1234);
  EXPECT_EQ(loaded[0].uid, 1000u);
  EXPECT_EQ(loaded[0].start_time, 987654321u);
  EXPECT_EQ(loaded[0].original_power_limit_mw, 300'000u);
  EXPECT_FALSE(loaded[0].original_persistence_mode.has_value());
  EXPECT_FALSE(loaded[0].reset_gpu_locked_clocks);
  EXPECT_EQ(loaded[1].original_persistence_mode, false);
  EXPECT_FALSE(loaded[1].original_power_limit_mw.has_value());
  EXPECT_TRUE(loaded[1].reset_gpu_locked_clocks);
  EXPECT_TRUE(loaded[1].reset_mem_locked_clocks);
  // The file is private to the daemon.
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // An empty list replaces it.
  ZEUS_ASSERT_OK(SaveLeaseRecords(path, {}));
  ZEUS_ASSERT_OK_AND_ASSIGN(loaded, LoadLeaseRecords(path));
  EXPECT_TRUE(loaded.empty());
}

TEST(StateFileTest, MissingFileIsEmptyAndMalformedOnesAreRefusedByName) {
  TempDir dir;
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<LeaseRecord> none,
                            LoadLeaseRecords(dir.File("absent.json")));
  EXPECT_TRUE(none.empty());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "not valid JSON"},
      {"{\"version\": 2, \"leases\": []}", "version"},
      {"{\"version\": 1}", "leases"},
      {"{\"version\": 1, \"leases\": [{\"gpu\": -1, \"pid\": 1, \"uid\": 0}]}", "gpu"},
      {"{\"version\": 1, \"leases\": [{\"gpu\": 0, \"pid\": 1, \"uid\": 0, "
       "\"original_power_limit_mw\": \"x\"}]}",
       "original_power_limit_mw"},
      {"{\"version\": 1, \"leases\": [], \"extra\": 1}", "extra"},
  };
  for (const auto& [text, field] : cases) {
    const std::string path = dir.WriteFile("bad.json", text);
    StatusOr<std::vector<LeaseRecord>> loaded = LoadLeaseRecords(path);
    ASSERT_FALSE(loaded.ok()) << text;
    EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(loaded.status().message(), HasSubstr(path)) << text;
    EXPECT_THAT(loaded.status().message(), HasSubstr(field)) << text;
  }
}

TEST(StateFileTest, UnwritableDirectoryIsAnIoErrorNamingThePath) {
  Status s = SaveLeaseRecords("/nonexistent-dir/state.json", {});
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_THAT(s.message(), HasSubstr("/nonexistent-dir/state.json.tmp"));
}

TEST(ParseQueryTest, DecodesEscapesAndRefusesDuplicatesAndBadEscapes) {
  ZEUS_ASSERT_OK_AND_ASSIGN(auto params, ParseQuery("gpu_ids=0%2C1&block=true&x=a+b&&empty="));
  EXPECT_EQ(params["gpu_ids"], "0,1");
  EXPECT_EQ(params["block"], "true");
  EXPECT_EQ(params["x"], "a b");
  EXPECT_EQ(params["empty"], "");
  EXPECT_EQ(params.size(), 4u);
  EXPECT_THAT(ParseQuery("a=1&a=2").status().message(), HasSubstr("a given twice"));
  EXPECT_THAT(ParseQuery("a=%4").status().message(), HasSubstr("bad %-escape"));
  EXPECT_THAT(ParseQuery("a=%g0").status().message(), HasSubstr("bad %-escape"));
}

}  // namespace
}  // namespace zeus::daemon
