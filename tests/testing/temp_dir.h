// Test helpers: a self-deleting temporary directory, the bundled data directory,
// and Status matchers.

#ifndef ZEUS_TESTS_TESTING_TEMP_DIR_H_
#define ZEUS_TESTS_TESTING_TEMP_DIR_H_

#include <string>

#include <gtest/gtest.h>

#include "zeus/status.h"

namespace zeus::testing {

// A fresh directory under $TMPDIR, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name.
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  // Writes `contents` to File(name) and returns its path.
  std::string WriteFile(const std::string& name, const std::string& contents) const;

 private:
  std::string path_;
};

// The repository's bundled data (traces, profiles, golden results): data/
// of the source tree.
std::string DataDir();

}  // namespace zeus::testing

#define ZEUS_ASSERT_OK(expr)                         \
  do {                                               \
    const ::zeus::Status zeus_s_ = (expr);           \
    ASSERT_TRUE(zeus_s_.ok()) << zeus_s_.ToString(); \
  } while (false)
#define ZEUS_EXPECT_OK(expr)                         \
  do {                                               \
    const ::zeus::Status zeus_s_ = (expr);           \
    EXPECT_TRUE(zeus_s_.ok()) << zeus_s_.ToString(); \
  } while (false)
// `lhs = value`, failing the test (and returning) on error.
#define ZEUS_ASSERT_OK_AND_ASSIGN(lhs, expr) \
  ZEUS_ASSERT_OK_AND_ASSIGN_IMPL_(ZEUS_STATUS_CONCAT_(zeus_sor_, __LINE__), lhs, expr)
#define ZEUS_ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                    \
  ASSERT_TRUE(tmp.ok()) << tmp.status().ToString();     \
  lhs = std::move(tmp).value()

#endif  // ZEUS_TESTS_TESTING_TEMP_DIR_H_
