// Read-only checks of the NVML backend on a real GPU (ctest label "gpu").
// Skips when NVML cannot be loaded; never changes device state: the only
// setter call happens under ZEUS_DRY_RUN and asks for the current limit.

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "zeus/device/devices.h"

#include "tests/device/scoped_env.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

class NvmlRealGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto gpus = OpenGpus();
    if (!gpus.ok() && gpus.status().code() == StatusCode::kUnavailable) {
      GTEST_SKIP() << "no NVML here: " << gpus.status().ToString();
    }
    ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
    if (gpus->empty()) GTEST_SKIP() << "NVML sees no GPU";
    gpus_ = std::move(gpus).value();
  }

  std::vector<std::unique_ptr<Gpu>> gpus_;
};

TEST_F(NvmlRealGpuTest, ReportsConsistentLimitsAndPower) {
  for (const auto& gpu : gpus_) {
    SCOPED_TRACE("GPU " + std::to_string(gpu->index()));
    ZEUS_ASSERT_OK_AND_ASSIGN(std::string name, gpu->Name());
    EXPECT_FALSE(name.empty());
    ZEUS_ASSERT_OK_AND_ASSIGN(std::string uuid, gpu->Uuid());
    EXPECT_EQ(uuid.rfind("GPU-", 0), 0u) << uuid;
    ZEUS_ASSERT_OK_AND_ASSIGN(PowerLimitConstraints c, gpu->PowerLimitConstraintsMw());
    EXPECT_LT(c.min_mw, c.max_mw);
    ZEUS_ASSERT_OK_AND_ASSIGN(uint32_t default_mw, gpu->DefaultPowerLimitMw());
    EXPECT_GE(default_mw, c.min_mw);
    EXPECT_LE(default_mw, c.max_mw);
    ZEUS_ASSERT_OK_AND_ASSIGN(uint32_t limit_mw, gpu->PowerLimitMw());
    ZEUS_ASSERT_OK_AND_ASSIGN(uint32_t enforced_mw, gpu->EnforcedPowerLimitMw());
    EXPECT_LE(enforced_mw, limit_mw);
    ZEUS_ASSERT_OK_AND_ASSIGN(uint32_t power_mw, gpu->PowerMw());
    EXPECT_GT(power_mw, 0u);
    EXPECT_LT(power_mw, 2 * c.max_mw);
  }
}

TEST_F(NvmlRealGpuTest, EnergyCounterIsMonotonicWhereSupported) {
  for (const auto& gpu : gpus_) {
    auto first = gpu->TotalEnergyMj();
    if (first.status().code() == StatusCode::kNotSupported) continue;  // Pre-Volta.
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ZEUS_ASSERT_OK_AND_ASSIGN(uint64_t second, gpu->TotalEnergyMj());
    EXPECT_GT(second, *first) << "the counter moves about every 100 ms";
  }
}

TEST_F(NvmlRealGpuTest, DryRunSetterSucceedsAndChangesNothing) {
  testing::ScopedEnv env;
  env.Set("ZEUS_DRY_RUN", "1");
  for (const auto& gpu : gpus_) {
    ZEUS_ASSERT_OK_AND_ASSIGN(uint32_t before_mw, gpu->PowerLimitMw());
    ZEUS_EXPECT_OK(gpu->SetPowerLimitMw(before_mw));
    EXPECT_EQ(gpu->PowerLimitMw().value(), before_mw);
  }
}

}  // namespace
}  // namespace zeus
