// OpenSelectedDevices and ParseDeviceIndexList over the fake libnvml and a
// temp powercap tree: the --gpus/--cpus rules every front end shares.

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "zeus/device/devices.h"

#include "tests/device/fake_nvml/fake_nvml_config.h"
#include "tests/device/scoped_env.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

namespace fake = testing::fake_nvml;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class DeviceSelectionTest : public ::testing::Test {
 protected:
  DeviceSelectionTest() {
    for (const char* name :
         {fake::kGpus, fake::kInitRc, "ZEUS_NVML_LIBRARY", "CUDA_VISIBLE_DEVICES"}) {
      env_.Unset(name);
    }
  }

  // Two fake GPUs and a powercap tree with one package zone (socket 0).
  DeviceSelection Selection(const char* library = FAKE_NVML_FULL) {
    EXPECT_EQ(mkdir(dir_.File("intel-rapl:0").c_str(), 0755), 0);
    dir_.WriteFile("intel-rapl:0/name", "package-0\n");
    dir_.WriteFile("intel-rapl:0/energy_uj", "1000\n");
    dir_.WriteFile("intel-rapl:0/max_energy_range_uj", "262143328850\n");
    DeviceSelection selection;
    selection.gpu_options.environment["ZEUS_NVML_LIBRARY"] = library;
    selection.powercap_root = dir_.path();
    selection.gpus_name = "--gpus";
    selection.cpus_name = "--cpus";
    return selection;
  }

  testing::ScopedEnv env_;
  testing::TempDir dir_;
};

TEST_F(DeviceSelectionTest, ParsesIndexListsAndNamesTheFlagWhenMalformed) {
  ZEUS_ASSERT_OK_AND_ASSIGN(std::vector<int> indices, ParseDeviceIndexList("--gpus", "1,0"));
  EXPECT_THAT(indices, ElementsAre(1, 0));
  for (const char* bad : {"x", "0,,1", "-1", "1.5", ""}) {
    StatusOr<std::vector<int>> parsed = ParseDeviceIndexList("--gpus", bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(parsed.status().message(), HasSubstr("--gpus: expected a comma-separated list"));
  }
}

TEST_F(DeviceSelectionTest, OpensEverythingByDefaultAndTheListedDevicesInOrder) {
  DeviceSelection selection = Selection();
  ZEUS_ASSERT_OK_AND_ASSIGN(SelectedDevices all, OpenSelectedDevices(selection));
  EXPECT_THAT(all.GpuIndices(), ElementsAre(0, 1));
  EXPECT_THAT(all.CpuIndices(), ElementsAre(0));
  ZEUS_EXPECT_OK(all.gpus_status);

  selection.gpu_indices = std::vector<int>{1, 0};
  selection.cpu_indices = std::vector<int>{};
  ZEUS_ASSERT_OK_AND_ASSIGN(SelectedDevices some, OpenSelectedDevices(selection));
  EXPECT_THAT(some.GpuIndices(), ElementsAre(1, 0));
  EXPECT_TRUE(some.cpus.empty());
  ASSERT_EQ(some.GpuPointers().size(), 2u);
  EXPECT_EQ(some.GpuPointers()[0]->index(), 1);
}

TEST_F(DeviceSelectionTest, RefusesDuplicatesAndMissingIndicesNamingThem) {
  DeviceSelection selection = Selection();
  selection.gpu_indices = std::vector<int>{0, 0};
  StatusOr<SelectedDevices> twice = OpenSelectedDevices(selection);
  EXPECT_EQ(twice.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(twice.status().message(), HasSubstr("--gpus: GPU 0 is listed twice"));

  selection.gpu_indices = std::vector<int>{5};
  StatusOr<SelectedDevices> missing = OpenSelectedDevices(selection);
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(), HasSubstr("--gpus: no GPU 5 (this machine has 2)"));

  selection.gpu_indices.reset();
  selection.cpu_indices = std::vector<int>{0, 0};
  EXPECT_THAT(OpenSelectedDevices(selection).status().message(),
              HasSubstr("--cpus: CPU 0 is listed twice"));
}

TEST_F(DeviceSelectionTest, ListingGpusWithoutAGpuLibraryGivesItsReason) {
  DeviceSelection selection = Selection("/nonexistent/libnvidia-ml.so.1");
  selection.gpu_indices = std::vector<int>{0};
  StatusOr<SelectedDevices> listed = OpenSelectedDevices(selection);
  EXPECT_EQ(listed.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(listed.status().message(), HasSubstr("--gpus 0: "));
  EXPECT_THAT(listed.status().message(), HasSubstr("/nonexistent/libnvidia-ml.so.1"));

  // Asking for every GPU degrades to the CPUs, keeping the reason.
  selection.gpu_indices.reset();
  ZEUS_ASSERT_OK_AND_ASSIGN(SelectedDevices cpus_only, OpenSelectedDevices(selection));
  EXPECT_TRUE(cpus_only.gpus.empty());
  EXPECT_EQ(cpus_only.cpus.size(), 1u);
  EXPECT_EQ(cpus_only.gpus_status.code(), StatusCode::kUnavailable);
}

TEST_F(DeviceSelectionTest, NothingToMeasureIsAnErrorOnlyWhenADeviceIsRequired) {
  DeviceSelection selection = Selection("/nonexistent/libnvidia-ml.so.1");
  selection.powercap_root = dir_.File("no-powercap");
  StatusOr<SelectedDevices> none = OpenSelectedDevices(selection);
  EXPECT_EQ(none.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(none.status().message(), HasSubstr("nothing to measure: no GPU ("));
  EXPECT_THAT(none.status().message(), HasSubstr("no readable RAPL zone"));

  selection.require_device = false;
  ZEUS_ASSERT_OK_AND_ASSIGN(SelectedDevices empty, OpenSelectedDevices(selection));
  EXPECT_TRUE(empty.gpus.empty());
  EXPECT_TRUE(empty.cpus.empty());
}

TEST_F(DeviceSelectionTest, GpuOptionsEnvironmentOverridesTheProcessEnvironment) {
  env_.Set("CUDA_VISIBLE_DEVICES", "1");
  DeviceSelection selection = Selection();
  ZEUS_ASSERT_OK_AND_ASSIGN(SelectedDevices from_process, OpenSelectedDevices(selection));
  ASSERT_EQ(from_process.gpus.size(), 1u);
  EXPECT_EQ(from_process.gpus[0]->Uuid().value(), std::string(fake::kUuidPrefix) + "000000000001");

  selection.gpu_options.environment["CUDA_VISIBLE_DEVICES"] = std::nullopt;
  ZEUS_ASSERT_OK_AND_ASSIGN(SelectedDevices unset, OpenSelectedDevices(selection));
  EXPECT_EQ(unset.gpus.size(), 2u);
}

}  // namespace
}  // namespace zeus
