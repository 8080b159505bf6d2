// Power domains and temperature through the real NVML loader, against the
// fake libnvml's model (fake_nvml/fake_nvml_config.h): an instant signal
// with optional bursts, its one-second average, memory power on Hopper and
// newer, the module-scope-only answer of Grace Hopper-class parts.

#include <chrono>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "zeus/device/devices.h"

#include "tests/device/fake_nvml/fake_nvml_config.h"
#include "tests/device/scoped_env.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

namespace fake = testing::fake_nvml;
using ::testing::HasSubstr;

class NvmlPowerDomainsTest : public ::testing::Test {
 protected:
  NvmlPowerDomainsTest() {
    for (const char* name :
         {fake::kGpus, fake::kNames, fake::kArchitectures, fake::kInitRc, fake::kEnergyRc,
          fake::kLostAfterReads, fake::kPowerMw, fake::kEnergyFromPower, fake::kBurst,
          fake::kEnergyUpdateMs, fake::kModuleScopeOnly, fake::kTemperaturesC, fake::kLog,
          "ZEUS_NVML_LIBRARY", "ZEUS_DRY_RUN", "CUDA_VISIBLE_DEVICES"}) {
      env_.Unset(name);
    }
  }

  static GpuOptions Library(const char* path) {
    GpuOptions options;
    options.environment["ZEUS_NVML_LIBRARY"] = path;
    return options;
  }

  testing::ScopedEnv env_;
};

