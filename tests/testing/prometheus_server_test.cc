// The real-Prometheus harness itself: a target that cannot be scraped is
// named with Prometheus's error, a bad query is an error with Prometheus's
// message, and scalar queries work before any scrape.

#include "tests/testing/prometheus_server.h"

#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "tests/testing/temp_dir.h"

namespace zeus::testing {
namespace {

// A loopback port nothing listens on (bound, then closed).
int ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

TEST(PrometheusServerTest, NamesADownTargetAndRefusesABadQuery) {
  ZEUS_SKIP_WITHOUT_PROMETHEUS();
  PrometheusServerOptions options;
  options.targets.push_back({"nobody_home", "127.0.0.1:" + std::to_string(ClosedPort())});
  ZEUS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<PrometheusServer> prometheus,
                            PrometheusServer::Start(options));
  EXPECT_GT(prometheus->port(), 0);

  ZEUS_ASSERT_OK_AND_ASSIGN(double two, prometheus->QueryValue("1 + 1"));
  EXPECT_EQ(two, 2.0);

  Status up = prometheus->WaitForTargetsUp(std::chrono::seconds(1));
  EXPECT_EQ(up.code(), StatusCode::kUnavailable);
  EXPECT_NE(up.message().find("nobody_home: "), std::string::npos) << up.ToString();

  // Its own `up` series says the same through PromQL.
  ZEUS_ASSERT_OK_AND_ASSIGN(double target_up, prometheus->QueryValue(R"(up{job="nobody_home"})"));
  EXPECT_EQ(target_up, 0.0);

  StatusOr<std::vector<PromSample>> bad = prometheus->Query("sum(");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("sum("), std::string::npos) << bad.status().ToString();
}

TEST(PrometheusServerTest, AMissingBinaryIsNotFound) {
  TempDir dir;
  setenv("ZEUS_PROMETHEUS", dir.File("no-prometheus").c_str(), 1);
  EXPECT_EQ(PrometheusServer::FindBinary(), "");
  StatusOr<std::unique_ptr<PrometheusServer>> server = PrometheusServer::Start({});
  unsetenv("ZEUS_PROMETHEUS");
  EXPECT_EQ(server.status().code(), StatusCode::kNotFound);
  EXPECT_NE(server.status().message().find("Debian package `prometheus`"), std::string::npos);
}

}  // namespace
}  // namespace zeus::testing
