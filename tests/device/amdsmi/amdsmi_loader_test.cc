// The real AMD SMI backend against the fake libamd_smi variants
// (fake_amdsmi/), and the choice of one vendor on a machine with both.

#include <dlfcn.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "zeus/device/devices.h"
#include "zeus/device/environment.h"
#include "zeus/util/file.h"

#include "src/device/amdsmi/amdsmi_backend.h"
#include "src/device/amdsmi/amdsmi_gpu.h"
#include "src/device/gpu_decorator.h"
#include "tests/device/fake_amdsmi/fake_amdsmi_config.h"
#include "tests/device/fake_nvml/fake_nvml_config.h"
#include "tests/device/scoped_env.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

namespace fake = testing::fake_amdsmi;
using ::testing::HasSubstr;
using ::testing::Not;

// Clears every knob of both fakes (and the variables the backends read) so
// each test starts from the fakes' defaults, with no NVML library and the
// energy counter check off unless a test turns it on.
class AmdsmiLoaderTest : public ::testing::Test {
 protected:
  AmdsmiLoaderTest() {
    for (const char* name : {fake::kGpus,
                             fake::kNames,
                             fake::kInitRc,
                             fake::kEnergyRc,
                             fake::kSetRc,
                             fake::kLostAfterReads,
                             fake::kPowerMw,
                             fake::kPowerField,
                             fake::kAveragePowerMw,
                             fake::kEnergyStepMj,
                             fake::kEnergyStepMjByLimit,
                             fake::kPowerLimitsMw,
                             fake::kEnergyFromPower,
                             fake::kEnergyScale,
                             fake::kTemperatureC,
                             fake::kGraphicsClocksMhz,
                             fake::kClkFreqRc,
                             fake::kLog,
                             fake::kStateFile,
                             testing::fake_nvml::kGpus,
                             "ZEUS_DRY_RUN",
                             "HIP_VISIBLE_DEVICES",
                             "CUDA_VISIBLE_DEVICES",
                             "ROCM_PATH"}) {
      env_.Unset(name);
    }
    env_.Set("ZEUS_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1");
    env_.Set(amdsmi::kLibraryEnv, FAKE_AMDSMI_FULL);
    env_.Set(amdsmi::kEnergyCheckMsEnv, "0");
  }

  // The entry `name` of DescribeGpuBackends.
  static GpuBackendDescription Backend(const std::string& name) {
    for (GpuBackendDescription& backend : DescribeGpuBackends()) {
      if (backend.name == name) return backend;
    }
    ADD_FAILURE() << "no backend " << name;
    return {};
  }

  static std::string Version(const GpuBackendDescription& backend, const std::string& component) {
    for (const auto& [name, version] : backend.versions) {
      if (name == component) return version;
    }
    return "";
  }

  // GPU `index`'s supported graphics clocks, through GPUs opened for this
  // read alone (the fake reads its knobs when AMD SMI is initialised).
  static StatusOr<std::vector<uint32_t>> GraphicsClocksOfGpu(size_t index) {
    ZEUS_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Gpu>> gpus, OpenGpus());
    return gpus.at(index)->SupportedGraphicsClocksMhz();
  }

  // The AmdsmiGpu inside the backend's decorators (dry run, daemon relay).
  static amdsmi::AmdsmiGpu& Amd(const std::unique_ptr<Gpu>& gpu) {
    Gpu* g = gpu.get();
    while (auto* decorator = dynamic_cast<GpuDecorator*>(g)) g = &decorator->inner();
    return dynamic_cast<amdsmi::AmdsmiGpu&>(*g);
  }

  testing::ScopedEnv env_;
};

