// The AMD SMI backend's clocks against the fake libamd_smi: the memory and
// graphics DPM levels, locking a range (amdsmi_set_gpu_clk_range), resets
// of one domain, and ZEUS_DRY_RUN.

#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "zeus/device/devices.h"
#include "zeus/util/file.h"

#include "src/device/amdsmi/amdsmi_backend.h"
#include "tests/device/fake_amdsmi/fake_amdsmi_config.h"
#include "tests/device/fake_nvml/fake_nvml_config.h"
#include "tests/device/scoped_env.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

namespace fake = testing::fake_amdsmi;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The fake's clock knobs cleared, no NVML, the energy check off, and the
// fake's calls logged to a file.
class AmdsmiClocksTest : public ::testing::Test {
 protected:
  AmdsmiClocksTest() {
    for (const char* name :
         {fake::kGpus, fake::kGraphicsClocksMhz, fake::kMemoryClocksMhz, fake::kClkFreqRc,
          fake::kSetClkRc, fake::kStateFile, testing::fake_nvml::kGpus, "ZEUS_DRY_RUN",
          "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"}) {
      env_.Unset(name);
    }
    env_.Set("ZEUS_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1");
    env_.Set(amdsmi::kLibraryEnv, FAKE_AMDSMI_FULL);
    env_.Set(amdsmi::kEnergyCheckMsEnv, "0");
    env_.Set(fake::kLog, log_);
  }

  // What the fake logged after "init".
  std::string Logged() const {
    std::string text = ReadFileToString(log_).value_or("");
    return text.rfind("init\n", 0) == 0 ? text.substr(5) : text;
  }

  testing::ScopedEnv env_;
  testing::TempDir dir_;
  const std::string log_ = dir_.File("amdsmi.log");
};

TEST_F(AmdsmiClocksTest, MemoryClocksAreTheMemoryDpmLevelsInMhzHighestFirst) {
  {
    ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
    EXPECT_THAT(gpus[0]->SupportedMemoryClocksMhz().value(), ElementsAre(1300u, 900u));
  }
  env_.Set(fake::kMemoryClocksMhz, "1600,900,1600,1200");
  {
    ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
    EXPECT_THAT(gpus[1]->SupportedMemoryClocksMhz().value(), ElementsAre(1600u, 1200u, 900u));
  }
  env_.Set(fake::kMemoryClocksMhz, "");
  {
    ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
    auto none = gpus[0]->SupportedMemoryClocksMhz();
    EXPECT_EQ(none.status().code(), StatusCode::kNotSupported);
    EXPECT_THAT(none.status().message(),
                HasSubstr("GPU 0: amdsmi_get_clk_freq(AMDSMI_CLK_TYPE_MEM) lists no level"));
  }
  env_.Set(amdsmi::kLibraryEnv, FAKE_AMDSMI_MINIMAL);
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
  auto missing = gpus[0]->SupportedMemoryClocksMhz();
  EXPECT_EQ(missing.status().code(), StatusCode::kNotSupported);
  EXPECT_THAT(missing.status().message(), HasSubstr("lacks amdsmi_get_clk_freq"));
}

TEST_F(AmdsmiClocksTest, GraphicsClocksDoNotDependOnTheMemoryClockButNameAnUnknownOne) {
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
  EXPECT_THAT(gpus[0]->SupportedGraphicsClocksMhz(900).value(), ElementsAre(2100u, 1300u, 500u));
  EXPECT_EQ(gpus[0]->SupportedGraphicsClocksMhz(1300).value(),
            gpus[0]->SupportedGraphicsClocksMhz(0).value());
  auto unknown = gpus[1]->SupportedGraphicsClocksMhz(1000);
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(unknown.status().message(),
              HasSubstr("GPU 1: memory clock 1000 MHz is not a supported memory clock "
                        "(supported: 1300, 900 MHz)"));
}

