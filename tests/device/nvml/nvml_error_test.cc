#include "src/device/nvml/nvml_error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/device/nvml/nvml_api.h"
#include "src/device/nvml/nvml_gpu.h"

namespace zeus::nvml {
namespace {

using ::testing::HasSubstr;

TEST(NvmlErrorTest, MapsReturnCodesToStatusCodes) {
  EXPECT_EQ(ReturnCodeToStatusCode(kSuccess), StatusCode::kOk);
  EXPECT_EQ(ReturnCodeToStatusCode(kErrorNoPermission), StatusCode::kPermissionDenied);
  EXPECT_EQ(ReturnCodeToStatusCode(kErrorNotSupported), StatusCode::kNotSupported);
  EXPECT_EQ(ReturnCodeToStatusCode(kErrorGpuIsLost), StatusCode::kUnavailable);
  EXPECT_EQ(ReturnCodeToStatusCode(kErrorLibraryNotFound), StatusCode::kUnavailable);
  EXPECT_EQ(ReturnCodeToStatusCode(kErrorUninitialized), StatusCode::kUnavailable);
  EXPECT_EQ(ReturnCodeToStatusCode(kErrorDriverNotLoaded), StatusCode::kUnavailable);
  EXPECT_EQ(ReturnCodeToStatusCode(kErrorInvalidArgument), StatusCode::kInvalidArgument);
  EXPECT_EQ(ReturnCodeToStatusCode(kErrorNotFound), StatusCode::kNotFound);
  EXPECT_EQ(ReturnCodeToStatusCode(kErrorOperatingSystem), StatusCode::kPermissionDenied);
  EXPECT_EQ(ReturnCodeToStatusCode(kErrorInsufficientSize), StatusCode::kInternal);
  EXPECT_EQ(ReturnCodeToStatusCode(kErrorUnknown), StatusCode::kInternal);
  EXPECT_EQ(ReturnCodeToStatusCode(12345), StatusCode::kInternal);
}

TEST(NvmlErrorTest, EveryKnownCodeHasANameAndDescription) {
  for (nvmlReturn_t rc = 1; rc <= 29; ++rc) {
    EXPECT_THAT(ReturnCodeName(rc), HasSubstr("NVML_ERROR_")) << rc;
    EXPECT_NE(ReturnCodeName(rc), "NVML_ERROR_" + std::to_string(rc)) << rc;
    EXPECT_NE(ReturnCodeDescription(rc), "Unknown NVML return code") << rc;
  }
  EXPECT_EQ(ReturnCodeName(4242), "NVML_ERROR_4242");
}

TEST(NvmlErrorTest, MessageNamesCallLibraryTextAndRawCode) {
  auto error_string = [](nvmlReturn_t) -> const char* { return "Text from the library"; };
  Status status = NvmlError("nvmlDeviceSetPowerManagementLimit", kErrorNoPermission, error_string);
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(status.message(),
            "nvmlDeviceSetPowerManagementLimit: Text from the library "
            "(NVML_ERROR_NO_PERMISSION, 4)");
}

TEST(NvmlErrorTest, FallsBackToOwnTableWithoutErrorString) {
  Status status = NvmlError("nvmlDeviceGetTotalEnergyConsumption", kErrorNotSupported);
  EXPECT_EQ(status.code(), StatusCode::kNotSupported);
  EXPECT_EQ(status.message(),
            "nvmlDeviceGetTotalEnergyConsumption: Not Supported (NVML_ERROR_NOT_SUPPORTED, 3)");
  auto null_string = [](nvmlReturn_t) -> const char* { return nullptr; };
  EXPECT_THAT(NvmlError("nvmlInit", kErrorGpuIsLost, null_string).message(),
              HasSubstr("GPU is lost"));
}

TEST(NvmlErrorTest, SuccessIsOk) { EXPECT_TRUE(NvmlError("nvmlInit_v2", kSuccess).ok()); }

TEST(NvmlArchitectureTest, NamesEveryKnownCode) {
  EXPECT_EQ(ArchitectureName(2), "Kepler");
  EXPECT_EQ(ArchitectureName(3), "Maxwell");
  EXPECT_EQ(ArchitectureName(4), "Pascal");
  EXPECT_EQ(ArchitectureName(5), "Volta");
  EXPECT_EQ(ArchitectureName(6), "Turing");
  EXPECT_EQ(ArchitectureName(7), "Ampere");
  EXPECT_EQ(ArchitectureName(8), "Ada");
  EXPECT_EQ(ArchitectureName(9), "Hopper");
  EXPECT_EQ(ArchitectureName(10), "Blackwell");
  EXPECT_EQ(ArchitectureName(0xffffffffu), "Unknown");
  EXPECT_EQ(ArchitectureName(1), "Unknown");
}

}  // namespace
}  // namespace zeus::nvml
