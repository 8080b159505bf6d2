#include "zeus/monitor/power_monitor.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "zeus/device/fake.h"

#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

PowerMonitorOptions ManualOptions() {
  PowerMonitorOptions options;
  options.period = std::chrono::nanoseconds(0);
  return options;
}

TEST(PowerMonitorTest, KeepsOnlyTheEndsOfRunsOfEqualValues) {
  FakeClock clock(seconds(0));
  double power_w = 100.0;
  FakeGpuOptions gpu_options;
  gpu_options.power_w = [&](double, uint32_t) { return power_w; };
  FakeGpu gpu(&clock, gpu_options);
  ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor, PowerMonitor::Create({&gpu}, &clock, ManualOptions()));
  for (int i = 0; i < 10; ++i) {  // Create took the sample at t = 0.
    clock.AdvanceSeconds(0.1);
    ZEUS_ASSERT_OK(monitor->SampleOnce());
  }
  power_w = 200.0;
  for (int i = 0; i < 5; ++i) {
    clock.AdvanceSeconds(0.1);
    ZEUS_ASSERT_OK(monitor->SampleOnce());
  }
  ZEUS_ASSERT_OK_AND_ASSIGN(auto timeline, monitor->Timeline(0, seconds(0), seconds(10)));
  ASSERT_EQ(timeline.size(), 4u);
  EXPECT_EQ(timeline[0].time, seconds(0));
  EXPECT_EQ(timeline[1].time, milliseconds(1000));
  EXPECT_EQ(timeline[1].power_mw, 100'000u);
  EXPECT_EQ(timeline[2].time, milliseconds(1100));
  EXPECT_EQ(timeline[2].power_mw, 200'000u);
  EXPECT_EQ(timeline[3].time, milliseconds(1500));
  // 1 s at 100 W, a 0.1 s ramp to 200 W (15 J), 0.4 s at 200 W.
  ZEUS_ASSERT_OK_AND_ASSIGN(double energy_j, monitor->EnergyJ(0, seconds(0), milliseconds(1500)));
  EXPECT_NEAR(energy_j, 100.0 + 15.0 + 80.0, 1e-9);
}

TEST(PowerMonitorTest, TrapezoidIsExactOnALinearRampWithInterpolatedEnds) {
  FakeClock clock(seconds(0));
  FakeGpuOptions gpu_options;
  gpu_options.power_w = [](double t, uint32_t) { return 100.0 + 10.0 * t; };
  FakeGpu gpu(&clock, gpu_options);
  ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor, PowerMonitor::Create({&gpu}, &clock, ManualOptions()));
  for (int i = 0; i < 100; ++i) {
    clock.AdvanceSeconds(0.1);
    ZEUS_ASSERT_OK(monitor->SampleOnce());
  }
  auto integral = [](double a, double b) { return 100.0 * (b - a) + 5.0 * (b * b - a * a); };
  ZEUS_ASSERT_OK_AND_ASSIGN(double energy_j,
                            monitor->EnergyJ(0, milliseconds(2050), milliseconds(7300)));
  EXPECT_NEAR(energy_j, integral(2.05, 7.3), 1e-6);
  // Past the newest sample (t = 10 s, 200 W) the last value is held.
  ZEUS_ASSERT_OK_AND_ASSIGN(energy_j, monitor->EnergyJ(0, seconds(10), seconds(12)));
  EXPECT_NEAR(energy_j, 400.0, 1e-6);
}

