// The batch-size client on its own (linked with zeus::client only, no server
// and no database): it reports an unreachable server as kUnavailable and
// refuses calls made out of order. ctest also checks that this binary needs
// no libsqlite3 or libpq (client_links_no_database).

#include <unistd.h>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "zeus/client/batch_size_client.h"

namespace zeus {
namespace {

// A loopback port nothing listens on: bound, then closed.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t length = sizeof(addr);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length), 0);
  close(fd);
  return ntohs(addr.sin_port);
}

TEST(BatchSizeClientAloneTest, UnreachableServerIsUnavailableAfterItsAttempts) {
  BatchSizeClientOptions options;
  options.server_url = "http://127.0.0.1:" + std::to_string(FreePort());
  options.max_attempts = 2;
  options.retry_delay_s = 0.001;
  options.timeout_s = 2.0;
  BatchSizeClient client(options);
  StatusOr<TrialId> trial = client.NextBatchSize("job-1");
  EXPECT_EQ(trial.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(client.GetBatchSize().status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(client.ReportEpoch(1, 1.0, 1.0, 0.5).status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace zeus
