// tools/service_loop.h: the stop-signal wait of `zeus serve`, `zeus daemon`
// and `zeus exporter` (each case in a forked child, so the blocked signals
// stay out of this process) and their --log-level parser, in-process and as
// the commands report it.

#include "tools/service_loop.h"

#include <signal.h>
#include <unistd.h>

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include "zeus/util/file.h"

#include "tests/testing/temp_dir.h"

namespace zeus::cli {
namespace {

using ::testing::HasSubstr;

// Forks a child that runs `body` (its return value is the exit status; it is
// killed after 20 s), sends it `signal` once it has written a byte to the
// pipe it gets (0: send nothing), and returns its waitpid status.
template <typename Body>
int RunChild(Body body, int signal) {
  int ready[2];
  if (pipe(ready) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    alarm(20);  // A wait that never ends kills the child (SIGALRM) and fails the test.
    _exit(body(ready[1]));
  }
  close(ready[1]);
  char byte = 0;
  const bool got_ready = read(ready[0], &byte, 1) == 1;
  close(ready[0]);
  if (got_ready && signal != 0) kill(pid, signal);
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

void SignalReady(int fd) {
  const char byte = 1;
  (void)!write(fd, &byte, 1);
  close(fd);
}

TEST(StopSignalsTest, WaitReturnsTheStopSignalThatArrived) {
  // Every signal that would end the process otherwise: `zeus daemon` must
  // put its leases back whichever ends it (a closed terminal sends SIGHUP).
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPWR, SIGRTMIN + 3}) {
    const int status = RunChild(
        [](int ready) {
          const StopSignals stop_signals;
          SignalReady(ready);
          return stop_signals.Wait();
        },
        signal);
    ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << signal;
    EXPECT_EQ(WEXITSTATUS(status), signal);
  }
}

TEST(StopSignalsTest, StopSignalsSentBeforeTheWaitAreKeptForIt) {
  const int status = RunChild(
      [](int ready) {
        const StopSignals stop_signals;
        raise(SIGTERM);  // Blocked: pending until the wait takes it.
        SignalReady(ready);
        return stop_signals.Wait();
      },
      0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), SIGTERM);
}

TEST(StopSignalsTest, WaitTickingTicksEveryPeriodUntilAStopSignal) {
  // The child asks itself to stop at its third tick; it exits with the
  // number of ticks * 16 + the signal received.
  const int status = RunChild(
      [](int ready) {
        const StopSignals stop_signals;
        SignalReady(ready);
        int ticks = 0;
        const int received = stop_signals.WaitTicking(0.01, [&ticks] {
          if (++ticks == 3) raise(SIGINT);
        });
        return ticks * 16 + received;
      },
      0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3 * 16 + SIGINT);
}

TEST(SetLogLevelTest, SetsSpdlogsLevelOrNamesTheBadValue) {
  const spdlog::level::level_enum before = spdlog::get_level();
  ZEUS_EXPECT_OK(SetLogLevel("debug"));
  EXPECT_EQ(spdlog::get_level(), spdlog::level::debug);
  ZEUS_EXPECT_OK(SetLogLevel("off"));
  EXPECT_EQ(spdlog::get_level(), spdlog::level::off);
  Status bad = SetLogLevel("loud");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "--log-level \"loud\": expected trace, debug, info, warn, error or off");
  EXPECT_EQ(spdlog::get_level(), spdlog::level::off);  // Unchanged by the bad value.
  spdlog::set_level(before);
}

TEST(SetLogLevelTest, ServeAndDaemonRefuseABadLogLevelBeforeStarting) {
  zeus::testing::TempDir dir;
  for (const std::string& command :
       {"serve --listen 127.0.0.1:0 --db sqlite:" + dir.File("a.db"),
        "daemon --socket " + dir.File("s") + " --state-file " + dir.File("state")}) {
    const std::string err = dir.File("err");
    const int status = std::system(
        (std::string(ZEUS_BINARY) + " " + command + " --log-level loud 2>" + err).c_str());
    ASSERT_TRUE(WIFEXITED(status)) << command;
    EXPECT_EQ(WEXITSTATUS(status), 1) << command;
    EXPECT_THAT(ReadFileToString(err).value_or(""),
                HasSubstr("--log-level \"loud\": expected trace, debug, info, warn, error or off"))
        << command;
  }
}

}  // namespace
}  // namespace zeus::cli