TEST(PowerMonitorTest, MemoryIsBoundedAndOldTimesAreReportedMissing) {
  FakeClock clock(seconds(0));
  FakeGpuOptions gpu_options;
  gpu_options.power_w = [](double t, uint32_t) { return 100.0 + t; };  // Changes every sample.
  FakeGpu gpu(&clock, gpu_options);
  PowerMonitorOptions options = ManualOptions();
  options.max_points_per_gpu = 8;
  ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor, PowerMonitor::Create({&gpu}, &clock, options));
  for (int i = 0; i < 100; ++i) {
    clock.AdvanceSeconds(1.0);
    ZEUS_ASSERT_OK(monitor->SampleOnce());
  }
  ZEUS_ASSERT_OK_AND_ASSIGN(auto timeline, monitor->Timeline(0, seconds(0), seconds(100)));
  ASSERT_EQ(timeline.size(), 8u);
  EXPECT_EQ(timeline.front().time, seconds(93));
  StatusOr<double> old = monitor->EnergyJ(0, seconds(50), seconds(99));
  EXPECT_EQ(old.status().code(), StatusCode::kNotFound);
  EXPECT_NE(old.status().message().find("oldest kept: 93"), std::string::npos)
      << old.status().message();
  // Cumulative energy stays consistent across dropped points.
  ZEUS_ASSERT_OK_AND_ASSIGN(double at_95, monitor->CumulativeEnergyJ(0, seconds(95)));
  ZEUS_ASSERT_OK_AND_ASSIGN(double at_99, monitor->CumulativeEnergyJ(0, seconds(99)));
  EXPECT_NEAR(at_99 - at_95, 400.0 + 0.5 * (99.0 * 99.0 - 95.0 * 95.0), 1e-6);
  EXPECT_NEAR(at_95, 100.0 * 95.0 + 0.5 * 95.0 * 95.0, 1e-6);
}

TEST(PowerMonitorTest, AFailingGpuIsReportedAndTheOthersAreStillSampled) {
  FakeClock clock(seconds(0));
  FakeGpu gpu0(&clock, FakeGpuOptions{});
  FakeGpuOptions options1;
  options1.index = 1;
  FakeGpu gpu1(&clock, options1);
  ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor,
                            PowerMonitor::Create({&gpu0, &gpu1}, &clock, ManualOptions()));
  gpu1.InjectError(FakeGpuOp::kPower, UnavailableError("GPU is lost"));
  clock.AdvanceSeconds(1.0);
  Status status = monitor->SampleOnce();
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "power monitor: GPU 1: GPU is lost");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto timeline0, monitor->Timeline(0, seconds(0), seconds(2)));
  ZEUS_ASSERT_OK_AND_ASSIGN(auto timeline1, monitor->Timeline(1, seconds(0), seconds(2)));
  EXPECT_EQ(timeline0.size(), 2u);
  EXPECT_EQ(timeline1.size(), 1u);
}

TEST(PowerMonitorTest, RejectsBadArguments) {
  FakeClock clock;
  FakeGpu gpu(&clock, FakeGpuOptions{});
  EXPECT_EQ(PowerMonitor::Create({}, &clock, ManualOptions()).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PowerMonitor::Create({nullptr}, &clock, ManualOptions()).status().code(),
            StatusCode::kInvalidArgument);
  PowerMonitorOptions tiny = ManualOptions();
  tiny.max_points_per_gpu = 3;
  EXPECT_EQ(PowerMonitor::Create({&gpu}, &clock, tiny).status().code(),
            StatusCode::kInvalidArgument);
  ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor, PowerMonitor::Create({&gpu}, &clock, ManualOptions()));
  EXPECT_EQ(monitor->EnergyJ(1, seconds(0), seconds(1)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(monitor->EnergyJ(0, seconds(2), seconds(1)).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(PowerMonitorTest, BackgroundThreadSamplesAllGpusPeriodically) {
  FakeClock clock(seconds(0));
  FakeGpuOptions options;
  options.power_w = [](double t, uint32_t) { return 100.0 + t; };
  FakeGpu gpu0(&clock, options);
  FakeGpu gpu1(&clock, options);
  PowerMonitorOptions monitor_options;
  monitor_options.period = milliseconds(1);
  ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor,
                            PowerMonitor::Create({&gpu0, &gpu1}, &clock, monitor_options));
  // Wait (bounded) until the thread has sampled both GPUs after the clock moved.
  clock.AdvanceSeconds(1.0);
  auto sampled_at_1s = [&](size_t gpu) {
    auto timeline = monitor->Timeline(gpu, seconds(0), seconds(2));
    return timeline.ok() && !timeline->empty() && timeline->back().time == seconds(1);
  };
  for (int i = 0; i < 5000 && !(sampled_at_1s(0) && sampled_at_1s(1)); ++i) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_TRUE(sampled_at_1s(0));
  EXPECT_TRUE(sampled_at_1s(1));
  EXPECT_TRUE(monitor->last_error().ok());
}

}  // namespace
}  // namespace zeus