TEST_F(AmdsmiLoaderTest, MissingLibrariesAreUnavailableAndNameEveryPath) {
  env_.Set(amdsmi::kLibraryEnv, "/nonexistent/libamd_smi.so");
  auto gpus = OpenGpus();
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(gpus.status().message(), HasSubstr("NVML: "));
  EXPECT_THAT(gpus.status().message(), HasSubstr("/nonexistent/libnvidia-ml.so.1"));
  EXPECT_THAT(gpus.status().message(), HasSubstr("AMD SMI: "));
  EXPECT_THAT(gpus.status().message(), HasSubstr("/nonexistent/libamd_smi.so"));
  GpuBackendDescription amd = Backend("amdsmi");
  EXPECT_FALSE(amd.loaded);
  EXPECT_FALSE(amd.in_use);
  EXPECT_EQ(amd.status.code(), StatusCode::kUnavailable);
}

TEST_F(AmdsmiLoaderTest, DefaultPathsIncludeRocmPath) {
  env_.Set(amdsmi::kLibraryEnv, "");
  env_.Set("ROCM_PATH", "/nonexistent/rocm-9.9");
  auto gpus = OpenGpus();
  ASSERT_FALSE(gpus.ok());
  EXPECT_THAT(gpus.status().message(), HasSubstr("libamd_smi.so ("));
  EXPECT_THAT(gpus.status().message(), HasSubstr("/nonexistent/rocm-9.9/lib/libamd_smi.so"));
}

