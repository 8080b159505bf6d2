// Issue 23 item 2: a child forked while a monitor exists must get a working
// monitor or a clear error, never a hang. Each case runs in a forked child
// killed by alarm() after kChildSeconds, so a regression fails instead of
// hanging the suite.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "zeus/device/fake.h"
#include "zeus/monitor/energy_monitor.h"
#include "zeus/monitor/power_monitor.h"

#include "src/monitor/counter_reader_pool.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

constexpr unsigned int kChildSeconds = 10;

// Runs `body` in a forked child; returns "ok", or what went wrong (the
// child's exit code, or the signal that ended it: SIGALRM means it hung).
std::string RunInChild(const std::function<bool()>& body) {
  pid_t pid = fork();
  if (pid == 0) {
    alarm(kChildSeconds);
    _exit(body() ? 0 : 1);
  }
  if (pid < 0) return "fork failed";
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return "waitpid failed";
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status) == 0 ? "ok"
                                    : "child failed with " + std::to_string(WEXITSTATUS(status));
  }
  if (WIFSIGNALED(status)) {
    return WTERMSIG(status) == SIGALRM
               ? "child hung (killed by alarm)"
               : "child killed by signal " + std::to_string(WTERMSIG(status));
  }
  return "child ended oddly";
}

struct TwoGpus {
  TwoGpus() {
    FakeGpuOptions options;
    options.energy_read_latency = std::chrono::milliseconds(1);
    gpu0 = std::make_unique<FakeGpu>(&clock, options);
    options.index = 1;
    gpu1 = std::make_unique<FakeGpu>(&clock, options);
  }
  std::vector<Gpu*> gpus() { return {gpu0.get(), gpu1.get()}; }
  FakeClock clock;
  std::unique_ptr<FakeGpu> gpu0;
  std::unique_ptr<FakeGpu> gpu1;
};

TEST(ForkTest, ExactModeWindowOpenedBeforeForkEndsInTheChild) {
  TwoGpus g;
  EnergyMonitorOptions options;
  options.power_sample_period = std::chrono::milliseconds(1);
  ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor, EnergyMonitor::Create(g.gpus(), {}, &g.clock, options));
  ZEUS_ASSERT_OK(monitor->Begin("before fork"));
  EXPECT_EQ(RunInChild([&] {
              g.clock.AdvanceSeconds(1.0);
              StatusOr<Measurement> m = monitor->End("before fork");
              if (!m.ok() || m->gpu_energy_j.size() != 2) return false;
              // 100 W for 1 s on each GPU.
              if (std::abs(m->gpu_energy_j[0] - 100.0) > 1.0) return false;
              if (!monitor->Begin("in child").ok()) return false;
              if (!monitor->End("in child").ok()) return false;
              monitor.reset();  // Must not wait on the parent's threads.
              return true;
            }),
            "ok");
  // The parent's monitor is untouched.
  g.clock.AdvanceSeconds(2.0);
  ZEUS_ASSERT_OK_AND_ASSIGN(Measurement m, monitor->End("before fork"));
  EXPECT_NEAR(m.gpu_energy_j[1], 200.0, 1.0);
}

TEST(ForkTest, LowOverheadMonitorAndPowerMonitorAreUsableAndDestructibleInTheChild) {
  TwoGpus g;
  EnergyMonitorOptions options;
  options.mode = EnergyMonitorMode::kLowOverhead;
  options.power_sample_period = std::chrono::milliseconds(1);
  options.counter_poll_period = std::chrono::milliseconds(1);
  ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor, EnergyMonitor::Create(g.gpus(), {}, &g.clock, options));
  PowerMonitorOptions power_options;
  power_options.period = std::chrono::milliseconds(1);
  power_options.counter_period = std::chrono::milliseconds(1);
  power_options.sample_energy_counters = true;
  ZEUS_ASSERT_OK_AND_ASSIGN(auto power, PowerMonitor::Create(g.gpus(), &g.clock, power_options));
  ZEUS_ASSERT_OK(monitor->Begin("w"));
  EXPECT_EQ(RunInChild([&] {
              if (!monitor->End("w").ok()) return false;
              if (!power->SampleOnce().ok()) return false;
              if (!power->CounterEnergyJ(0, g.clock.Now(), g.clock.Now()).ok()) return false;
              power.reset();
              monitor.reset();
              return true;
            }),
            "ok");
}

TEST(ForkTest, CounterReaderPoolStartsFreshThreadsInTheChild) {
  TwoGpus g;
  CounterReaderPool pool(g.gpus());
  ASSERT_EQ(pool.ReadAll().size(), 2u);
  EXPECT_EQ(RunInChild([&] {
              for (int i = 0; i < 3; ++i) {
                std::vector<StatusOr<uint64_t>> reads = pool.ReadAll();
                if (reads.size() != 2 || !reads[0].ok() || !reads[1].ok()) return false;
              }
              return pool.generations() == 2;
            }),
            "ok");
  EXPECT_EQ(pool.generations(), 1);
  EXPECT_EQ(pool.ReadAll().size(), 2u);
}

TEST(ForkTest, ForkWhileAnotherThreadReadsDoesNotHangTheChild) {
  TwoGpus g;
  CounterReaderPool pool(g.gpus());
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    while (!stop) pool.ReadAll();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::string result = RunInChild([&] { return pool.ReadAll().size() == 2; });
  stop = true;
  reader.join();
  EXPECT_EQ(result, "ok");
}

}  // namespace
}  // namespace zeus
