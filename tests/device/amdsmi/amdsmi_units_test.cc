// The pure parts of the AMD SMI backend: status translation, unit
// conversions with their overflow checks, and HIP_VISIBLE_DEVICES.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/device/amdsmi/amdsmi_error.h"
#include "src/device/amdsmi/amdsmi_gpu.h"
#include "src/device/amdsmi/hip_visible_devices.h"
#include "tests/testing/temp_dir.h"

namespace zeus::amdsmi {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(AmdsmiErrorTest, NamesTheCallTheCodeAndTheLibrarysMessage) {
  Status status = AmdsmiError("amdsmi_set_power_cap", kStatusNoPerm);
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(status.message(),
            "amdsmi_set_power_cap: Permission Denied (AMDSMI_STATUS_NO_PERM, 10)");
  auto to_string = [](amdsmi_status_t, const char** text) -> amdsmi_status_t {
    *text = "library text";
    return kSuccess;
  };
  EXPECT_EQ(AmdsmiError("f", kStatusBusy, to_string).message(),
            "f: library text (AMDSMI_STATUS_BUSY, 30)");
  ZEUS_EXPECT_OK(AmdsmiError("f", kSuccess));
}

TEST(AmdsmiErrorTest, MapsCodesToStatusCodes) {
  EXPECT_EQ(StatusToStatusCode(kStatusNotSupported), StatusCode::kNotSupported);
  EXPECT_EQ(StatusToStatusCode(kStatusNotYetImplemented), StatusCode::kNotSupported);
  EXPECT_EQ(StatusToStatusCode(kStatusInval), StatusCode::kInvalidArgument);
  EXPECT_EQ(StatusToStatusCode(kStatusInputOutOfBounds), StatusCode::kInvalidArgument);
  EXPECT_EQ(StatusToStatusCode(kStatusNotFound), StatusCode::kNotFound);
  EXPECT_EQ(StatusToStatusCode(kStatusDriverNotLoaded), StatusCode::kUnavailable);
  EXPECT_EQ(StatusToStatusCode(kStatusInitError), StatusCode::kUnavailable);
  EXPECT_EQ(StatusToStatusCode(kStatusIo), StatusCode::kIoError);
  EXPECT_EQ(StatusToStatusCode(kStatusUnknownError), StatusCode::kInternal);
  EXPECT_EQ(StatusName(kStatusUnknownError), "AMDSMI_STATUS_UNKNOWN_ERROR");
  EXPECT_EQ(StatusName(777), "AMDSMI_STATUS_777");
  EXPECT_EQ(StatusToStatusCode(777), StatusCode::kInternal);
}

TEST(AmdsmiUnitsTest, MicrowattsToMilliwattsRoundsDownAndChecksRange) {
  EXPECT_EQ(UwToMw(750'000'999, "cap").value(), 750'000u);
  EXPECT_EQ(UwToMw(0, "cap").value(), 0u);
  EXPECT_EQ(UwToMw(uint64_t{std::numeric_limits<uint32_t>::max()} * 1000 + 999, "cap").value(),
            std::numeric_limits<uint32_t>::max());
  auto too_big = UwToMw(uint64_t{std::numeric_limits<uint32_t>::max()} * 1000 + 1000, "GPU 0: cap");
  EXPECT_EQ(too_big.status().code(), StatusCode::kInternal);
  EXPECT_THAT(too_big.status().message(), HasSubstr("GPU 0: cap: 4294967296000 uW"));
}

TEST(AmdsmiUnitsTest, WattsToMilliwattsChecksRange) {
  EXPECT_EQ(WToMw(750, "power").value(), 750'000u);
  EXPECT_EQ(WToMw(4'294'967, "power").value(), 4'294'967'000u);
  EXPECT_EQ(WToMw(4'294'968, "power").status().code(), StatusCode::kInternal);
  // UINT32_MAX means "unsupported" to AMD SMI; it must never become a power.
  EXPECT_FALSE(WToMw(0xFFFFFFFFu, "power").ok());
}

TEST(AmdsmiUnitsTest, EnergyCounterTimesResolutionInMillijoules) {
  EXPECT_EQ(EnergyCounterToMj(64'000, 15.625f).value(), 1000u);
  EXPECT_EQ(EnergyCounterToMj(63, 15.625f).value(), 0u);  // 984.375 uJ
  EXPECT_EQ(EnergyCounterToMj(1'000'000'000, 15.3f).value(), 15'300'000u);
  EXPECT_EQ(EnergyCounterToMj(10, 0.0f).status().code(), StatusCode::kInternal);
  EXPECT_EQ(EnergyCounterToMj(10, -1.0f).status().code(), StatusCode::kInternal);
  EXPECT_EQ(EnergyCounterToMj(10, std::numeric_limits<float>::quiet_NaN()).status().code(),
            StatusCode::kInternal);
  auto overflow = EnergyCounterToMj(std::numeric_limits<uint64_t>::max(), 1e6f);
  EXPECT_EQ(overflow.status().code(), StatusCode::kInternal);
  EXPECT_THAT(overflow.status().message(), HasSubstr("does not fit"));
}

TEST(HipVisibleDevicesTest, UnsetMeansEveryGpuInOrder) {
  EXPECT_THAT(ResolveHipVisibleDevices(std::nullopt, std::nullopt, 3).value(),
              ElementsAre(0u, 1u, 2u));
  EXPECT_TRUE(ResolveHipVisibleDevices(std::nullopt, std::nullopt, 0).value().empty());
}

TEST(HipVisibleDevicesTest, HipWinsOverCudaAndBlanksAreIgnored) {
  EXPECT_THAT(ResolveHipVisibleDevices(std::string(" 2 , 0"), std::string("1"), 3).value(),
              ElementsAre(2u, 0u));
  EXPECT_THAT(ResolveHipVisibleDevices(std::nullopt, std::string("1"), 3).value(), ElementsAre(1u));
}

TEST(HipVisibleDevicesTest, RejectsWhatCannotNameAGpu) {
  struct Case {
    std::optional<std::string> hip;
    std::optional<std::string> cuda;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {std::string(""), std::nullopt, "HIP_VISIBLE_DEVICES=\"\": set but empty"},
           {std::nullopt, std::string(" "), "CUDA_VISIBLE_DEVICES=\" \": set but empty"},
           {std::string("0,,1"), std::nullopt, "entry 2 \"\" is empty"},
           {std::string("GPU-1234"), std::nullopt, "entry 1 \"GPU-1234\" is not a GPU index"},
           {std::string("-1"), std::nullopt, "entry 1 \"-1\" is not a GPU index"},
           {std::string("0,3"), std::nullopt, "entry 2 \"3\": no such AMD GPU (AMD SMI found 3)"},
           {std::string("1,1"), std::nullopt, "entry 2 \"1\" is listed twice"},
           {std::string("99999999999999999999"), std::nullopt, "is not a GPU index"},
       }) {
    auto result = ResolveHipVisibleDevices(c.hip, c.cuda, 3);
    EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(result.status().message(), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace zeus::amdsmi
