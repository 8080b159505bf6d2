// The real NVML loader against the fake libnvml variants (fake_nvml/).

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "zeus/device/devices.h"
#include "zeus/device/environment.h"
#include "zeus/util/file.h"

#include "src/device/nvml/nvml_library.h"
#include "tests/device/fake_nvml/fake_nvml_config.h"
#include "tests/device/scoped_env.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

namespace fake = testing::fake_nvml;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Clears every knob of the fake (and the variables the loader reads) so each
// test starts from the fake's defaults.
class NvmlLoaderTest : public ::testing::Test {
 protected:
  NvmlLoaderTest() {
    for (const char* name : {fake::kGpus, fake::kNames, fake::kArchitectures, fake::kInitRc,
                             fake::kEnergyRc, fake::kSetRc, fake::kLostAfterReads, fake::kPowerMw,
                             fake::kEnergyStepMj, fake::kLog, fake::kMemoryClocksMhzList,
                             "ZEUS_NVML_LIBRARY", "ZEUS_DRY_RUN", "CUDA_VISIBLE_DEVICES"}) {
      env_.Unset(name);
    }
  }

  static GpuOptions Library(const char* path) {
    GpuOptions options;
    options.environment["ZEUS_NVML_LIBRARY"] = path;
    return options;
  }

  // The NVML entry of DescribeGpuBackends.
  static GpuBackendDescription Nvml(const GpuOptions& options = {}) {
    for (GpuBackendDescription& backend : DescribeGpuBackends(options)) {
      if (backend.name == "nvml") return backend;
    }
    ADD_FAILURE() << "no nvml backend";
    return {};
  }

  // The version of `component` the backend reports, or "" when none.
  static std::string Version(const GpuBackendDescription& backend, const std::string& component) {
    for (const auto& [name, version] : backend.versions) {
      if (name == component) return version;
    }
    return "";
  }

  testing::ScopedEnv env_;
};

TEST_F(NvmlLoaderTest, MissingLibraryIsUnavailableAndNamesThePath) {
  auto gpus = OpenGpus(Library("/nonexistent/libnvidia-ml.so.1"));
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(gpus.status().message(), HasSubstr("/nonexistent/libnvidia-ml.so.1"));
  EXPECT_FALSE(Nvml(Library("/nonexistent/libnvidia-ml.so.1")).status.ok());
  EXPECT_FALSE(Nvml(Library("/nonexistent/libnvidia-ml.so.1")).loaded);
}

TEST_F(NvmlLoaderTest, ZeusNvmlLibraryOverridesThePath) {
  env_.Set("ZEUS_NVML_LIBRARY", FAKE_NVML_FULL);
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus());
  EXPECT_EQ(gpus.size(), 2u);
  GpuBackendDescription nvml = Nvml();
  ZEUS_ASSERT_OK(nvml.status);
  EXPECT_EQ(Version(nvml, "driver"), fake::kDriverVersion);
  EXPECT_EQ(Version(nvml, "nvml"), fake::kNvmlVersion);

  env_.Set("ZEUS_NVML_LIBRARY", "/nonexistent/libfake.so");
  auto missing = OpenGpus();
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("/nonexistent/libfake.so"));
}