TEST_F(AmdsmiLoaderTest, ReadsEveryPropertyThroughTheFullLibrary) {
  env_.Set(fake::kNames, "AMD Instinct MI300X,AMD Instinct MI250X");
  env_.Set(fake::kPowerMw, "420000");
  env_.Set(fake::kTemperatureC, "71");
  env_.Set(fake::kPowerLimitsMw, "550000");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
  ASSERT_EQ(gpus.size(), 2u);
  Gpu& mi300 = *gpus[0];
  EXPECT_EQ(mi300.index(), 0);
  EXPECT_EQ(mi300.Name().value(), "AMD Instinct MI300X");
  EXPECT_EQ(gpus[1]->Name().value(), "AMD Instinct MI250X");
  EXPECT_EQ(mi300.Uuid().value(), std::string(fake::kUuidPrefix) + "000000000000");
  ZEUS_ASSERT_OK_AND_ASSIGN(PowerLimitConstraints c, mi300.PowerLimitConstraintsMw());
  EXPECT_EQ(c.min_mw, fake::kMinLimitMw);
  EXPECT_EQ(c.max_mw, fake::kMaxLimitMw);
  EXPECT_EQ(mi300.DefaultPowerLimitMw().value(), fake::kDefaultLimitMw);
  EXPECT_EQ(mi300.PowerLimitMw().value(), 550'000u);
  EXPECT_EQ(mi300.EnforcedPowerLimitMw().value(), 550'000u);
  EXPECT_EQ(gpus[1]->PowerLimitMw().value(), fake::kDefaultLimitMw);
  EXPECT_EQ(mi300.PowerMw().value(), 420'000u);
  ZEUS_ASSERT_OK_AND_ASSIGN(uint64_t e1, mi300.TotalEnergyMj());
  ZEUS_ASSERT_OK_AND_ASSIGN(uint64_t e2, mi300.TotalEnergyMj());
  EXPECT_EQ(e2 - e1, 1000u);  // Counter ticks x 15.625 uJ, exactly.
  EXPECT_EQ(e1, 1'000'000u + 1000u);
  EXPECT_EQ(Amd(gpus[0]).TemperatureC().value(), 71);
  EXPECT_EQ(Amd(gpus[0]).PciBusId().value(), "0000:c1:00.0");
  EXPECT_EQ(Amd(gpus[1]).PciBusId().value(), "0000:c2:00.0");
  EXPECT_EQ(mi300.PersistenceMode().status().code(), StatusCode::kNotSupported);
  EXPECT_EQ(mi300.SetPersistenceMode(true).code(), StatusCode::kNotSupported);
  EXPECT_EQ(mi300.Architecture().status().code(), StatusCode::kNotSupported);
  EXPECT_EQ(mi300.ResetGpuLockedClocks().code(), StatusCode::kNotSupported);
}

TEST_F(AmdsmiLoaderTest, DescribesVersionsAndThatItIsInUse) {
  GpuBackendDescription amd = Backend("amdsmi");
  ZEUS_ASSERT_OK(amd.status);
  EXPECT_TRUE(amd.loaded);
  EXPECT_EQ(amd.display_name, "AMD SMI");
  EXPECT_EQ(Version(amd, "driver"), fake::kDriverVersion);
  EXPECT_EQ(Version(amd, "amdsmi"), fake::kLibraryVersion);
  EXPECT_TRUE(amd.in_use);
  EXPECT_EQ(amd.selection, "in use: 2 GPUs");
  GpuBackendDescription nvml = Backend("nvml");
  EXPECT_FALSE(nvml.loaded);
  EXPECT_FALSE(nvml.in_use);
}

TEST_F(AmdsmiLoaderTest, MinimalLibraryReportsMissingOptionalsAsUnsupported) {
  env_.Set(amdsmi::kLibraryEnv, FAKE_AMDSMI_MINIMAL);
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[1]->PowerMw().value(), 150'000u);
  EXPECT_EQ(gpus[1]->PowerLimitMw().value(), fake::kDefaultLimitMw);
  auto energy = gpus[1]->TotalEnergyMj();
  EXPECT_EQ(energy.status().code(), StatusCode::kNotSupported);
  EXPECT_THAT(energy.status().message(), HasSubstr("amdsmi_get_energy_count"));
  EXPECT_THAT(gpus[1]->Name().status().message(), HasSubstr("amdsmi_get_gpu_asic_info"));
  Status set = gpus[1]->SetPowerLimitMw(300'000);
  EXPECT_EQ(set.code(), StatusCode::kNotSupported);
  EXPECT_THAT(set.message(), HasSubstr("GPU 1: AMD SMI library"));
  EXPECT_THAT(set.message(), HasSubstr("lacks amdsmi_set_power_cap"));
  EXPECT_EQ(Backend("amdsmi").status.code(), StatusCode::kNotSupported);
  EXPECT_TRUE(Backend("amdsmi").loaded);
}

TEST_F(AmdsmiLoaderTest, SupportedGraphicsClocksAreTheDpmLevelsInMhzHighestFirst) {
  EXPECT_THAT(GraphicsClocksOfGpu(0).value(), ::testing::ElementsAre(2100u, 1300u, 500u));
  env_.Set(fake::kGraphicsClocksMhz, "800,1700,1700,1200");
  EXPECT_THAT(GraphicsClocksOfGpu(1).value(), ::testing::ElementsAre(1700u, 1200u, 800u));
}

TEST_F(AmdsmiLoaderTest, GraphicsClocksThatCannotBeListedSayWhy) {
  env_.Set(fake::kGraphicsClocksMhz, "");
  auto none = GraphicsClocksOfGpu(0);
  EXPECT_EQ(none.status().code(), StatusCode::kNotSupported);
  EXPECT_THAT(none.status().message(),
              HasSubstr("GPU 0: amdsmi_get_clk_freq(AMDSMI_CLK_TYPE_SYS) lists no level"));
  std::string many = "100";
  for (int mhz = 150; mhz <= 1750; mhz += 50) many += "," + std::to_string(mhz);
  env_.Set(fake::kGraphicsClocksMhz, many);  // 34 levels.
  auto too_many = GraphicsClocksOfGpu(0);
  EXPECT_EQ(too_many.status().code(), StatusCode::kInternal);
  EXPECT_THAT(too_many.status().message(), HasSubstr("reports 34 levels, more than the 33"));
  env_.Set(fake::kClkFreqRc, "2");  // AMDSMI_STATUS_NOT_SUPPORTED
  auto refused = GraphicsClocksOfGpu(0);
  EXPECT_EQ(refused.status().code(), StatusCode::kNotSupported);
  EXPECT_THAT(refused.status().message(), HasSubstr("amdsmi_get_clk_freq(AMDSMI_CLK_TYPE_SYS)"));
  env_.Set(amdsmi::kLibraryEnv, FAKE_AMDSMI_MINIMAL);
  auto missing = GraphicsClocksOfGpu(0);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotSupported);
  EXPECT_THAT(missing.status().message(), HasSubstr("lacks amdsmi_get_clk_freq"));
}

TEST_F(AmdsmiLoaderTest, MissingRequiredSymbolIsUnavailableAndNamed) {
  env_.Set(amdsmi::kLibraryEnv, FAKE_AMDSMI_NO_POWER);
  auto gpus = OpenGpus();
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(gpus.status().message(), HasSubstr("required symbol amdsmi_get_power_info"));
  EXPECT_THAT(gpus.status().message(), HasSubstr(FAKE_AMDSMI_NO_POWER));
}

TEST_F(AmdsmiLoaderTest, InitFailureNamesTheCallAndCode) {
  env_.Set(fake::kInitRc, "34");  // AMDSMI_STATUS_DRIVER_NOT_LOADED
  auto gpus = OpenGpus();
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(gpus.status().message(),
              HasSubstr("amdsmi_init(AMDSMI_INIT_AMD_GPUS): AMDSMI_STATUS_DRIVER_NOT_LOADED: "
                        "Driver not loaded (AMDSMI_STATUS_DRIVER_NOT_LOADED, 34)"));
}

TEST_F(AmdsmiLoaderTest, ShutsDownAndUnloadsWhenTheLastGpuGoes) {
  testing::TempDir dir;
  const std::string log = dir.File("amdsmi.log");
  env_.Set(fake::kLog, log);
  {
    ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
    std::unique_ptr<Gpu> kept = std::move(gpus[1]);
    gpus.clear();
    void* handle = dlopen(FAKE_AMDSMI_FULL, RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(handle, nullptr);
    dlclose(handle);
    EXPECT_EQ(kept->Name().value(), "Fake MI300X 1");
    EXPECT_EQ(ReadFileToString(log).value(), "init\n");
  }
  EXPECT_EQ(ReadFileToString(log).value(), "init\nshutdown\n");
  EXPECT_EQ(dlopen(FAKE_AMDSMI_FULL, RTLD_NOW | RTLD_NOLOAD), nullptr);
}

TEST_F(AmdsmiLoaderTest, SetsThePowerCapInMicrowatts) {
  testing::TempDir dir;
  const std::string log = dir.File("amdsmi.log");
  env_.Set(fake::kLog, log);
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
  ZEUS_ASSERT_OK(gpus[1]->SetPowerLimitMw(250'000));
  EXPECT_EQ(gpus[1]->PowerLimitMw().value(), 250'000u);
  EXPECT_EQ(gpus[0]->PowerLimitMw().value(), fake::kDefaultLimitMw);
  EXPECT_EQ(ReadFileToString(log).value(), "init\nset_power_limit 1 250000\n");
  // Outside the constraints: refused before AMD SMI is asked.
  Status low = gpus[1]->SetPowerLimitMw(50'000);
  EXPECT_EQ(low.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(low.message(), HasSubstr("GPU 1: amdsmi_set_power_cap(sensor 0, 50000000 uW): "
                                       "50000 mW is outside the allowed range [100000, 700000]"));
  EXPECT_EQ(gpus[1]->PowerLimitMw().value(), 250'000u);
}

TEST_F(AmdsmiLoaderTest, NoPermissionOnSetIsPermissionDenied) {
  env_.Set(fake::kSetRc, "10");  // AMDSMI_STATUS_NO_PERM
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
  Status status = gpus[0]->SetPowerLimitMw(300'000);
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(status.message(),
              HasSubstr("GPU 0: amdsmi_set_power_cap(sensor 0, 300000000 uW): "
                        "AMDSMI_STATUS_NO_PERM: Permission denied (AMDSMI_STATUS_NO_PERM, 10)"));
  EXPECT_THAT(status.message(), HasSubstr("ZEUS_DRY_RUN"));
  EXPECT_EQ(gpus[0]->PowerLimitMw().value(), fake::kDefaultLimitMw);
}

TEST_F(AmdsmiLoaderTest, DryRunLeavesTheDeviceUntouched) {
  testing::TempDir dir;
  const std::string log = dir.File("amdsmi.log");
  env_.Set(fake::kLog, log);
  env_.Set(fake::kSetRc, "10");  // A real set would be refused.
  env_.Set("ZEUS_DRY_RUN", "1");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
  ZEUS_ASSERT_OK(gpus[0]->SetPowerLimitMw(250'000));
  EXPECT_EQ(gpus[0]->PowerLimitMw().value(), fake::kDefaultLimitMw);
  EXPECT_EQ(ReadFileToString(log).value(), "init\n");
  // A dry run still rejects what the device would reject.
  EXPECT_EQ(gpus[0]->SetPowerLimitMw(50'000).code(), StatusCode::kInvalidArgument);
  env_.Set("ZEUS_DRY_RUN", "0");
  EXPECT_EQ(gpus[0]->SetPowerLimitMw(250'000).code(), StatusCode::kPermissionDenied);
}

TEST_F(AmdsmiLoaderTest, PowerComesFromTheAverageFieldOnOlderGpus) {
  env_.Set(fake::kPowerField, "average");
  env_.Set(fake::kPowerMw, "300000");
  {
    ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
    EXPECT_EQ(gpus[0]->PowerMw().value(), 300'000u);
  }
  // (The fake reads its knobs at the first initialisation, so reopen.)
  env_.Set(fake::kPowerField, "none");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto odd, OpenGpus());
  auto power = odd[0]->PowerMw();
  EXPECT_EQ(power.status().code(), StatusCode::kNotSupported);
  EXPECT_THAT(power.status().message(), HasSubstr("reports no socket power"));
}

TEST_F(AmdsmiLoaderTest, AveragePowerIsTheAverageSocketPowerField) {
  env_.Set(fake::kPowerMw, "300000");
  env_.Set(fake::kAveragePowerMw, "280000");
  {
    ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
    EXPECT_EQ(gpus[0]->DomainPowerMw(PowerDomain::kDeviceInstant).value(), 300'000u);
    EXPECT_EQ(gpus[0]->DomainPowerMw(PowerDomain::kDeviceAverage).value(), 280'000u);
    auto memory = gpus[0]->DomainPowerMw(PowerDomain::kMemoryAverage);
    EXPECT_EQ(memory.status().code(), StatusCode::kNotSupported);
    EXPECT_THAT(memory.status().message(), HasSubstr("memory_average"));
  }
  // A GPU that reports only the current socket power (MI300 and newer).
  env_.Set(fake::kPowerField, "current_only");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto mi300, OpenGpus());
  EXPECT_EQ(mi300[0]->DomainPowerMw(PowerDomain::kDeviceInstant).value(), 300'000u);
  auto average = mi300[0]->DomainPowerMw(PowerDomain::kDeviceAverage);
  EXPECT_EQ(average.status().code(), StatusCode::kNotSupported);
  EXPECT_THAT(average.status().message(), HasSubstr("no average socket power"));
}

TEST_F(AmdsmiLoaderTest, EnergyCounterThatAgreesWithPowerIsKept) {
  env_.Set(amdsmi::kEnergyCheckMsEnv, "60");
  env_.Set(fake::kEnergyFromPower, "1");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
  ZEUS_EXPECT_OK(gpus[0]->TotalEnergyMj().status());
  ZEUS_EXPECT_OK(gpus[1]->TotalEnergyMj().status());
}

TEST_F(AmdsmiLoaderTest, EnergyCounterTenTimesTooFastIsDisabledAndPowerStillWorks) {
  env_.Set(amdsmi::kEnergyCheckMsEnv, "60");
  env_.Set(fake::kEnergyFromPower, "1");
  env_.Set(fake::kEnergyScale, "30");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
  for (const auto& gpu : gpus) {
    auto energy = gpu->TotalEnergyMj();
    EXPECT_EQ(energy.status().code(), StatusCode::kNotSupported);
    EXPECT_THAT(energy.status().message(), HasSubstr("energy counter disabled at open"));
    EXPECT_THAT(energy.status().message(), HasSubstr("more than 10x apart"));
    EXPECT_THAT(energy.status().message(), HasSubstr("integrate PowerMw() instead"));
    EXPECT_EQ(gpu->PowerMw().value(), 150'000u);
    // The counter itself still reads: it is our verdict that hides it.
    ZEUS_EXPECT_OK(Amd(gpu).ReadEnergyCounterMj().status());
  }
}

TEST_F(AmdsmiLoaderTest, EnergyCounterTenTimesTooSlowIsDisabled) {
  env_.Set(amdsmi::kEnergyCheckMsEnv, "60");
  env_.Set(fake::kEnergyFromPower, "1");
  env_.Set(fake::kEnergyScale, "0.02");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
  EXPECT_EQ(gpus[0]->TotalEnergyMj().status().code(), StatusCode::kNotSupported);
}

TEST_F(AmdsmiLoaderTest, EnergyCounterIsDisabledWhenPowerReadsZeroOrCounterFails) {
  env_.Set(amdsmi::kEnergyCheckMsEnv, "20");
  env_.Set(fake::kEnergyFromPower, "1");
  env_.Set(fake::kPowerMw, "0");
  {
    ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
    auto energy = gpus[0]->TotalEnergyMj();
    EXPECT_EQ(energy.status().code(), StatusCode::kNotSupported);
    EXPECT_THAT(energy.status().message(), HasSubstr("power reads as 0 mW"));
  }
  env_.Set(fake::kPowerMw, "150000");
  env_.Set(fake::kEnergyRc, "2");  // AMDSMI_STATUS_NOT_SUPPORTED
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
  auto energy = gpus[0]->TotalEnergyMj();
  EXPECT_EQ(energy.status().code(), StatusCode::kNotSupported);
  EXPECT_THAT(energy.status().message(), HasSubstr("energy counter unusable"));
  EXPECT_THAT(energy.status().message(), HasSubstr("amdsmi_get_energy_count"));
}

TEST_F(AmdsmiLoaderTest, CheckOffTrustsEvenAWrongCounterAndBadIntervalIsRejected) {
  env_.Set(fake::kEnergyFromPower, "1");
  env_.Set(fake::kEnergyScale, "100");
  {
    ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
    ZEUS_EXPECT_OK(gpus[0]->TotalEnergyMj().status());
  }
  env_.Set(amdsmi::kEnergyCheckMsEnv, "half a second");
  auto bad = OpenGpus();
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("ZEUS_AMDSMI_ENERGY_CHECK_MS=\"half a second\""));
}

TEST_F(AmdsmiLoaderTest, HipVisibleDevicesWinsOverCudaVisibleDevices) {
  env_.Set(fake::kGpus, "4");
  env_.Set(fake::kSetRc, "10");
  env_.Set("CUDA_VISIBLE_DEVICES", "1");
  {
    ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
    ASSERT_EQ(gpus.size(), 1u);
    EXPECT_EQ(gpus[0]->Name().value(), "Fake MI300X 1");
  }
  env_.Set("HIP_VISIBLE_DEVICES", "3,0");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0]->index(), 0);
  EXPECT_EQ(gpus[0]->Name().value(), "Fake MI300X 3");
  EXPECT_EQ(gpus[1]->index(), 1);
  EXPECT_EQ(gpus[1]->Name().value(), "Fake MI300X 0");
  EXPECT_EQ(Amd(gpus[0]).amdsmi_index(), 3u);
  // Errors name our index and AMD SMI's.
  EXPECT_THAT(gpus[0]->SetPowerLimitMw(200'000).message(), HasSubstr("GPU 0 (AMD SMI index 3)"));
  EXPECT_EQ(Backend("amdsmi").selection, "in use: 2 GPUs");
}

TEST_F(AmdsmiLoaderTest, MalformedVisibleDevicesFailTheCall) {
  env_.Set("HIP_VISIBLE_DEVICES", "0,7");
  auto gpus = OpenGpus();
  EXPECT_EQ(gpus.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(gpus.status().message(), HasSubstr("HIP_VISIBLE_DEVICES=\"0,7\": entry 2 \"7\""));
  EXPECT_THAT(gpus.status().message(), HasSubstr("AMD SMI found 2"));
}

TEST_F(AmdsmiLoaderTest, GpuLostMidRunTurnsReadsUnavailable) {
  env_.Set(fake::kLostAfterReads, "3");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
  ZEUS_EXPECT_OK(gpus[0]->TotalEnergyMj().status());
  ZEUS_EXPECT_OK(gpus[0]->PowerMw().status());
  ZEUS_EXPECT_OK(gpus[1]->TotalEnergyMj().status());
  auto energy = gpus[0]->TotalEnergyMj();
  EXPECT_EQ(energy.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(energy.status().message(), HasSubstr("(AMDSMI_STATUS_DRIVER_NOT_LOADED, 34)"));
  EXPECT_EQ(gpus[1]->Name().status().code(), StatusCode::kUnavailable);
}

// A machine with both libraries: NVML is tried first and, finding GPUs, is
// the only vendor used; show-env says so for both.
TEST_F(AmdsmiLoaderTest, MixedMachineUsesNvmlAndSaysWhyAmdIsNot) {
  env_.Set("ZEUS_NVML_LIBRARY", FAKE_NVML_FULL);
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_THAT(gpus[0]->Name().value(), HasSubstr("H100"));
  EXPECT_THAT(gpus[1]->Name().value(), HasSubstr("H100"));

  GpuBackendDescription nvml = Backend("nvml");
  EXPECT_TRUE(nvml.in_use);
  EXPECT_EQ(nvml.selection, "in use: 2 GPUs");
  GpuBackendDescription amd = Backend("amdsmi");
  EXPECT_TRUE(amd.loaded);
  EXPECT_FALSE(amd.in_use);
  EXPECT_EQ(amd.selection, "not used: NVML found 2 GPUs first (one GPU vendor per process)");

  EnvironmentOptions options;
  options.powercap_root = "/nonexistent/powercap";
  std::ostringstream text;
  WriteEnvironmentText(DescribeEnvironment(options), text);
  EXPECT_THAT(text.str(), HasSubstr("NVML: driver"));
  EXPECT_THAT(text.str(), HasSubstr("[in use: 2 GPUs]"));
  EXPECT_THAT(text.str(),
              HasSubstr("AMD SMI: driver 6.99.88, amdsmi 25.9.9-fake [not used: NVML found 2 GPUs "
                        "first (one GPU vendor per process)]"));
}

// Same machine, but NVML sees no GPU: the AMD GPUs are used.
TEST_F(AmdsmiLoaderTest, MixedMachineFallsBackToAmdWhenNvmlFindsNone) {
  env_.Set("ZEUS_NVML_LIBRARY", FAKE_NVML_FULL);
  env_.Set(testing::fake_nvml::kGpus, "0");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0]->Name().value(), "Fake MI300X 0");
  EXPECT_EQ(gpus[0]->index(), 0);
  EXPECT_EQ(Backend("nvml").selection, "no GPUs");
  EXPECT_FALSE(Backend("nvml").in_use);
  EXPECT_TRUE(Backend("amdsmi").in_use);
  EXPECT_THAT(Backend("amdsmi").selection, Not(HasSubstr("not used")));
}

}  // namespace
}  // namespace zeus
