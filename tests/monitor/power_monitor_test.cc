#include "zeus/monitor/power_monitor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "zeus/device/fake.h"
#include "zeus/util/units.h"

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

namespace zeus {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// 50 ms bursts: 25 ms at 400 W, 25 ms at 100 W (mean 250 W), from t = 0.
double Burst50W(double t) { return std::fmod(t, 0.05) < 0.025 ? 400.0 : 100.0; }
// Its exact integral from 0 to t, in J.
double Burst50J(double t) {
  double periods = std::floor(t / 0.05);
  return 100.0 * t + 300.0 * (periods * 0.025 + std::min(t - periods * 0.05, 0.025));
}

// Samples every 5 ms (power and counter) for `seconds_to_run`.
void Drive(FakeClock& clock, PowerMonitor& monitor, double seconds_to_run) {
  for (int i = 0; i < static_cast<int>(seconds_to_run / 0.005 + 0.5); ++i) {
    clock.Advance(milliseconds(5));
    ZEUS_ASSERT_OK(monitor.SampleOnce());
  }
}

class PowerMonitorDomainsTest : public ::testing::Test {
 protected:
  PowerMonitorDomainsTest() : clock_(seconds(0)) {
    FakeGpuOptions options;
    options.power_w = [](double t, uint32_t) { return Burst50W(t); };
    options.energy_j = Burst50J;
    options.energy_update_period = milliseconds(100);  // NVML's counter.
    gpu_ = std::make_unique<FakeGpu>(&clock_, options);
  }

  PowerMonitorOptions Options(std::vector<PowerDomain> domains) {
    PowerMonitorOptions options;
    options.period = std::chrono::nanoseconds(0);
    options.counter_period = std::chrono::nanoseconds(0);
    options.domains = std::move(domains);
    options.sample_energy_counters = true;
    return options;
  }

