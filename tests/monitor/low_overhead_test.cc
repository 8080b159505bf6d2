// The low-overhead mode: boundaries never read the energy counter, and the
// estimate (counter anchor + integrated instant power) stays close to the
// truth. Driven deterministically with FakeClock and SampleNow().

#include <chrono>
#include <cmath>
#include <thread>

#include <gtest/gtest.h>

#include "zeus/device/fake.h"
#include "zeus/monitor/energy_monitor.h"

#include "tests/monitor/analytic_gpu.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

EnergyMonitorOptions LowOverheadManualOptions() {
  EnergyMonitorOptions options;
  options.mode = EnergyMonitorMode::kLowOverhead;
  options.power_sample_period = std::chrono::nanoseconds(0);
  options.counter_poll_period = std::chrono::nanoseconds(0);
  return options;
}

TEST(LowOverheadEnergyMonitorTest, BoundariesNeverReadTheEnergyCounter) {
  FakeClock clock(seconds(0));
  FakeGpu gpu(&clock, FakeGpuOptions{});
  ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor,
                            EnergyMonitor::Create({&gpu}, {}, &clock, LowOverheadManualOptions()));
  int64_t reads_before = gpu.energy_reads();
  for (int i = 0; i < 100; ++i) {
    ZEUS_ASSERT_OK(monitor->Begin("step"));
    clock.AdvanceSeconds(0.0015);
    ZEUS_ASSERT_OK_AND_ASSIGN(Measurement m, monitor->End("step"));
    EXPECT_EQ(m.gpu_energy_source[0], GpuEnergySource::kCounterPlusPower);
    EXPECT_NEAR(m.gpu_energy_j[0], 0.15, 1e-6);  // 100 W x 1.5 ms.
  }
  EXPECT_EQ(gpu.energy_reads(), reads_before);
}

// Worst absolute error (J) of low-overhead windows of `window_s` against the true
// energy, with the counter moving every 100 ms, counters polled and power
// sampled every 10 ms.
double WorstErrorJ(double window_s) {
  FakeClock clock(milliseconds(1000));
  zeus::testing::AnalyticGpu gpu(&clock, milliseconds(100));
  auto monitor = EnergyMonitor::Create({&gpu}, {}, &clock, LowOverheadManualOptions());
  EXPECT_TRUE(monitor.ok());
  double worst = 0.0;
  // Time moves in 0.5 ms steps; the background work (SampleNow) runs every
  // 10 ms throughout, as the background threads would.
  int64_t tick = 0;
  auto advance = [&](int steps) {
    for (int i = 0; i < steps; ++i) {
      clock.Advance(std::chrono::microseconds(500));
      if (++tick % 20 == 0) {
        EXPECT_TRUE((*monitor)->SampleNow().ok());
      }
    }
  };
  advance(400);  // Let the anchor see the counter move once (see the header).
  const int window_steps = static_cast<int>(std::lround(window_s / 0.0005));
  for (int w = 0; w < 8; ++w) {
    advance(27 * (w + 1));  // Vary the phase against polls and counter updates.
    EXPECT_TRUE((*monitor)->Begin("w").ok());
    double true_begin_j = gpu.TrueEnergyJ();
    advance(window_steps);
    StatusOr<Measurement> m = (*monitor)->End("w");
    EXPECT_TRUE(m.ok());
    double true_j = gpu.TrueEnergyJ() - true_begin_j;
    worst = std::max(worst, std::abs(m->gpu_energy_j[0] - true_j));
  }
  return worst;
}

TEST(LowOverheadEnergyMonitorTest, ErrorIsBoundedByPowerTimesPollPeriod) {
  // Each boundary's anchor time is off by at most half the 10 ms poll period,
  // so a window is off by at most max power (390 W) x 10 ms = 3.9 J, whatever
  // its length: relative error <= 3.9 J / (window_s x 210 W).
  for (double window_s : {0.1, 1.0, 10.0}) {
    double error_j = WorstErrorJ(window_s);
    RecordProperty("error_j_" + std::to_string(window_s), std::to_string(error_j));
    EXPECT_LE(error_j, 3.9) << window_s << " s windows";
  }
}

TEST(LowOverheadEnergyMonitorTest, ABackgroundReadErrorFailsTheNextBoundary) {
  FakeClock clock(seconds(0));
  FakeGpu gpu(&clock, FakeGpuOptions{});
  ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor,
                            EnergyMonitor::Create({&gpu}, {}, &clock, LowOverheadManualOptions()));
  ZEUS_ASSERT_OK(monitor->Begin("w"));
  gpu.InjectError(FakeGpuOp::kTotalEnergy, UnavailableError("GPU is lost"));
  EXPECT_EQ(monitor->SampleNow().code(), StatusCode::kUnavailable);
  StatusOr<Measurement> m = monitor->End("w");
  EXPECT_EQ(m.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(m.status().message(), "energy monitor: window 'w' end: GPU 0: GPU is lost");
  gpu.ClearErrors();
  ZEUS_ASSERT_OK(monitor->SampleNow());
  ZEUS_ASSERT_OK(monitor->Begin("w"));
  clock.AdvanceSeconds(1.0);
  ZEUS_ASSERT_OK_AND_ASSIGN(Measurement ok, monitor->End("w"));
  EXPECT_NEAR(ok.gpu_energy_j[0], 100.0, 1e-6);
}

TEST(LowOverheadEnergyMonitorTest, BackgroundThreadsKeepAnchorsFresh) {
  // Real background threads; the fake clock stands still, so the estimate is
  // exact whatever the threads' timing.
  FakeClock clock(seconds(0));
  FakeGpuOptions gpu_options;
  gpu_options.energy_read_latency = milliseconds(1);
  FakeGpu gpu0(&clock, gpu_options);
  FakeGpu gpu1(&clock, gpu_options);
  EnergyMonitorOptions options;
  options.mode = EnergyMonitorMode::kLowOverhead;
  options.power_sample_period = milliseconds(1);
  options.counter_poll_period = milliseconds(1);
  ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor,
                            EnergyMonitor::Create({&gpu0, &gpu1}, {}, &clock, options));
  for (int i = 0; i < 5000 && (gpu0.energy_reads() < 5 || gpu1.energy_reads() < 5); ++i) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_GE(gpu0.energy_reads(), 5);
  EXPECT_GE(gpu1.energy_reads(), 5);
  ZEUS_ASSERT_OK(monitor->Begin("w"));
  ZEUS_ASSERT_OK_AND_ASSIGN(Measurement m, monitor->End("w"));
  EXPECT_EQ(m.gpu_energy_j, (std::vector<double>{0.0, 0.0}));
}

}  // namespace
}  // namespace zeus
