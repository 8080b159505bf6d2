// `zeus serve` as a process: bad flags fail with a message, a token file is
// enforced, SIGTERM stops it cleanly, a busy port is refused, a fatal signal
// is logged, the access log is there when asked for.

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "zeus/util/file.h"

#include "tests/server/server_test_util.h"

namespace zeus::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Runs `zeus serve <args>` to completion (killed after 60 s: a server that
// should have refused to start fails the test instead of hanging it);
// returns its exit code and output.
int RunServe(const TempDir& dir, const std::string& args, std::string* output) {
  const std::string log = dir.File("serve.log");
  int rc = std::system(
      ("timeout 60 " + std::string(ZEUS_BINARY) + " serve " + args + " >" + log + " 2>&1").c_str());
  *output = ReadFileToString(log).value_or("");
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(ServeCommandTest, BadFlagsFailWithAMessage) {
  TempDir dir;
  std::string output;
  EXPECT_EQ(RunServe(dir, "--db mysql://x --listen 127.0.0.1:0", &output), 1);
  EXPECT_THAT(output, HasSubstr("expected sqlite:PATH or postgresql://"));
  EXPECT_EQ(RunServe(dir, "--db sqlite:" + dir.File("a.db") + " --listen nowhere", &output), 1);
  EXPECT_THAT(output, HasSubstr("--listen"));
  EXPECT_EQ(RunServe(dir,
                     "--db sqlite:" + dir.File("a.db") + " --listen 127.0.0.1:0 --token-file " +
                         dir.File("missing"),
                     &output),
            1);
  EXPECT_THAT(output, HasSubstr("missing"));
}

TEST(ServeCommandTest, ServesWithTokenAndStopsOnSigterm) {
  TempDir dir;
  const std::string token_file = dir.WriteFile("token", "t0k\n");
  ServeProcess serve;
  ZEUS_ASSERT_OK(serve.Start({"--db", "sqlite:" + dir.File("z.db"), "--listen", "127.0.0.1:0",
                              "--token-file", token_file}));
  ASSERT_GT(serve.port(), 0);
  TestClient client(serve.port());
  EXPECT_EQ(Send(client, "GET", "/health").status, 200);
  EXPECT_EQ(Send(client, "GET", "/jobs").status, 401);
  EXPECT_EQ(Send(client, "GET", "/jobs", "", {{"Authorization", "Bearer t0k"}}).status, 200);
  int status = serve.SignalAndWait(SIGTERM);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(ServeCommandTest, RefusesAPortAnotherServerListensOn) {
  TempDir dir;
  ServeProcess first;
  ZEUS_ASSERT_OK(first.Start({"--db", "sqlite:" + dir.File("a.db"), "--listen", "127.0.0.1:0"}));
  const std::string address = "127.0.0.1:" + std::to_string(first.port());
  std::string output;
  EXPECT_EQ(RunServe(dir, "--db sqlite:" + dir.File("b.db") + " --listen " + address, &output), 1);
  EXPECT_THAT(output, HasSubstr("cannot bind " + address));
  EXPECT_THAT(output, HasSubstr("in use"));
  TestClient client(first.port());
  EXPECT_EQ(Send(client, "GET", "/health").status, 200);
}

TEST(ServeCommandTest, WarnsWhenListeningBeyondLoopbackWithoutToken) {
  TempDir dir;
  std::string output;
  // The store fails to open after the warning, so nothing ever listens.
  EXPECT_EQ(RunServe(dir, "--db mysql://x --listen 0.0.0.0:0", &output), 1);
  EXPECT_THAT(output, HasSubstr("without --token-file"));
  EXPECT_THAT(output, HasSubstr("0.0.0.0"));
  EXPECT_EQ(RunServe(dir, "--db mysql://x --listen 127.0.0.1:0", &output), 1);
  EXPECT_THAT(output, Not(HasSubstr("without --token-file")));
  const std::string token_file = dir.WriteFile("token", "t0k\n");
  EXPECT_EQ(RunServe(dir, "--db mysql://x --listen 0.0.0.0:0 --token-file " + token_file, &output),
            1);
  EXPECT_THAT(output, Not(HasSubstr("without --token-file")));
}

TEST(ServeCommandTest, ListensOnBracketedIpv6Loopback) {
  int probe = socket(AF_INET6, SOCK_STREAM, 0);
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_addr = in6addr_loopback;
  const bool has_ipv6 =
      probe >= 0 && bind(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  if (probe >= 0) close(probe);
  if (!has_ipv6) GTEST_SKIP() << "this host has no IPv6 loopback";
  TempDir dir;
  ServeProcess serve;
  ZEUS_ASSERT_OK(serve.Start({"--db", "sqlite:" + dir.File("z.db"), "--listen", "[::1]:0"}));
  ASSERT_GT(serve.port(), 0);
  TestClient client("http://[::1]:" + std::to_string(serve.port()));
  EXPECT_EQ(Send(client, "GET", "/health").status, 200);
  std::string output;
  EXPECT_EQ(RunServe(dir, "--db sqlite:" + dir.File("y.db") + " --listen [::1", &output), 1);
  EXPECT_THAT(output, HasSubstr("--listen"));
}

TEST(ServeCommandTest, AccessLogFlagLogsEveryRequest) {
  TempDir dir;
  const std::string log = dir.File("stderr.log");
  ServeProcess serve;
  ZEUS_ASSERT_OK(serve.Start(
      {"--db", "sqlite:" + dir.File("z.db"), "--listen", "127.0.0.1:0", "--access-log"}, log));
  TestClient client(serve.port());
  EXPECT_EQ(Send(client, "GET", "/health").status, 200);
  EXPECT_EQ(Send(client, "PUT", "/jobs", "{}").status, 405);
  int status = serve.SignalAndWait(SIGTERM);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  std::string output = ReadFileToString(log).value_or("");
  EXPECT_THAT(output, HasSubstr("GET /health 200"));
  EXPECT_THAT(output, HasSubstr("PUT /jobs 405"));
  // Off by default.
  const std::string quiet_log = dir.File("quiet.log");
  ServeProcess quiet;
  ZEUS_ASSERT_OK(
      quiet.Start({"--db", "sqlite:" + dir.File("q.db"), "--listen", "127.0.0.1:0"}, quiet_log));
  TestClient quiet_client(quiet.port());
  EXPECT_EQ(Send(quiet_client, "GET", "/health").status, 200);
  quiet.SignalAndWait(SIGTERM);
  EXPECT_THAT(ReadFileToString(quiet_log).value_or(""), Not(HasSubstr("/health")));
}

TEST(ServeCommandTest, FatalSignalIsLoggedBeforeDying) {
  TempDir dir;
  const std::string log = dir.File("stderr.log");
  ServeProcess serve;
  ZEUS_ASSERT_OK(
      serve.Start({"--db", "sqlite:" + dir.File("z.db"), "--listen", "127.0.0.1:0"}, log));
  int status = serve.SignalAndWait(SIGSEGV);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  EXPECT_THAT(ReadFileToString(log).value_or(""), HasSubstr("killed by SIGSEGV"));
}

}  // namespace
}  // namespace zeus::testing