TEST_F(AmdsmiClocksTest, LocksSetTheRangeOfTheGraphicsOrMemoryClock) {
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
  ZEUS_ASSERT_OK(gpus[1]->SetGpuLockedClocksMhz(500, 1300));
  ZEUS_ASSERT_OK(gpus[0]->SetMemoryLockedClocksMhz(900, 900));
  EXPECT_EQ(Logged(), "set_gpu_locked_clocks 1 500 1300\nset_mem_locked_clocks 0 900 900\n");
  // Min above max: refused before AMD SMI is asked.
  Status reversed = gpus[0]->SetGpuLockedClocksMhz(1300, 500);
  EXPECT_EQ(reversed.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(reversed.message(),
              HasSubstr("GPU 0: amdsmi_set_gpu_clk_range(1300-500 MHz, AMDSMI_CLK_TYPE_SYS): "
                        "min above max"));
  // Outside the levels: AMD SMI's refusal, named.
  Status outside = gpus[0]->SetMemoryLockedClocksMhz(900, 2000);
  EXPECT_FALSE(outside.ok());
  EXPECT_THAT(outside.message(),
              HasSubstr("GPU 0: amdsmi_set_gpu_clk_range(900-2000 MHz, AMDSMI_CLK_TYPE_MEM)"));
  EXPECT_EQ(Logged(), "set_gpu_locked_clocks 1 500 1300\nset_mem_locked_clocks 0 900 900\n");
}

TEST_F(AmdsmiClocksTest, OneDomainCannotBeResetAlone) {
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
  for (Status reset : {gpus[0]->ResetGpuLockedClocks(), gpus[0]->ResetMemoryLockedClocks()}) {
    EXPECT_EQ(reset.code(), StatusCode::kNotSupported);
    EXPECT_THAT(reset.message(), HasSubstr("AMD SMI resets every clock domain at once"));
  }
  EXPECT_THAT(gpus[0]->ResetMemoryLockedClocks().message(),
              HasSubstr("GPU 0: resetting only the memory locked clocks is not supported"));
}

TEST_F(AmdsmiClocksTest, UnlockingLocksTheDomainToItsWholeRange) {
  {
    ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
    ZEUS_ASSERT_OK(gpus[0]->SetGpuLockedClocksMhz(1300, 1300));
    ZEUS_ASSERT_OK(gpus[1]->SetMemoryLockedClocksMhz(900, 900));
    ZEUS_ASSERT_OK(UnlockClocks(*gpus[0], /*memory=*/false));
    ZEUS_ASSERT_OK(UnlockClocks(*gpus[1], /*memory=*/true));
    EXPECT_EQ(Logged(),
              "set_gpu_locked_clocks 0 1300 1300\nset_mem_locked_clocks 1 900 900\n"
              "set_gpu_locked_clocks 0 500 2100\nset_mem_locked_clocks 1 900 1300\n");
  }
  // Without the levels there is no range to widen to: both reasons named.
  env_.Set(fake::kMemoryClocksMhz, "");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
  Status stuck = UnlockClocks(*gpus[0], /*memory=*/true);
  EXPECT_EQ(stuck.code(), StatusCode::kNotSupported);
  EXPECT_THAT(stuck.message(), HasSubstr("GPU 0: unlocking the memory clocks (this backend "
                                         "resets no single clock domain"));
  EXPECT_THAT(stuck.message(),
              HasSubstr("amdsmi_get_clk_freq(AMDSMI_CLK_TYPE_MEM) lists no level"));
}

TEST_F(AmdsmiClocksTest, NoPermissionOrNoFunctionSaySo) {
  env_.Set(fake::kSetClkRc, "10");  // AMDSMI_STATUS_NO_PERM
  {
    ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
    Status denied = gpus[0]->SetGpuLockedClocksMhz(500, 2100);
    EXPECT_EQ(denied.code(), StatusCode::kPermissionDenied);
    EXPECT_THAT(denied.message(), HasSubstr("AMDSMI_STATUS_NO_PERM"));
    EXPECT_THAT(denied.message(), HasSubstr("ZEUS_DRY_RUN"));
  }
  env_.Set(amdsmi::kLibraryEnv, FAKE_AMDSMI_MINIMAL);
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
  for (Status set :
       {gpus[1]->SetGpuLockedClocksMhz(500, 2100), gpus[1]->SetMemoryLockedClocksMhz(900, 1300)}) {
    EXPECT_EQ(set.code(), StatusCode::kNotSupported);
    EXPECT_THAT(set.message(), HasSubstr("GPU 1: AMD SMI library"));
    EXPECT_THAT(set.message(), HasSubstr("lacks amdsmi_set_gpu_clk_range"));
  }
}

TEST_F(AmdsmiClocksTest, DryRunLogsTheLockAndLeavesTheDeviceUntouched) {
  env_.Set(fake::kSetClkRc, "10");  // A real lock would be refused.
  env_.Set("ZEUS_DRY_RUN", "1");
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  spdlog::default_logger()->sinks().push_back(sink);
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
  Status graphics = gpus[0]->SetGpuLockedClocksMhz(500, 1300);
  Status memory = gpus[1]->SetMemoryLockedClocksMhz(900, 1300);
  Status reversed = gpus[1]->SetMemoryLockedClocksMhz(1300, 900);
  spdlog::default_logger()->sinks().pop_back();
  ZEUS_EXPECT_OK(graphics);
  ZEUS_EXPECT_OK(memory);
  EXPECT_EQ(reversed.code(), StatusCode::kInvalidArgument);
  // What the device refuses, a dry run refuses too.
  EXPECT_EQ(gpus[0]->ResetGpuLockedClocks().code(), StatusCode::kNotSupported);
  EXPECT_EQ(Logged(), "");
  std::string text;
  for (const std::string& line : sink->last_formatted()) text += line;
  EXPECT_THAT(text, HasSubstr("ZEUS_DRY_RUN: would lock to 500-1300 MHz the graphics clocks of "
                              "GPU 0"));
  EXPECT_THAT(text, HasSubstr("ZEUS_DRY_RUN: would lock to 900-1300 MHz the memory clocks of "
                              "GPU 1"));
  env_.Set("ZEUS_DRY_RUN", "0");
  EXPECT_EQ(gpus[0]->SetGpuLockedClocksMhz(500, 1300).code(), StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace zeus
