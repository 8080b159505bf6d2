#include "zeus/util/file.h"

#include <dirent.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  return names;
}

TEST(WriteFileAtomicallyTest, NeverWritesThroughASymlinkPlantedAtTheOldTemporaryName) {
  testing::TempDir dir;
  const std::string victim = dir.WriteFile("victim", "precious");
  ASSERT_EQ(symlink(victim.c_str(), dir.File("profile.json.tmp").c_str()), 0);
  ZEUS_ASSERT_OK(WriteFileAtomically(dir.File("profile.json"), "new profile"));
  EXPECT_EQ(*ReadFileToString(victim), "precious");
  EXPECT_EQ(*ReadFileToString(dir.File("profile.json")), "new profile");
  char target[256] = {};
  // The planted link is left as it was, not followed nor replaced.
  ASSERT_GT(readlink(dir.File("profile.json.tmp").c_str(), target, sizeof(target) - 1), 0);
  EXPECT_EQ(std::string(target), victim);
}

TEST(WriteFileAtomicallyTest, ConcurrentWritersOfOnePathAllSucceedAndLeaveNoTemporary) {
  testing::TempDir dir;
  const std::string path = dir.File("profile.json");
  constexpr int kWriters = 8;
  constexpr int kRounds = 50;
  std::vector<std::string> errors(kWriters);
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int r = 0; r < kRounds; ++r) {
        Status s = WriteFileAtomically(path, "writer " + std::to_string(w));
        if (!s.ok()) errors[w] = s.ToString();
      }
    });
  }
  for (std::thread& t : writers) t.join();
  for (int w = 0; w < kWriters; ++w) EXPECT_EQ(errors[w], "") << "writer " << w;
  const std::string text = *ReadFileToString(path);
  EXPECT_EQ(text.rfind("writer ", 0), 0u) << text;
  EXPECT_EQ(Entries(dir.path()), std::vector<std::string>{"profile.json"});
}

TEST(WriteFileAtomicallyTest, AFailedWriteNamesThePathAndLeavesNoTemporary) {
  testing::TempDir dir;
  Status missing = WriteFileAtomically(dir.File("no/such/dir/x"), "x");
  EXPECT_EQ(missing.code(), StatusCode::kIoError);
  EXPECT_NE(missing.message().find(dir.File("no/such/dir/x")), std::string::npos)
      << missing.ToString();
  ASSERT_EQ(mkdir(dir.File("target").c_str(), 0700), 0);
  ASSERT_EQ(WriteFileAtomically(dir.File("target") + "/", "x").code(),
            StatusCode::kInvalidArgument);
  Status onto_dir = WriteFileAtomically(dir.File("target"), "x");
  EXPECT_FALSE(onto_dir.ok());
  EXPECT_EQ(Entries(dir.path()), std::vector<std::string>{"target"});
}

}  // namespace
}  // namespace zeus
