#include "zeus/status.h"

#include <gtest/gtest.h>

namespace zeus {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("half: " + std::to_string(x) + " is odd");
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  ZEUS_ASSIGN_OR_RETURN(int h, Half(x));
  ZEUS_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(StatusTest, OkHasNoMessageAndPrintsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "ok");
}

TEST(StatusTest, ErrorCarriesCodeNameAndContext) {
  Status s = PermissionDeniedError("nvmlDeviceSetPowerManagementLimit: Insufficient Permissions");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(s.WithContext("GPU 0").ToString(),
            "permission_denied: GPU 0: nvmlDeviceSetPowerManagementLimit: Insufficient "
            "Permissions");
}

TEST(StatusTest, AssignOrReturnPropagatesTheFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  StatusOr<int> bad = Quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "half: 3 is odd");
}

TEST(StatusTest, StatusOrFromOkStatusBecomesInternalError) {
  StatusOr<int> s = Status::Ok();
  EXPECT_EQ(s.status().code(), StatusCode::kInternal);
}

TEST(StatusDeathTest, ReadingTheValueOfAnErrorAborts) {
  StatusOr<int> s = NotFoundError("x");
  EXPECT_DEATH((void)s.value(), "not_found: x");
}

}  // namespace
}  // namespace zeus
