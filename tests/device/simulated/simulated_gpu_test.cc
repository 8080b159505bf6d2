#include "src/device/simulated/simulated_gpu.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "zeus/device/devices.h"
#include "zeus/device/fake.h"

namespace zeus::simulated {
namespace {

TEST(SimulatedGpuTest, PowerFollowsTheLoadCycleAndTheLimit) {
  FakeClock clock;
  SimulatedGpuModel model;  // 340 W for 1.6 s, 150 W for 0.4 s, limits 100-400 W.
  auto state = std::make_shared<SimulatedGpuState>(&clock, model);
  SimulatedGpu gpu(state, 0);
  clock.AdvanceSeconds(0.5);
  EXPECT_EQ(*gpu.PowerMw(), 340'000u);
  clock.AdvanceSeconds(1.3);  // 1.8 s: input phase.
  EXPECT_EQ(*gpu.PowerMw(), 150'000u);
  ASSERT_TRUE(gpu.SetPowerLimitMw(200'000).ok());
  EXPECT_EQ(*gpu.PowerLimitMw(), 200'000u);
  EXPECT_EQ(*gpu.PowerMw(), 150'000u);  // Below the limit: unchanged.
  clock.AdvanceSeconds(0.4);            // 2.2 s: compute, throttled.
  EXPECT_EQ(*gpu.PowerMw(), 200'000u);
  EXPECT_GT(*gpu.TemperatureC(), 30);
}

TEST(SimulatedGpuTest, EnergyCounterIsTheIntegralOfPowerAcrossLimitChanges) {
  FakeClock clock;
  auto state = std::make_shared<SimulatedGpuState>(&clock, SimulatedGpuModel{});
  SimulatedGpu gpu(state, 0);
  EXPECT_EQ(*gpu.TotalEnergyMj(), 0u);
  clock.AdvanceSeconds(10.0);  // 5 cycles of 1.6 s x 340 W + 0.4 s x 150 W = 604 J.
  EXPECT_EQ(*gpu.TotalEnergyMj(), 3'020'000u);
  ASSERT_TRUE(gpu.SetPowerLimitMw(100'000).ok());
  clock.AdvanceSeconds(3.0);  // 100 W throughout.
  EXPECT_EQ(*gpu.TotalEnergyMj(), 3'320'000u);
  // The 1 s average agrees with the counter.
  EXPECT_EQ(*gpu.DomainPowerMw(PowerDomain::kDeviceAverage), 100'000u);
  EXPECT_EQ(gpu.DomainPowerMw(PowerDomain::kMemoryAverage).status().code(),
            StatusCode::kNotSupported);
}

TEST(SimulatedGpuTest, LimitsOutsideTheConstraintsAreRefused) {
  FakeClock clock;
  auto state = std::make_shared<SimulatedGpuState>(&clock, SimulatedGpuModel{});
  SimulatedGpu gpu(state, 3);
  Status status = gpu.SetPowerLimitMw(50'000);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(status.message()).find("GPU 3"), std::string::npos);
  EXPECT_EQ(*gpu.PowerLimitMw(), 400'000u);
}

TEST(SimulatedBackendTest, ZeusFakeGpusSelectsSimulatedGpusSharedInTheProcess) {
  GpuOptions options;
  options.environment["ZEUS_FAKE_GPUS"] = "2";
  options.environment["CUDA_VISIBLE_DEVICES"] = std::nullopt;
  options.environment["ZEUSD_SOCK_PATH"] = std::nullopt;
  auto gpus = OpenGpus(options);
  ASSERT_TRUE(gpus.ok()) << gpus.status().message();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ(*(*gpus)[0]->Name(), "Zeus Simulated GPU");
  EXPECT_NE(*(*gpus)[0]->Uuid(), *(*gpus)[1]->Uuid());
  ASSERT_TRUE((*gpus)[1]->SetPowerLimitMw(250'000).ok());
  auto again = OpenGpus(options);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*(*again)[1]->PowerLimitMw(), 250'000u);
  ASSERT_TRUE((*gpus)[1]->SetPowerLimitMw(400'000).ok());

  options.environment["CUDA_VISIBLE_DEVICES"] = "1";
  auto visible = OpenGpus(options);
  ASSERT_TRUE(visible.ok());
  ASSERT_EQ(visible->size(), 1u);
  EXPECT_EQ(*(*visible)[0]->Uuid(), *(*gpus)[1]->Uuid());

  std::vector<GpuBackendDescription> described = DescribeGpuBackends(options);
  ASSERT_EQ(described.size(), 1u);
  EXPECT_EQ(described[0].name, "simulated");
  EXPECT_TRUE(described[0].in_use);
}

TEST(SimulatedBackendTest, AMalformedCountIsAnErrorNamingTheSetting) {
  GpuOptions options;
  for (const char* value : {"two", "-1", "65", "2x"}) {
    options.environment["ZEUS_FAKE_GPUS"] = value;
    auto gpus = OpenGpus(options);
    ASSERT_FALSE(gpus.ok()) << value;
    EXPECT_EQ(gpus.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(gpus.status().message()).find("ZEUS_FAKE_GPUS"), std::string::npos);
  }
  options.environment["ZEUS_FAKE_GPUS"] = "0";
  auto none = OpenGpus(options);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace zeus::simulated
