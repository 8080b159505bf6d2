#include <cmath>

#include <gtest/gtest.h>

#include "zeus/device/fake.h"

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
