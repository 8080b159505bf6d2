#include <cmath>

#include <gtest/gtest.h>

#include "zeus/device/fake.h"

#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

TEST(FakeGpuTest, EnergyCounterIntegratesThePowerCurve) {
  FakeClock clock(std::chrono::seconds(0));
  FakeGpuOptions options;
  options.power_w = [](double t, uint32_t) { return 100.0 + 50.0 * std::sin(t); };
  FakeGpu gpu(&clock, options);
  clock.AdvanceSeconds(10.0);
  // Integral of 100 + 50 sin(t) over [0, 10] = 1000 + 50 (1 - cos 10).
  double expected_j = 1000.0 + 50.0 * (1.0 - std::cos(10.0));
  EXPECT_NEAR(*gpu.TotalEnergyMj() / 1e3, expected_j, 1e-3);
  EXPECT_NEAR(gpu.TrueEnergyJ(), expected_j, 1e-6);
}

TEST(FakeGpuTest, CounterMovesOnlyAtItsUpdatePeriod) {
  FakeClock clock(std::chrono::seconds(0));
  FakeGpuOptions options;
  options.energy_update_period = std::chrono::milliseconds(100);
  FakeGpu gpu(&clock, options);
  clock.AdvanceSeconds(0.15);
  EXPECT_EQ(*gpu.TotalEnergyMj(), 10'000u);  // 100 W x 0.1 s.
  clock.AdvanceSeconds(0.04);
  EXPECT_EQ(*gpu.TotalEnergyMj(), 10'000u);
  clock.AdvanceSeconds(0.02);
  EXPECT_EQ(*gpu.TotalEnergyMj(), 20'000u);
  EXPECT_EQ(gpu.EnergyCounterUpdatePeriod(), std::chrono::milliseconds(100));
}

TEST(FakeGpuTest, SetPowerLimitChecksRangeHonoursDryRunAndRecordsHistory) {
  FakeClock clock;
  FakeGpu gpu(&clock, FakeGpuOptions{});
  EXPECT_EQ(gpu.SetPowerLimitMw(50'000).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(gpu.SetPowerLimitMw(200'000).ok());
  setenv("ZEUS_DRY_RUN", "1", 1);
  ASSERT_TRUE(gpu.SetPowerLimitMw(150'000).ok());
  unsetenv("ZEUS_DRY_RUN");
  EXPECT_EQ(*gpu.PowerLimitMw(), 200'000u);
  EXPECT_EQ(gpu.power_limit_history(), std::vector<uint32_t>{200'000});
}

TEST(FakeGpuTest, InjectedErrorsAndMissingCounterAreReported) {
  FakeClock clock;
  FakeGpuOptions options;
  options.has_energy_counter = false;
  FakeGpu gpu(&clock, options);
  EXPECT_EQ(gpu.TotalEnergyMj().status().code(), StatusCode::kNotSupported);
  gpu.InjectError(FakeGpuOp::kPower, UnavailableError("GPU is lost"));
  EXPECT_EQ(gpu.PowerMw().status().code(), StatusCode::kUnavailable);
  gpu.ClearErrors();
  EXPECT_EQ(*gpu.PowerMw(), 100'000u);
}

// 200 ms bursts: 100 ms at 400 W, 100 ms at 100 W.
double BurstW(double t, uint32_t) { return std::fmod(t, 0.2) < 0.1 ? 400.0 : 100.0; }

TEST(FakeGpuTest, InstantPowerSwingsUnderBurstsWhileTheAverageHoldsTheMean) {
  FakeClock clock(std::chrono::seconds(10));
  FakeGpuOptions options;
  options.power_w = BurstW;
  FakeGpu gpu(&clock, options);
  clock.AdvanceSeconds(0.05);  // Inside a 400 W burst.
  EXPECT_EQ(*gpu.DomainPowerMw(PowerDomain::kDeviceInstant), 400'000u);
  EXPECT_NEAR(*gpu.DomainPowerMw(PowerDomain::kDeviceAverage), 250'000.0, 1'000.0);
  EXPECT_NEAR(*gpu.DomainPowerMw(PowerDomain::kMemoryAverage), 25'000.0, 100.0);
  clock.AdvanceSeconds(0.1);  // Inside a 100 W gap.
  EXPECT_EQ(*gpu.DomainPowerMw(PowerDomain::kDeviceInstant), 100'000u);
  EXPECT_NEAR(*gpu.DomainPowerMw(PowerDomain::kDeviceAverage), 250'000.0, 1'000.0);
  EXPECT_EQ(*gpu.TemperatureC(), 45);
}

TEST(FakeGpuTest, DomainsAndTemperatureSwitchedOffAreNotSupported) {
  FakeClock clock;
  FakeGpuOptions options;
  options.has_device_average = false;
  options.has_memory_average = false;
  options.temperature_c = std::nullopt;
  FakeGpu gpu(&clock, options);
  ZEUS_EXPECT_OK(gpu.DomainPowerMw(PowerDomain::kDeviceInstant).status());
  EXPECT_EQ(gpu.DomainPowerMw(PowerDomain::kDeviceAverage).status().code(),
            StatusCode::kNotSupported);
  EXPECT_EQ(gpu.DomainPowerMw(PowerDomain::kMemoryAverage).status().code(),
            StatusCode::kNotSupported);
  EXPECT_EQ(gpu.TemperatureC().status().code(), StatusCode::kNotSupported);
  gpu.InjectError(FakeGpuOp::kDomainPower, UnavailableError("lost"));
  EXPECT_EQ(gpu.DomainPowerMw(PowerDomain::kDeviceInstant).status().code(),
            StatusCode::kUnavailable);
}

TEST(PowerDomainTest, NamesRoundTripAndUnknownNamesAreRefusedWithTheChoices) {
  for (PowerDomain domain : kAllPowerDomains) {
    EXPECT_EQ(*ParsePowerDomain(PowerDomainName(domain)), domain);
  }
  StatusOr<PowerDomain> bad = ParsePowerDomain("gpu_instant");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'gpu_instant'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("device_average"), std::string::npos);
}

TEST(FakeCpuTest, InjectedErrorsReachBothCountersUntilCleared) {
  FakeCpu cpu(0);
  cpu.AddEnergyUj(5, 3);
  cpu.InjectError(PermissionDeniedError("energy_uj is root-only"));
  EXPECT_EQ(cpu.PackageEnergyUj().status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(cpu.DramEnergyUj().status().code(), StatusCode::kPermissionDenied);
  cpu.ClearErrors();
  EXPECT_EQ(*cpu.PackageEnergyUj(), 5u);
  EXPECT_EQ(*cpu.DramEnergyUj(), 3u);
}

}  // namespace
}  // namespace zeus