  FakeClock clock_;
  std::unique_ptr<FakeGpu> gpu_;
};

TEST_F(PowerMonitorDomainsTest, EveryDomainHasItsOwnTimeline) {
  ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor, PowerMonitor::Create({gpu_.get()}, &clock_, Options({})));
  ASSERT_EQ(monitor->domains().size(), 3u);
  Drive(clock_, *monitor, 2.0);
  ZEUS_ASSERT_OK_AND_ASSIGN(
      auto instant, monitor->Timeline(0, PowerDomain::kDeviceInstant, seconds(1), seconds(2)));
  ZEUS_ASSERT_OK_AND_ASSIGN(
      auto average, monitor->Timeline(0, PowerDomain::kDeviceAverage, seconds(1), seconds(2)));
  ZEUS_ASSERT_OK_AND_ASSIGN(
      auto memory, monitor->Timeline(0, PowerDomain::kMemoryAverage, seconds(1), seconds(2)));
  uint32_t instant_min = 1u << 31, instant_max = 0;
  for (const PowerSample& s : instant) {
    instant_min = std::min(instant_min, s.power_mw);
    instant_max = std::max(instant_max, s.power_mw);
  }
  EXPECT_EQ(instant_min, 100'000u);
  EXPECT_EQ(instant_max, 400'000u);
  ASSERT_FALSE(average.empty());
  for (const PowerSample& s : average) EXPECT_NEAR(s.power_mw, 250'000.0, 4'000.0);
  ASSERT_FALSE(memory.empty());
  for (const PowerSample& s : memory) EXPECT_NEAR(s.power_mw, 25'000.0, 400.0);
}

TEST_F(PowerMonitorDomainsTest, ADomainTheGpuLacksFailsCreateNamingIt) {
  FakeGpuOptions options;
  options.index = 3;
  options.has_memory_average = false;
  FakeGpu old_gpu(&clock_, options);
  StatusOr<std::unique_ptr<PowerMonitor>> monitor =
      PowerMonitor::Create({gpu_.get(), &old_gpu}, &clock_, Options({PowerDomain::kMemoryAverage}));
  ASSERT_FALSE(monitor.ok());
  EXPECT_EQ(monitor.status().code(), StatusCode::kNotSupported);
  EXPECT_NE(monitor.status().message().find("GPU 1: power domain memory_average"),
            std::string::npos)
      << monitor.status().message();
  EXPECT_EQ(
      PowerMonitor::Create({gpu_.get()}, &clock_,
                           Options({PowerDomain::kDeviceAverage, PowerDomain::kDeviceAverage}))
          .status()
          .code(),
      StatusCode::kInvalidArgument);
  ZEUS_ASSERT_OK_AND_ASSIGN(auto instant_only,
                            PowerMonitor::Create({gpu_.get()}, &clock_, Options({})));
  ZEUS_ASSERT_OK_AND_ASSIGN(
      auto average_only,
      PowerMonitor::Create({gpu_.get()}, &clock_, Options({PowerDomain::kDeviceAverage})));
  StatusOr<std::vector<PowerSample>> unsampled =
      average_only->Timeline(0, PowerDomain::kDeviceInstant, seconds(0), seconds(1));
  EXPECT_EQ(unsampled.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unsampled.status().message().find("sampled: device_average"), std::string::npos);
}

TEST_F(PowerMonitorDomainsTest, CounterEnergyMatchesTheTruthUnderBurstsWhateverTheDomain) {
  // Only the 1 s average is sampled: its integral lags the bursts, the
  // counter-based energy does not.
  for (std::vector<PowerDomain> domains :
       {std::vector<PowerDomain>{PowerDomain::kDeviceAverage},
        std::vector<PowerDomain>{PowerDomain::kDeviceInstant, PowerDomain::kDeviceAverage}}) {
    FakeClock clock(seconds(0));
    FakeGpuOptions options;
    options.power_w = [](double t, uint32_t) { return Burst50W(t); };
    options.energy_j = Burst50J;
    options.energy_update_period = milliseconds(100);
    FakeGpu gpu(&clock, options);
    ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor, PowerMonitor::Create({&gpu}, &clock, Options(domains)));
    Drive(clock, *monitor, 14.0);
    for (auto [start_s, end_s] : {std::pair{1.2371, 3.2371}, std::pair{2.5, 12.5},
                                  std::pair{0.3333, 10.9017}, std::pair{5.0125, 7.0437}}) {
      const double truth_j = Burst50J(end_s) - Burst50J(start_s);
      ZEUS_ASSERT_OK_AND_ASSIGN(
          double counter_j, monitor->CounterEnergyJ(0, FromSeconds(start_s), FromSeconds(end_s)));
      // Per window edge: the counter's moves are timed to +-2.5 ms (half
      // the poll), <= 0.75 J at these powers; between moves the energy
      // follows the sampled instant power (its jumps blurred over one 5 ms
      // sample, <= 1.5 J), or, with only the average sampled, a straight
      // line (off by up to 3.75 J on these bursts).
      const bool shape = domains.size() == 2;
      EXPECT_NEAR(counter_j, truth_j, shape ? 4.5 : 9.0) << start_s << " -> " << end_s;
    }
  }
}

TEST_F(PowerMonitorDomainsTest, BetweenCounterMovesTheEnergyFollowsTheInstantPower) {
  ZEUS_ASSERT_OK_AND_ASSIGN(
      auto monitor,
      PowerMonitor::Create({gpu_.get()}, &clock_, Options({PowerDomain::kDeviceInstant})));
  Drive(clock_, *monitor, 3.0);
  // One 25 ms burst at 400 W inside a single 100 ms counter update: 10 J,
  // where a straight line between the moves would say 6.25 J (the sampled
  // shape blurs each jump over one 5 ms sample).
  ZEUS_ASSERT_OK_AND_ASSIGN(double burst_j,
                            monitor->CounterEnergyJ(0, milliseconds(2000), milliseconds(2025)));
  EXPECT_GT(burst_j, 8.0);
  EXPECT_LT(burst_j, 10.8);
  ZEUS_ASSERT_OK_AND_ASSIGN(double gap_j,
                            monitor->CounterEnergyJ(0, milliseconds(2025), milliseconds(2050)));
  EXPECT_NEAR(burst_j + gap_j, 12.5, 1.2);
}

TEST_F(PowerMonitorDomainsTest, BeforeTheFirstAndAfterTheLastCounterMoveThePowerIntegralBridges) {
  ZEUS_ASSERT_OK_AND_ASSIGN(
      auto monitor,
      PowerMonitor::Create({gpu_.get()}, &clock_, Options({PowerDomain::kDeviceInstant})));
  Drive(clock_, *monitor, 0.99);
  clock_.Advance(milliseconds(70));  // Past the last read, nothing sampled.
  // From creation (t = 0, before the first move at 0.1 s) to 1.06 s: the
  // last value (100 W at 0.99 s) is held for the last 70 ms.
  ZEUS_ASSERT_OK_AND_ASSIGN(double energy_j,
                            monitor->CounterEnergyJ(0, seconds(0), milliseconds(1060)));
  EXPECT_NEAR(energy_j, Burst50J(0.99) + 0.07 * 100.0, 3.0);
  // Before anything was sampled: not found.
  ZEUS_ASSERT_OK_AND_ASSIGN(
      auto late,
      PowerMonitor::Create({gpu_.get()}, &clock_, Options({PowerDomain::kDeviceInstant})));
  EXPECT_EQ(late->CounterEnergyJ(0, seconds(0), seconds(1)).status().code(), StatusCode::kNotFound);
}

TEST_F(PowerMonitorDomainsTest, CounterEnergyWithoutACounterIsAFailedPrecondition) {
  FakeGpuOptions options;
  options.has_energy_counter = false;
  FakeGpu old_gpu(&clock_, options);
  ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor, PowerMonitor::Create({&old_gpu}, &clock_, Options({})));
  EXPECT_FALSE(monitor->HasCounter(0));
  StatusOr<double> energy = monitor->CounterEnergyJ(0, seconds(0), seconds(0));
  EXPECT_EQ(energy.status().code(), StatusCode::kFailedPrecondition);
}

TEST(PowerMonitorThreadsTest, BackgroundCounterReadersRecordMoves) {
  FakeClock clock(seconds(0));
  FakeGpuOptions options;
  options.power_w = [](double, uint32_t) { return 200.0; };
  FakeGpu gpu(&clock, options);
  PowerMonitorOptions monitor_options;
  monitor_options.period = milliseconds(1);
  monitor_options.counter_period = milliseconds(1);
  monitor_options.sample_energy_counters = true;
  ZEUS_ASSERT_OK_AND_ASSIGN(auto monitor, PowerMonitor::Create({&gpu}, &clock, monitor_options));
  int64_t reads = gpu.energy_reads();
  for (int i = 0; i < 5000 && gpu.energy_reads() < reads + 5; ++i) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_GE(gpu.energy_reads(), reads + 5);
}

}  // namespace
}  // namespace zeus