TEST_F(NvmlLoaderTest, ReadsEveryPropertyThroughTheFullLibrary) {
  env_.Set(fake::kNames, "NVIDIA H100 80GB HBM3,Tesla V100-SXM2-32GB");
  env_.Set(fake::kArchitectures, "9,5");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
  ASSERT_EQ(gpus.size(), 2u);
  Gpu& h100 = *gpus[0];
  EXPECT_EQ(h100.index(), 0);
  EXPECT_EQ(h100.Name().value(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100.Architecture().value(), "Hopper");
  EXPECT_EQ(gpus[1]->Name().value(), "Tesla V100-SXM2-32GB");
  EXPECT_EQ(gpus[1]->Architecture().value(), "Volta");
  EXPECT_EQ(h100.Uuid().value(), std::string(fake::kUuidPrefix) + "000000000000");
  ZEUS_ASSERT_OK_AND_ASSIGN(PowerLimitConstraints c, h100.PowerLimitConstraintsMw());
  EXPECT_EQ(c.min_mw, fake::kMinLimitMw);
  EXPECT_EQ(c.max_mw, fake::kMaxLimitMw);
  EXPECT_EQ(h100.DefaultPowerLimitMw().value(), fake::kDefaultLimitMw);
  EXPECT_EQ(h100.PowerLimitMw().value(), fake::kDefaultLimitMw);
  EXPECT_EQ(h100.EnforcedPowerLimitMw().value(), fake::kDefaultLimitMw);
  EXPECT_EQ(h100.PersistenceMode().value(), false);
  EXPECT_EQ(h100.PowerMw().value(), 150'000u);
  ZEUS_ASSERT_OK_AND_ASSIGN(uint64_t e1, h100.TotalEnergyMj());
  ZEUS_ASSERT_OK_AND_ASSIGN(uint64_t e2, h100.TotalEnergyMj());
  EXPECT_EQ(e2 - e1, 1000u);
}

TEST_F(NvmlLoaderTest, PrefersVersionedSymbols) {
  ZEUS_ASSERT_OK_AND_ASSIGN(auto library, nvml::NvmlLibrary::Open({FAKE_NVML_FULL}));
  EXPECT_EQ(library->ResolvedName("nvmlInit"), "nvmlInit_v2");
  EXPECT_EQ(library->ResolvedName("nvmlDeviceGetCount"), "nvmlDeviceGetCount_v2");
  EXPECT_EQ(library->ResolvedName("nvmlDeviceGetHandleByIndex"), "nvmlDeviceGetHandleByIndex_v2");
}

TEST_F(NvmlLoaderTest, FallsBackToV1SymbolsAndTreatsMissingOptionalsAsUnsupported) {
  ZEUS_ASSERT_OK_AND_ASSIGN(auto library, nvml::NvmlLibrary::Open({FAKE_NVML_V1}));
  EXPECT_EQ(library->ResolvedName("nvmlInit"), "nvmlInit");
  EXPECT_EQ(library->ResolvedName("nvmlDeviceGetCount"), "nvmlDeviceGetCount");
  EXPECT_EQ(library->ResolvedName("nvmlErrorString"), "");
  EXPECT_EQ(library->functions().error_string, nullptr);

  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_V1)));
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[1]->Name().value(), "Fake H100 1");
  EXPECT_EQ(gpus[1]->PowerMw().value(), 150'000u);
  auto energy = gpus[1]->TotalEnergyMj();
  EXPECT_EQ(energy.status().code(), StatusCode::kNotSupported);
  EXPECT_THAT(energy.status().message(), HasSubstr("nvmlDeviceGetTotalEnergyConsumption"));
  EXPECT_EQ(gpus[1]->Architecture().status().code(), StatusCode::kNotSupported);
  EXPECT_EQ(Nvml(Library(FAKE_NVML_V1)).status.code(), StatusCode::kNotSupported);
}

TEST_F(NvmlLoaderTest, MissingRequiredSymbolIsUnavailableAndNamed) {
  auto gpus = OpenGpus(Library(FAKE_NVML_NO_POWER));
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(gpus.status().message(), HasSubstr("nvmlDeviceGetPowerUsage"));
  EXPECT_THAT(gpus.status().message(), HasSubstr(FAKE_NVML_NO_POWER));
}

TEST_F(NvmlLoaderTest, InitFailureCarriesNvmlMessage) {
  env_.Set(fake::kInitRc, "9");  // NVML_ERROR_DRIVER_NOT_LOADED
  auto gpus = OpenGpus(Library(FAKE_NVML_FULL));
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(gpus.status().message(),
              HasSubstr("nvmlInit_v2: Driver Not Loaded (NVML_ERROR_DRIVER_NOT_LOADED, 9)"));
}

