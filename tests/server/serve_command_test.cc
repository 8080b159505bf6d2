// `zeus serve` as a process: bad flags fail with a message, a token file is
// enforced, SIGTERM stops it cleanly.

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include "zeus/util/file.h"

#include "tests/server/server_test_util.h"

namespace zeus::testing {
namespace {

using ::testing::HasSubstr;

// Runs `zeus serve <args>` to completion; returns its exit code and output.
int RunServe(const TempDir& dir, const std::string& args, std::string* output) {
  const std::string log = dir.File("serve.log");
  int rc =
      std::system((std::string(ZEUS_BINARY) + " serve " + args + " >" + log + " 2>&1").c_str());
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
  httplib::Client client("127.0.0.1", serve.port());
  EXPECT_EQ(Send(client, "GET", "/health").status, 200);
  EXPECT_EQ(Send(client, "GET", "/jobs").status, 401);
  EXPECT_EQ(Send(client, "GET", "/jobs", "", {{"Authorization", "Bearer t0k"}}).status, 200);
  int status = serve.SignalAndWait(SIGTERM);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace zeus::testing