TEST_F(NvmlPowerDomainsTest, SteadyPowerIsTheSameInEveryDeviceDomain) {
  env_.Set(fake::kPowerMw, "200000");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
  Gpu& gpu = *gpus[0];
  ZEUS_ASSERT_OK_AND_ASSIGN(uint32_t instant_mw, gpu.DomainPowerMw(PowerDomain::kDeviceInstant));
  ZEUS_ASSERT_OK_AND_ASSIGN(uint32_t average_mw, gpu.DomainPowerMw(PowerDomain::kDeviceAverage));
  ZEUS_ASSERT_OK_AND_ASSIGN(uint32_t memory_mw, gpu.DomainPowerMw(PowerDomain::kMemoryAverage));
  EXPECT_EQ(instant_mw, 200'000u);
  EXPECT_EQ(average_mw, 200'000u);
  EXPECT_EQ(memory_mw, 200'000u / fake::kMemoryPowerDivisor);
  ZEUS_ASSERT_OK_AND_ASSIGN(uint32_t usage_mw, gpu.PowerMw());
  EXPECT_EQ(usage_mw, 200'000u);
}

TEST_F(NvmlPowerDomainsTest, UnderBurstsInstantSwingsWhileTheAverageStaysNearTheMean) {
  // 100 ms period: 50 ms at 400 W, 50 ms at 100 W; mean 250 W.
  env_.Set(fake::kPowerMw, "100000");
  env_.Set(fake::kBurst, "100,400000");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
  Gpu& gpu = *gpus[0];
  bool saw_high = false;
  bool saw_low = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  // The first second's average includes the time before the bursts started.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  while ((!saw_high || !saw_low) && std::chrono::steady_clock::now() < deadline) {
    ZEUS_ASSERT_OK_AND_ASSIGN(uint32_t instant_mw, gpu.DomainPowerMw(PowerDomain::kDeviceInstant));
    ZEUS_ASSERT_OK_AND_ASSIGN(uint32_t average_mw, gpu.DomainPowerMw(PowerDomain::kDeviceAverage));
    EXPECT_TRUE(instant_mw == 100'000u || instant_mw == 400'000u) << instant_mw;
    // A one-second window holds 10 periods, give or take part of one.
    EXPECT_NEAR(average_mw, 250'000.0, 16'000.0);
    saw_high |= instant_mw == 400'000u;
    saw_low |= instant_mw == 100'000u;
    std::this_thread::sleep_for(std::chrono::milliseconds(7));
  }
  EXPECT_TRUE(saw_high);
  EXPECT_TRUE(saw_low);
}

TEST_F(NvmlPowerDomainsTest, GraceHopperClassPartsAnswerWithTheModuleScope) {
  env_.Set(fake::kPowerMw, "300000");
  env_.Set(fake::kModuleScopeOnly, "1");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
  ZEUS_ASSERT_OK_AND_ASSIGN(uint32_t instant_mw,
                            gpus[0]->DomainPowerMw(PowerDomain::kDeviceInstant));
  ZEUS_ASSERT_OK_AND_ASSIGN(uint32_t average_mw,
                            gpus[0]->DomainPowerMw(PowerDomain::kDeviceAverage));
  EXPECT_EQ(instant_mw, 300'000u);
  EXPECT_EQ(average_mw, 300'000u);
}

TEST_F(NvmlPowerDomainsTest, MemoryPowerIsNotSupportedBeforeHopper) {
  env_.Set(fake::kArchitectures, "8,9");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
  StatusOr<uint32_t> ada = gpus[0]->DomainPowerMw(PowerDomain::kMemoryAverage);
  ASSERT_FALSE(ada.ok());
  EXPECT_EQ(ada.status().code(), StatusCode::kNotSupported);
  EXPECT_THAT(ada.status().message(), HasSubstr("GPU 0"));
  EXPECT_THAT(ada.status().message(), HasSubstr("scope 2"));
  ZEUS_EXPECT_OK(gpus[1]->DomainPowerMw(PowerDomain::kMemoryAverage).status());
}

TEST_F(NvmlPowerDomainsTest,
       WithoutFieldValuesInstantFallsBackToPowerUsageAndTheRestIsUnsupported) {
  env_.Set(fake::kPowerMw, "120000");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_V1)));
  ZEUS_ASSERT_OK_AND_ASSIGN(uint32_t instant_mw,
                            gpus[0]->DomainPowerMw(PowerDomain::kDeviceInstant));
  EXPECT_EQ(instant_mw, 120'000u);
  StatusOr<uint32_t> average = gpus[0]->DomainPowerMw(PowerDomain::kDeviceAverage);
  ASSERT_FALSE(average.ok());
  EXPECT_EQ(average.status().code(), StatusCode::kNotSupported);
  EXPECT_THAT(average.status().message(), HasSubstr("nvmlDeviceGetFieldValues"));
  StatusOr<int32_t> temperature = gpus[0]->TemperatureC();
  ASSERT_FALSE(temperature.ok());
  EXPECT_EQ(temperature.status().code(), StatusCode::kNotSupported);
  EXPECT_THAT(temperature.status().message(), HasSubstr("nvmlDeviceGetTemperature"));
}

TEST_F(NvmlPowerDomainsTest, DryRunGpusStillReadEveryDomainAndTheTemperature) {
  // ZEUS_DRY_RUN wraps each GPU in a decorator: reads must reach NVML.
  env_.Set("ZEUS_DRY_RUN", "1");
  env_.Set(fake::kPowerMw, "210000");
  env_.Set(fake::kTemperaturesC, "58,59");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
  ZEUS_ASSERT_OK_AND_ASSIGN(uint32_t average_mw,
                            gpus[1]->DomainPowerMw(PowerDomain::kDeviceAverage));
  ZEUS_ASSERT_OK_AND_ASSIGN(uint32_t memory_mw,
                            gpus[1]->DomainPowerMw(PowerDomain::kMemoryAverage));
  ZEUS_ASSERT_OK_AND_ASSIGN(int32_t temperature_c, gpus[1]->TemperatureC());
  EXPECT_EQ(average_mw, 210'000u);
  EXPECT_EQ(memory_mw, 21'000u);
  EXPECT_EQ(temperature_c, 59);
}

TEST_F(NvmlPowerDomainsTest, TemperatureIsReadPerGpu) {
  env_.Set(fake::kTemperaturesC, "51,67");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
  ZEUS_ASSERT_OK_AND_ASSIGN(int32_t t0, gpus[0]->TemperatureC());
  ZEUS_ASSERT_OK_AND_ASSIGN(int32_t t1, gpus[1]->TemperatureC());
  EXPECT_EQ(t0, 51);
  EXPECT_EQ(t1, 67);
}

TEST_F(NvmlPowerDomainsTest, TheCounterFollowsTheBurstSignalAndMovesEveryUpdatePeriod) {
  env_.Set(fake::kPowerMw, "100000");
  env_.Set(fake::kBurst, "100,300000");  // Mean 200 W.
  env_.Set(fake::kEnergyUpdateMs, "100");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
  ZEUS_ASSERT_OK_AND_ASSIGN(uint64_t first_mj, gpus[0]->TotalEnergyMj());
  ZEUS_ASSERT_OK_AND_ASSIGN(uint64_t again_mj, gpus[0]->TotalEnergyMj());
  // Two reads microseconds apart almost always see the same update.
  EXPECT_LE(again_mj - first_mj, 30'000u);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  ZEUS_ASSERT_OK_AND_ASSIGN(uint64_t later_mj, gpus[0]->TotalEnergyMj());
  // ~1 s at a mean of 200 W, quantised to whole 100 ms updates of 20 J.
  EXPECT_NEAR(static_cast<double>(later_mj - first_mj), 200'000.0, 45'000.0);
}

}  // namespace
}  // namespace zeus