TEST_F(NvmlLoaderTest, ShutsDownAndUnloadsWhenTheLastGpuGoes) {
  testing::TempDir dir;
  const std::string log = dir.File("nvml.log");
  env_.Set(fake::kLog, log);
  {
    ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
    std::unique_ptr<Gpu> kept = std::move(gpus[1]);
    gpus.clear();
    // One GPU still holds the library: loaded and initialised.
    void* handle = dlopen(FAKE_NVML_FULL, RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(handle, nullptr);
    dlclose(handle);
    EXPECT_EQ(kept->Name().value(), "Fake H100 1");
    EXPECT_EQ(ReadFileToString(log).value(), "init\n");
  }
  EXPECT_EQ(ReadFileToString(log).value(), "init\nshutdown\n");
  EXPECT_EQ(dlopen(FAKE_NVML_FULL, RTLD_NOW | RTLD_NOLOAD), nullptr);
}

TEST_F(NvmlLoaderTest, NoPermissionOnSetIsPermissionDenied) {
  env_.Set(fake::kSetRc, "4");  // NVML_ERROR_NO_PERMISSION
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
  Status status = gpus[0]->SetPowerLimitMw(300'000);
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(status.message(), HasSubstr("GPU 0: nvmlDeviceSetPowerManagementLimit(300000 mW): "
                                          "Insufficient Permissions (NVML_ERROR_NO_PERMISSION"));
  EXPECT_THAT(status.message(), HasSubstr("ZEUS_DRY_RUN"));
  EXPECT_EQ(gpus[0]->SetPersistenceMode(true).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(gpus[0]->PowerLimitMw().value(), fake::kDefaultLimitMw);
}

TEST_F(NvmlLoaderTest, SetsPowerLimitAndPersistence) {
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
  ZEUS_ASSERT_OK(gpus[1]->SetPowerLimitMw(250'000));
  EXPECT_EQ(gpus[1]->PowerLimitMw().value(), 250'000u);
  EXPECT_EQ(gpus[0]->PowerLimitMw().value(), fake::kDefaultLimitMw);
  ZEUS_ASSERT_OK(gpus[1]->SetPersistenceMode(true));
  EXPECT_TRUE(gpus[1]->PersistenceMode().value());
  EXPECT_EQ(gpus[1]->SetPowerLimitMw(50'000).code(), StatusCode::kInvalidArgument);
}

TEST_F(NvmlLoaderTest, DryRunLeavesTheDeviceUntouched) {
  env_.Set("ZEUS_DRY_RUN", "1");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
  ZEUS_ASSERT_OK(gpus[0]->SetPowerLimitMw(250'000));
  ZEUS_ASSERT_OK(gpus[0]->SetPersistenceMode(true));
  EXPECT_EQ(gpus[0]->PowerLimitMw().value(), fake::kDefaultLimitMw);
  EXPECT_FALSE(gpus[0]->PersistenceMode().value());
  // A dry run still rejects what the device would reject.
  EXPECT_EQ(gpus[0]->SetPowerLimitMw(50'000).code(), StatusCode::kInvalidArgument);
}

TEST_F(NvmlLoaderTest, SupportedGraphicsClocksAreReadAtTheCurrentMemoryClockHighestFirst) {
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<uint32_t> clocks, gpus[1]->SupportedGraphicsClocksMhz());
  // 1980 down to 345 MHz in 15 MHz steps at the current memory clock, 2619.
  ASSERT_EQ(clocks.size(), (1980u - 345u) / 15u + 1u);
  EXPECT_EQ(clocks.front(), fake::GraphicsClockTopMhz(fake::kMemoryClocksMhz[0]));
  EXPECT_EQ(clocks.back(), fake::kGraphicsClockMinMhz);
  EXPECT_TRUE(std::is_sorted(clocks.rbegin(), clocks.rend()));
  // A library without the clock lists says which function it lacks.
  ZEUS_ASSERT_OK_AND_ASSIGN(auto v1, OpenGpus(Library(FAKE_NVML_V1)));
  auto missing = v1[0]->SupportedGraphicsClocksMhz();
  EXPECT_EQ(missing.status().code(), StatusCode::kNotSupported);
  EXPECT_THAT(missing.status().message(), HasSubstr("nvmlDeviceGetSupported"));
}

TEST_F(NvmlLoaderTest, SupportedMemoryClocksAreNvmlsListDistinctHighestFirst) {
  {
    ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
    EXPECT_THAT(gpus[0]->SupportedMemoryClocksMhz().value(), ElementsAre(2619u, 1593u));
  }
  env_.Set(fake::kMemoryClocksMhzList, "810,5001,810");
  {
    ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
    EXPECT_THAT(gpus[1]->SupportedMemoryClocksMhz().value(), ElementsAre(5001u, 810u));
  }
  env_.Set(fake::kMemoryClocksMhzList, "");
  {
    ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
    auto none = gpus[0]->SupportedMemoryClocksMhz();
    EXPECT_EQ(none.status().code(), StatusCode::kNotSupported);
    EXPECT_THAT(none.status().message(),
                HasSubstr("GPU 0: nvmlDeviceGetSupportedMemoryClocks lists no clock"));
  }
  ZEUS_ASSERT_OK_AND_ASSIGN(auto v1, OpenGpus(Library(FAKE_NVML_V1)));
  auto missing = v1[0]->SupportedMemoryClocksMhz();
  EXPECT_EQ(missing.status().code(), StatusCode::kNotSupported);
  EXPECT_THAT(missing.status().message(), HasSubstr("nvmlDeviceGetSupportedMemoryClocks"));
}

TEST_F(NvmlLoaderTest, SupportedGraphicsClocksAreReadAtTheGivenMemoryClock) {
  {
    ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
    ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<uint32_t> at_1593,
                              gpus[0]->SupportedGraphicsClocksMhz(1593));
    ASSERT_EQ(at_1593.size(), (1500u - 345u) / 15u + 1u);
    EXPECT_EQ(at_1593.front(), fake::GraphicsClockTopMhz(1593));
    EXPECT_EQ(at_1593.back(), fake::kGraphicsClockMinMhz);
    EXPECT_TRUE(std::is_sorted(at_1593.rbegin(), at_1593.rend()));
    EXPECT_EQ(gpus[0]->SupportedGraphicsClocksMhz(2619).value().front(), 1980u);
    // 0: at the current memory clock (the fake's first, 2619).
    EXPECT_EQ(gpus[0]->SupportedGraphicsClocksMhz(0).value(),
              gpus[0]->SupportedGraphicsClocksMhz(2619).value());
    // A memory clock the GPU does not support is named, with the ones it does.
    auto unknown = gpus[1]->SupportedGraphicsClocksMhz(1000);
    EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
    EXPECT_THAT(unknown.status().message(),
                HasSubstr("GPU 1: memory clock 1000 MHz is not a supported memory clock "
                          "(supported: 2619, 1593 MHz)"));
  }
  // The current memory clock is the fake's first: now 1593.
  env_.Set(fake::kMemoryClocksMhzList, "1593,2619");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
  EXPECT_EQ(gpus[0]->SupportedGraphicsClocksMhz().value().front(), 1500u);
}

TEST_F(NvmlLoaderTest, WorkloadPowerProfilesAreListedWhereTheDriverOffersThem) {
  EXPECT_EQ(nvml::WorkloadPowerProfilesInfoVersion(), 11256u | (1u << 24));
  {
    ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
    EXPECT_EQ(gpus[0]->WorkloadPowerProfiles().status().code(), StatusCode::kNotSupported);
  }
  env_.Set(fake::kWorkloadPowerProfiles, "0,2,7,40");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<WorkloadPowerProfile> profiles,
                            gpus[1]->WorkloadPowerProfiles());
  ASSERT_EQ(profiles.size(), 4u);
  EXPECT_EQ(profiles[0].name, "MAX_P");
  EXPECT_EQ(profiles[1].name, "COMPUTE");
  EXPECT_EQ(profiles[2].name, "LLM_TRAINING");
  EXPECT_EQ(profiles[2].priority, fake::WorkloadPowerProfilePriority(7));
  EXPECT_EQ(profiles[3].name, "PROFILE_40");
  // Listed by show-env, in text and JSON.
  EnvironmentOptions options;
  options.gpus = Library(FAKE_NVML_FULL);
  options.powercap_root = "/nonexistent";
  EnvironmentDescription env = DescribeEnvironment(options);
  std::ostringstream text;
  WriteEnvironmentText(env, text);
  EXPECT_THAT(text.str(),
              HasSubstr("workload power profiles: MAX_P, COMPUTE, LLM_TRAINING, PROFILE_40"));
  EXPECT_THAT(text.str(), HasSubstr("graphics clocks: 110 supported, 345-1980 MHz"));
  EXPECT_THAT(EnvironmentToJson(env), HasSubstr("\"workload_power_profiles\": ["));
}

TEST_F(NvmlLoaderTest, DryRunLogsTheClockItWouldLockAndLeavesTheDeviceUntouched) {
  testing::TempDir dir;
  const std::string log = dir.path() + "/nvml.log";
  env_.Set(fake::kLog, log.c_str());
  env_.Set("ZEUS_DRY_RUN", "1");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
  ZEUS_ASSERT_OK(gpus[0]->SetGpuLockedClocksMhz(1410, 1410));
  ZEUS_ASSERT_OK(gpus[0]->ResetGpuLockedClocks());
  std::string text = ReadFileToString(log).value_or("");
  EXPECT_THAT(text, ::testing::Not(HasSubstr("locked_clocks")));
}

TEST_F(NvmlLoaderTest, DryRunSucceedsWhereTheRealSetWouldBeRefused) {
  env_.Set(fake::kSetRc, "4");
  env_.Set("ZEUS_DRY_RUN", "yes");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
  ZEUS_EXPECT_OK(gpus[0]->SetPowerLimitMw(250'000));
  env_.Set("ZEUS_DRY_RUN", "0");
  EXPECT_EQ(gpus[0]->SetPowerLimitMw(250'000).code(), StatusCode::kPermissionDenied);
}

TEST_F(NvmlLoaderTest, EnergyNotSupportedIsReportedAsSuch) {
  env_.Set(fake::kEnergyRc, "3");  // NVML_ERROR_NOT_SUPPORTED, as on pre-Volta GPUs.
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
  auto energy = gpus[0]->TotalEnergyMj();
  EXPECT_EQ(energy.status().code(), StatusCode::kNotSupported);
  EXPECT_THAT(energy.status().message(),
              HasSubstr("nvmlDeviceGetTotalEnergyConsumption: Not Supported"));
  // Power, which callers integrate instead, still works.
  EXPECT_EQ(gpus[0]->PowerMw().value(), 150'000u);
}

TEST_F(NvmlLoaderTest, GpuLostMidRunTurnsReadsUnavailable) {
  env_.Set(fake::kLostAfterReads, "3");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
  ZEUS_EXPECT_OK(gpus[0]->TotalEnergyMj().status());
  ZEUS_EXPECT_OK(gpus[0]->PowerMw().status());
  ZEUS_EXPECT_OK(gpus[1]->TotalEnergyMj().status());
  auto energy = gpus[0]->TotalEnergyMj();
  EXPECT_EQ(energy.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(energy.status().message(), HasSubstr("GPU is lost (NVML_ERROR_GPU_IS_LOST, 15)"));
  EXPECT_EQ(gpus[1]->PowerMw().status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(gpus[1]->Name().status().code(), StatusCode::kUnavailable);
}

TEST_F(NvmlLoaderTest, CudaVisibleDevicesReordersGpus) {
  env_.Set(fake::kGpus, "4");
  env_.Set(fake::kSetRc, "4");
  env_.Set("CUDA_VISIBLE_DEVICES", "2,GPU-fa4e0000-1111-2222-3333-000000000000");
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0]->index(), 0);
  EXPECT_EQ(gpus[0]->Name().value(), "Fake H100 2");
  EXPECT_EQ(gpus[1]->index(), 1);
  EXPECT_EQ(gpus[1]->Name().value(), "Fake H100 0");
  // Errors name our index and NVML's.
  EXPECT_THAT(gpus[0]->SetPowerLimitMw(200'000).message(), HasSubstr("GPU 0 (NVML index 2)"));
}

TEST_F(NvmlLoaderTest, CudaVisibleDevicesErrorsAndEmptyList) {
  GpuOptions options = Library(FAKE_NVML_FULL);
  options.environment["CUDA_VISIBLE_DEVICES"] = "";
  ZEUS_ASSERT_OK_AND_ASSIGN(auto none, OpenGpus(options));
  EXPECT_TRUE(none.empty());
  options.environment["CUDA_VISIBLE_DEVICES"] = "MIG-GPU-fa4e0000-1111-2222-3333-000000000000/1/0";
  EXPECT_EQ(OpenGpus(options).status().code(), StatusCode::kInvalidArgument);
  options.environment["CUDA_VISIBLE_DEVICES"] = "5";
  auto out_of_range = OpenGpus(options);
  EXPECT_EQ(out_of_range.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(out_of_range.status().message(), HasSubstr("NVML sees 2 GPU(s)"));
}

TEST_F(NvmlLoaderTest, GpusAreUsableFromSeveralThreads) {
  ZEUS_ASSERT_OK_AND_ASSIGN(auto gpus, OpenGpus(Library(FAKE_NVML_FULL)));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&gpus, &failures, t] {
      for (int i = 0; i < 200; ++i) {
        if (!gpus[static_cast<size_t>(t % 2)]->TotalEnergyMj().ok()) ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace zeus
