// Restoration of the original limits when the training process ends in
// every way: normal exit, exception (caught or not), SIGINT, SIGTERM, and a
// signal for which the program had its own handler. Each case runs in a
// forked child whose fake GPUs persist their limits to files.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "zeus/optimizer/power_limit/power_limit_optimizer.h"

#include "tests/optimizer/power_limit/file_backed_gpu.h"
#include "tests/optimizer/power_limit/replay_rig.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

using testing::FileBackedGpu;

constexpr uint32_t kOriginalMw[] = {250'000, 225'000};

enum class Ending {
  kNormalExit,
  kCaughtException,
  kUncaughtException,
  kSignal,
  kSignalWithOwnHandler,
};

std::atomic<bool> g_own_handler_ran{false};
void OwnHandler(int) { g_own_handler_ran = true; }

// The child: two GPUs mid-profiling, then the ending. Returns its exit code.
int ChildMain(Ending ending, const testing::TempDir& dir, int ready_fd) {
  if (ending == Ending::kSignalWithOwnHandler) {
    signal(SIGTERM, OwnHandler);
  }
  FakeClock clock;
  std::vector<std::unique_ptr<FakeGpu>> fakes;
  std::vector<std::unique_ptr<FileBackedGpu>> gpus;
  for (int i = 0; i < 2; ++i) {
    FakeGpuOptions o;
    o.index = i;
    o.power_limit_mw = kOriginalMw[i];
    fakes.push_back(std::make_unique<FakeGpu>(&clock, o));
    gpus.push_back(
        std::make_unique<FileBackedGpu>(fakes.back().get(), dir.File("gpu" + std::to_string(i))));
  }
  testing::ExactFakeMonitor monitor({fakes[0].get(), fakes[1].get()}, &clock);
  PowerLimitOptimizerOptions options = testing::StepOnlyOptions();
  options.restore_on_signal = true;
  try {
    auto opt =
        PowerLimitOptimizer::Create({gpus[0].get(), gpus[1].get()}, &monitor, &clock, options);
    if (!opt.ok()) return 10;
    // Step 61 sets 275 W on both GPUs: both differ from their originals.
    for (int s = 0; s < 100; ++s) {
      if (!(*opt)->OnStepBegin().ok()) return 11;
      clock.AdvanceSeconds(0.1);
    }
    if (fakes[0]->PowerLimitMw().value() != 275'000) return 12;
    switch (ending) {
      case Ending::kNormalExit:
        return 0;
      case Ending::kCaughtException:
        throw std::runtime_error("training failed");
      case Ending::kUncaughtException:
        // An exception escaping a thread calls std::terminate (SIGABRT).
        std::thread([] { throw std::runtime_error("uncaught"); }).join();
        return 13;
      case Ending::kSignal:
      case Ending::kSignalWithOwnHandler: {
        char ready = 'r';
        if (write(ready_fd, &ready, 1) != 1) return 14;
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (std::chrono::steady_clock::now() < deadline) {
          if (g_own_handler_ran) {
            // Restored by the signal path, before the optimizer goes away.
            bool restored = fakes[0]->PowerLimitMw().value() == kOriginalMw[0] &&
                            fakes[1]->PowerLimitMw().value() == kOriginalMw[1];
            return restored ? 7 : 8;
          }
          (*opt)->OnStepBegin().IgnoreError();
          clock.AdvanceSeconds(0.1);
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        return 15;
      }
    }
  } catch (const std::runtime_error&) {
    return 3;
  }
  return 16;
}

struct ChildResult {
  int wait_status = 0;
  int64_t limits_mw[2] = {-1, -1};
};

ChildResult RunChild(Ending ending, int signo) {
  testing::TempDir dir;
  int ready[2];
  EXPECT_EQ(pipe(ready), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    _exit(ChildMain(ending, dir, ready[1]));
  }
  close(ready[1]);
  if (signo != 0) {
    char byte = 0;
    EXPECT_EQ(read(ready[0], &byte, 1), 1) << "child died before it was ready";
    kill(pid, signo);
  }
  close(ready[0]);
  ChildResult result;
  EXPECT_EQ(waitpid(pid, &result.wait_status, 0), pid);
  for (int i = 0; i < 2; ++i) {
    result.limits_mw[i] = FileBackedGpu::ReadLimitMw(dir.File("gpu" + std::to_string(i)));
  }
  return result;
}

void ExpectOriginalLimits(const ChildResult& r) {
  EXPECT_EQ(r.limits_mw[0], kOriginalMw[0]);
  EXPECT_EQ(r.limits_mw[1], kOriginalMw[1]);
}

TEST(PowerLimitRestoreTest, NormalExitRestoresEachGpusOwnLimit) {
  ChildResult r = RunChild(Ending::kNormalExit, 0);
  ASSERT_TRUE(WIFEXITED(r.wait_status));
  EXPECT_EQ(WEXITSTATUS(r.wait_status), 0);
  ExpectOriginalLimits(r);
}

TEST(PowerLimitRestoreTest, CaughtExceptionRestoresDuringUnwinding) {
  ChildResult r = RunChild(Ending::kCaughtException, 0);
  ASSERT_TRUE(WIFEXITED(r.wait_status));
  EXPECT_EQ(WEXITSTATUS(r.wait_status), 3);
  ExpectOriginalLimits(r);
}

TEST(PowerLimitRestoreTest, UncaughtExceptionRestoresThenAborts) {
  ChildResult r = RunChild(Ending::kUncaughtException, 0);
  ASSERT_TRUE(WIFSIGNALED(r.wait_status)) << r.wait_status;
  EXPECT_EQ(WTERMSIG(r.wait_status), SIGABRT);
  ExpectOriginalLimits(r);
}

TEST(PowerLimitRestoreTest, SigintRestoresThenDiesOfSigint) {
  ChildResult r = RunChild(Ending::kSignal, SIGINT);
  ASSERT_TRUE(WIFSIGNALED(r.wait_status)) << r.wait_status;
  EXPECT_EQ(WTERMSIG(r.wait_status), SIGINT);
  ExpectOriginalLimits(r);
}

TEST(PowerLimitRestoreTest, SigtermRestoresThenDiesOfSigterm) {
  ChildResult r = RunChild(Ending::kSignal, SIGTERM);
  ASSERT_TRUE(WIFSIGNALED(r.wait_status)) << r.wait_status;
  EXPECT_EQ(WTERMSIG(r.wait_status), SIGTERM);
  ExpectOriginalLimits(r);
}

TEST(PowerLimitRestoreTest, SignalRestoresThenCallsTheProgramsOwnHandler) {
  ChildResult r = RunChild(Ending::kSignalWithOwnHandler, SIGTERM);
  ASSERT_TRUE(WIFEXITED(r.wait_status)) << r.wait_status;
  EXPECT_EQ(WEXITSTATUS(r.wait_status), 7);
  ExpectOriginalLimits(r);
}

TEST(PowerLimitRestoreTest, ASignalledForkedChildDoesNotRestoreTheParentsGpus) {
  FakeClock clock;
  FakeGpuOptions o;
  o.power_limit_mw = 250'000;
  FakeGpu gpu(&clock, o);
  ZEUS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<PowerLimitRestorer> restorer,
                            PowerLimitRestorer::Create({&gpu}, /*restore_on_signal=*/true));
  ZEUS_ASSERT_OK(gpu.SetPowerLimitMw(200'000));
  pid_t pid = fork();
  if (pid == 0) {
    // Like a data-loader worker stopped with SIGTERM.
    raise(SIGTERM);
    // Sanitizers may deliver the signal a little later.
    for (int i = 0; i < 100; ++i) usleep(50'000);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  // Give a (wrongly) woken service thread time to act before checking.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(restorer->restored());
  EXPECT_EQ(gpu.PowerLimitMw().value(), 200'000u);
}

TEST(PowerLimitRestoreTest, HandlersArePutBackWhenTheLastRestorerGoes) {
  struct sigaction before;
  ASSERT_EQ(sigaction(SIGTERM, nullptr, &before), 0);
  {
    FakeClock clock;
    FakeGpu gpu(&clock, {});
    auto restorer = PowerLimitRestorer::Create({&gpu}, /*restore_on_signal=*/true);
    ZEUS_ASSERT_OK(restorer.status());
    struct sigaction during;
    ASSERT_EQ(sigaction(SIGTERM, nullptr, &during), 0);
    EXPECT_NE(during.sa_sigaction, before.sa_sigaction);
  }
  struct sigaction after;
  ASSERT_EQ(sigaction(SIGTERM, nullptr, &after), 0);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

}  // namespace
}  // namespace zeus
